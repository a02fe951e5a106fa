//! io_uring backend: many reads in flight from one thread, which is what an
//! SSD needs to reach its throughput on a machine with few cores.
//!
//! The file and every slot buffer are registered with the ring once, so a read
//! costs the kernel no fd lookup and no page pinning (`ReadFixed` on
//! `Fixed(0)`). IOPOLL is never used: it needs polled block queues that most
//! machines (and this project's) do not configure, and the kernel refuses it.

use std::fs::File;
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;

use io_uring::{opcode, types, IoUring};

use crate::open::{check_direct_flag, file_size, DIRECT_ALIGN};
use crate::slots::SlotTable;
use crate::sq_thread;
use crate::{AlignedBuf, BlockReader, Completion, IoCounters, IoError, ReadRequest};

/// Registered buffers are indexed by `u16`, and the kernel allows at most
/// 2^14 of them.
const MAX_SLOTS: usize = 1 << 14;
/// How long the SQPOLL kernel thread spins for new work before sleeping.
const SQPOLL_IDLE_MS: u32 = 200;
/// Resubmissions of a read that failed with EAGAIN/EINTR before giving up.
const MAX_RETRIES: u8 = 8;

pub struct UringReader {
    // Both dropped by hand in `Drop`: the ring first, and the buffers only
    // once the kernel can no longer write into them.
    ring: ManuallyDrop<IoUring>,
    buf: ManuallyDrop<AlignedBuf>,
    table: SlotTable,
    file: File,
    file_size: u64,
    registered: bool,
    registration_error: Option<String>,
    /// Pushed since the last submit (the count `submit` reports).
    queued: usize,
    /// How long a blocking reap polls before it sleeps (`set_poll`).
    poll: std::time::Duration,
    /// CQEs copied out of the ring before processing, since processing may
    /// push resubmissions into the (borrowed) ring.
    cqes: Vec<(u64, i32)>,
    name: &'static str,
    /// A SQPOLL ring, registered with `sq_thread` while open.
    sqpoll: bool,
}

impl UringReader {
    /// A ring of at least `slots` entries over `file` (opened with O_DIRECT
    /// iff `direct`), with the file and all slot buffers registered — or, if
    /// the kernel refuses registration (RLIMIT_MEMLOCK on old kernels), plain
    /// `Read`s on unregistered buffers, reported by [`BlockReader::name`].
    /// `sqpoll` starts a kernel submission thread (burns a core; off by default).
    /// Fails with [`IoError::Unsupported`] when the ring cannot be set up.
    pub fn new(
        file: File,
        path: PathBuf,
        direct: bool,
        slots: usize,
        slot_bytes: usize,
        sqpoll: bool,
    ) -> Result<UringReader, IoError> {
        Self::build(file, path, direct, slots, slot_bytes, sqpoll, true)
    }

    /// Like [`UringReader::new`] but never registers the file or buffers: for
    /// tests of the fallback and for measuring what registration buys.
    pub fn new_unregistered(
        file: File,
        path: PathBuf,
        direct: bool,
        slots: usize,
        slot_bytes: usize,
        sqpoll: bool,
    ) -> Result<UringReader, IoError> {
        Self::build(file, path, direct, slots, slot_bytes, sqpoll, false)
    }

    /// Why registration was refused, when it was attempted and failed.
    pub fn registration_error(&self) -> Option<&str> {
        self.registration_error.as_deref()
    }

    pub(crate) fn reset_counters(&mut self) {
        self.table.reset_counters();
    }

