//! Vamana graph construction.
//!
//! DiskANN inserts points one at a time from many threads under per-node
//! locks, so its graph depends on thread timing. Here points are inserted in
//! batches (prefix doubling, as ParlayANN does): every point of a batch searches
//! the graph as it stood before the batch, picks its out-neighbours by robust
//! prune, and then the reverse edges of the whole batch are merged per target
//! in id order. Each step is a pure function of the previous graph, so the
//! result is identical for any number of threads, not only for one.

use super::greedy::{search_to_point, Scratch};
use super::medoid::medoid;
use super::prune::{robust_prune, PruneScratch as Occlusion};
use super::space::BuildSpace;
use crate::progress::Stop;
use crate::util::rng::Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::time::Instant;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct VamanaParams {
    /// Maximum out-degree R.
    pub degree: usize,
    /// Search list size during the build (L_build).
    pub complexity: usize,
    /// Pruning slack; the last of DiskANN's progressive alphas.
    pub alpha: f32,
    /// Insertion passes over the data (the Vamana paper uses two, the first
    /// with alpha = 1; DiskANN's current builder uses one).
    pub passes: usize,
    /// Largest insertion batch as a fraction of n (smaller = closer to
    /// one-at-a-time insertion, less parallel).
    pub max_batch_fraction: f32,
    pub seed: u64,
}

impl Default for VamanaParams {
    fn default() -> Self {
        VamanaParams {
            degree: 64,
            complexity: 128,
            alpha: 1.2,
            passes: 1,
            max_batch_fraction: 0.02,
            seed: 42,
        }
    }
}

/// An adjacency-list graph with its entry point.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    pub max_degree: usize,
    pub medoid: u32,
    pub lists: Vec<Vec<u32>>,
}

impl Graph {
    pub fn n(&self) -> usize {
        self.lists.len()
    }

