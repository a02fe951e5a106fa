//! An index that changes: one generation on disk (`Index`), the vectors
//! inserted since in the in-memory delta (`delta.rs`), the generation's
//! deleted rows as tombstones (`tombstones.rs`), every change logged before
//! it is acknowledged (`wal.rs`) by the one writer (`lock.rs`). A search
//! runs on the generation and on the delta and merges the two answers by
//! distance, dropping deleted rows: FreshDiskANN's search over its
//! long-term and temporary indexes with a delete list (Singh et al. 2021,
//! §4.2–4.3). Ids are the caller's (i64): the generation's own (`ids.bin`)
//! or its row numbers, and for inserts the ones given or the next unused.

use super::delta::{Delta, DeltaScratch};
use super::lock::WriterLock;
use super::tombstones::Tombstones;
use super::wal::{self, Op, Record, WalWriter, WAL_FILE};
use crate::error::{Error, Result};
use crate::index::ids::NO_ID;
use crate::index::{BatchResult, Index, OpenOptions};
use crate::search::query::reported_distance;
use crate::search::SearchParams;
use rayon::prelude::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::Instant;

mod filtered;
mod refresh;
mod state;
use state::State;

/// What a write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Applied {
    /// The log's sequence number of the batch (durable once returned).
    pub seq: u64,
    /// Vectors inserted, or ids removed.
    pub count: usize,
    /// Ids a delete named that were not there (counted, not an error:
    /// faiss's `remove_ids` returns a count the same way).
    pub missing: usize,
    /// The batch id was applied before (a retried call): nothing was done
    /// again, and `seq` is the first application's.
    pub repeated: bool,
    /// An insert's first id: an insert without ids gives its vectors this
    /// id and the ones after it, in order (-1 for a delete).
    pub first_id: i64,
}

/// Answers of a search over the generation and the delta: `k` ids and
/// distances a query, nearest first, padded with -1 / infinity.
#[derive(Clone, Debug)]
pub struct LiveResult {
    pub k: usize,
    pub ids: Vec<i64>,
    pub dists: Vec<f32>,
    /// Range search (`SearchParams::radius`): each query's (id, distance)
    /// within the radius, nearest first; empty for k-NN.
    pub ranges: Vec<Vec<(i64, f32)>>,
    /// The generation's batch (its stats and per-query errors).
    pub base: BatchResult,
}

/// How an index takes updates.
#[derive(Clone, Debug)]
pub struct UpdateOptions {
    /// The share of the open's memory budget the delta and the tombstones
    /// may hold; the generation opens with the rest, so the budget is never
    /// exceeded. Without a budget the delta may hold `DELTA_BYTES_UNBUDGETED`.
    pub delta_share: f64,
    /// Merge by itself when a write fills the delta's share (FreshDiskANN
    /// §4.3's trigger); otherwise such a write is refused, saying so.
    pub auto_merge: bool,
    /// Threads of an automatic merge.
    pub merge_threads: usize,
}

/// Vectors an insert puts into the delta under one hold of the state's
/// write lock (`apply_logged`): at 384-d a chunk takes a few milliseconds,
/// which is as long as a search may wait for it.
const APPLY_CHUNK: usize = 128;

/// The delta graph's search list under a cluster index (whose complexity
/// counts clusters, not candidates): the graph profiles' default L.
const DELTA_LIST_FOR_CLUSTERS: usize = 64;

/// The delta's room when the open has no memory budget.
pub const DELTA_BYTES_UNBUDGETED: usize = 256 << 20;

impl Default for UpdateOptions {
    fn default() -> Self {
        UpdateOptions {
            delta_share: 0.1,
            auto_merge: true,
            merge_threads: 1,
        }
    }
}

