//! Progress reporting for long steps. The library only calls this trait; the
//! CLI draws bars, Python stays silent.

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
}

/// Reports nothing.
pub struct Silent;
impl Progress for Silent {}
