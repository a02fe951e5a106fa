//! The memory planner's second decision, made at build (Gorgeous §4.1 ②):
//! whether the navigation graph earns its bytes. "We profile whether the
//! navigation index improves performance by running the sampled query set
//! Q'. If it does not improve performance, the navigation index is
//! disabled." Sample queries run the two-stage search's first stage in RAM
//! (the build holds every list and the PQ codes) from the medoid and from
//! the navigation graph's starts, and each way is costed by the work a
//! query does there, in units of one PQ estimate:
//!
//! - its PQ estimates;
//! - the navigation graph's own f32 distances (each worth
//!   [`f32_distance_in_estimates`]): with its default degree and list the
//!   graph's search visits ~40% of a 0.5% sample, ~230 distances a query
//!   at 117k rows;
//! - its expansions whose list the graph cache does not hold, each a read
//!   worth [`READ_IN_ESTIMATES`] (the planned share of lists not cached
//!   stands for the chance).
//!
//! The graph is kept if it saves at least [`MIN_GAIN`] of that cost (its
//! own bytes are not charged: given to the graph cache they would hold ~2%
//! more of the lists at 96-d). Where the plan caches every list, expansions
//! are RAM work and the estimates the graph saves must pay for its
//! distances: on wordnet-minilm (384-d, 128-byte PQ, every list cached) the
//! graph saved 2.1 of 27.4 expansions and 126 of 1,272 estimates a query at
//! L = 30, but gorgeous-pipe at 1 × 1 through RAM took 200 µs a query with
//! it and 171 without (same reads, R@10 0.951 against 0.954), so it is
//! dropped; on its 96-d PCA (18% of the lists cached) it saved 4.9 of 38.4
//! reads a query and is kept.

use crate::entry::NavGraph;
use crate::quant::{Quantizer, QueryTable};
use crate::util::candidates::CandidateList;
use crate::util::rng::Rng;
use crate::util::visited::VisitedSet;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// The share of the search stage's cost the navigation graph must save to
/// be kept.
pub const MIN_GAIN: f64 = 0.05;
/// Sample queries (rows of the data).
const QUERIES: usize = 200;
/// A read of a list the graph cache does not hold, in PQ estimates: an NVMe
/// read's latency at depth 1 (~80-100 µs) against ~45 ns an estimate of 128
/// bytes. The order matters, not the digit: where lists are read, the reads
/// the graph saves decide, as in the paper; only where every list is cached
/// does its CPU.
pub const READ_IN_ESTIMATES: f64 = 2000.0;

/// What one f32 distance over `dim` components costs in PQ estimates of
/// `code_bytes` bytes. Measured with the AVX-512 kernels: ~0.1 ns a
/// component (34-40 ns at 384-d, 76-93 ns at 768-d) against ~0.4 ns a code
/// byte (12-16 ns at 32 bytes, 50-70 ns at 128), so dim / (4 x bytes).
pub fn f32_distance_in_estimates(dim: usize, code_bytes: usize) -> f64 {
    dim as f64 / (4.0 * code_bytes.max(1) as f64)
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NavPlan {
    pub queries: usize,
    /// Candidate list size of the simulated search stage.
    pub complexity: usize,
    /// Mean expansions a query, starting at the medoid / at the graph's
    /// starts.
    pub expansions_from_medoid: f64,
    pub expansions_from_nav: f64,
    /// Mean PQ estimates a query, each way (plans before the cost model
    /// did not record them: 0).
    #[serde(default)]
    pub estimates_from_medoid: f64,
    #[serde(default)]
    pub estimates_from_nav: f64,
    /// Mean f32 distances of the navigation graph's own search a query.
    #[serde(default)]
    pub nav_distances: f64,
    /// Share of the lists the plan's graph cache holds.
    #[serde(default)]
    pub graph_share: f64,
    /// The cost each way, in PQ estimates (module docs).
    #[serde(default)]
    pub cost_from_medoid: f64,
    #[serde(default)]
    pub cost_from_nav: f64,
    pub kept: bool,
}

/// What the build holds that the simulated search stage runs on.
pub struct InRam<'a> {
    pub lists: &'a [Vec<u32>],
    pub medoid: u32,
    pub pq: &'a dyn Quantizer,
    /// The f32 view of the data (normalised for cosine), `dim` wide.
    pub data: &'a [f32],
    pub dim: usize,
    /// Share of the lists the graph cache will hold (0..=1).
    pub graph_share: f64,
}

