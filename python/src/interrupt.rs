//! Ctrl-C during a build. Python runs its signal handlers only on the main
//! thread, and only when that thread runs Python code or calls
//! `PyErr_CheckSignals`; a build that held the calling thread in Rust for
//! minutes ignored Ctrl-C until it had finished and installed the index.
//!
//! So the build runs on a thread of its own, and the calling thread waits
//! for it with the GIL released, waking every `POLL` to take the GIL and run
//! the signal handlers (`py.check_signals()`). When a handler raises
//! (KeyboardInterrupt for SIGINT), the build is asked to stop
//! (`Progress::cancelled`), removes its staging directory within a fraction
//! of a second, and the handler's exception is raised.

use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

const POLL: Duration = Duration::from_millis(50);

/// The build's `Progress`: silent, stopped on request.
pub struct StopFlag(AtomicBool);

impl stratavec::progress::Progress for StopFlag {
    fn cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Runs `work` on a scoped thread while this one polls Python's signal
/// handlers; returns the handler's exception if one raised, else `work`'s
/// result (mapped by `to_py`).
pub fn run<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&StopFlag) -> stratavec::Result<T> + Send,
    to_py: impl Fn(stratavec::Error) -> PyErr,
) -> PyResult<T> {
    let flag = StopFlag(AtomicBool::new(false));
    let mut raised: Option<PyErr> = None;
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let result = std::thread::scope(|s| {
        let flag = &flag;
        let worker = std::thread::Builder::new()
            .name("stratavec-build".into())
            .spawn_scoped(s, move || {
                // The sender is dropped when `work` returns or panics: that
                // wakes the waiter.
                let _done = done_tx;
                work(flag)
            });
        let worker = match worker {
            Ok(w) => w,
            Err(e) => return Err(pyo3::exceptions::PyOSError::new_err(e.to_string())),
        };
        let mut done_rx = done_rx;
        loop {
            // The receiver is not Sync: it moves into the GIL-free wait and back.
            let (finished, rx) = py.detach(move || {
                let r = done_rx.recv_timeout(POLL);
                (r != Err(mpsc::RecvTimeoutError::Timeout), done_rx)
            });
            done_rx = rx;
            if finished {
                break;
            }
            if raised.is_none() {
                if let Err(e) = py.check_signals() {
                    raised = Some(e);
                    flag.0.store(true, Ordering::Relaxed);
                }
            }
        }
        match worker.join() {
            Ok(r) => Ok(r),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })?;
    match raised {
        Some(e) => Err(e),
        None => result.map_err(to_py),
    }
}
