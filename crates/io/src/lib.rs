//! Block readers: the only way stratavec reads an index file at search time.
//!
//! A [`BlockReader`] is owned by one worker thread. It owns a fixed set of
//! aligned buffer *slots* (registered with the kernel where the backend can),
//! accepts read requests into those slots without blocking (`push`), hands
//! them to the device in one batch (`submit`), and returns completions as they
//! arrive (`reap`). Search code keeps many queries in flight over one reader so
//! the device sees a deep queue even on two cores (see docs/architecture.md,
//! "The execution model").
//!
//! Backends: io_uring + O_DIRECT (default), `pread` (when io_uring is
//! refused), buffered `pread` (when O_DIRECT is refused, e.g. tmpfs), RAM (tests
//! and in-memory tiers), and the second-tier memory backends `mmap` and
//! `simulated:LAT_NS,GBPS` ([`tier`]). [`open_reader`] picks the best disk
//! backend the kernel allows; a memory backend is only ever asked for.

mod aligned;
mod counters;
mod error;
mod exchange;
mod fault;
pub mod huge_pages;
mod mmap;
mod open;
mod pinned;
mod pread;
pub mod probe;
mod ram;
pub mod signals;
mod slots;
mod sq_thread;
pub mod tier;
mod uring;

pub use aligned::AlignedBuf;
pub use counters::{proc_self_io, process_cpu_seconds, IoCounters, ProcIo};
pub use error::IoError;
pub use exchange::exchange;
pub use fault::FaultyReader;
pub use mmap::map_readonly;
pub use open::{open_reader, Backend, ReaderOptions};
pub use pinned::{open_pinned_reader, Pinned};
pub use pread::PreadReader;
pub use ram::{Image, RamReader, Residence};
pub use tier::TierTiming;
pub use uring::UringReader;

/// One read: `len` bytes at byte `offset` of the file into buffer slot `slot`.
/// `tag` is returned untouched in the completion (the caller's bookkeeping).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadRequest {
    pub offset: u64,
    pub len: u32,
    pub slot: u32,
    pub tag: u64,
}

/// The outcome of one [`ReadRequest`]. `result` is the number of bytes read:
/// always `len` unless the read reached end of file.
#[derive(Debug)]
pub struct Completion {
    pub tag: u64,
    pub slot: u32,
    pub result: Result<u32, IoError>,
}

/// A per-thread reader over one file. Not shared between threads: each worker
/// opens its own (own ring, own registered buffers).
pub trait BlockReader: Send {
    /// Offsets, lengths and slot addresses must be multiples of this
    /// (the device's logical block size under O_DIRECT, 1 otherwise).
    fn alignment(&self) -> usize;
    /// Number of buffer slots (= the most reads that can be in flight).
    fn slots(&self) -> usize;
    /// Bytes per slot (the largest single read).
    fn slot_bytes(&self) -> usize;
    /// Queue one read. Fails at once (without queueing) on a malformed request:
    /// slot out of range or busy, length over `slot_bytes`, misalignment.
    fn push(&mut self, req: ReadRequest) -> Result<(), IoError>;
    /// Hand every queued read to the device; returns how many were handed over.
    fn submit(&mut self) -> Result<usize, IoError>;
    /// Append finished reads to `out`, blocking until at least `min` have
    /// finished (`min` is capped at the number in flight). Returns how many
    /// were appended. A failed read is a completion with `Err`, not an `Err`
    /// of `reap`; `reap` itself fails only when the backend is broken.
    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<usize, IoError>;
    /// The buffer of slot `slot` (valid after its completion, until the slot
    /// is pushed again).
    fn slot(&self, slot: u32) -> &[u8];
    /// Reads pushed or submitted but not yet reaped.
    fn in_flight(&self) -> usize;
    /// Reads and bytes completed successfully by this reader so far.
    fn counters(&self) -> IoCounters;
    /// Short name for reports: "io_uring+direct", "pread+direct", "pread+buffered", "ram".
    fn name(&self) -> &'static str;
    /// How long a blocking [`reap`](Self::reap) polls for completions before
    /// it sleeps in the kernel (zero: it sleeps at once). Polling trades a
    /// core's idle time for the wake-up a sleeping thread pays on every
    /// completion; backends whose reads complete in `push` ignore it.
    fn set_poll(&mut self, _poll: std::time::Duration) {}
}
