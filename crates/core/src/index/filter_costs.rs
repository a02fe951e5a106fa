//! What a filtered query's ways cost (issue #56): the cost model the
//! per-query choice (`filtered::plan_query`) compares, measured on the
//! index it serves rather than assumed.
//!
//! - The cost of one estimate from the codes in RAM is timed once per open
//!   index, on the first filtered batch's first query (the pre-filter's
//!   work is matches × this).
//! - Reads a graph hop costs are counted over the index's own graph
//!   searches (plain, in-search, post): 1 where every node is read for its
//!   adjacency list (DiskANN), a fraction where the lists are in RAM
//!   (Gorgeous §4.1 ③ reads only the vectors it re-ranks). Until a few
//!   thousand hops were seen the share of lists not held in RAM stands in.
//! - A read costs [`READ_NS`] of a search thread: the device's sustained
//!   rate shared by the threads (REFERENCE.md's table: ~100k 4 KiB reads/s
//!   at depth; measured ~13–21 µs a read a thread in the filtered bench's
//!   rows, for the pre-filter's and the graph's reads alike).

use super::open::Index;
use crate::search::{QueryStats, SearchParams};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// A read as one search thread pays for it, nanoseconds.
pub const READ_NS: f64 = 20_000.0;

/// How much longer a list in-search needs than the pre-filter's re-rank
/// count to reach the same recall. The pre-filter ranks *every* match on
/// its code; a graph search with a list grown by 1/selectivity sees only
/// the matches near its path, and real filters are often unrelated to
/// (or against) the query's neighbourhood. Measured on wordnet-minilm's
/// filtered queries (benchmarks/results/filtered-384.jsonl, bands of
/// 34% and 10% selectivity): equal recall@10 took in-search 1.6–2.5× the
/// pre-filter's list on diskann and ~10× on gorgeous (whose larger codes
/// rank better). The cost model charges in-search this many times its
/// grown list, so it is chosen only where the pre-filter's scan of the
/// matches is that much dearer: broad filters over large indexes.
pub const IN_SEARCH_RECALL_COST: f64 = 8.0;

/// A two-stage search (Gorgeous §4.2, `search::two_stage`) scores exactly
/// only its top σ·L candidates, the pre-filter its top L matches: for the
/// same exact reads of matches its list must be 1/σ longer, on top of
/// [`IN_SEARCH_RECALL_COST`]. With σ = 0.5 that makes gorgeous's factor
/// 16, where the wordnet-minilm bands measured ~10 (its L 16 pre-filter
/// at R@10 0.979, its in-search 0.976 only at L 160).
fn refine_share(two_stage: bool, refine_ratio: f32) -> f64 {
    match two_stage {
        true => f64::from(refine_ratio).clamp(0.05, 1.0),
        false => 1.0,
    }
}

/// Hops counted before the measured reads a hop replace the prior.
const MIN_HOPS: u64 = 4096;

/// Estimates timed to measure one's cost (a few tens of microseconds).
const TIMED: usize = 8192;

/// What the index measured of its own searches.
#[derive(Debug, Default)]
pub struct Calibration {
    estimate_ns: OnceLock<f64>,
    reads: AtomicU64,
    hops: AtomicU64,
}

impl Calibration {
    /// Counts the reads and hops of one batch of graph searches.
    pub fn record(&self, stats: &[QueryStats]) {
        let (reads, hops) = stats
            .iter()
            .fold((0, 0), |(r, h), s| (r + s.reads, h + s.hops));
        self.reads.fetch_add(reads, Ordering::Relaxed);
        self.hops.fetch_add(hops, Ordering::Relaxed);
    }

    /// Reads a hop, as measured, else `prior`.
    pub fn reads_per_hop(&self, prior: f64) -> f64 {
        let hops = self.hops.load(Ordering::Relaxed);
        match hops >= MIN_HOPS {
            true => self.reads.load(Ordering::Relaxed) as f64 / hops as f64,
            false => prior,
        }
    }
}

