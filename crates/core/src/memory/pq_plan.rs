//! The memory planner's first decision, made at build (Gorgeous §4.1 ①):
//! how many PQ bytes a vector gets. More bytes rank candidates better, so
//! fewer exact vectors must be read to re-rank (REFERENCE.md: at R@10 0.95
//! on wordnet-minilm, ~34 at 48 bytes, ~15 at 96), but leave less of the
//! budget for the graph cache, whose misses cost reads in the search
//! stage, and for cached vectors. As the paper does, each candidate size is
//! tried on a small sample S' with sample queries Q' drawn from the rest of
//! the data: PQ trained on S', S' ranked by estimate for each query, and the
//! re-rank depth T(m) that reaches R@10 0.95 against S''s exact top 10.
//!
//! The predicted reads of a two-stage query are then
//! `T(m) * [(1 - v(m)) + 2 (1 - g(m))]`: T refinement reads, less the share
//! v of vectors the leftover budget caches, plus ~2T search-stage
//! expansions (L = T / σ at σ = 0.5) missing the graph cache, of which the
//! budget holds the share g. T measured on 1% of the data is smaller than
//! on all of it, but it scales every candidate alike, so the choice holds.

use crate::data::Metric;
use crate::quant::pq::{PqCodebook, PqTrainParams};
use crate::util::rng::Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Rows below which there is too little data to sample (a sample of 1,800
/// and 200 sample queries); smaller sets keep the default PQ bytes.
pub const MIN_ROWS: usize = 2_000;

/// Recall@10 the re-rank depth is measured for.
pub const TARGET_RECALL: f64 = 0.95;
/// Re-rank depths tried; a size that needs more gets the last.
const DEPTHS: &[usize] = &[10, 12, 15, 20, 25, 30, 40, 50, 60, 80, 100, 150, 200];

/// What the build knows when it chooses.
pub struct PqPlanInput<'a> {
    /// The f32 view the build works on (normalised for cosine).
    pub data: &'a [f32],
    pub dim: usize,
    pub metric: Metric,
    /// The budget the index is meant to be opened with.
    pub budget: usize,
    /// What every plan holds besides codes and caches (I/O buffers, the
    /// navigation graph).
    pub fixed: usize,
    /// Bytes of the whole graph cache (every adjacency list).
    pub graph_bytes: usize,
    /// Bytes of one cached vector (node cache slot).
    pub node_bytes: usize,
    pub seed: u64,
}

/// One candidate size, as measured on the sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PqCandidate {
    pub pq_bytes: usize,
    /// Codes of all n vectors, plus the codebook.
    pub code_bytes: usize,
    /// Re-rank depth reaching R@10 0.95 on the sample (`None`: not within
    /// the depths tried).
    pub depth: Option<usize>,
    /// Shares of the graph and of the vectors the rest of the budget holds.
    pub graph_share: f64,
    pub vector_share: f64,
    /// The model's reads a query (relative; only their order matters).
    pub predicted_reads: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PqPlan {
    pub pq_bytes: usize,
    pub sample: usize,
    pub queries: usize,
    pub candidates: Vec<PqCandidate>,
}

/// The sizes tried: dim / 32 up to dim / 2 bytes (a sub-space of 32 down
/// to 2 components), at least 1.
pub fn candidate_sizes(dim: usize) -> Vec<usize> {
    let mut sizes: Vec<usize> = [32, 16, 12, 8, 6, 4, 3, 2]
        .iter()
        .map(|&per| (dim / per).max(1))
        .collect();
    sizes.dedup();
    sizes
}

/// Chooses PQ bytes for `input` (at least [`MIN_ROWS`] rows); `None` when
/// no candidate's codes fit the budget.
pub fn choose(input: &PqPlanInput) -> Option<PqPlan> {
    let dim = input.dim;
    let n = input.data.len() / dim;
    let mut rng = Rng::new(input.seed ^ 0x5051_504C);
    // S' = 1% of the data (at least 10k, as k-means of 256 centroids needs
    // thousands of points), Q' = 200 other rows.
    assert!(n >= MIN_ROWS, "the planner needs {MIN_ROWS} rows or more");
    let nq = 200;
    let sample = (n / 100).max(10_000).min(n - nq);
    let picked = rng.sample(n, sample + nq);
    let rows = |ids: &[usize]| -> Vec<f32> {
        ids.iter()
            .flat_map(|&i| input.data[i * dim..(i + 1) * dim].iter().copied())
            .collect()
    };
    let s_data = rows(&picked[..sample]);
    let q_data = rows(&picked[sample..]);
    let exact_top = exact_top10(&s_data, &q_data, dim, input.metric);
    let codebook_bytes = |m: usize| 256 * dim * 4 + dim * 4 + (m + 1) * 8;
    let mut candidates = Vec::new();
    for m in candidate_sizes(dim) {
        let code_bytes = n * m + codebook_bytes(m);
        if code_bytes + input.fixed > input.budget {
            continue;
        }
        let cb = PqCodebook::train(
            &s_data,
            dim,
            &PqTrainParams {
                m,
                sample,
                iters: 6,
                seed: input.seed,
            },
        );
        let codes = cb.encode_all(&s_data);
        let depth = rerank_depth(&cb, &codes, &q_data, &exact_top, input.metric);
        let left = (input.budget - input.fixed - code_bytes) as f64;
        let graph_share = (left / input.graph_bytes.max(1) as f64).min(1.0);
        let vectors_left = (left - input.graph_bytes as f64).max(0.0);
        let vector_share = (vectors_left / (n * input.node_bytes).max(1) as f64).min(1.0);
        let t = depth.unwrap_or(2 * DEPTHS[DEPTHS.len() - 1]) as f64;
        candidates.push(PqCandidate {
            pq_bytes: m,
            code_bytes,
            depth,
            graph_share,
            vector_share,
            predicted_reads: t * ((1.0 - vector_share) + 2.0 * (1.0 - graph_share)),
        });
    }
    // Fewest predicted reads; among equals (a budget that caches every
    // vector reads nothing whatever the codes) the shallowest re-rank, which
    // is the least CPU and the shortest candidate list.
    let best = candidates
        .iter()
        .min_by(|a, b| {
            a.predicted_reads
                .total_cmp(&b.predicted_reads)
                .then(
                    a.depth
                        .unwrap_or(usize::MAX)
                        .cmp(&b.depth.unwrap_or(usize::MAX)),
                )
                .then(a.pq_bytes.cmp(&b.pq_bytes))
        })?
        .pq_bytes;
    Some(PqPlan {
        pq_bytes: best,
        sample,
        queries: nq,
        candidates,
    })
}

