//! One admitted search, run on a blocking thread: its queries in chunks,
//! with the request's cancel flag, the server's stop flag and the deadline
//! checked between chunks, so a search whose client gave up, whose time ran
//! out or whose server is stopping does not search its remaining queries.
//! (A chunk already started runs to its end: the engine's batch has no
//! cancellation point; a chunk is small enough to end soon.)

use super::stats::Stats;
use crate::search_target::{Answer, Target};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use stratavec::collection::Probe;
use stratavec::index::filtered::FilterWay;
use stratavec::labels::Expr;
use stratavec::SearchParams;

/// How the server splits its threads over searches (see [`Plan::new`]).
#[derive(Clone, Debug)]
pub struct Plan {
    /// The target's search defaults; k, complexity and threads are set per
    /// request and chunk.
    pub params: SearchParams,
    /// Threads one search may use at most.
    pub threads_per_search: usize,
    /// Queries searched between two checks of the flags and the deadline.
    pub chunk: usize,
    /// Test hook (`--chunk-delay-ms`): each chunk waits this long before
    /// searching, so tests can hold a search in flight without load.
    pub chunk_delay: Duration,
}

/// Queries a chunk holds at least: enough for a worker's queries in
/// flight (32 at the default beam) twice over, few enough that a
/// cancelled search stops within a few milliseconds.
pub const MIN_CHUNK: usize = 64;

impl Plan {
    /// `threads` search threads shared by `max_concurrent` searches: each
    /// search gets `threads / max_concurrent` (at least 1). By default
    /// both are the number of CPUs, so each search runs on one thread,
    /// with its queries' reads overlapping in flight, and as many searches
    /// as cores run side by side: requests of few queries (the common
    /// case) gain nothing from more threads, and a big one cannot take
    /// every core from the small ones. `--max-concurrent 1 --threads N`
    /// gives one search at a time all N.
    pub fn new(
        params: SearchParams,
        threads: usize,
        max_concurrent: usize,
        chunk_delay: Duration,
    ) -> Plan {
        let threads_per_search = (threads / max_concurrent.max(1)).max(1);
        let chunk = MIN_CHUNK.max(threads_per_search * params.in_flight.max(1));
        Plan {
            params,
            threads_per_search,
            chunk,
            chunk_delay,
        }
    }

    /// Threads for a chunk of `nq` queries: one per `in_flight` queries, at
    /// most the search's share.
    pub fn threads_for(&self, nq: usize) -> usize {
        nq.div_ceil(self.params.in_flight.max(1))
            .clamp(1, self.threads_per_search)
    }
}

/// What a search is asked.
pub struct Job {
    pub queries: Vec<f32>,
    pub dim: usize,
    /// The plan's parameters with the request's k and complexity.
    pub params: SearchParams,
    pub probe: Option<Probe>,
    /// Filtered queries (issue #56): one parsed filter a query, and the way.
    pub filters: Option<(Arc<Vec<Option<Expr>>>, FilterWay)>,
    /// Set when the request is abandoned or timed out.
    pub cancel: Arc<AtomicBool>,
    /// Set when the server stops after its grace period.
    pub stop_all: Arc<AtomicBool>,
    pub deadline: Instant,
}

pub enum Outcome {
    Done(Box<Answer>),
    /// A flag or the deadline stopped it between chunks.
    Stopped,
    /// The engine refused the batch (not one query: the whole call).
    Failed(anyhow::Error),
}

impl Job {
    fn stopped(&self) -> bool {
        self.cancel.load(Ordering::Acquire)
            || self.stop_all.load(Ordering::Acquire)
            || Instant::now() >= self.deadline
    }
}

/// Searches `job` chunk by chunk, counting each chunk's work in `stats`.
pub fn run(target: &dyn Target, plan: &Plan, job: &Job, stats: &Stats) -> Outcome {
    let (dim, k) = (job.dim, job.params.k);
    let nq = job.queries.len() / dim;
    let mut out = Answer {
        k,
        ids: Vec::with_capacity(nq * k),
        dists: Vec::with_capacity(nq * k),
        errors: Vec::with_capacity(nq),
        ..Answer::default()
    };
    for (c, rows) in job.queries.chunks(plan.chunk * dim).enumerate() {
        if !plan.chunk_delay.is_zero() {
            pause(plan.chunk_delay, job);
        }
        if job.stopped() {
            return Outcome::Stopped;
        }
        let params = SearchParams {
            threads: plan.threads_for(rows.len() / dim),
            ..job.params.clone()
        };
        let answered = match &job.filters {
            Some((filters, way)) => {
                let first = c * plan.chunk;
                let mine = &filters[first..first + rows.len() / dim];
                target.answer_filtered(rows, dim, &params, job.probe.as_ref(), mine, *way)
            }
            None => target.answer(rows, dim, &params, job.probe.as_ref()),
        };
        match answered {
            Ok(a) => {
                stats.chunk(&a);
                append(&mut out, a);
            }
            Err(e) => return Outcome::Failed(e),
        }
    }
    Outcome::Done(Box::new(out))
}

/// The test hook's wait, cut short when the search is stopped.
fn pause(d: Duration, job: &Job) {
    let until = Instant::now() + d;
    while Instant::now() < until && !job.stopped() {
        std::thread::sleep(Duration::from_millis(5).min(until - Instant::now()));
    }
}

fn append(out: &mut Answer, a: Answer) {
    out.ids.extend(a.ids);
    out.dists.extend(a.dists);
    out.errors.extend(a.errors);
    out.totals += a.totals;
    out.wall_s += a.wall_s;
    out.merge_s += a.merge_s;
    out.io_wait_s += a.io_wait_s;
    if out.segment_queries.len() < a.segment_queries.len() {
        out.segment_queries.resize(a.segment_queries.len(), 0);
    }
    for (t, n) in out.segment_queries.iter_mut().zip(a.segment_queries) {
        *t += n;
    }
    out.io_backend = a.io_backend;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_search_gets_its_share_of_the_threads() {
        let params = SearchParams {
            in_flight: 32,
            ..SearchParams::default()
        };
        // The default: as many searches as threads, one thread each.
        let p = Plan::new(params.clone(), 8, 8, Duration::ZERO);
        assert_eq!(
            (p.threads_per_search, p.chunk, p.threads_for(1000)),
            (1, 64, 1)
        );
        // One search at a time takes them all, a thread per 32 queries.
        let p = Plan::new(params, 8, 1, Duration::ZERO);
        assert_eq!((p.threads_per_search, p.chunk), (8, 256));
        assert_eq!(
            (p.threads_for(1), p.threads_for(64), p.threads_for(256)),
            (1, 2, 8)
        );
    }
}
