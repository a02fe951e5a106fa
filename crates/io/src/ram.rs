//! A reader over bytes already in memory: for tests, and for in-memory tiers
//! where the "device" is RAM. Same slot discipline as the disk backends, so
//! search code cannot tell the difference except by speed.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;

use crate::slots::SlotTable;
use crate::{AlignedBuf, BlockReader, Completion, IoCounters, IoError, ReadRequest};

/// Copies happen at `submit`, so a pushed-but-unsubmitted read has not
/// touched its slot yet — as with a real device.
pub struct RamReader {
    data: Arc<[u8]>,
    table: SlotTable,
    buf: AlignedBuf,
    queued: Vec<u32>,
    /// Copied, not yet reaped: the slot stays busy until the caller reaps it.
    ready: VecDeque<u32>,
}

impl RamReader {
    /// `name_for_errors` is the path errors name (the file the bytes came from).
    pub fn new(
        data: Arc<[u8]>,
        name_for_errors: PathBuf,
        slots: usize,
        slot_bytes: usize,
    ) -> Result<RamReader, IoError> {
        let table = SlotTable::new(name_for_errors, slots, slot_bytes, 1)?;
        let buf = AlignedBuf::new(slots * slot_bytes, 4096);
        Ok(RamReader {
            data,
            table,
            buf,
            queued: Vec::new(),
            ready: VecDeque::new(),
        })
    }

    fn run_queued(&mut self) {
        let size = self.data.len() as u64;
        for slot in std::mem::take(&mut self.queued) {
            let range = self.table.range(slot);
            if let Some(p) = self.table.pending_mut(slot) {
                if p.offset < size {
                    let start = p.offset as usize;
                    let n = (p.len as usize).min(self.data.len() - start);
                    self.buf[range.start..range.start + n]
                        .copy_from_slice(&self.data[start..start + n]);
                    p.done = n as u32;
                }
            }
            self.ready.push_back(slot);
        }
    }
}

impl BlockReader for RamReader {
    fn alignment(&self) -> usize {
        1
    }
    fn slots(&self) -> usize {
        self.table.slots()
    }
    fn slot_bytes(&self) -> usize {
        self.table.slot_bytes()
    }
    fn push(&mut self, req: ReadRequest) -> Result<(), IoError> {
        self.table.claim(&req)?;
        self.queued.push(req.slot);
        Ok(())
    }
    fn submit(&mut self) -> Result<usize, IoError> {
        let n = self.queued.len();
        self.run_queued();
        Ok(n)
    }
    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<usize, IoError> {
        // Reaping more than has been submitted implies submitting the rest.
        if self.ready.len() < min {
            self.run_queued();
        }
        let size = self.data.len() as u64;
        let n = self.ready.len();
        for slot in self.ready.drain(..) {
            out.extend(self.table.finish(slot, None, size));
        }
        Ok(n)
    }
    fn slot(&self, slot: u32) -> &[u8] {
        let range = self.table.range(slot);
        if self.table.is_busy(slot) {
            return &[];
        }
        &self.buf[range]
    }
    fn in_flight(&self) -> usize {
        self.table.in_flight()
    }
    fn counters(&self) -> IoCounters {
        self.table.counters()
    }
    fn name(&self) -> &'static str {
        "ram"
    }
}
