//! Indexes that change (issue #55): the write-ahead log of inserts and
//! deletes (`wal.rs`, checksummed by `crc32c.rs`), the lock that makes one
//! process at a time the writer (`lock.rs`), the in-memory delta graph
//! inserts go to until a merge (`delta.rs`), the generation's deleted rows
//! (`tombstones.rs`), the index that puts them together (`live.rs`), and
//! the merge that writes them into the next generation (`merge.rs`), and
//! the batch ids a generation carries over from the one it replaced
//! (`batches.rs`).

pub mod batches;
pub mod crc32c;
pub mod delta;
pub mod live;
pub mod lock;
pub mod merge;
pub mod tombstones;
pub mod wal;
