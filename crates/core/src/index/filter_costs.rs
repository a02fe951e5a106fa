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
use roaring::RoaringBitmap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// A read as one search thread pays for it, nanoseconds.
pub const READ_NS: f64 = 20_000.0;

/// How much longer a list in-search needs than the pre-filter's re-rank
/// count to reach the same recall, beyond [`refine_share`]. The
/// pre-filter ranks *every* match on its code; the in-graph search ranks
/// the matches near its path, listing only matches where it can look two
/// hops through RAM (`search::acorn`). Measured on wordnet-minilm's
/// filtered queries (20% budget; 34%, 10% and 1% of the rows matching):
/// gorgeous's in-graph search at L 40 reached the recall@10 of its
/// pre-filter at L 16 (0.97-0.98 in each band), 2.5 = 1.25/σ; diskann's,
/// its list grown 4× for the routes it keeps, reached at L 16 what its
/// pre-filter reached at L 40 (0.96), so 1.25 is the cautious one of the
/// two: an in-graph search must be clearly cheaper to be chosen.
pub const IN_SEARCH_RECALL_COST: f64 = 1.25;

/// A two-stage search (Gorgeous §4.2, `search::two_stage`) scores exactly
/// only its best σ·L matches, the pre-filter its top L: for the same
/// exact reads of matches its list must be 1/σ longer, on top of
/// [`IN_SEARCH_RECALL_COST`].
fn refine_share(two_stage: bool, refine_ratio: f32) -> f64 {
    match two_stage {
        true => f64::from(refine_ratio).clamp(0.05, 1.0),
        false => 1.0,
    }
}

/// Queries a way must have run, and model nanoseconds they must have been
/// predicted to take, before its measured time scales its model.
const MIN_RUN_QUERIES: u64 = 32;
const MIN_RUN_MODEL_NS: f64 = 20e6;

/// How far a measured scale may move a way's model. The constants were
/// off by up to 1.5× on wordnet-minilm (the module notes); a batch slowed
/// by another process, or run on cold caches, must not swing the choice
/// further than that.
const SCALE_RANGE: (f64, f64) = (0.5, 2.0);

/// Queries after which a way's measured sums are halved: what the index
/// measured recently counts most. A first pass over a freshly opened
/// index ran 4.7× slower than the same work later (wordnet-minilm,
/// gorgeous: 988 against 4,645 QPS at 12.7 reads a query); summed for
/// good it held auto on the slower way for the rest of the run.
const FORGET_AFTER: f64 = 1024.0;

/// Hops counted before the measured reads a hop replace the prior.
const MIN_HOPS: u64 = 4096;

/// Estimates timed to measure one's cost (a few tens of microseconds).
const TIMED: usize = 8192;

/// What the index measured of its own searches.
#[derive(Debug, Default)]
pub struct Calibration {
    estimate_ns: OnceLock<f64>,
    lookup_ns: OnceLock<f64>,
    reads: AtomicU64,
    hops: AtomicU64,
    /// What the pre-filter's and the in-graph search's sub-batches cost
    /// as measured against what the model predicted for them, by the
    /// filters' selectivity ([`selectivity_class`]).
    pre: [Spent; CLASSES],
    in_search: [Spent; CLASSES],
}

/// Selectivity classes a way's measured cost is kept in: half-decades
/// from 1 down to 10⁻⁵. The model's error is not the same at every
/// selectivity — the pre-filter's scan of 40k scattered codes misses the
/// caches more a code than one of 1k; the in-graph search looks through
/// more failing neighbours the rarer the matches — so each class is
/// corrected by what its own queries measured.
const CLASSES: usize = 10;

/// The class of selectivity `s` (0: half or more of the rows match).
pub fn selectivity_class(s: f64) -> usize {
    ((-2.0 * s.max(1e-12).log10()).floor().max(0.0) as usize).min(CLASSES - 1)
}

/// A way's sub-batches: queries run, model nanoseconds predicted and
/// thread nanoseconds spent, each halved every [`FORGET_AFTER`] queries.
/// The first sub-batch a way runs is not counted (cold caches).
#[derive(Debug, Default)]
struct Spent(Mutex<SpentSums>);

#[derive(Debug, Default, Clone, Copy)]
struct SpentSums {
    warmed: bool,
    queries: f64,
    model_ns: f64,
    spent_ns: f64,
}

impl Spent {
    fn add(&self, queries: usize, model_ns: f64, spent_ns: f64) {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if !std::mem::replace(&mut s.warmed, true) {
            return;
        }
        if s.queries >= FORGET_AFTER {
            s.queries /= 2.0;
            s.model_ns /= 2.0;
            s.spent_ns /= 2.0;
        }
        s.queries += queries as f64;
        s.model_ns += model_ns;
        s.spent_ns += spent_ns;
    }

