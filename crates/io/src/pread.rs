//! Synchronous `pread` behind the batched interface: the fallback where
//! io_uring is refused (seccomp, containers, old kernels). Reads run at
//! `submit`, one after another, so there is no device queue depth — correct
//! everywhere, fast nowhere.

use std::collections::VecDeque;
use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use crate::open::{check_direct_flag, file_size, DIRECT_ALIGN};
use crate::slots::SlotTable;
use crate::{AlignedBuf, BlockReader, Completion, IoCounters, IoError, ReadRequest};

pub struct PreadReader {
    file: File,
    table: SlotTable,
    buf: AlignedBuf,
    file_size: u64,
    direct: bool,
    queued: Vec<u32>,
    /// Read, not yet reaped (the slot stays busy until reaped), with the
    /// error if the read failed.
    ready: VecDeque<(u32, Option<IoError>)>,
}

impl PreadReader {
    /// `direct` must match how `file` was opened (O_DIRECT or not); it sets
    /// the alignment (4096 under O_DIRECT — a multiple of every common logical
    /// block size — else 1) and the name.
    pub fn new(
        file: File,
        path: PathBuf,
        direct: bool,
        slots: usize,
        slot_bytes: usize,
    ) -> Result<PreadReader, IoError> {
        check_direct_flag(&file, &path, direct)?;
        let file_size = file_size(&file, &path)?;
        let alignment = if direct { DIRECT_ALIGN } else { 1 };
        let table = SlotTable::new(path, slots, slot_bytes, alignment)?;
        let buf = AlignedBuf::slots(table.path(), slots, slot_bytes, DIRECT_ALIGN)?;
        Ok(PreadReader {
            file,
            table,
            buf,
            file_size,
            direct,
            queued: Vec::new(),
            ready: VecDeque::new(),
        })
    }

    /// Read one slot to completion: loop over short reads until `len` or end
    /// of file, retrying EINTR.
    fn read_slot(&mut self, slot: u32) -> Option<IoError> {
        let range = self.table.range(slot);
        let p = self.table.pending_mut(slot)?;
        let len = p.len as usize;
        let mut done = 0usize;
        while done < len {
            let pos = p.offset + done as u64;
            // Past a short read at EOF, another pread would be misaligned
            // under O_DIRECT (EINVAL) and pointless anyway.
            if done > 0 && pos >= self.file_size {
                break;
            }
            let dst = &mut self.buf[range.start + done..range.start + len];
            match self.file.read_at(dst, pos) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Some(IoError::Io {
                        op: "pread",
                        path: self.table.path().to_path_buf(),
                        offset: pos,
                        len: (len - done) as u64,
                        cause: source,
                    })
                }
            }
        }
        p.done = done as u32;
        None
    }

    fn run_queued(&mut self) {
        for slot in std::mem::take(&mut self.queued) {
            let err = self.read_slot(slot);
            self.ready.push_back((slot, err));
        }
    }
}

impl BlockReader for PreadReader {
    fn alignment(&self) -> usize {
        self.table.alignment()
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
        let n = self.ready.len();
        for (slot, err) in self.ready.drain(..) {
            out.extend(self.table.finish(slot, err, self.file_size));
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
        if self.direct {
            "pread+direct"
        } else {
            "pread+buffered"
        }
    }
}