pub struct LiveIndex {
    dir: PathBuf,
    opts: OpenOptions,
    updates: UpdateOptions,
    /// Bytes the delta, tombstones and id maps may hold.
    room: usize,
    /// The directory's (device, inode) this handle's state is of: a
    /// rebuild or merge publishes a new directory.
    dir_id: Mutex<Option<(u64, u64)>>,
    state: RwLock<State>,
    writer: Mutex<Option<WalWriter>>,
    /// Held from the first write to the drop.
    lock: Mutex<Option<WriterLock>>,
    /// The log's offset past the last record this handle applied (what a
    /// refresh reads on from).
    log_end: AtomicU64,
    /// Milliseconds after `opened` of the last look for other handles'
    /// writes (`maybe_refresh`).
    looked: AtomicU64,
    opened: Instant,
    /// Why the last automatic refresh failed (the handle then searches
    /// what it had); cleared by one that succeeds.
    refresh_error: Mutex<Option<String>>,
}

/// How often a search looks for what other handles and processes wrote:
/// a new generation published over the directory, records appended to
/// its log (one `stat` of the log a look when nothing changed).
pub const REFRESH_MS: u64 = 100;

impl LiveIndex {
    /// Opens the generation at `dir` and replays its update log.
    pub fn open(dir: impl AsRef<Path>, opts: &OpenOptions) -> Result<LiveIndex> {
        LiveIndex::open_with(dir, opts, &UpdateOptions::default())
    }