    /// Spent over predicted, once enough was run; else 1.
    fn scale(&self) -> f64 {
        let s = *self.0.lock().unwrap_or_else(|e| e.into_inner());
        if s.queries < MIN_RUN_QUERIES as f64 || s.model_ns < MIN_RUN_MODEL_NS {
            return 1.0;
        }
        (s.spent_ns / s.model_ns).clamp(SCALE_RANGE.0, SCALE_RANGE.1)
    }
}

/// Which way's measured cost a sub-batch adds to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measured {
    Pre,
    InSearch,
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

    /// Adds a sub-batch of `queries` of one way, predicted to cost
    /// `model_ns` of a search thread, that took `spent_ns` (its wall time
    /// times the threads it ran on).
    /// `class` is the filters' [`selectivity_class`].
    pub fn record_way(
        &self,
        way: Measured,
        class: usize,
        queries: usize,
        model_ns: f64,
        spent_ns: f64,
    ) {
        let c = class.min(CLASSES - 1);
        match way {
            Measured::Pre => self.pre[c].add(queries, model_ns, spent_ns),
            Measured::InSearch => self.in_search[c].add(queries, model_ns, spent_ns),
        }
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
    /// One lookup in a filter's rows (the in-graph filter makes one for
    /// every neighbour it meets, and more for its two-hop look).
    pub lookup_ns: f64,
    /// Reads a hop of the graph search.
    pub reads_per_hop: f64,
    /// Neighbours estimated a hop (the graph's mean degree).
    pub degree: f64,
    /// The share of adjacency lists held in RAM: the in-graph filter looks
    /// through those for matches two hops away (`search::acorn`), and
    /// routes through the others.
    pub held: f64,
    /// The share of its list the search scores exactly (σ of a two-stage
    /// search, else 1).
    pub exact_share: f64,
    /// Measured over predicted thread time of the pre-filter's and the
    /// in-graph search's sub-batches so far on this index, by selectivity
    /// class (1 until enough ran): the model's constants (a read's 20 µs,
    /// a hop's estimates and lookups) are priors, and what the index
    /// measured corrects them.
    pub pre_scale: [f64; CLASSES],
    pub in_scale: [f64; CLASSES],
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
    pub fn of(
        index: &Index,
        params: &SearchParams,
        query: &[f32],
        rows: &RoaringBitmap,
    ) -> FilterCosts {
        let ranks = index.plan.codes.in_ram();
        let estimate_ns = match ranks {
            true => *index
                .calibration
                .estimate_ns
                .get_or_init(|| time_estimates(index, query)),
            false => 0.0,
        };
        let lookup_ns = *index
            .calibration
            .lookup_ns
            .get_or_init(|| time_lookups(index.len(), rows));
        let n = index.len().max(1);
        let held = (index.cached_lists() as f64 / n as f64).clamp(0.0, 1.0);
        let not_held = 1.0 - held;
        FilterCosts {
            held,
            read_ns: READ_NS,
            estimate_ns,
            lookup_ns,
            reads_per_hop: index.calibration.reads_per_hop(not_held.max(0.1)),
            degree: index.manifest.graph_mean_degree.max(1.0),
            exact_share: refine_share(params.two_stage, params.refine_ratio),
            pre_scale: std::array::from_fn(|c| index.calibration.pre[c].scale()),
            in_scale: std::array::from_fn(|c| index.calibration.in_search[c].scale()),
            ranks,
            graph: index.plan.graph(),
        }
    }

    /// The model's costs of the pre-filter and the in-graph search for a
    /// filter of `matches` of `n` rows, each corrected by what its way
    /// measured at that selectivity.
    pub fn scaled(&self, matches: u64, n: usize, rerank: usize, complexity: usize) -> (f64, f64) {
        let s = matches as f64 / n.max(1) as f64;
        let c = selectivity_class(s);
        (
            self.pre(matches, rerank) * self.pre_scale[c],
            self.in_search(complexity, s) * self.in_scale[c],
        )
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

    /// The list an in-graph search needs for the recall of the
    /// pre-filter re-ranking `l` (the module's factors).
    pub fn equal_recall_list(&self, l: usize) -> usize {
        (l as f64 * IN_SEARCH_RECALL_COST / self.exact_share).ceil() as usize
    }

    /// An in-graph search's cost with a list of `complexity` for a filter
    /// of selectivity `s`. A hop reads, estimates its neighbours
    /// and looks each up in the filter; where a list is held in RAM and
    /// most neighbours fail, it looks through up to 1/s of them more for
    /// the matches two hops away (`search::acorn`), and estimates those.
    pub fn in_search(&self, complexity: usize, s: f64) -> f64 {
        let two_hop = match s < 0.5 {
            true => self.held * self.degree * (1.0 / s.max(1e-9)).min(self.degree),
            false => 0.0,
        };
        let hop = self.reads_per_hop * self.read_ns
            + 2.0 * self.degree * self.estimate_ns
            + (self.degree + two_hop) * self.lookup_ns;
        complexity as f64 * hop
    }
}

/// Nanoseconds one lookup in `rows` (a filter's, of an index of `n`)
/// takes: the fastest of three passes over ids spread over the index.
fn time_lookups(n: usize, rows: &RoaringBitmap) -> f64 {
    let step = (n / TIMED).max(1) as u32;
    // A multiplicative hash spreads the ids as a graph's neighbours are.
    let ids: Vec<u32> = (0..TIMED as u32)
        .map(|i| i.wrapping_mul(2_654_435_761) % (n.max(1) as u32) / step * step)
        .collect();
    let mut best = f64::INFINITY;
    let mut hits = 0usize;
    for _ in 0..3 {
        let t = Instant::now();
        hits += ids.iter().filter(|&&id| rows.contains(id)).count();
        best = best.min(t.elapsed().as_nanos() as f64);
    }
    std::hint::black_box(hits);
    (best / ids.len() as f64).max(0.1)
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
    fn a_way_is_rescaled_by_what_it_measured_once_enough_ran() {
        let c = Calibration::default();
        // The first sub-batch warms the caches: not counted.
        c.record_way(Measured::Pre, 1, 500, 30e6, 900e6);
        c.record_way(Measured::InSearch, 1, 500, 30e6, 900e6);
        c.record_way(Measured::Pre, 1, 20, 30e6, 60e6);
        assert_eq!(c.pre[1].scale(), 1.0, "20 queries: still the model");
        c.record_way(Measured::Pre, 1, 20, 30e6, 60e6);
        assert!((c.pre[1].scale() - 2.0).abs() < 1e-9);
        assert_eq!(c.pre[0].scale(), 1.0, "another selectivity");
        assert_eq!(c.in_search[1].scale(), 1.0);
        c.record_way(Measured::InSearch, 1, 100, 50e6, 1e6);
        assert_eq!(c.in_search[1].scale(), SCALE_RANGE.0, "clamped");
        // What ran recently outweighs what ran long ago.
        for _ in 0..8 {
            c.record_way(Measured::Pre, 1, 500, 30e6, 30e6);
        }
        assert!(
            c.pre[1].scale() < 1.1,
            "{} after 4,000 queries at 1×",
            c.pre[1].scale()
        );
        let classes: Vec<usize> = [1.0, 0.5, 0.34, 0.105, 0.0104, 0.001, 0.0]
            .map(selectivity_class)
            .to_vec();
        assert_eq!(classes, [0, 0, 0, 1, 3, 6, CLASSES - 1]);
    }

    #[test]
    fn in_search_pays_for_its_reads_and_estimates() {
        let c = FilterCosts {
            read_ns: 1000.0,
            estimate_ns: 10.0,
            lookup_ns: 5.0,
            reads_per_hop: 0.5,
            degree: 20.0,
            held: 0.0,
            exact_share: 1.0,
            pre_scale: [1.0; CLASSES],
            in_scale: [1.0; CLASSES],
            ranks: true,
            graph: true,
        };
        // A hop: half a read, 2 × 20 estimates, 20 lookups.
        let hop = 500.0 + 400.0 + 100.0;
        assert_eq!(c.in_search(10, 0.1), 10.0 * hop);
        let two_stage = FilterCosts {
            exact_share: refine_share(true, 0.5),
            ..c
        };
        assert_eq!(c.equal_recall_list(40), 50);
        assert_eq!(two_stage.equal_recall_list(40), 100);
        // Lists in RAM: 1/s more lookups a neighbour where most fail
        // (at most the degree), none where most pass.
        let held = FilterCosts { held: 1.0, ..c };
        let looks = |s| (held.in_search(10, s) - c.in_search(10, s)) / (10.0 * 5.0);
        assert!((looks(0.1) - 200.0).abs() < 1e-6);
        assert!((looks(0.001) - 400.0).abs() < 1e-6);
        assert_eq!(looks(0.6), 0.0);
        assert_eq!(c.pre(100, 4), 4000.0 + 1000.0);
        let blind = FilterCosts { ranks: false, ..c };
        assert_eq!(blind.pre(100, 100), 100_000.0);
    }
}
