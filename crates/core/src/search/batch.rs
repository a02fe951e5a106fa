//! A batch of queries over worker threads, each owning one block reader and
//! running many queries at once (`scheduler::run_worker`), for any
//! [`Strategy`]. What the index holds comes in the [`SearchContext`]; which
//! strategy runs is the caller's one choice.

use super::query::{reported_distance, PreparedQuery};
use super::strategy::Strategy;
use super::{run_worker, QueryState, QueryStats, SearchContext};
use crate::error::{Error, Result};
use roaring::RoaringBitmap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
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
    /// Filtered queries (issue #56): the rows each query may return
    /// (`None` in a slot: any). A query's state gets its set
    /// (`PreparedQuery::allowed`), and its result keeps only those rows —
    /// every exact distance the search made is a candidate, not only its
    /// top k, so a search whose list was grown for the filter returns the
    /// nearest matches it met (strategy (b) of the issue, for every
    /// strategy alike).
    pub allowed: Option<Admit<'a>>,
}

/// A filtered batch's rows (issue #56).
#[derive(Clone, Copy)]
pub struct Admit<'a> {
    /// The rows each query may return (`None` in a slot: any).
    pub rows: &'a [Option<Arc<RoaringBitmap>>],
    /// The search itself lists only matches (ACORN-1's rule,
    /// `search::acorn`); else only its result is filtered (a post-filter).
    pub in_graph: bool,
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
    // one at a time. A query's latency is its share of the group's start
    // (preparing it, its tables, its entry search: work done before its
    // first read, so a caller waits for it) plus the time from when it is
    // handed out to when it retires. Queries wait in `ready` only while
    // every slot is busy, and never in latency mode: a group is no larger
    // than the queries a worker keeps in flight, so one query at a time
    // starts alone, as a caller with one query would.
    let group = group.min(shape.in_flight.max(1));
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
                let t = std::time::Instant::now();
                let queries = claimed
                    .clone()
                    .map(|qi| {
                        let q = &shape.queries[qi * dim..(qi + 1) * dim];
                        let mut p = PreparedQuery::new(q, ctx.dtype, ctx.metric);
                        if let Some(a) = shape.allowed {
                            p.allowed = a.rows[qi].clone();
                            p.in_graph = a.in_graph;
                        }
                        p
                    })
                    .collect();
                strategy.start_group(ctx, queries, &mut pool.borrow_mut(), &mut started);
                let share = t.elapsed().as_secs_f64() * 1e6 / started.len().max(1) as f64;
                for s in &mut started {
                    s.stats().latency_us = share;
                }
                ready.extend(claimed.zip(started.drain(..)));
            }
            ready.pop_front()
        },
        |mut done| {
            let mut res = Vec::new();
            let allowed = shape.allowed.and_then(|a| a.rows[done.index].as_deref());
            match (done.error.is_none(), allowed) {
                (false, _) => {}
                (true, None) => strategy.finish(&mut done.state, k, &mut res),
                (true, Some(rows)) => {
                    strategy.finish(&mut done.state, usize::MAX, &mut res);
                    res.retain(|e| rows.contains(e.1));
                }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::beam::{Beam, BeamSearch};
    use crate::search::testing::{open_in_ram, small_index};
    use crate::search::WidthPolicy;
    use crate::synthetic::SyntheticSpec;
    use crate::{BuildParams, SearchParams};
    use std::time::Duration;

    /// Beam search whose start takes at least `delay` (as an entry search
    /// or a query map would), grouped `group` queries at a time.
    struct SlowStart {
        beam: Beam,
        delay: Duration,
        group: usize,
    }

    impl Strategy for SlowStart {
        type State = BeamSearch;
        fn start(
            &self,
            ctx: &SearchContext,
            q: PreparedQuery,
            r: Option<BeamSearch>,
        ) -> BeamSearch {
            std::thread::sleep(self.delay);
            self.beam.start(ctx, q, r)
        }
        fn finish(&self, state: &mut BeamSearch, k: usize, out: &mut Vec<(f32, u32)>) {
            self.beam.finish(state, k, out)
        }
        fn group(&self) -> usize {
            self.group
        }
    }

    /// A query's latency counts the work done before its first read, and a
    /// query waits for no other's start: one query in flight starts alone
    /// even when its strategy would start several together.
    #[test]
    fn latency_counts_the_start_and_one_query_in_flight_starts_alone() {
        let dim = 8;
        let spec = SyntheticSpec {
            n: 600,
            queries: 6,
            dim,
            clusters: 4,
            seed: 3,
        };
        let params = BuildParams {
            graph_degree: 12,
            complexity: 24,
            pq_bytes: 2,
            pq_sample: 600,
            ..BuildParams::for_profile("diskann")
        };
        let (dir, _, queries) = small_index(&spec, &params);
        let index = open_in_ram(dir.path(), None);
        let sp = SearchParams {
            complexity: 16,
            ..Default::default()
        };
        let ctx = index.context(&sp);
        let delay = Duration::from_millis(5);
        let strategy = SlowStart {
            beam: Beam {
                complexity: 16,
                beam_width: 4,
                width: WidthPolicy::Fixed,
                pipeline: false,
                page_search: None,
                range: None,
            },
            delay,
            group: 3,
        };
        for in_flight in [1, 3] {
            let shape = BatchShape {
                queries: &queries,
                dim,
                k: 5,
                in_flight,
                ranges: false,
                allowed: None,
            };
            let reader = index.take_reader(16).unwrap();
            let t = std::time::Instant::now();
            let (res, ends) = run_batch(&ctx, &strategy, vec![reader], &shape);
            let wall_us = t.elapsed().as_secs_f64() * 1e6;
            assert!(ends.iter().all(|e| e.io_wait.is_ok()));
            assert_eq!(res.failed(), 0);
            let lat: Vec<f64> = res.stats.iter().map(|s| s.latency_us).collect();
            // Each query's own start, or its share of its group's.
            assert!(
                lat.iter().all(|&l| l >= delay.as_secs_f64() * 1e6),
                "in flight {in_flight}: latencies {lat:?} miss the {delay:?} start"
            );
            if in_flight == 1 {
                // One at a time: the latencies add up to the batch (the rest
                // is handing results back), never more.
                let sum: f64 = lat.iter().sum();
                assert!(sum <= wall_us, "{sum} µs over the batch's {wall_us}");
                assert!(sum >= 0.5 * wall_us, "{sum} µs of the batch's {wall_us}");
            }
        }
    }
}