    /// [`LiveIndex::open`] with how it takes updates.
    pub fn open_with(
        dir: impl AsRef<Path>,
        opts: &OpenOptions,
        updates: &UpdateOptions,
    ) -> Result<LiveIndex> {
        if !(0.0..1.0).contains(&updates.delta_share) {
            return Err(Error::argument(
                "delta share",
                "a fraction in [0, 1)",
                updates.delta_share,
            ));
        }
        let dir = dir.as_ref().to_path_buf();
        let dir_id = dir_id(&dir);
        let budget = opts.memory_budget_bytes;
        let mut room = budget.map_or(DELTA_BYTES_UNBUDGETED, |b| {
            (b as f64 * updates.delta_share) as usize
        });
        let mut opts = OpenOptions {
            memory_budget_bytes: budget.map(|b| b - room as u64),
            ..opts.clone()
        };
        let base = match Index::open(&dir, &opts) {
            // A budget that holds the index's required parts and little
            // more: the index gets all of it and the delta none, so every
            // insert merges first (or is refused without auto_merge).
            Err(Error::Argument { what, .. }) if what == "memory budget" && room > 0 => {
                room = 0;
                opts.memory_budget_bytes = budget;
                Index::open(&dir, &opts)?
            }
            other => other?,
        };
        let (state, log_end) = State::replayed(base, &dir)?;
        Ok(LiveIndex {
            dir,
            opts,
            updates: updates.clone(),
            room,
            dir_id: Mutex::new(dir_id),
            state: RwLock::new(state),
            writer: Mutex::new(None),
            lock: Mutex::new(None),
            log_end: AtomicU64::new(log_end),
            looked: AtomicU64::new(0),
            opened: Instant::now(),
            refresh_error: Mutex::new(None),
        })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Vectors searchable now: the generation's live rows and the delta's.
    pub fn len(&self) -> usize {
        self.maybe_refresh();
        let s = self.read();
        s.base.len() - s.deleted.len() + s.delta.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn dim(&self) -> usize {
        self.read().base.dim()
    }

    /// Whether `id` is searchable (inserted or built, and not deleted).
    pub fn contains(&self, id: i64) -> bool {
        self.maybe_refresh();
        self.read().is_live(id)
    }

    /// Vectors inserted and not yet merged; generation rows deleted.
    pub fn pending(&self) -> (usize, usize) {
        self.maybe_refresh();
        let s = self.read();
        (s.delta.len(), s.deleted.len())
    }

    /// The id an insert without ids gives its first vector: one past the
    /// largest id the index has held.
    pub fn next_id(&self) -> i64 {
        self.read().next_id
    }

    /// What batch `batch` did, if this generation applied it or carried it
    /// over from the one it replaced (a retried call is answered with it).
    pub fn batch_applied(&self, batch: u64) -> Option<Applied> {
        (batch != 0)
            .then(|| self.read().batches.get(&batch).copied())
            .flatten()
    }

    /// Bytes the delta, the tombstones and the id maps hold.
    pub fn update_bytes(&self) -> usize {
        self.read().update_bytes()
    }

    /// Inserts `vectors` (row-major, the index's dimension) with `ids`, or
    /// with the next unused ids. Acknowledged (returned) only once logged
    /// and fsynced. `batch` (non-zero) makes a retried call a no-op.
    pub fn add(&self, vectors: &[f32], ids: Option<&[i64]>, batch: u64) -> Result<Applied> {
        self.add_labelled(vectors, ids, &[], batch)
    }

    /// [`LiveIndex::add`] with one label set a vector (issue #56; empty:
    /// the vectors carry none), for an index built with labels: logged
    /// with them, searched and filtered with them, merged with them.
    pub fn add_labelled(
        &self,
        vectors: &[f32],
        ids: Option<&[i64]>,
        labels: &[Vec<u32>],
        batch: u64,
    ) -> Result<Applied> {
        let room = self.room;
        let dim = self.dim();
        let applied = self.write(batch, |s| {
            let ids = s.check_insert(vectors, ids)?;
            s.check_labels(ids.len(), labels)?;
            let label_bytes: usize = labels.iter().map(|l| l.len() * 4).sum();
            let after = s.update_bytes() + ids.len() * Delta::bytes_per_point(dim) + label_bytes;
            if after > room && !self.updates.auto_merge {
                return Err(Error::argument("insert", format!("room in the delta's {:.1} MB share of the memory budget (merge the index first, or open it with auto_merge)", room as f64 / 1e6), format!("{} vectors that would take it to {:.1} MB", ids.len(), after as f64 / 1e6)));
            }
            Ok(Op::Insert {
                ids,
                vectors: vectors.to_vec(),
                labels: labels.to_vec(),
            })
        })?;
        if self.update_bytes() > room && self.updates.auto_merge {
            self.merge(self.updates.merge_threads, &crate::progress::Silent)?;
        }
        Ok(applied)
    }

    /// Bytes the delta's share of the memory budget allows.
    pub fn room(&self) -> usize {
        self.room
    }

    /// Deletes `ids`; ids that are not there are counted in `missing`.
    pub fn remove(&self, ids: &[i64], batch: u64) -> Result<Applied> {
        self.write(batch, |_| Ok(Op::Delete { ids: ids.to_vec() }))
    }

    /// Checks and logs one batch under the writer lock, then applies it.
    fn write(&self, batch: u64, make: impl FnOnce(&State) -> Result<Op>) -> Result<Applied> {
        let mut writer = self.writer()?;
        let wal = writer.as_mut().expect("writer started");
        let op = {
            let s = self.read();
            if let Some(done) = s.batches.get(&batch).filter(|_| batch != 0) {
                return Ok(Applied {
                    repeated: true,
                    ..*done
                });
            }
            make(&s)?
        };
        let seq = wal.append(batch, &op)?;
        Ok(self.apply_logged(&Record { seq, batch, op }))
    }

    /// Applies a record just logged. A large insert goes into the delta
    /// [`APPLY_CHUNK`] vectors at a time, the state's write lock taken for
    /// each chunk alone, so searches run between chunks instead of waiting
    /// for the whole batch (it is durable already: a search may see part
    /// of it, never a vector that a crash could lose). Only this handle's
    /// writer applies, so chunks of two batches never interleave.
    fn apply_logged(&self, r: &Record) -> Applied {
        let state = || self.state.write().unwrap_or_else(|e| e.into_inner());
        let Op::Insert {
            ids,
            vectors,
            labels,
        } = &r.op
        else {
            return state().apply(r);
        };
        let labels_of = |from: usize, to: usize| match labels.is_empty() {
            true => Vec::new(),
            false => labels[from..to].to_vec(),
        };
        let dim = vectors.len() / ids.len().max(1);
        let chunks = ids.len().div_ceil(APPLY_CHUNK);
        for (i, chunk) in ids
            .chunks(APPLY_CHUNK)
            .enumerate()
            .take(chunks.saturating_sub(1))
        {
            let (row, at) = (i * APPLY_CHUNK, i * APPLY_CHUNK * dim);
            let l = labels_of(row, row + chunk.len());
            state().insert_rows(chunk, &vectors[at..at + chunk.len() * dim], &l);
        }
        let last = (chunks.saturating_sub(1)) * APPLY_CHUNK;
        let tail = Record {
            seq: r.seq,
            batch: r.batch,
            op: Op::Insert {
                ids: ids[last..].to_vec(),
                vectors: vectors[last * dim..].to_vec(),
                labels: labels_of(last, ids.len()),
            },
        };
        let mut s = state();
        let applied = s.apply(&tail);
        let whole = Applied {
            count: ids.len(),
            first_id: ids.first().copied().unwrap_or(NO_ID),
            ..applied
        };
        if r.batch != 0 {
            s.batches.insert(r.batch, whole);
        }
        whole
    }

    /// The log's writer, started on first use; refused when the directory
    /// was switched to a generation this handle did not make.
    fn writer(&self) -> Result<std::sync::MutexGuard<'_, Option<WalWriter>>> {
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if dir_id(&self.dir) != *self.dir_id.lock().unwrap_or_else(|e| e.into_inner()) {
            return Err(Error::index(&self.dir, "index directory", "the generation this handle opened", "a new one (rebuilt or merged by another process since): reopen the index to write to it"));
        }
        if writer.is_none() {
            *writer = Some(self.start_writing()?);
        }
        Ok(writer)
    }

    /// Writes the generation, its deletes and the delta as the next
    /// generation (`update/merge.rs`) and moves this handle to it. Searches
    /// go on meanwhile on the old one; writes wait for the merge. The log
    /// of the new generation starts empty after the last record merged.
    pub fn merge(
        &self,
        threads: usize,
        progress: &dyn crate::progress::Progress,
    ) -> Result<super::merge::Merged> {
        let mut writer = self.writer()?;
        let staging = crate::index::commit::Staging::new_held(&self.dir)?;
        let mut lock =
            WriterLock::acquire_file(&staging.dir.join(super::lock::LOCK_FILE), "merge")?;
        let s = self.read();
        let (dim, seq) = (s.base.dim(), s.seq);
        wal::create(&staging.dir.join(WAL_FILE), dim, seq + 1)?;
        super::batches::write(&staging.dir, &s.batches)?;
        let merged = super::merge::Merged {
            inserted: s.delta.len(),
            deleted: s.deleted.len(),
            n_before: s.base.len(),
            report: {
                let input = super::merge::MergeInput {
                    base: &s.base,
                    delta: &s.delta,
                    deleted: &s.deleted,
                    update_seq: seq,
                    threads,
                };
                super::merge::merge_into(&input, staging, &self.dir, progress)?
            },
        };
        drop(s);
        // Published: this handle's lock is the new directory's, its log the
        // new one, its state the new generation (read back as any open
        // would: the same files, the same plan).
        // If the new generation cannot be opened here, the directory id
        // stays the old one's and this handle refuses writes (reopen).
        lock.moved_to(&self.dir);
        *self.lock.lock().unwrap_or_else(|e| e.into_inner()) = Some(lock);
        let state = State::new(
            Index::open(&self.dir, &self.opts)?,
            super::batches::read(&self.dir)?,
        );
        let log = WalWriter::open(&self.dir.join(WAL_FILE), dim)?.0;
        self.log_end.store(log.len(), Ordering::Release);
        *self.state.write().unwrap_or_else(|e| e.into_inner()) = state;
        *writer = Some(log);
        *self.dir_id.lock().unwrap_or_else(|e| e.into_inner()) = dir_id(&self.dir);
        Ok(merged)
    }

    /// Takes the writer lock and opens the log for appending; records
    /// another writer logged since this handle opened are applied first.
    fn start_writing(&self) -> Result<WalWriter> {
        let lock = WriterLock::acquire(&self.dir, "write")?;
        let dim = self.dim();
        let (writer, scan) = WalWriter::open(&self.dir.join(WAL_FILE), dim)?;
        let mut s = self.state.write().unwrap_or_else(|e| e.into_inner());
        let seen = s.seq;
        let newer: Vec<Record> = scan.records.into_iter().filter(|r| r.seq > seen).collect();
        s.replay(&newer, &self.dir)?;
        *self.lock.lock().unwrap_or_else(|e| e.into_inner()) = Some(lock);
        Ok(writer)
    }

    /// The generation this handle searches now (`f` runs under its read
    /// lock: a merge's switch waits for it).
    pub fn with_base<R>(&self, f: impl FnOnce(&Index) -> R) -> R {
        f(&self.read().base)
    }

    /// Every check of a search that needs no query values: the
    /// generation's (its strategy, buffers) at the k it will be asked, and
    /// k against the live set.
    pub fn check_search(&self, params: &SearchParams, nq: usize) -> Result<()> {
        let s = self.read();
        let live = s.base.len() - s.deleted.len() + s.delta.len();
        if params.radius.is_none() && params.k > live {
            return Err(Error::argument(
                "k",
                format!("at most the number of indexed vectors ({live})"),
                params.k,
            ));
        }
        s.base.check_search(&s.base_params(params).0, nq)
    }

    /// Searches the generation and the delta; deleted rows are never
    /// returned. The generation is asked for enough more than `k` that the
    /// deleted rows among its answers leave `k` (expected; see `base_k`).
    /// A range search (`params.radius`) takes the generation's answers
    /// within the radius and every delta point within it (the delta is
    /// small: compared in full).
    pub fn search(&self, queries: &[f32], dim: usize, params: &SearchParams) -> Result<LiveResult> {
        self.maybe_refresh();
        if params.radius.is_some() {
            return self.range_search(queries, dim, params);
        }
        let s = self.read();
        let k = params.k;
        let live = s.base.len() - s.deleted.len() + s.delta.len();
        if k > live {
            return Err(Error::argument(
                "k",
                format!("at most the number of indexed vectors ({live})"),
                k,
            ));
        }
        let (p, delta_l) = s.base_params(params);
        let kb = p.k;
        let base = s.base.search_batch(queries, dim, &p)?;
        let nq = queries.len() / dim.max(1);
        let metric = s.base.metric();
        let rows: Vec<Vec<(f32, i64)>> = (0..nq)
            .into_par_iter()
            .map_init(DeltaScratch::default, |scratch, qi| {
                let mut hits: Vec<(f32, i64)> = Vec::with_capacity(2 * k);
                let (ids, ds) = (
                    &base.ids[qi * kb..(qi + 1) * kb],
                    &base.dists[qi * kb..(qi + 1) * kb],
                );
                for (&row, &d) in ids.iter().zip(ds) {
                    if row != u32::MAX && !s.deleted.contains(row) {
                        hits.push((d, s.base.ids().map_or(row as i64, |m| m.get(row))));
                    }
                }
                if !s.delta.is_empty() {
                    let q = prepare(&queries[qi * dim..(qi + 1) * dim], metric);
                    for (d, row) in s.delta.search(&q, k, delta_l, scratch) {
                        hits.push((reported_distance(metric, d), s.delta.id(row)));
                    }
                }
                nearest(hits, k)
            })
            .collect();
        Ok(LiveResult::of(k, rows, base))
    }
}

impl LiveIndex {
    fn range_search(
        &self,
        queries: &[f32],
        dim: usize,
        params: &SearchParams,
    ) -> Result<LiveResult> {
        let s = self.read();
        let base = s.base.search_batch(queries, dim, params)?;
        let metric = s.base.metric();
        let radius = params.radius.expect("a range search");
        let ranges: Vec<Vec<(i64, f32)>> = base
            .ranges
            .par_iter()
            .enumerate()
            .map(|(qi, found)| {
                let mut hits: Vec<(i64, f32)> = found
                    .iter()
                    .filter(|(row, _)| !s.deleted.contains(*row))
                    .map(|&(row, d)| (s.base.ids().map_or(row as i64, |m| m.get(row)), d))
                    .collect();
                if !s.delta.is_empty() {
                    let q = prepare(&queries[qi * dim..(qi + 1) * dim], metric);
                    for row in (0..s.delta.rows() as u32).filter(|&r| !s.delta.is_removed(r)) {
                        let d = reported_distance(metric, s.delta.distance(&q, row));
                        if d <= radius {
                            hits.push((s.delta.id(row), d));
                        }
                    }
                }
                hits.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
                hits
            })
            .collect();
        Ok(LiveResult {
            k: 0,
            ids: vec![],
            dists: vec![],
            ranges,
            base,
        })
    }
}

/// The `k` nearest of `hits` (distance, id), ties by id.
fn nearest(mut hits: Vec<(f32, i64)>, k: usize) -> Vec<(f32, i64)> {
    hits.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    hits.truncate(k);
    hits
}

impl LiveResult {
    /// Each query's hits, `k` slots a query (padded with -1 and infinity).
    fn of(k: usize, rows: Vec<Vec<(f32, i64)>>, base: BatchResult) -> LiveResult {
        let nq = rows.len();
        let mut out = LiveResult {
            k,
            ids: vec![NO_ID; nq * k],
            dists: vec![f32::INFINITY; nq * k],
            ranges: vec![],
            base,
        };
        for (qi, hits) in rows.into_iter().enumerate() {
            for (j, (d, id)) in hits.into_iter().enumerate() {
                out.ids[qi * k + j] = id;
                out.dists[qi * k + j] = d;
            }
        }
        out
    }
}

/// The (device, inode) of `dir`, which a publish changes.
fn dir_id(dir: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(dir).ok().map(|m| (m.dev(), m.ino()))
}

/// The query as the delta stores vectors (normalised for cosine).
fn prepare(q: &[f32], metric: crate::data::Metric) -> Vec<f32> {
    let mut q = q.to_vec();
    if metric == crate::data::Metric::Cosine {
        crate::data::normalize_f32(&mut q);
    }
    q
}

/// Answers to ask the generation for so that, with `deleted` of its `n`
/// rows deleted, `k` live ones remain: k / (1 - f) for a deleted share f,
/// plus two standard deviations of the deleted count among them, plus 2.
pub fn base_k(k: usize, deleted: usize, n: usize) -> usize {
    if deleted == 0 || n == 0 {
        return k.min(n.max(1));
    }
    let f = (deleted as f64 / n as f64).min(0.99);
    let want = k as f64 / (1.0 - f);
    let spread = 2.0 * (want * f * (1.0 - f)).sqrt();
    ((want + spread).ceil() as usize + 2).min(n)
}

#[cfg(test)]
mod tests {
    use super::base_k;

    #[test]
    fn base_k_leaves_k_live_answers() {
        assert_eq!(base_k(10, 0, 1000), 10);
        assert_eq!(base_k(10, 0, 4), 4);
        // 5% deleted: 10/0.95 = 10.5, +2 sd (1.4) +2 → 14.
        assert_eq!(base_k(10, 50, 1000), 14);
        assert!(base_k(10, 500, 1000) >= 20);
        assert_eq!(base_k(10, 999, 1000), 1000);
    }
}