    fn build(
        file: File,
        path: PathBuf,
        direct: bool,
        slots: usize,
        slot_bytes: usize,
        sqpoll: bool,
        register: bool,
    ) -> Result<UringReader, IoError> {
        check_direct_flag(&file, &path, direct)?;
        let file_size = file_size(&file, &path)?;
        let alignment = if direct { DIRECT_ALIGN } else { 1 };
        let table = SlotTable::new(path, slots, slot_bytes, alignment)?;
        if slots > MAX_SLOTS {
            return Err(IoError::InvalidOptions {
                path: table.path().to_path_buf(),
                what: "slots",
                expected: format!("at most {MAX_SLOTS} for io_uring"),
                found: slots.to_string(),
            });
        }
        let entries = slots.next_power_of_two() as u32;
        // COOP_TASKRUN: a completion that lands on another CPU does not send
        // the thread an IPI to post its CQE; the kernel posts it at the
        // thread's next kernel entry, and this reader enters every pass
        // (TASKRUN_FLAG tells `reap` when some are waiting). Completions run
        // on the submitting thread, and a reader is never moved to another
        // thread with reads in flight (the open probe drains), so none is
        // left with a thread that no longer reaps. Measured (starling, 96-d,
        // perf): the kernel's share of CPU 25% -> 20%, the IPI path gone;
        // CPU per query -4-6% for both profiles. Kernels before 5.19 refuse
        // the flags; the ring is then built without them.
        // Deliberately not set up: SINGLE_ISSUER/DEFER_TASKRUN tie the ring
        // to the creating thread, but readers are opened on one thread and
        // moved to a worker. IOPOLL needs polled block queues (refused by
        // most kernels' setups).
        let build = |coop: bool, attach: Option<RawFd>| {
            let mut builder = IoUring::builder();
            if sqpoll {
                builder.setup_sqpoll(SQPOLL_IDLE_MS);
            }
            if let Some(fd) = attach {
                builder.setup_attach_wq(fd);
            }
            if coop {
                builder.setup_coop_taskrun().setup_taskrun_flag();
            }
            builder.build(entries)
        };
        let either = |attach| build(true, attach).or_else(|_| build(false, attach));
        let ring = if sqpoll {
            // One kernel thread for every SQPOLL ring (`sq_thread`).
            sq_thread::join(either)
        } else {
            either(None)
        };
        let ring = ring.map_err(|e| IoError::Unsupported {
            backend: "io_uring",
            path: table.path().to_path_buf(),
            reason: format!(
                "io_uring_setup({entries} entries{}) refused: {e}",
                if sqpoll { ", SQPOLL" } else { "" }
            ),
        })?;
        let mut buf = AlignedBuf::slots(table.path(), slots, slot_bytes, DIRECT_ALIGN)?;

        let mut registration_error = None;
        let mut registered = false;
        if register {
            let base = buf.as_mut_ptr();
            let iovecs: Vec<libc::iovec> = (0..slots)
                .map(|i| libc::iovec {
                    // SAFETY: i * slot_bytes < buf.len(), so the pointer stays
                    // inside the allocation.
                    iov_base: unsafe { base.add(i * slot_bytes) }.cast(),
                    iov_len: slot_bytes,
                })
                .collect();
            // SAFETY: every iovec lies inside `buf`, which is freed only after
            // the ring is closed (see Drop), so the kernel never holds a
            // registration to freed memory.
            let bufs = unsafe { ring.submitter().register_buffers(&iovecs) };
            let files = bufs.and_then(|()| {
                ring.submitter()
                    .register_files(&[file.as_raw_fd()])
                    .inspect_err(|_| {
                        let _ = ring.submitter().unregister_buffers();
                    })
            });
            match files {
                Ok(()) => registered = true,
                Err(e) => registration_error = Some(e.to_string()),
            }
        }
        let name = match (direct, registered, sqpoll) {
            (true, true, false) => "io_uring+direct",
            (true, false, false) => "io_uring+direct(unregistered)",
            (false, true, false) => "io_uring+buffered",
            (false, false, false) => "io_uring+buffered(unregistered)",
            (true, true, true) => "io_uring+direct+sqpoll",
            (true, false, true) => "io_uring+direct(unregistered)+sqpoll",
            (false, true, true) => "io_uring+buffered+sqpoll",
            (false, false, true) => "io_uring+buffered(unregistered)+sqpoll",
        };
        Ok(UringReader {
            ring: ManuallyDrop::new(ring),
            buf: ManuallyDrop::new(buf),
            table,
            file,
            file_size,
            registered,
            registration_error,
            queued: 0,
            poll: std::time::Duration::ZERO,
            cqes: Vec::with_capacity(entries as usize * 2),
            name,
            sqpoll,
        })
    }

    fn ring_error(&self, source: std::io::Error) -> IoError {
        IoError::File {
            op: "io_uring_enter on the ring reading",
            path: self.table.path().into(),
            cause: source,
        }
    }

