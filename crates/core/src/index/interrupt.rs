//! Stopping a build on request (`Progress::cancelled`): checkpoints between
//! stages, a writer that stops between pages, and the test hook that holds
//! a build at a named stage so a test can interrupt it there.

use crate::error::{Error, Result};
use crate::progress::Progress;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// Test hook: `STRATAVEC_TEST_PAUSE_AT=<stage>` makes a build print
/// `stratavec: test pause at <stage>` on stderr and wait (30 s at most,
/// ending early when cancelled) at the start of that stage, so a test can
/// signal or kill it there. Stages: prepare, pq, graph, write (pages.bin
/// created, nothing written yet), shuffle (starling), nav, checksum; and
/// outside builds (`test_pause`): publish (staged, fsynced, not yet
/// switched), published (switched, the previous one not yet removed),
/// wal-half (half an update-log record written), wal-written (a record
/// written, not yet fsynced).
pub const PAUSE_ENV: &str = "STRATAVEC_TEST_PAUSE_AT";
const PAUSE_LIMIT: Duration = Duration::from_secs(30);

/// Start of `stage` of the build of `dir`: the test pause, then a check
/// that the caller has not asked to stop.
pub(crate) fn checkpoint(progress: &dyn Progress, dir: &Path, stage: &str) -> Result<()> {
    pause_while(stage, &|| progress.cancelled());
    if progress.cancelled() {
        return Err(cancelled(dir));
    }
    Ok(())
}

/// The test pause at `point` of work that cannot be cancelled (a publish,
/// a log append): held until the test kills the process, 30 s at most.
pub(crate) fn test_pause(point: &str) {
    pause_while(point, &|| false);
}

fn pause_while(point: &str, cancelled: &dyn Fn() -> bool) {
    if std::env::var(PAUSE_ENV).is_ok_and(|s| s == point) {
        eprintln!("stratavec: test pause at {point}");
        let t = Instant::now();
        while t.elapsed() < PAUSE_LIMIT && !cancelled() {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

pub(crate) fn cancelled(dir: &Path) -> Error {
    Error::Cancelled {
        what: format!("build of {}", dir.display()),
    }
}

/// `r`, unless the caller asked to stop: then the failure (or a result a
/// stopped loop cut short) is the cancellation.
pub(crate) fn unless_cancelled<T>(progress: &dyn Progress, dir: &Path, r: Result<T>) -> Result<T> {
    if progress.cancelled() {
        return Err(cancelled(dir));
    }
    r
}

/// Fails every write once the caller asked to stop, so a layout writer
/// (which knows nothing of cancellation) stops at its next page. The build
/// turns that failure into [`Error::Cancelled`] (`unless_cancelled`).
pub(crate) struct StopWriter<'a, W> {
    pub inner: W,
    pub progress: &'a dyn Progress,
}

impl<W: Write> Write for StopWriter<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.progress.cancelled() {
            // Not ErrorKind::Interrupted: write_all would retry that.
            return Err(std::io::Error::other("stopped on request"));
        }
        self.inner.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        if self.progress.cancelled() {
            return Err(std::io::Error::other("stopped on request"));
        }
        self.inner.write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    struct Flag(AtomicBool);
    impl Progress for Flag {
        fn cancelled(&self) -> bool {
            self.0.load(Ordering::Relaxed)
        }
    }

    #[test]
    fn writer_stops_once_cancelled() {
        let flag = Flag(AtomicBool::new(false));
        let mut w = StopWriter {
            inner: Vec::new(),
            progress: &flag,
        };
        w.write_all(b"page").unwrap();
        flag.0.store(true, Ordering::Relaxed);
        assert!(w.write_all(b"page").is_err());
        assert_eq!(w.inner, b"page");
        let err = unless_cancelled(&flag, Path::new("idx"), Ok(())).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Cancelled);
    }
}