/// The costs of one index's ways, in nanoseconds of a search thread.
#[derive(Clone, Copy, Debug)]
pub struct FilterCosts {
    pub read_ns: f64,
    /// One estimate from the codes in RAM.
    pub estimate_ns: f64,
    /// Reads a hop of the graph search.
    pub reads_per_hop: f64,
    /// Neighbours estimated a hop (the graph's mean degree).
    pub degree: f64,
    /// The share of its list the search scores exactly (σ of a two-stage
    /// search, else 1).
    pub exact_share: f64,
    /// Codes of every vector in RAM: a pre-filter ranks its matches by
    /// them and reads only the best; without, it reads every match.
    pub ranks: bool,
    /// A graph layout (a cluster index cannot pre-filter: its rows have no
    /// place of their own to read).
    pub graph: bool,
}

impl FilterCosts {
    /// `index`'s costs for a search of `params`; `query` (one vector)
    /// times the estimate the first time they are asked for.
    pub fn of(index: &Index, params: &SearchParams, query: &[f32]) -> FilterCosts {
        let ranks = index.plan.codes.in_ram();
        let estimate_ns = match ranks {
            true => *index
                .calibration
                .estimate_ns
                .get_or_init(|| time_estimates(index, query)),
            false => 0.0,
        };
        let n = index.len().max(1);
        let not_held = 1.0 - index.cached_lists() as f64 / n as f64;
        FilterCosts {
            read_ns: READ_NS,
            estimate_ns,
            reads_per_hop: index.calibration.reads_per_hop(not_held.max(0.1)),
            degree: index.manifest.graph_mean_degree.max(1.0),
            exact_share: refine_share(params.two_stage, params.refine_ratio),
            ranks,
            graph: index.plan.graph(),
        }
    }

    /// The pre-filter's cost: `matches` estimated (when the codes rank
    /// them) and `rerank` read.
    pub fn pre(&self, matches: u64, rerank: usize) -> f64 {
        let scan = match self.ranks {
            true => matches as f64 * self.estimate_ns,
            false => 0.0,
        };
        rerank as f64 * self.read_ns + scan
    }

    /// A graph search's cost with a list of `complexity`, charged for the
    /// recall it gives up against the pre-filter at the caller's list.
    pub fn in_search(&self, complexity: usize) -> f64 {
        let hop = self.reads_per_hop * self.read_ns + self.degree * self.estimate_ns;
        IN_SEARCH_RECALL_COST / self.exact_share * complexity as f64 * hop
    }
}

/// Nanoseconds one estimate takes on this machine: the fastest of three
/// passes over the first rows (a pass is a few tens of microseconds, so
/// the fastest is the one the scheduler left alone).
fn time_estimates(index: &Index, query: &[f32]) -> f64 {
    let q = index.quantizer();
    let mut table = crate::quant::QueryTable::default();
    q.prepare(query, &mut table);
    let rows: Vec<u32> = (0..index.len().min(TIMED) as u32).collect();
    let mut out = vec![0f32; rows.len()];
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        q.estimate_many(&table, &rows, &mut out);
        best = best.min(t.elapsed().as_nanos() as f64);
    }
    std::hint::black_box(&out);
    (best / rows.len().max(1) as f64).max(0.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hops_replace_the_prior_once_enough_were_seen() {
        let c = Calibration::default();
        assert_eq!(c.reads_per_hop(0.5), 0.5);
        let s = QueryStats {
            reads: 100,
            hops: 1000,
            ..Default::default()
        };
        c.record(&vec![s; 3]);
        assert_eq!(c.reads_per_hop(0.5), 0.5, "3,000 hops: still the prior");
        c.record(&[s, s]);
        assert!((c.reads_per_hop(0.5) - 0.1).abs() < 1e-12);
    }

    #[test]
    fn in_search_pays_for_its_reads_and_estimates() {
        let c = FilterCosts {
            read_ns: 1000.0,
            estimate_ns: 10.0,
            reads_per_hop: 0.5,
            degree: 20.0,
            exact_share: 1.0,
            ranks: true,
            graph: true,
        };
        assert_eq!(c.in_search(10), IN_SEARCH_RECALL_COST * 10.0 * 700.0);
        let two_stage = FilterCosts {
            exact_share: refine_share(true, 0.5),
            ..c
        };
        assert_eq!(two_stage.in_search(10), 2.0 * c.in_search(10));
        assert_eq!(c.pre(100, 4), 4000.0 + 1000.0);
        let blind = FilterCosts { ranks: false, ..c };
        assert_eq!(blind.pre(100, 100), 100_000.0);
    }
}
