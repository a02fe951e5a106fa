//! Bookkeeping shared by every backend: which slots are busy with which read,
//! request validation (so all backends refuse the same requests with the same
//! words), and the success counters.

use std::path::{Path, PathBuf};

use crate::{Completion, IoCounters, IoError, ReadRequest};

/// The read a busy slot holds. `done` counts bytes already read when a read
/// is finished in several pieces (short reads).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pending {
    pub tag: u64,
    pub offset: u64,
    pub len: u32,
    pub done: u32,
    /// Transient-error (EAGAIN/EINTR) resubmissions so far; bounded so a
    /// misbehaving device cannot spin a worker forever.
    pub retries: u8,
}

pub(crate) struct SlotTable {
    path: PathBuf,
    alignment: usize,
    slot_bytes: usize,
    slots: Vec<Option<Pending>>,
    in_flight: usize,
    counters: IoCounters,
}

impl SlotTable {
    /// Validates the geometry: at least one slot, a slot size that is a
    /// positive multiple of the alignment and fits a `u32` length.
    pub fn new(
        path: PathBuf,
        slots: usize,
        slot_bytes: usize,
        alignment: usize,
    ) -> Result<SlotTable, IoError> {
        let bad = |what, expected: String, found: String| IoError::InvalidOptions {
            path: path.clone(),
            what,
            expected,
            found,
        };
        if slots == 0 || slots > u32::MAX as usize {
            return Err(bad("slots", "1..=4294967295".into(), slots.to_string()));
        }
        if slot_bytes == 0
            || !is_aligned(slot_bytes as u64, alignment as u64)
            || slot_bytes > u32::MAX as usize
        {
            return Err(bad(
                "slot_bytes",
                format!("a positive multiple of the {alignment}-byte alignment below 4 GiB"),
                slot_bytes.to_string(),
            ));
        }
        if slots
            .checked_mul(slot_bytes)
            .is_none_or(|t| t > isize::MAX as usize)
        {
            return Err(bad(
                "slots * slot_bytes",
                "a buffer size that fits in memory".into(),
                format!("{slots} * {slot_bytes}"),
            ));
        }
        Ok(SlotTable {
            path,
            alignment,
            slot_bytes,
            slots: vec![None; slots],
            in_flight: 0,
            counters: IoCounters::default(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn alignment(&self) -> usize {
        self.alignment
    }
    pub fn slot_bytes(&self) -> usize {
        self.slot_bytes
    }
    pub fn slots(&self) -> usize {
        self.slots.len()
    }
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }
    pub fn counters(&self) -> IoCounters {
        self.counters
    }
    pub fn reset_counters(&mut self) {
        self.counters = IoCounters::default();
    }
    pub fn is_busy(&self, slot: u32) -> bool {
        matches!(self.slots.get(slot as usize), Some(Some(_)))
    }
    pub fn pending_mut(&mut self, slot: u32) -> Option<&mut Pending> {
        self.slots.get_mut(slot as usize)?.as_mut()
    }

    /// Byte range of `slot` inside the backend's one big buffer. Panics on an
    /// out-of-range slot, like slice indexing: slot numbers are the caller's
    /// own bookkeeping, not input data.
    pub fn range(&self, slot: u32) -> std::ops::Range<usize> {
        assert!(
            (slot as usize) < self.slots.len(),
            "slot {slot} out of range: {} has {} slots",
            self.path.display(),
            self.slots.len()
        );
        let start = slot as usize * self.slot_bytes;
        start..start + self.slot_bytes
    }

    /// Check `req` and mark its slot busy. Nothing changes on error.
    pub fn claim(&mut self, req: &ReadRequest) -> Result<(), IoError> {
        self.check(req)?;
        self.slots[req.slot as usize] = Some(Pending {
            tag: req.tag,
            offset: req.offset,
            len: req.len,
            done: 0,
            retries: 0,
        });
        self.in_flight += 1;
        Ok(())
    }

    /// Undo a `claim` whose read could not be queued.
    pub fn unclaim(&mut self, slot: u32) {
        if let Some(s) = self.slots.get_mut(slot as usize) {
            if s.take().is_some() {
                self.in_flight -= 1;
            }
        }
    }

    fn check(&self, req: &ReadRequest) -> Result<(), IoError> {
        let fail = |problem: String| {
            Err(IoError::BadRequest {
                path: self.path.clone(),
                offset: req.offset,
                len: u64::from(req.len),
                slot: req.slot,
                problem,
            })
        };
        let align = self.alignment as u64;
        match self.slots.get(req.slot as usize) {
            None => {
                return fail(format!(
                    "slot out of range (expected 0..{}, found {})",
                    self.slots.len(),
                    req.slot
                ))
            }
            Some(Some(p)) => {
                return fail(format!(
                    "slot busy (expected a free slot, found it holding the read of {} bytes \
                     at offset {} with tag {})",
                    p.len, p.offset, p.tag
                ))
            }
            Some(None) => {}
        }
        if req.len == 0 {
            return fail("zero-length read (expected 1 or more bytes)".into());
        }
        if req.len as usize > self.slot_bytes {
            return fail(format!(
                "length over the {}-byte slot size",
                self.slot_bytes
            ));
        }
        if !is_aligned(req.offset, align) {
            return fail(format!(
                "offset not a multiple of the {align}-byte alignment"
            ));
        }
        if !is_aligned(u64::from(req.len), align) {
            return fail(format!(
                "length not a multiple of the {align}-byte alignment"
            ));
        }
        if req.offset.checked_add(u64::from(req.len)).is_none() {
            return fail("offset + length overflows a 64-bit file offset".into());
        }
        Ok(())
    }

    /// Free `slot` and turn its read into a completion: `Ok(done)` counted as
    /// a success, or `err`. A read that got no byte at all is an
    /// [`IoError::UnexpectedEof`] (offset at or past the end of the file).
    pub fn finish(
        &mut self,
        slot: u32,
        err: Option<IoError>,
        file_size: u64,
    ) -> Option<Completion> {
        let p = self.slots.get_mut(slot as usize)?.take()?;
        self.in_flight -= 1;
        let result = match err {
            Some(e) => Err(e),
            None if p.done == 0 => Err(IoError::UnexpectedEof {
                path: self.path.clone(),
                offset: p.offset,
                len: u64::from(p.len),
                file_size,
            }),
            None => {
                self.counters.record(p.done);
                Ok(p.done)
            }
        };
        Some(Completion {
            tag: p.tag,
            slot,
            result,
        })
    }
}

/// Alignments are powers of two (1 for buffered backends).
fn is_aligned(x: u64, alignment: u64) -> bool {
    x & (alignment - 1) == 0
}
