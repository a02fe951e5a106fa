//! One SQPOLL kernel thread for all of a process's SQPOLL rings.
//!
//! Each search thread has its own reader and so its own ring. Left alone,
//! every SQPOLL ring would start its own kernel thread, each spinning on a
//! core while reads come: `--threads 2 --sqpoll` on two cores would leave the
//! searching threads none. A ring created with IORING_SETUP_ATTACH_WQ and a
//! live ring's fd shares that ring's submission thread instead
//! (io_uring_setup(2): "the SQ polling thread will be shared"); the kernel
//! keeps the thread while any ring that uses it is open.
//!
//! The rings register their fds here while open. A new ring attaches to one
//! of them, under the lock a closing ring also takes to leave, so the ring it
//! names stays open while the kernel reads it. A kernel that refuses to
//! attach gets a ring with its own thread, as before.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Mutex, MutexGuard};

use io_uring::IoUring;

/// The fds of the open SQPOLL rings.
static OPEN: Mutex<Vec<RawFd>> = Mutex::new(Vec::new());

fn open_rings() -> MutexGuard<'static, Vec<RawFd>> {
    // A panic elsewhere while the lock was held left the list consistent
    // (each change is one push or retain).
    OPEN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Builds a SQPOLL ring: `build(Some(fd))` to share the submission thread of
/// the open ring `fd` when there is one, else (or if the kernel refuses)
/// `build(None)`. The ring is registered until [`leave`] is called with its
/// fd, which must happen before it closes.
pub(crate) fn join(build: impl Fn(Option<RawFd>) -> io::Result<IoUring>) -> io::Result<IoUring> {
    let mut open = open_rings();
    let ring = match open.first() {
        Some(&fd) => build(Some(fd)).or_else(|_| build(None)),
        None => build(None),
    }?;
    open.push(ring.as_raw_fd());
    Ok(ring)
}

/// Unregisters a ring [`join`] built; call it before the ring closes.
pub(crate) fn leave(fd: RawFd) {
    open_rings().retain(|&f| f != fd);
}
