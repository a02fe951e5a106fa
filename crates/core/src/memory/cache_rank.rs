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

use crate::entry::NavGraph;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CacheRank {
    #[default]
    Nav,
    Indegree,
    Bfs,
}

impl std::fmt::Display for CacheRank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CacheRank::Nav => "nav",
            CacheRank::Indegree => "indegree",
            CacheRank::Bfs => "bfs",
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
            _ => Err(format!("expected nav, indegree or bfs, found {s:?}")),
        }
    }
}

/// Search list size of the navigation-graph search that finds each node's
/// nearest navigation node (the same as queries use by default).
const NAV_COMPLEXITY: usize = 16;

/// Every node id, best first, by `rank` (runs on the caller's pool).
/// `data` is the f32 view the build works on (normalised for cosine).
pub fn rank(
    rank: CacheRank,
    lists: &[Vec<u32>],
    medoid: u32,
    data: &[f32],
    dim: usize,
    nav: Option<&NavGraph>,
) -> Vec<u32> {
    match (rank, nav) {
        (CacheRank::Nav, Some(nav)) => by_key(lists.len(), |id| {
            nav.nearest_distance(&data[id * dim..(id + 1) * dim], NAV_COMPLEXITY)
        }),
        (CacheRank::Indegree, _) => {
            let mut indegree = vec![0u32; lists.len()];
            for l in lists {
                for &v in l {
                    indegree[v as usize] += 1;
                }
            }
            by_key(lists.len(), |id| -(indegree[id] as f32))
        }
        (CacheRank::Nav, None) | (CacheRank::Bfs, _) => bfs(lists, medoid),
    }
}

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
    use crate::data::Metric;

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
        for r in [CacheRank::Nav, CacheRank::Indegree, CacheRank::Bfs] {
            let order = rank(r, &lists, 0, &data, dim, Some(&nav));
            assert!(is_permutation(&order, n), "{r}");
        }
        assert_eq!(rank(CacheRank::Bfs, &lists, 5, &data, dim, None)[0], 5);
    }

    #[test]
    fn nav_rank_puts_the_navigation_nodes_first_and_indegree_the_most_linked() {
        let n = 300;
        let dim = 3;
        let mut rng = crate::util::rng::Rng::new(3);
        let data: Vec<f32> = (0..n * dim).map(|_| rng.normal()).collect();
        let lists: Vec<Vec<u32>> = (0..n).map(|i| vec![((i + 1) % n) as u32, 17]).collect();
        let nav = NavGraph::build(&data, dim, Metric::L2, 0.05, 8, 1);
        let order = rank(CacheRank::Nav, &lists, 0, &data, dim, Some(&nav));
        // A navigation node is at distance 0 from itself.
        let first = order[0] as usize;
        assert_eq!(
            nav.nearest_distance(&data[first * dim..(first + 1) * dim], 16),
            0.0
        );
        assert_eq!(
            rank(CacheRank::Indegree, &lists, 0, &data, dim, None)[0],
            17
        );
    }
}