/// Per-query means of one way of starting.
#[derive(Default)]
struct Sampled {
    expansions: f64,
    estimates: f64,
    nav_distances: f64,
}

/// Runs the sample queries both ways, the graph's search with list size
/// `nav_complexity` (the search's default) and the search stage with
/// `complexity`, and decides.
pub fn decide(
    g: &InRam,
    nav: &NavGraph,
    complexity: usize,
    nav_complexity: usize,
    seed: u64,
) -> NavPlan {
    let n = g.lists.len();
    let dim = g.dim;
    let ids = Rng::new(seed ^ 0x4E41_5650).sample(n, QUERIES.min(n));
    let sample = |from_nav: bool| -> Sampled {
        let sums = ids
            .par_iter()
            .map(|&i| {
                let q = &g.data[i * dim..(i + 1) * dim];
                let mut starts = Vec::new();
                let distances = if from_nav {
                    nav.starts_counted(q, nav_complexity, &mut starts)
                } else {
                    starts.push(g.medoid);
                    0
                };
                let mut expansions = 0;
                let estimates =
                    search_stage(g.lists, g.pq, q, &starts, complexity, |_| expansions += 1);
                (expansions, estimates, distances)
            })
            .reduce(|| (0, 0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2));
        let per = |x: usize| x as f64 / ids.len().max(1) as f64;
        Sampled {
            expansions: per(sums.0),
            estimates: per(sums.1),
            nav_distances: per(sums.2),
        }
    };
    let (medoid, from_nav) = (sample(false), sample(true));
    let share = g.graph_share.clamp(0.0, 1.0);
    let distance = f32_distance_in_estimates(dim, g.pq.bytes_per_vector());
    let cost = |s: &Sampled| {
        s.estimates + s.nav_distances * distance + s.expansions * (1.0 - share) * READ_IN_ESTIMATES
    };
    let (cost_from_medoid, cost_from_nav) = (cost(&medoid), cost(&from_nav));
    NavPlan {
        queries: ids.len(),
        complexity,
        expansions_from_medoid: medoid.expansions,
        expansions_from_nav: from_nav.expansions,
        estimates_from_medoid: medoid.estimates,
        estimates_from_nav: from_nav.estimates,
        nav_distances: from_nav.nav_distances,
        graph_share: share,
        cost_from_medoid,
        cost_from_nav,
        kept: cost_from_nav <= (1.0 - MIN_GAIN) * cost_from_medoid,
    }
}

/// A greedy search on estimates with list size `complexity` from `starts`
/// until every listed candidate is expanded (the two-stage search's first
/// stage with every list in RAM), calling `expanded` for each node expanded;
/// returns the estimates it made.
pub fn search_stage(
    lists: &[Vec<u32>],
    pq: &dyn Quantizer,
    query: &[f32],
    starts: &[u32],
    complexity: usize,
    expanded: impl FnMut(u32),
) -> usize {
    let mut table = QueryTable::default();
    pq.prepare(query, &mut table);
    let mut estimates = 0;
    search_stage_by(
        lists,
        |ids, out| {
            estimates += ids.len();
            pq.estimate_many(&table, ids, out)
        },
        starts,
        complexity,
        expanded,
    );
    estimates
}