    /// Submit whatever is in the SQ and wait for `want` CQEs.
    fn enter(&mut self, want: usize) -> Result<(), IoError> {
        loop {
            match self.ring.submit_and_wait(want) {
                Ok(_) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                // EBUSY/EAGAIN: the kernel wants CQEs drained (or memory)
                // first; the caller's loop drains and comes back.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EBUSY | libc::EAGAIN)) => {
                    return Ok(())
                }
                Err(e) => return Err(self.ring_error(e)),
            }
        }
    }

    /// Polls the CQ for up to `self.poll` until `need` more completions
    /// are out; true when they are. Under COOP_TASKRUN a completion is
    /// posted only when this thread enters the kernel, so the poll enters
    /// (without waiting) whenever the TASKRUN flag says one is pending: a
    /// cheap syscall instead of a sleep and a wake-up. Stops early when a
    /// completion had to be resubmitted, which the caller's loop submits.
    fn poll_for(
        &mut self,
        need: usize,
        out: &mut Vec<Completion>,
        got: &mut usize,
    ) -> Result<bool, IoError> {
        let start = std::time::Instant::now();
        let mut have = 0;
        loop {
            if self.ring.submission().taskrun() {
                self.enter(0)?;
            }
            let (n, requeued) = self.drain(out)?;
            have += n;
            *got += n;
            if have >= need {
                return Ok(true);
            }
            if requeued > 0 || start.elapsed() >= self.poll {
                return Ok(false);
            }
            std::hint::spin_loop();
        }
    }

    /// Put the (rest of the) read held by `slot` into the SQ.
    fn queue_sqe(&mut self, slot: u32) -> Result<(), IoError> {
        let range = self.table.range(slot);
        let Some(p) = self.table.pending_mut(slot) else {
            return Ok(());
        };
        let (offset, len) = (p.offset + u64::from(p.done), p.len - p.done);
        // SAFETY: done < len <= slot_bytes, so the pointer stays inside the slot.
        let ptr = unsafe { self.buf.as_mut_ptr().add(range.start + p.done as usize) };
        let entry = if self.registered {
            opcode::ReadFixed::new(types::Fixed(0), ptr, len, slot as u16)
                .offset(offset)
                .build()
        } else {
            opcode::Read::new(types::Fd(self.file.as_raw_fd()), ptr, len)
                .offset(offset)
                .build()
        }
        .user_data(u64::from(slot));
        loop {
            // SAFETY: the SQE points at `len` bytes of this slot, which is
            // busy (no Rust reference to it is handed out, see `slot()`) until
            // its completion is reaped, and the buffer outlives every
            // in-flight read (Drop waits for them).
            let pushed = unsafe { self.ring.submission().push(&entry) };
            if pushed.is_ok() {
                return Ok(());
            }
            // The SQ holds at most one entry per busy slot and has at least
            // `slots` entries, so this is unreachable; flushing is the safe
            // answer if it ever is not.
            self.enter(0)?;
        }
    }

    /// Move every available CQE into `out` (or back into the SQ for the rest
    /// of a short read). Returns (completions appended, resubmissions queued).
    fn drain(&mut self, out: &mut Vec<Completion>) -> Result<(usize, usize), IoError> {
        self.cqes.clear();
        self.cqes
            .extend(self.ring.completion().map(|c| (c.user_data(), c.result())));
        let (mut got, mut requeued) = (0, 0);
        for i in 0..self.cqes.len() {
            let (user_data, res) = self.cqes[i];
            match self.on_cqe(user_data as u32, res, out)? {
                Cqe::Completed => got += 1,
                Cqe::Requeued => requeued += 1,
                Cqe::Stale => {}
            }
        }
        Ok((got, requeued))
    }

    /// One CQE for `slot` with result `res` (bytes, or -errno).
    fn on_cqe(&mut self, slot: u32, res: i32, out: &mut Vec<Completion>) -> Result<Cqe, IoError> {
        let file_size = self.file_size;
        let Some(p) = self.table.pending_mut(slot) else {
            return Ok(Cqe::Stale);
        };
        if res < 0 {
            let errno = -res;
            if matches!(errno, libc::EAGAIN | libc::EINTR) && p.retries < MAX_RETRIES {
                p.retries += 1;
                self.queue_sqe(slot)?;
                return Ok(Cqe::Requeued);
            }
            let (offset, len) = (p.offset + u64::from(p.done), u64::from(p.len - p.done));
            let err = IoError::Io {
                op: "io_uring read",
                path: self.table.path().to_path_buf(),
                offset,
                len,
                cause: std::io::Error::from_raw_os_error(errno),
            };
            out.extend(self.table.finish(slot, Some(err), file_size));
            return Ok(Cqe::Completed);
        }
        let n = (res as u32).min(p.len - p.done);
        p.done += n;
        // A short read before end of file (rare: signals, some filesystems)
        // gets the rest read into the rest of the slot.
        if n > 0 && p.done < p.len && p.offset + u64::from(p.done) < file_size {
            self.queue_sqe(slot)?;
            return Ok(Cqe::Requeued);
        }
        out.extend(self.table.finish(slot, None, file_size));
        Ok(Cqe::Completed)
    }
}

