//! Fault injection: a reader whose chosen reads fail with EIO, so engine tests
//! can prove that a failed read fails one query and not the process.

use std::path::PathBuf;

use crate::{BlockReader, Completion, IoCounters, IoError, ReadRequest};

/// Wraps any reader; reads whose offset matches the predicate complete with an
/// injected EIO naming the offset.
///
/// Every request still goes through the inner reader, so validation (slot
/// range, busy slots, alignment) and slot lifetimes are exactly the inner
/// backend's; only the outcome of a matching read is replaced, and its bytes
/// leave the counters.
pub struct FaultyReader<R: BlockReader> {
    inner: R,
    fail: Box<dyn Fn(u64) -> bool + Send>,
    /// Per slot: offset and length of the read it holds, if that read is to fail.
    doomed: Vec<Option<(u64, u32)>>,
    /// Successful inner reads that were turned into failures.
    hidden: IoCounters,
    path: PathBuf,
}

impl<R: BlockReader> FaultyReader<R> {
    pub fn new(inner: R, fail: Box<dyn Fn(u64) -> bool + Send>) -> Self {
        let doomed = vec![None; inner.slots()];
        let path = PathBuf::from(format!("<file read by {}>", inner.name()));
        FaultyReader {
            inner,
            fail,
            doomed,
            hidden: IoCounters::default(),
            path,
        }
    }

    /// The path injected errors name (the trait does not expose the inner
    /// reader's path).
    pub fn with_path(mut self, path: PathBuf) -> Self {
        self.path = path;
        self
    }

    pub fn inner(&self) -> &R {
        &self.inner
    }

    pub fn into_inner(self) -> R {
        self.inner
    }
}

impl<R: BlockReader> BlockReader for FaultyReader<R> {
    fn alignment(&self) -> usize {
        self.inner.alignment()
    }
    fn slots(&self) -> usize {
        self.inner.slots()
    }
    fn slot_bytes(&self) -> usize {
        self.inner.slot_bytes()
    }
    fn push(&mut self, req: ReadRequest) -> Result<(), IoError> {
        self.inner.push(req)?;
        // The inner push accepted the slot, so it is in range.
        self.doomed[req.slot as usize] = (self.fail)(req.offset).then_some((req.offset, req.len));
        Ok(())
    }
    fn submit(&mut self) -> Result<usize, IoError> {
        self.inner.submit()
    }
    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<usize, IoError> {
        let start = out.len();
        let n = self.inner.reap(min, out)?;
        for c in &mut out[start..] {
            let Some(doomed) = self.doomed.get_mut(c.slot as usize) else {
                continue;
            };
            let Some((offset, len)) = doomed.take() else {
                continue;
            };
            if let Ok(bytes) = c.result {
                self.hidden.record(bytes);
            }
            c.result = Err(IoError::Io {
                op: "read (injected fault)",
                path: self.path.clone(),
                offset,
                len: u64::from(len),
                cause: std::io::Error::from_raw_os_error(libc::EIO),
            });
        }
        Ok(n)
    }
    fn slot(&self, slot: u32) -> &[u8] {
        self.inner.slot(slot)
    }
    fn in_flight(&self) -> usize {
        self.inner.in_flight()
    }
    fn counters(&self) -> IoCounters {
        self.inner.counters() - self.hidden
    }
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn set_poll(&mut self, poll: std::time::Duration) {
        self.inner.set_poll(poll)
    }
}

/// Lets wrappers such as [`FaultyReader`] take what [`crate::open_reader`]
/// returns.
impl<R: BlockReader + ?Sized> BlockReader for Box<R> {
    fn alignment(&self) -> usize {
        (**self).alignment()
    }
    fn slots(&self) -> usize {
        (**self).slots()
    }
    fn slot_bytes(&self) -> usize {
        (**self).slot_bytes()
    }
    fn push(&mut self, req: ReadRequest) -> Result<(), IoError> {
        (**self).push(req)
    }
    fn submit(&mut self) -> Result<usize, IoError> {
        (**self).submit()
    }
    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<usize, IoError> {
        (**self).reap(min, out)
    }
    fn slot(&self, slot: u32) -> &[u8] {
        (**self).slot(slot)
    }
    fn in_flight(&self) -> usize {
        (**self).in_flight()
    }
    fn counters(&self) -> IoCounters {
        (**self).counters()
    }
    fn set_poll(&mut self, poll: std::time::Duration) {
        (**self).set_poll(poll)
    }
    fn name(&self) -> &'static str {
        (**self).name()
    }
}