/// [`search_stage`] ranking by `distances` (ids in, one distance each out):
/// PQ estimates, or exact distances where the build has no codes (laser).
pub fn search_stage_by(
    lists: &[Vec<u32>],
    mut distances: impl FnMut(&[u32], &mut [f32]),
    starts: &[u32],
    complexity: usize,
    mut expanded: impl FnMut(u32),
) {
    let mut list = CandidateList::new(complexity);
    let mut visited = VisitedSet::with_capacity(complexity * 64);
    let (mut fresh, mut est) = (Vec::new(), Vec::new());
    fresh.extend(starts.iter().copied().filter(|&s| visited.insert(s)));
    loop {
        est.resize(fresh.len(), 0.0);
        distances(&fresh, &mut est);
        for (&v, &d) in fresh.iter().zip(&est) {
            list.insert(v, d);
        }
        let Some(c) = list.pop_closest_unexpanded() else {
            return;
        };
        expanded(c.id);
        fresh.clear();
        fresh.extend(
            lists[c.id as usize]
                .iter()
                .copied()
                .filter(|&v| visited.insert(v)),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Metric;
    use crate::quant::PqQuantizer;

    /// A ring of 600 nodes whose lists link near neighbours, its PQ
    /// quantizer and a navigation graph over 10% of it.
    fn setup() -> (Vec<f32>, Vec<Vec<u32>>, PqQuantizer, NavGraph) {
        let (n, dim) = (600, 8);
        let mut rng = Rng::new(3);
        let data: Vec<f32> = (0..n)
            .flat_map(|i| {
                let a = i as f32 / n as f32 * std::f32::consts::TAU;
                let mut v = vec![10.0 * a.cos(), 10.0 * a.sin()];
                v.extend((2..dim).map(|_| 0.1 * rng.normal()));
                v
            })
            .collect();
        let lists = (0..n)
            .map(|i| {
                [1, 2, 3, n - 1, n - 2, n - 3]
                    .map(|k| ((i + k) % n) as u32)
                    .to_vec()
            })
            .collect();
        let pq = PqQuantizer::fit_l2(&data, dim, 4, 4);
        let nav = NavGraph::build(&data, dim, Metric::L2, 0.1, 8, 1);
        (data, lists, pq, nav)
    }

    #[test]
    fn the_cost_counts_estimates_the_graphs_distances_and_uncached_expansions() {
        let (data, lists, pq, nav) = setup();
        let plan = |graph_share: f64| {
            let g = InRam {
                lists: &lists,
                medoid: 0,
                pq: &pq,
                data: &data,
                dim: 8,
                graph_share,
            };
            decide(&g, &nav, 16, 10, 5)
        };
        let (cached, uncached) = (plan(1.0), plan(0.0));
        // Deterministic, and the simulated searches do not depend on the
        // share: only their costing does.
        assert_eq!(plan(1.0), cached);
        assert_eq!(cached.expansions_from_nav, uncached.expansions_from_nav);
        assert_eq!(cached.estimates_from_medoid, uncached.estimates_from_medoid);
        // A ring searched from node 0 is walked around: the graph's starts
        // save most of the walk, and its search costs distances of its own.
        assert!(cached.expansions_from_nav < 0.5 * cached.expansions_from_medoid);
        assert!(cached.nav_distances >= 1.0);
        assert!(cached.estimates_from_nav >= cached.expansions_from_nav);
        let distance = f32_distance_in_estimates(8, 4);
        assert_eq!(distance, 0.5);
        for p in [&cached, &uncached] {
            let miss = (1.0 - p.graph_share) * READ_IN_ESTIMATES;
            let nav =
                p.estimates_from_nav + p.nav_distances * distance + p.expansions_from_nav * miss;
            let medoid = p.estimates_from_medoid + p.expansions_from_medoid * miss;
            assert!((p.cost_from_nav - nav).abs() < 1e-9 * nav);
            assert!((p.cost_from_medoid - medoid).abs() < 1e-9 * medoid);
            assert_eq!(
                p.kept,
                p.cost_from_nav <= (1.0 - MIN_GAIN) * p.cost_from_medoid
            );
        }
        // Where every list is read, the saved expansions decide.
        assert!(uncached.kept);
        assert!(uncached.cost_from_nav < 0.5 * uncached.cost_from_medoid);
    }
}
