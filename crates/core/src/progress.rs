//! Progress reporting for long steps. The library only calls this trait; the
//! CLI draws bars, Python stays silent.
//!
//! The same trait carries the caller's request to stop: a build polls
//! [`Progress::cancelled`] between stages and inside its long loops, so a
//! Ctrl-C (CLI signal handler, Python's signal check) ends it within a
//! fraction of a second with [`crate::Error::Cancelled`], its staging
//! directory removed and any previous index untouched.

pub trait Progress: Sync {
    /// A new stage with `total` units of work (0 = unknown).
    fn stage(&self, _name: &str, _total: u64) {}
    /// `done` units of the current stage are finished.
    fn set(&self, _done: u64) {}
    /// The current stage is over.
    fn finish(&self) {}
    /// Something the user should know about the run, said once (a
    /// parameter chosen for the data).
    fn note(&self, _msg: &str) {}
    /// Whether the caller asked the work to stop. Once true it must stay
    /// true: a loop that stopped early leaves a partial result, which the
    /// build discards because it asks again. Polled often (once per page
    /// written, per point inserted): keep it an atomic load.
    fn cancelled(&self) -> bool {
        false
    }
}

/// What long loops poll to stop early: true once the caller asked them to.
/// A loop that sees it returns `None` (or a partial result its caller
/// discards), never a result that looks complete.
pub type Stop<'a> = dyn Fn() -> bool + Sync + 'a;

/// A `Stop` that never asks to stop, for callers that cannot be interrupted.
pub fn never() -> bool {
    false
}

/// Reports nothing.
pub struct Silent;
impl Progress for Silent {}
