//! Which nodes' adjacency lists the graph cache holds first (the order
//! `graph.bin` is written in, `memory::adjacency_cache`). Ranked at build,
//! where the vectors are at hand:
//!
//! - `nav` (Gorgeous §4.1, the default): by distance to the nearest node
//!   of the navigation graph. Searches start there, so nodes near those
//!   starts are the likeliest to be visited.
//! - `indegree`: by in-degree, most first (AlayaLaser's cache rule): nodes
//!   many lists point at are reached from many places.
//! - `bfs`: breadth-first from the medoid (DiskANN's node cache rule), what
//!   `nav` falls back to when the index has no navigation graph.
//! - `visits`: by how often sample queries (a share of the rows,
//!   `BuildParams::visits_sample`, at least 1,000) expand each node in the
//!   search stage run in RAM, most first, the nodes no sample reached in
//!   BFS order (Gorgeous §4.1 names visit frequency as the alternative to
//!   its rule; OctopusANN §4.1 its visit-frequency cache).

use crate::data::Metric;
use crate::entry::{EntryPoints, NavGraph};
use crate::memory::nav_plan::{search_stage, search_stage_by};
use crate::quant::Quantizer;
use crate::util::rng::Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CacheRank {
    #[default]
    Nav,
    Indegree,
    Bfs,
    Visits,
}

impl std::fmt::Display for CacheRank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CacheRank::Nav => "nav",
            CacheRank::Indegree => "indegree",
            CacheRank::Bfs => "bfs",
            CacheRank::Visits => "visits",
        })
    }
}

impl std::str::FromStr for CacheRank {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "nav" => Ok(CacheRank::Nav),
            "indegree" => Ok(CacheRank::Indegree),
            "bfs" => Ok(CacheRank::Bfs),
            "visits" => Ok(CacheRank::Visits),
            _ => Err(format!(
                "expected nav, indegree, bfs or visits, found {s:?}"
            )),
        }
    }
}

/// Search list size of the navigation-graph search that finds each node's
/// nearest navigation node (the same as queries use by default).
const NAV_COMPLEXITY: usize = 16;

/// What the build holds that a ranking may use.
pub struct RankInput<'a> {
    pub lists: &'a [Vec<u32>],
    pub medoid: u32,
    /// The f32 view the build works on (normalised for cosine), `dim` wide.
    pub data: &'a [f32],
    pub dim: usize,
    pub nav: Option<&'a NavGraph>,
    /// Where searches start when the index has no navigation graph (laser's
    /// cluster entries, AlayaLaser §4.1); `None`: the medoid.
    pub entry: Option<&'a dyn EntryPoints>,
    /// The PQ codes `visits` runs its sample queries on; without them
    /// (laser keeps none) they rank by exact distances to `data`.
    pub pq: Option<&'a dyn Quantizer>,
    /// The index's metric, for exact distances to `data`.
    pub metric: Metric,
    pub seed: u64,
    /// `visits`: the share of the rows searched as sample queries.
    pub visits_sample: f32,
}

/// Every node id, best first, by `rank` (runs on the caller's pool).
pub fn rank(rank: CacheRank, r: &RankInput) -> Vec<u32> {
    let (lists, dim) = (r.lists, r.dim);
    match (rank, r.nav) {
        (CacheRank::Nav, Some(nav)) => by_key(lists.len(), |id| {
            nav.nearest_distance(&r.data[id * dim..(id + 1) * dim], NAV_COMPLEXITY)
        }),
        (CacheRank::Indegree, _) => super::cache_order::by_indegree(lists),
        (CacheRank::Visits, _) => by_visits(r),
        (CacheRank::Nav, None) | (CacheRank::Bfs, _) => bfs(lists, r.medoid),
    }
}

/// Sample queries' search stages in RAM, nodes by times expanded.
fn by_visits(r: &RankInput) -> Vec<u32> {
    let n = r.lists.len();
    let queries = Rng::new(r.seed ^ 0x5649_5354).sample(n, visit_queries(n, r.visits_sample));
    let counts: Vec<u32> = queries
        .par_iter()
        .fold(
            || vec![0u32; n],
            |mut c, &i| {
                let q = &r.data[i * r.dim..(i + 1) * r.dim];
                let mut starts = Vec::new();
                match (r.nav, r.entry) {
                    (Some(nav), _) => nav.starts(q, NAV_COMPLEXITY, &mut starts),
                    (None, Some(entry)) => entry.starts(q, NAV_COMPLEXITY, &mut starts),
                    (None, None) => starts.push(r.medoid),
                }
                let count = |v: u32| c[v as usize] += 1;
                match r.pq {
                    Some(pq) => {
                        search_stage(r.lists, pq, q, &starts, VISITS_COMPLEXITY, count);
                    }
                    None => {
                        let exact = |ids: &[u32], out: &mut [f32]| {
                            for (o, &v) in out.iter_mut().zip(ids) {
                                let x = &r.data[v as usize * r.dim..(v as usize + 1) * r.dim];
                                *o = r.metric.distance_f32(q, x);
                            }
                        };
                        search_stage_by(r.lists, exact, &starts, VISITS_COMPLEXITY, count);
                    }
                }
                c
            },
        )
        .reduce(
            || vec![0u32; n],
            |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                a
            },
        );
    let mut place = vec![0u32; n];
    for (p, &v) in bfs(r.lists, r.medoid).iter().enumerate() {
        place[v as usize] = p as u32;
    }
    let mut ids: Vec<u32> = (0..n as u32).collect();
    ids.par_sort_unstable_by_key(|&v| (std::cmp::Reverse(counts[v as usize]), place[v as usize]));
    ids
}

