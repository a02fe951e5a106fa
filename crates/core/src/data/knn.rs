//! Exact k-nearest-neighbor ground truth by brute force.
//!
//! The work is cut into tiles of (a block of queries) x (a block of base
//! rows) sized so one tile's rows stay in L2 while every query of the block
//! is compared with them; each query keeps a bounded max-heap of its best k.
//! When there are too few query blocks to keep every thread busy, the base is
//! also split into ranges whose per-query top-k lists are merged afterwards.
//! Candidates are ordered by (distance, id), a strict total order, so the
//! result does not depend on the thread count or on how the work was split.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rayon::prelude::*;

use super::metric::norm_sq;
use super::{DataError, GroundTruth, Metric, VectorRows};

/// Bytes of base rows per tile: about half of a typical per-core L2.
const BASE_TILE_BYTES: usize = 256 * 1024;
const QUERY_BLOCK: usize = 32;

/// The exact `k` nearest neighbors in `base` of every row of `queries`,
/// nearest first, ties broken by smaller id. Distances are the metric's
/// (squared L2, `-dot`, or cosine distance; see [`Metric`]). u8/i8 data is
/// compared exactly in integers. Runs on its own pool of `threads` threads
/// (0 = one per CPU).
pub fn brute_force_knn<B, Q>(
    base: &B,
    queries: &Q,
    metric: Metric,
    k: usize,
    threads: usize,
) -> Result<GroundTruth, DataError>
where
    B: VectorRows + ?Sized,
    Q: VectorRows + ?Sized,
{
    // Named for what the user asked for (`stratavec gt`), not this function.
    const CTX: &str = "exact ground truth";
    let (n, nq, dim) = (base.n(), queries.n(), base.dim());
    if queries.dim() != dim {
        return Err(DataError::argument(
            CTX,
            "queries dim",
            format!("{dim} (the base dim)"),
            queries.dim(),
        ));
    }
    if queries.dtype() != base.dtype() {
        let want = format!("{} (the base dtype)", base.dtype());
        return Err(DataError::argument(
            CTX,
            "queries dtype",
            want,
            queries.dtype(),
        ));
    }
    if k == 0 || k > n {
        return Err(DataError::argument(
            CTX,
            "k",
            format!("1..={n} (the base size)"),
            k,
        ));
    }
    // Ids are u32 and u32::MAX means "no result".
    if n >= u32::MAX as usize {
        return Err(DataError::argument(
            CTX,
            "base n",
            "less than 4294967295",
            n,
        ));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| DataError::ThreadPool {
            threads,
            message: e.to_string(),
        })?;

    pool.install(|| {
        // Norms once per row rather than once per pair; only cosine reads them.
        let (base_norms, query_norms): (Vec<f32>, Vec<f32>) = if metric == Metric::Cosine {
            (
                (0..n)
                    .into_par_iter()
                    .map(|i| norm_sq(base.row(i)))
                    .collect(),
                (0..nq)
                    .into_par_iter()
                    .map(|i| norm_sq(queries.row(i)))
                    .collect(),
            )
        } else {
            (vec![0.0; n], vec![0.0; nq])
        };

        let base_block = (BASE_TILE_BYTES / (dim * base.dtype().size())).clamp(16, 4096);
        let q_blocks = nq.div_ceil(QUERY_BLOCK);
        let want_tasks = 4 * rayon::current_num_threads();
        let parts = if q_blocks >= want_tasks {
            1
        } else {
            want_tasks
                .div_ceil(q_blocks.max(1))
                .min(n.div_ceil(base_block))
        };
        let part_len = n.div_ceil(parts);

        let tiles: Vec<Vec<TopK>> = (0..q_blocks * parts)
            .into_par_iter()
            .map(|task| {
                let (qb, p) = (task / parts, task % parts);
                let qs = qb * QUERY_BLOCK..((qb + 1) * QUERY_BLOCK).min(nq);
                let (b0, b1) = (p * part_len, ((p + 1) * part_len).min(n));
                let mut tops: Vec<TopK> = qs.clone().map(|_| TopK::new(k)).collect();
                // The tile's rows are looked up once, not once per query.
                let mut tile = Vec::with_capacity(base_block);
                for start in (b0..b1).step_by(base_block) {
                    let end = (start + base_block).min(b1);
                    tile.clear();
                    tile.extend((start..end).map(|j| (j as u32, base.row(j), base_norms[j])));
                    for (q, top) in qs.clone().zip(&mut tops) {
                        let (qrow, qn) = (queries.row(q), query_norms[q]);
                        for &(j, row, bn) in &tile {
                            top.push(metric.distance_with_norms(qrow, row, qn, bn), j);
                        }
                    }
                }
                tops
            })
            .collect();

        let mut ids = Vec::with_capacity(nq * k);
        let mut dists = Vec::with_capacity(nq * k);
        for qb in 0..q_blocks {
            let mut merged = tiles[qb * parts].clone();
            for tile in &tiles[qb * parts + 1..(qb + 1) * parts] {
                for (into, from) in merged.iter_mut().zip(tile) {
                    into.merge(from);
                }
            }
            for top in merged {
                for c in top.into_sorted() {
                    ids.push(c.id);
                    dists.push(c.dist);
                }
            }
        }
        Ok(GroundTruth {
            nq,
            k,
            ids,
            dists: Some(dists),
        })
    })
}

/// Distance order with NaN after everything (and all NaNs equal), so a bad
/// row sorts last instead of poisoning the order.
fn cmp_dist(a: f32, b: f32) -> Ordering {
    a.partial_cmp(&b)
        .unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
}

#[derive(Clone, Copy, Debug)]
struct Cand {
    dist: f32,
    id: u32,
}

impl Ord for Cand {
    fn cmp(&self, o: &Self) -> Ordering {
        cmp_dist(self.dist, o.dist).then(self.id.cmp(&o.id))
    }
}

impl PartialOrd for Cand {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl PartialEq for Cand {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}

impl Eq for Cand {}

/// The best `k` candidates seen so far; the heap's top is the worst of them.
#[derive(Clone, Debug)]
struct TopK {
    k: usize,
    heap: BinaryHeap<Cand>,
}

impl TopK {
    fn new(k: usize) -> Self {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k + 1),
        }
    }

    #[inline]
    fn push(&mut self, dist: f32, id: u32) {
        let c = Cand { dist, id };
        if self.heap.len() < self.k {
            self.heap.push(c);
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if c < *worst {
                *worst = c; // PeekMut re-sifts on drop
            }
        }
    }

    fn merge(&mut self, other: &TopK) {
        for c in other.heap.iter() {
            self.push(c.dist, c.id);
        }
    }

    fn into_sorted(self) -> Vec<Cand> {
        self.heap.into_sorted_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_keeps_smallest_with_id_ties() {
        let mut t = TopK::new(3);
        for (d, id) in [
            (5.0, 0),
            (1.0, 1),
            (1.0, 9),
            (f32::NAN, 2),
            (1.0, 3),
            (0.5, 4),
        ] {
            t.push(d, id);
        }
        let got: Vec<(f32, u32)> = t.into_sorted().iter().map(|c| (c.dist, c.id)).collect();
        assert_eq!(got, [(0.5, 4), (1.0, 1), (1.0, 3)]);
        assert_eq!(cmp_dist(-0.0, 0.0), Ordering::Equal);
        assert_eq!(cmp_dist(f32::NAN, f32::INFINITY), Ordering::Greater);
    }
}