    pub fn mean_degree(&self) -> f64 {
        let total: usize = self.lists.iter().map(|l| l.len()).sum();
        total as f64 / self.n().max(1) as f64
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct BuildStats {
    pub seconds: f64,
    pub batches: usize,
    pub mean_degree: f64,
    /// Edges added to link exact duplicate vectors (`graph::duplicates`).
    #[serde(default)]
    pub duplicate_links: usize,
}

/// Builds the graph. Runs on the caller's rayon pool (the index builder
/// installs one sized by `--threads`). `progress` is called with
/// (points inserted, total insertions) after every batch.
pub fn build(
    space: &BuildSpace,
    params: &VamanaParams,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> (Graph, BuildStats) {
    build_until(space, params, progress, &crate::progress::never).expect("never stopped")
}

/// [`build`] that polls `stop` for every point it inserts (a batch is up
/// to 2% of n: minutes of work on a large set) and returns `None` as soon
/// as it says so.
pub fn build_until(
    space: &BuildSpace,
    params: &VamanaParams,
    progress: &(dyn Fn(usize, usize) + Sync),
    stop: &Stop,
) -> Option<(Graph, BuildStats)> {
    let t0 = Instant::now();
    let n = space.n();
    let r = params.degree;
    let start = medoid(space);
    let mut lists: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut order: Vec<u32> = (0..n as u32).collect();
    Rng::new(params.seed).shuffle(&mut order);
    let max_batch = ((n as f32 * params.max_batch_fraction) as usize).max(1);
    let passes = params.passes.max(1);
    let total = n * passes;
    let mut batches = 0;
    for pass in 0..passes {
        // The Vamana paper's first pass of two uses alpha = 1.
        let alpha = if passes > 1 && pass == 0 {
            1.0
        } else {
            params.alpha
        };
        let mut done = 0;
        let mut size = 1usize;
        while done < n {
            let end = (done + size).min(n);
            insert_batch(
                space,
                &mut lists,
                start,
                &order[done..end],
                params,
                alpha,
                r,
                stop,
            );
            if stop() {
                return None;
            }
            batches += 1;
            done = end;
            // Prefix doubling only in the first pass, when the graph is young.
            size = if pass == 0 {
                (size * 2).min(max_batch)
            } else {
                max_batch
            };
            progress(pass * n + done, total);
        }
    }
    final_prune(space, &mut lists, params.alpha, r);
    if stop() {
        return None;
    }
    let copies = super::duplicates::groups(space);
    let duplicate_links = super::duplicates::link_copies(&mut lists, &copies, r);
    let graph = Graph {
        max_degree: r,
        medoid: start,
        lists,
    };
    let stats = BuildStats {
        seconds: t0.elapsed().as_secs_f64(),
        batches,
        mean_degree: graph.mean_degree(),
        duplicate_links,
    };
    Some((graph, stats))
}

/// DiskANN lets a list grow to 1.3 R before pruning it back to R
/// (`GRAPH_SLACK_FACTOR`): without the slack nearly every reverse edge into a
/// full node costs a prune, which dominates the build.
fn slack_limit(r: usize) -> usize {
    r + r * 3 / 10
}

/// Prunes every list longer than R back to R (the end of the build, when
/// slack is no longer allowed).
pub(crate) fn final_prune(space: &BuildSpace, lists: &mut [Vec<u32>], alpha: f32, r: usize) {
    let over: Vec<u32> = (0..lists.len() as u32)
        .filter(|&i| lists[i as usize].len() > r)
        .collect();
    let frozen: &[Vec<u32>] = lists;
    let updates: Vec<(u32, Vec<u32>)> = over
        .par_iter()
        .map_init(PruneScratch::default, |s, &q| {
            let mut pool: Vec<(f32, u32)> = frozen[q as usize]
                .iter()
                .map(|&x| (space.dist(q, x), x))
                .collect();
            robust_prune(space, q, &mut pool, alpha, r, &mut s.occlusion, &mut s.out);
            (q, s.out.clone())
        })
        .collect();
    for (q, list) in updates {
        lists[q as usize] = list;
    }
}

#[derive(Default)]
struct PruneScratch {
    search: Scratch,
    occlusion: Occlusion,
    out: Vec<u32>,
}

/// Inserts the points `batch` (whose lists are empty or stale) into
/// `lists`: each searches the graph as it stood before the batch and prunes
/// its own out-list, then the reverse edges are merged per target. Also
/// the step of an index's in-memory delta (`update/delta.rs`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn insert_batch(
    space: &BuildSpace,
    lists: &mut [Vec<u32>],
    start: u32,
    batch: &[u32],
    params: &VamanaParams,
    alpha: f32,
    r: usize,
    stop: &Stop,
) {
    // 1. Each point searches the frozen graph and prunes its own list.
    let frozen: &[Vec<u32>] = lists;
    let new_lists: Vec<Vec<u32>> = batch
        .par_iter()
        .map_init(PruneScratch::default, |s, &p| {
            // Stopped: the lists are thrown away, skip the work.
            if stop() {
                return Vec::new();
            }
            search_to_point(space, frozen, start, p, params.complexity, &mut s.search);
            let mut pool = std::mem::take(&mut s.search.expanded);
            for &nb in &frozen[p as usize] {
                pool.push((space.dist(p, nb), nb));
            }
            robust_prune(space, p, &mut pool, alpha, r, &mut s.occlusion, &mut s.out);
            s.search.expanded = pool;
            s.out.clone()
        })
        .collect();
    for (&p, list) in batch.iter().zip(new_lists) {
        lists[p as usize] = list;
    }

    // 2. Reverse edges, grouped by target so each target is updated once.
    let mut reverse: Vec<(u32, u32)> = batch
        .iter()
        .flat_map(|&p| lists[p as usize].iter().map(move |&q| (q, p)))
        .collect();
    reverse.par_sort_unstable();
    let groups: Vec<&[(u32, u32)]> = reverse.chunk_by(|a, b| a.0 == b.0).collect();
    let frozen: &[Vec<u32>] = lists;
    let updates: Vec<(u32, Vec<u32>)> = groups
        .par_iter()
        .map_init(PruneScratch::default, |s, group| {
            let q = group[0].0;
            let mut merged = frozen[q as usize].clone();
            for &(_, p) in group.iter() {
                if !merged.contains(&p) {
                    merged.push(p);
                }
            }
            if merged.len() <= slack_limit(r) {
                return (q, merged);
            }
            let mut pool: Vec<(f32, u32)> = merged.iter().map(|&x| (space.dist(q, x), x)).collect();
            robust_prune(space, q, &mut pool, alpha, r, &mut s.occlusion, &mut s.out);
            (q, s.out.clone())
        })
        .collect();
    for (q, list) in updates {
        lists[q as usize] = list;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Metric;

    fn gaussian(n: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut rng = Rng::new(seed);
        (0..n * dim).map(|_| rng.normal()).collect()
    }

    fn brute_nn(data: &[f32], dim: usize, q: &[f32], k: usize) -> Vec<u32> {
        let mut d: Vec<(f32, u32)> = data
            .chunks_exact(dim)
            .enumerate()
            .map(|(i, r)| (stratavec_simd::scalar::l2_sq_f32(r, q), i as u32))
            .collect();
        d.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        d.into_iter().take(k).map(|x| x.1).collect()
    }

    #[test]
    fn graph_is_searchable_and_bounded() {
        let (n, dim) = (2000, 16);
        let data = gaussian(n, dim, 1);
        let space = BuildSpace::new(&data, dim, Metric::L2);
        let params = VamanaParams {
            degree: 24,
            complexity: 48,
            ..Default::default()
        };
        let (g, stats) = build(&space, &params, &|_, _| {});
        assert!(stats.mean_degree > 8.0);
        for (i, l) in g.lists.iter().enumerate() {
            assert!(l.len() <= 24);
            assert!(!l.contains(&(i as u32)));
        }
        // Greedy search over the built graph finds most true neighbours.
        let queries = gaussian(50, dim, 2);
        let mut hits = 0;
        let mut scratch = Scratch::default();
        for q in queries.chunks_exact(dim) {
            let mut all = data.clone();
            all.extend_from_slice(q);
            let qs = BuildSpace::new(&all, dim, Metric::L2);
            search_to_point(&qs, &g.lists, g.medoid, n as u32, 64, &mut scratch);
            let mut found = scratch.expanded.clone();
            found.sort_by(|a, b| a.0.total_cmp(&b.0));
            let found: Vec<u32> = found.iter().take(10).map(|x| x.1).collect();
            let truth = brute_nn(&data, dim, q, 10);
            hits += truth.iter().filter(|t| found.contains(t)).count();
        }
        let recall = hits as f64 / 500.0;
        assert!(recall > 0.9, "recall {recall}");
    }

    #[test]
    fn identical_for_any_thread_count() {
        let (n, dim) = (1500, 12);
        let data = gaussian(n, dim, 3);
        let space = BuildSpace::new(&data, dim, Metric::L2);
        let params = VamanaParams {
            degree: 16,
            complexity: 32,
            passes: 2,
            ..Default::default()
        };
        let run = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| build(&space, &params, &|_, _| {}).0)
        };
        let a = run(1);
        assert_eq!(a, run(1));
        assert_eq!(a, run(3));
    }

    /// A label-aware build (FilteredVamana's pruning) keeps more edges
    /// between rows of the same label than the plain one: labels given at
    /// random to a share of the rows, so a plain prune, which sees only
    /// distances, links few of them to each other.
    #[test]
    fn a_label_aware_graph_links_each_labels_rows() {
        let (n, dim) = (2000, 16);
        let data = gaussian(n, dim, 4);
        let mut rng = Rng::new(9);
        // Label 0 on ~20% of the rows, label 1 on ~5%.
        let rows: Vec<Vec<u32>> = (0..n)
            .map(|_| {
                let u = rng.unit_f32();
                [(u < 0.2).then_some(0), (u < 0.05).then_some(1)]
                    .into_iter()
                    .flatten()
                    .collect()
            })
            .collect();
        let labels = crate::labels::LabelSets::from_rows(rows.iter().map(|r| r.as_slice()), 2);
        let params = VamanaParams {
            degree: 16,
            complexity: 32,
            ..Default::default()
        };
        let plain = build(
            &BuildSpace::new(&data, dim, Metric::L2),
            &params,
            &|_, _| {},
        )
        .0;
        let aware_space = BuildSpace::new(&data, dim, Metric::L2).with_labels(Some(&labels));
        let aware = build(&aware_space, &params, &|_, _| {}).0;
        let within = |g: &Graph, l: u32| -> usize {
            (0..n)
                .filter(|&i| rows[i].contains(&l))
                .map(|i| {
                    g.lists[i]
                        .iter()
                        .filter(|&&j| rows[j as usize].contains(&l))
                        .count()
                })
                .sum()
        };
        for l in [0, 1] {
            let (p, a) = (within(&plain, l), within(&aware, l));
            assert!(
                a as f64 > 1.5 * p as f64,
                "label {l}: {a} edges within it, plain {p}"
            );
        }
        assert!(aware.lists.iter().all(|x| x.len() <= 16));
    }
}
