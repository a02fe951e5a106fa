//! A batch of queries over worker threads, each owning one block reader and
//! running many queries at once (`scheduler::run_worker`), for any
//! [`Strategy`]. What the index holds comes in the [`SearchContext`]; which
//! strategy runs is the caller's one choice.

use super::query::{reported_distance, PreparedQuery};
use super::strategy::Strategy;
use super::{run_worker, QueryState, QueryStats, SearchContext};
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use stratavec_io::BlockReader;

/// Results of a batch: `k` ids and distances per query, row-major; a query
/// with fewer than `k` results (or a failed one) is padded with `u32::MAX`
/// and `f32::INFINITY`.
#[derive(Clone, Debug, Default)]
pub struct BatchResult {
    pub k: usize,
    pub ids: Vec<u32>,
    pub dists: Vec<f32>,
    pub stats: Vec<QueryStats>,
    /// Range search (`SearchParams::radius`): each query's (id, distance)
    /// within the radius, nearest first; empty for k-NN batches.
    pub ranges: Vec<Vec<(u32, f32)>>,
    /// Per query: the error that failed it, if any.
    pub errors: Vec<Option<String>>,
    pub wall_s: f64,
    /// `/proc/self/io` read_bytes grown during the batch (None off Linux).
    pub proc_read_bytes: Option<u64>,
    pub io_backend: String,
    /// Seconds the workers spent blocked on I/O, summed over workers.
    pub io_wait_s: f64,
}

impl BatchResult {
    pub fn failed(&self) -> usize {
        self.errors.iter().filter(|e| e.is_some()).count()
    }

    /// Range search: each query's ids within the radius, nearest first.
    pub fn range_ids(&self) -> Vec<Vec<u32>> {
        self.ranges
            .iter()
            .map(|r| r.iter().map(|e| e.0).collect())
            .collect()
    }

    pub fn total(&self) -> QueryStats {
        let mut t = QueryStats::default();
        for s in &self.stats {
            t += *s;
        }
        t
    }
}

/// One finished query on its way to the batch result: index, (distance,
/// id) list, counters, error.
type Finished = (usize, Vec<(f32, u32)>, QueryStats, Option<String>);

/// What a batch asks of every query.
pub struct BatchShape<'a> {
    /// Row-major queries, `dim` wide, already validated.
    pub queries: &'a [f32],
    pub dim: usize,
    pub k: usize,
    /// Queries each worker keeps in flight.
    pub in_flight: usize,
    /// Range search: keep every result, not only the top k.
    pub ranges: bool,
}

/// Runs every query of `shape` with `strategy`, one worker per reader. Each
/// reader comes back with its worker's I/O wait (or the error that broke
/// the reader), so the caller can pool the healthy ones.
pub fn run_batch<S: Strategy>(
    ctx: &SearchContext,
    strategy: &S,
    readers: Vec<Box<dyn BlockReader>>,
    shape: &BatchShape,
) -> (BatchResult, Vec<WorkerEnd>) {
    let (dim, k) = (shape.dim, shape.k);
    let nq = shape.queries.len() / dim;
    let next = AtomicUsize::new(0);
    let mut out = BatchResult {
        k,
        ids: vec![u32::MAX; nq * k],
        dists: vec![f32::INFINITY; nq * k],
        stats: vec![QueryStats::default(); nq],
        errors: vec![None; nq],
        ranges: if shape.ranges {
            vec![Vec::new(); nq]
        } else {
            Vec::new()
        },
        ..Default::default()
    };
    let shared = Mutex::new(&mut out);
    // Queries a worker claims at once (`Strategy::group`), never so many
    // that a small batch leaves a worker idle.
    let group = strategy
        .group()
        .min(nq.div_ceil(readers.len().max(1)))
        .max(1);
    let ends: Vec<WorkerEnd> = std::thread::scope(|s| {
        let handles: Vec<_> = readers
            .into_iter()
            .map(|mut reader| {
                let (next, shared) = (&next, &shared);
                s.spawn(move || {
                    let io_wait =
                        run_one_worker(ctx, strategy, &mut *reader, shape, group, next, shared);
                    (io_wait, reader)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok((io_wait, reader)) => WorkerEnd {
                    io_wait,
                    reader: Some(reader),
                },
                Err(panic) => {
                    let msg = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "unknown panic".into());
                    WorkerEnd {
                        io_wait: Err(Error::argument(
                            "search worker",
                            "to finish",
                            format!("a panic: {msg}"),
                        )),
                        reader: None,
                    }
                }
            })
            .collect()
    });
    (out, ends)
}

/// How one worker ended: its seconds of I/O wait, or why it broke; and its
/// reader, unless the worker panicked.
pub struct WorkerEnd {
    pub io_wait: Result<f64>,
    pub reader: Option<Box<dyn BlockReader>>,
}

fn run_one_worker<S: Strategy>(
    ctx: &SearchContext,
    strategy: &S,
    reader: &mut dyn BlockReader,
    shape: &BatchShape,
    group: usize,
    next: &AtomicUsize,
    shared: &Mutex<&mut BatchResult>,
) -> Result<f64> {
    let (dim, k) = (shape.dim, shape.k);
    let nq = shape.queries.len() / dim;
    let mut local: Vec<Finished> = Vec::with_capacity(64);
    let flush = |local: &mut Vec<Finished>| {
        let mut o = shared.lock().unwrap_or_else(|p| p.into_inner());
        for (qi, res, st, err) in local.drain(..) {
            if shape.ranges {
                o.ranges[qi] = res
                    .iter()
                    .map(|&(d, id)| (id, reported_distance(ctx.metric, d)))
                    .collect();
            }
            for (j, (d, id)) in res.into_iter().take(k).enumerate() {
                o.ids[qi * k + j] = id;
                o.dists[qi * k + j] = reported_distance(ctx.metric, d);
            }
            o.stats[qi] = st;
            o.errors[qi] = err;
        }
    };
    // Finished states whose buffers the next queries reuse.
    let pool = std::cell::RefCell::new(Vec::<S::State>::new());
    // Queries claimed and started together (`group` of them), handed out
    // one at a time; a query's latency is timed from when it is handed out.
    let ready = std::cell::RefCell::new(std::collections::VecDeque::<(usize, S::State)>::new());
    let mut started = Vec::with_capacity(group);
    let ws = run_worker(
        ctx,
        reader,
        shape.in_flight,
        || {
            let mut ready = ready.borrow_mut();
            if ready.is_empty() {
                let first = next.fetch_add(group, Ordering::Relaxed);
                if first >= nq {
                    return None;
                }
                let claimed = first..(first + group).min(nq);
                let queries = claimed
                    .clone()
                    .map(|qi| {
                        let q = &shape.queries[qi * dim..(qi + 1) * dim];
                        PreparedQuery::new(q, ctx.dtype, ctx.metric)
                    })
                    .collect();
                strategy.start_group(ctx, queries, &mut pool.borrow_mut(), &mut started);
                ready.extend(claimed.zip(started.drain(..)));
            }
            ready.pop_front()
        },
        |mut done| {
            let mut res = Vec::new();
            if done.error.is_none() {
                strategy.finish(&mut done.state, k, &mut res);
            }
            let st = *done.state.stats();
            local.push((done.index, res, st, done.error));
            if strategy.reusable(&done.state) {
                pool.borrow_mut().push(done.state);
            }
            if local.len() >= 64 {
                flush(&mut local);
            }
        },
    );
    flush(&mut local);
    ws.map(|w| w.io_wait_s).map_err(Error::from)
}