/// What one CQE did.
enum Cqe {
    Completed,
    Requeued,
    /// For a slot that is not busy: cannot happen unless the kernel repeats
    /// a CQE; ignoring it is the only safe answer.
    Stale,
}

impl BlockReader for UringReader {
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
        if let Err(e) = self.queue_sqe(req.slot) {
            self.table.unclaim(req.slot);
            return Err(e);
        }
        self.queued += 1;
        Ok(())
    }
    fn submit(&mut self) -> Result<usize, IoError> {
        let n = self.queued;
        if n > 0 {
            self.enter(0)?;
            self.queued = 0;
        }
        Ok(n)
    }
    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<usize, IoError> {
        let want = min.min(self.table.in_flight());
        let mut got = 0;
        // Unsubmitted entries (pushes, or short-read remainders) go to the
        // kernel once per pass; under SQPOLL the SQ may look non-empty for a
        // moment after that, which must not make us spin.
        let mut flushed = false;
        loop {
            let (n, requeued) = self.drain(out)?;
            got += n;
            if requeued > 0 {
                flushed = false;
            }
            let need = want.saturating_sub(got);
            let unsubmitted = !self.ring.submission().is_empty();
            // COOP_TASKRUN: completions that arrived on another CPU are
            // posted at this thread's next kernel entry (an enter, or at the
            // latest its next timer tick); the flag says some are waiting, so
            // a non-blocking reap enters rather than leave them a tick.
            let taskrun = self.ring.submission().taskrun();
            if need == 0 && (flushed || !(unsubmitted || taskrun)) {
                break;
            }
            if need > 0
                && !unsubmitted
                && !self.poll.is_zero()
                && self.poll_for(need, out, &mut got)?
            {
                break;
            }
            // Each completion needs at least one CQE, so waiting for what is
            // still missing never waits for more than the caller asked. It is
            // counted again here: a poll that timed out may have reaped some,
            // and waiting for the count from before it could wait for more
            // CQEs than there are reads in flight, which never returns.
            self.enter(want.saturating_sub(got))?;
            flushed = true;
            self.queued = 0;
        }
        Ok(got)
    }
    fn slot(&self, slot: u32) -> &[u8] {
        let range = self.table.range(slot);
        if self.table.is_busy(slot) {
            // The kernel may be writing it; no reference may exist.
            return &[];
        }
        // SAFETY: the range is inside `buf`; the slot is not busy, so no
        // kernel write to it is pending, and a new push needs `&mut self`,
        // which ends this borrow first. Only this slot is referenced, never
        // the others the kernel may be writing.
        unsafe { std::slice::from_raw_parts(self.buf.as_ptr().add(range.start), range.len()) }
    }
    fn in_flight(&self) -> usize {
        self.table.in_flight()
    }
    fn counters(&self) -> IoCounters {
        self.table.counters()
    }
    fn name(&self) -> &'static str {
        self.name
    }
    fn set_poll(&mut self, poll: std::time::Duration) {
        self.poll = poll;
    }
}