fn distance(metric: Metric, a: &[f32], b: &[f32]) -> f32 {
    match metric {
        Metric::L2 => stratavec_simd::l2_sq_f32(a, b),
        Metric::InnerProduct | Metric::Cosine => -stratavec_simd::dot_f32(a, b),
    }
}

/// Each query's exact 10 nearest rows of `base`.
pub(crate) fn exact_top10(
    base: &[f32],
    queries: &[f32],
    dim: usize,
    metric: Metric,
) -> Vec<Vec<u32>> {
    queries
        .par_chunks(dim)
        .map(|q| {
            let mut d: Vec<(f32, u32)> = base
                .chunks(dim)
                .enumerate()
                .map(|(i, v)| (distance(metric, q, v), i as u32))
                .collect();
            let k = 10.min(d.len());
            d.select_nth_unstable_by(k - 1, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            d[..k].iter().map(|e| e.1).collect()
        })
        .collect()
}

/// The smallest depth T at which re-ranking the T best-estimated rows
/// finds, on average, the share [`TARGET_RECALL`] of each query's top 10.
fn rerank_depth(
    cb: &PqCodebook,
    codes: &[u8],
    queries: &[f32],
    exact: &[Vec<u32>],
    metric: Metric,
) -> Option<usize> {
    let m = cb.m;
    let dim = cb.dim;
    // Per query: the rank (by estimate) of each of its true top 10.
    let ranks: Vec<Vec<usize>> = queries
        .par_chunks(dim)
        .zip(exact)
        .map(|(q, top)| {
            let mut table = Vec::new();
            cb.table(q, metric, &mut table);
            let est: Vec<f32> = codes
                .chunks(m)
                .map(|c| stratavec_simd::scalar::pq_adc(&table, c))
                .collect();
            top.iter()
                .map(|&t| {
                    let e = est[t as usize];
                    est.iter()
                        .enumerate()
                        .filter(|&(i, &x)| x < e || (x == e && (i as u32) < t))
                        .count()
                })
                .collect()
        })
        .collect();
    let total: usize = exact.iter().map(|t| t.len()).sum();
    DEPTHS.iter().copied().find(|&depth| {
        let found: usize = ranks
            .iter()
            .map(|r| r.iter().filter(|&&rank| rank < depth).count())
            .sum();
        found as f64 >= TARGET_RECALL * total as f64
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{clustered, SyntheticSpec};

    /// More bytes never need a deeper re-rank on the same sample (the
    /// measurement orders sizes as PQ's error does), and a budget that only
    /// the smallest codes fit chooses them.
    #[test]
    fn deeper_codes_rank_better_and_the_budget_bounds_the_choice() {
        let dim = 32;
        let (data, _) = clustered(&SyntheticSpec {
            n: 12_000,
            queries: 0,
            dim,
            clusters: 20,
            seed: 4,
        });
        let input = |budget| PqPlanInput {
            data: &data,
            dim,
            metric: Metric::L2,
            budget,
            fixed: 100_000,
            graph_bytes: 12_000 * 60,
            node_bytes: dim * 4 + 4 + 64 * 4 + 4,
            seed: 1,
        };
        let plan = choose(&input(50_000_000)).unwrap();
        let depths: Vec<usize> = plan
            .candidates
            .iter()
            .map(|c| c.depth.unwrap_or(1000))
            .collect();
        assert!(
            depths.windows(2).all(|w| w[1] <= w[0]),
            "{:?}",
            plan.candidates
        );
        // Everything fits: the most bytes rank best and cost no cache.
        assert_eq!(plan.pq_bytes, *candidate_sizes(dim).last().unwrap());
        let smallest = candidate_sizes(dim)[0];
        let tight = 100_000 + 12_000 * smallest + 256 * dim * 4 + dim * 4 + 64;
        let plan = choose(&input(tight)).unwrap();
        assert_eq!(plan.pq_bytes, smallest);
        assert_eq!(plan.candidates.len(), 1);
        assert!(choose(&input(100_000)).is_none());
    }
}