/// List size of the sample queries' search stage (`visits`).
const VISITS_COMPLEXITY: usize = 64;

/// Sample queries of the `visits` rank: `share` of the `n` rows, at least
/// 1,000 and at most `MAX_VISIT_QUERIES` (and never more than the rows).
///
/// The counts are what the cache is ranked by, and a cache of a fifth of
/// the records needs many expansions per cached node to rank them: with
/// 1% of wordnet-minilm's rows (~90k expansions for ~15k cached nodes)
/// octopus hit its cache 8.9 times a query at L = 40 and read 30.6
/// blocks; with 10%, 10.3 hits and 29.4 reads at a higher recall, ~1 s of
/// build on 2 threads (25%: 29.2 reads, 3 s).
pub fn visit_queries(n: usize, share: f32) -> usize {
    ((n as f64 * share.clamp(0.0, 1.0) as f64) as usize)
        .clamp(1000, MAX_VISIT_QUERIES)
        .min(n)
}

/// Cap on the `visits` rank's sample queries: about a minute of in-RAM
/// searches on 2 threads.
pub const MAX_VISIT_QUERIES: usize = 1_000_000;

/// Ids sorted by `key` (smallest first, ties by id).
fn by_key(n: usize, key: impl Fn(usize) -> f32 + Sync) -> Vec<u32> {
    let keys: Vec<f32> = (0..n).into_par_iter().map(&key).collect();
    let mut ids: Vec<u32> = (0..n as u32).collect();
    ids.par_sort_unstable_by(|&a, &b| {
        keys[a as usize]
            .total_cmp(&keys[b as usize])
            .then(a.cmp(&b))
    });
    ids
}

/// Breadth-first order from `start`; nodes it cannot reach follow in id order.
fn bfs(lists: &[Vec<u32>], start: u32) -> Vec<u32> {
    let n = lists.len();
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    if n == 0 {
        return order;
    }
    seen[start as usize] = true;
    order.push(start);
    let mut i = 0;
    while i < order.len() {
        for &v in &lists[order[i] as usize] {
            if !std::mem::replace(&mut seen[v as usize], true) {
                order.push(v);
            }
        }
        i += 1;
    }
    order.extend((0..n as u32).filter(|&v| !seen[v as usize]));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pq_of(data: &[f32], dim: usize) -> crate::quant::PqQuantizer {
        crate::quant::PqQuantizer::fit_l2(data, dim, dim, 3)
    }

    fn is_permutation(order: &[u32], n: usize) -> bool {
        let mut s = order.to_vec();
        s.sort_unstable();
        s == (0..n as u32).collect::<Vec<_>>()
    }

    #[test]
    fn every_rank_orders_every_node_once() {
        let n = 200;
        let dim = 4;
        let mut rng = crate::util::rng::Rng::new(7);
        let data: Vec<f32> = (0..n * dim).map(|_| rng.normal()).collect();
        let lists: Vec<Vec<u32>> = (0..n)
            .map(|i| (1..4).map(|k| ((i * 7 + k * 13) % n) as u32).collect())
            .collect();
        let nav = NavGraph::build(&data, dim, Metric::L2, 0.1, 8, 1);
        let pq = pq_of(&data, dim);
        let input = RankInput {
            lists: &lists,
            medoid: 0,
            data: &data,
            dim,
            nav: Some(&nav),
            entry: None,
            pq: Some(&pq),
            metric: Metric::L2,
            seed: 1,
            visits_sample: 0.1,
        };
        for r in [
            CacheRank::Nav,
            CacheRank::Indegree,
            CacheRank::Bfs,
            CacheRank::Visits,
        ] {
            let order = rank(r, &input);
            assert!(is_permutation(&order, n), "{r}");
        }
        let no_nav = RankInput {
            medoid: 5,
            nav: None,
            ..input
        };
        assert_eq!(rank(CacheRank::Bfs, &no_nav)[0], 5);
        // The medoid is every sample's first expansion without a nav graph.
        assert_eq!(rank(CacheRank::Visits, &no_nav)[0], 5);
    }

    #[test]
    fn nav_rank_puts_the_navigation_nodes_first_and_indegree_the_most_linked() {
        let n = 300;
        let dim = 3;
        let mut rng = crate::util::rng::Rng::new(3);
        let data: Vec<f32> = (0..n * dim).map(|_| rng.normal()).collect();
        let lists: Vec<Vec<u32>> = (0..n).map(|i| vec![((i + 1) % n) as u32, 17]).collect();
        let nav = NavGraph::build(&data, dim, Metric::L2, 0.05, 8, 1);
        let pq = pq_of(&data, dim);
        let input = RankInput {
            lists: &lists,
            medoid: 0,
            data: &data,
            dim,
            nav: Some(&nav),
            entry: None,
            pq: Some(&pq),
            metric: Metric::L2,
            seed: 1,
            visits_sample: 0.1,
        };
        let order = rank(CacheRank::Nav, &input);
        // A navigation node is at distance 0 from itself.
        let first = order[0] as usize;
        assert_eq!(
            nav.nearest_distance(&data[first * dim..(first + 1) * dim], 16),
            0.0
        );
        assert_eq!(rank(CacheRank::Indegree, &input)[0], 17);
    }
}