impl Drop for UringReader {
    fn drop(&mut self) {
        // The kernel writes into slot buffers until their reads complete, so
        // wait for every read before freeing them.
        let mut quiet = true;
        let mut sink = Vec::new();
        while self.table.in_flight() > 0 {
            let n = self.table.in_flight();
            if self.reap(n, &mut sink).is_err() {
                quiet = false;
                break;
            }
            sink.clear();
        }
        if self.sqpoll {
            // Before the fd closes: no ring may attach to it after.
            sq_thread::leave(self.ring.as_raw_fd());
        }
        // SAFETY: dropped exactly once, here, and never used afterwards.
        unsafe { ManuallyDrop::drop(&mut self.ring) };
        if quiet {
            // SAFETY: no read is in flight, so nothing writes into the buffer;
            // dropped exactly once.
            unsafe { ManuallyDrop::drop(&mut self.buf) };
        }
        // Otherwise the buffer is leaked on purpose: a broken ring may still
        // have reads that land in it.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn reader(len: usize, direct: bool) -> (tempfile::TempDir, UringReader, Vec<u8>) {
        let dir = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
        let path = dir.path().join("f.bin");
        let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        let mut f = File::create(&path).unwrap();
        f.write_all(&data).unwrap();
        f.sync_all().unwrap();
        // /tmp may be a tmpfs without O_DIRECT; the logic under test is the
        // same either way.
        let mut o = std::fs::OpenOptions::new();
        std::os::unix::fs::OpenOptionsExt::custom_flags(o.read(true), libc::O_DIRECT);
        let (file, direct) = match o.open(&path) {
            Ok(f) if direct => (f, true),
            _ => (File::open(&path).unwrap(), false),
        };
        let r = UringReader::new(file, path, direct, 4, 8192, false).unwrap();
        (dir, r, data)
    }

    /// The kernel almost never returns a short read from a regular file, so
    /// feed the CQE handler one by hand: it must read the rest, into the rest
    /// of the slot, and report the whole length once.
    #[test]
    fn short_read_is_completed_by_a_second_read() {
        let (_dir, mut r, data) = reader(20000, true);
        let req = ReadRequest {
            offset: 4096,
            len: 8192,
            slot: 2,
            tag: 77,
        };
        r.table.claim(&req).unwrap();
        // Pretend the kernel delivered the first 4096 bytes.
        let range = r.table.range(2);
        r.buf[range.start..range.start + 4096].copy_from_slice(&data[4096..8192]);
        let mut out = Vec::new();
        assert!(matches!(
            r.on_cqe(2, 4096, &mut out).unwrap(),
            Cqe::Requeued
        ));
        assert!(out.is_empty());
        r.reap(1, &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].tag, out[0].result.as_ref().ok()), (77, Some(&8192)));
        assert_eq!(r.slot(2), &data[4096..12288]);
        assert_eq!(
            r.counters(),
            IoCounters {
                reads: 1,
                bytes: 8192
            }
        );
    }

    /// EAGAIN is retried (bounded); other errors become a completion naming
    /// path, offset, length and errno.
    #[test]
    fn transient_errors_retry_and_hard_errors_complete() {
        let (_dir, mut r, data) = reader(20000, false);
        let req = ReadRequest {
            offset: 100,
            len: 5000,
            slot: 0,
            tag: 1,
        };
        r.table.claim(&req).unwrap();
        let mut out = Vec::new();
        assert!(matches!(
            r.on_cqe(0, -libc::EAGAIN, &mut out).unwrap(),
            Cqe::Requeued
        ));
        r.reap(1, &mut out).unwrap();
        assert_eq!(out[0].result.as_ref().ok(), Some(&5000));
        assert_eq!(&r.slot(0)[..5000], &data[100..5100]);

        out.clear();
        r.table
            .claim(&ReadRequest {
                offset: 8192,
                len: 4096,
                slot: 1,
                tag: 2,
            })
            .unwrap();
        assert!(matches!(
            r.on_cqe(1, -libc::EIO, &mut out).unwrap(),
            Cqe::Completed
        ));
        let e = out[0].result.as_ref().unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EIO));
        let msg = e.to_string();
        assert!(
            msg.starts_with("io_uring read of 4096 bytes at offset 8192 of "),
            "{msg}"
        );
        assert!(msg.contains("f.bin"), "{msg}");
        assert!(matches!(r.on_cqe(1, 4096, &mut out).unwrap(), Cqe::Stale));
        assert_eq!(r.in_flight(), 0);
    }
}
