//! The bound's confidence ε₀ measured on the data it is trained on (issue
//! #57 item 2: "a bound that holds on ≥ 99.9% of pairs, measured").
//!
//! RaBitQ's Theorem 3.2 bounds the error at ε₀ standard deviations of its
//! estimator; [`super::exrabitq::EPSILON0`] = 3.5 was fitted to every pair
//! of 100 queries and 5,000 rows of wordnet-minilm, which are nearly all far
//! pairs. The pairs a settled refinement decides are near ones, and their
//! errors are smaller relative to the bound: on wordnet-minilm the 99.9%
//! quantile of `|estimate − exact| / bound(ε₀ = 1)` is 2.74 over each
//! query's 100 nearest rows against 3.06 over far ones (wordnet-mpnet: 2.60
//! and 3.04). A looser ε₀ than the pairs need leaves candidates open that
//! the bound could settle: at 20% of wordnet-minilm, L 26, a query read 8.6
//! vectors at ε₀ 3.5, 7.7 at 2.8, with the same recall.
//!
//! Rows stand in for queries: [`QUERIES`] of them spread over the data,
//! each against its [`NEAR`] nearest among up to [`ROWS`] rows (itself
//! excluded). Rows sit closer to their neighbours than real queries do,
//! and their errors are smaller: the rows' quantile was 2.60 against the
//! real queries' 2.74 on wordnet-minilm, 2.53 against 2.60 on
//! wordnet-mpnet, and 2.57 against 2.96 on its 20k-row cut, so the measured
//! quantile gets [`MARGIN`] of headroom. Measuring with 200 real queries
//! instead (the build's `plan_queries`) was tried: a 99.9% quantile of 10k
//! pairs rests on ten of them, and 200 other queries of the same set then
//! failed on 0.12-0.17% of pairs at a 5% margin.

use super::exrabitq::{ExRabitQ, EPSILON0};
use super::{Quantizer, QueryTable};
use crate::data::Metric;
use rayon::prelude::*;

/// Rows that stand in for queries.
pub const QUERIES: usize = 200;
/// Rows each is compared with (a stride through the data).
pub const ROWS: usize = 50_000;
/// The nearest of them whose errors are measured, per query.
pub const NEAR: usize = 50;
/// The share of pairs the bound must hold on.
pub const QUANTILE: f64 = 0.999;
/// Headroom over the rows' quantile for real queries (module docs).
pub const MARGIN: f32 = 1.2;
/// Where the measured ε₀ is kept: never tighter than 2 standard deviations
/// (a quantile from ~10k pairs is a few of them), never looser than 5.
pub const RANGE: (f32, f32) = (2.0, 5.0);
/// Fewer pairs than this measure nothing: [`EPSILON0`] stands.
pub const MIN_PAIRS: usize = 2_000;

/// ε₀ for `q`, trained on `data`: the [`QUANTILE`] of the near pairs'
/// error ratios times [`MARGIN`], within [`RANGE`]; [`EPSILON0`] when the
/// data is too small to measure.
pub fn calibrate(q: &ExRabitQ, data: &[f32]) -> f32 {
    measure(q, data).0
}

/// [`calibrate`]'s ε₀, and the mean width of the near pairs' bounds at it
/// (what the refinement settles by: narrower leaves fewer candidates
/// open); the width is `None` when the data is too small to measure.
pub fn measure(q: &ExRabitQ, data: &[f32]) -> (f32, Option<f64>) {
    let pairs = pairs(q, data);
    if pairs.len() < MIN_PAIRS {
        return (EPSILON0, None);
    }
    let mut ratios: Vec<f32> = pairs.iter().map(|p| p.0).collect();
    let at = ((ratios.len() as f64 * QUANTILE) as usize).min(ratios.len() - 1);
    let (_, quantile, _) = ratios.select_nth_unstable_by(at, |a, b| a.total_cmp(b));
    let eps = (*quantile * MARGIN).clamp(RANGE.0, RANGE.1);
    let width = pairs
        .iter()
        .map(|&(_, scaled, fixed)| f64::from(eps * scaled + fixed))
        .sum::<f64>()
        / pairs.len() as f64;
    (eps, Some(width))
}

/// The ε₀ each near pair needs (module docs): `(|estimate − exact| −
/// fixed) / scaled` of the bound's two parts (`ExRabitQ::estimate_parts`).
pub fn ratios(q: &ExRabitQ, data: &[f32]) -> Vec<f32> {
    pairs(q, data).into_iter().map(|p| p.0).collect()
}

/// Every near pair: the ε₀ it needs ([`ratios`]) and its bound's parts.
fn pairs(q: &ExRabitQ, data: &[f32]) -> Vec<(f32, f32, f32)> {
    let dim = q.dim;
    let n = data.len() / dim;
    if n < 2 {
        return Vec::new();
    }
    let row = |i: usize| &data[i * dim..(i + 1) * dim];
    let queries = strided(n, QUERIES);
    let others: Vec<usize> = strided(n, ROWS);
    let exact = |a: &[f32], b: &[f32]| match q.metric {
        Metric::InnerProduct => -stratavec_simd::dot_f32(a, b),
        _ => stratavec_simd::l2_sq_f32(a, b),
    };
    queries
        .par_iter()
        .map_init(
            || (QueryTable::default(), Vec::new()),
            |(table, near), &j| {
                let x = row(j);
                near.clear();
                near.extend(
                    others
                        .iter()
                        .filter(|&&i| i != j)
                        .map(|&i| (exact(x, row(i)), i as u32)),
                );
                let keep = NEAR.min(near.len());
                if keep < near.len() {
                    near.select_nth_unstable_by(keep, |a, b| a.0.total_cmp(&b.0));
                    near.truncate(keep);
                }
                q.prepare(x, table);
                near.iter()
                    .filter_map(|&(d, i)| {
                        let (est, scaled, fixed) = q.estimate_parts(table, i);
                        let need = ((est - d).abs() - fixed).max(0.0) / scaled;
                        (scaled > 0.0).then_some((need, scaled, fixed))
                    })
                    .collect::<Vec<_>>()
            },
        )
        .flatten()
        .collect()
}

/// Up to `m` indices spread evenly over `0..n`.
fn strided(n: usize, m: usize) -> Vec<usize> {
    let m = m.min(n);
    (0..m).map(|i| i * n / m).collect()
}
