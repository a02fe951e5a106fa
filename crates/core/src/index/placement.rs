//! What build and relayout place each record beside when they shuffle
//! blocks: the search graph, or each node's nearest nodes within two hops
//! of it (`ShuffleParams::nearest`, [`crate::graph::two_hop`]).
//!
//! The nearest are ranked by PQ estimates, the query being the node's own
//! decoded code: relayout streams the source and never holds its vectors,
//! but it does hold the codes, so build and relayout rank alike and a
//! relayout stays byte-identical to a build of the same parameters. Exact
//! distances would rank a little better: at 48-byte PQ on 96-d their
//! layout reads 0.4% fewer blocks (11.73 against 11.78 a query at recall
//! 0.95; BENCHMARKS.md, "Starling profile").

use crate::error::Result;
use crate::layout::shuffle::{Capacity, ShuffleParams};
use crate::progress::Stop;
use crate::quant::{PqQuantizer, Quantizer, QueryTable};
use std::borrow::Borrow;
use std::cell::RefCell;

/// Each node's `k` nearest nodes within two hops of it in `lists`, by PQ
/// estimate from the node's decoded code.
pub fn nearest_by_codes(lists: &[Vec<u32>], k: usize, pq: &PqQuantizer) -> Vec<Vec<u32>> {
    nearest_by_codes_until(lists, k, pq, &crate::progress::never)
}

/// [`nearest_by_codes`] that skips the work for the remaining nodes once
/// `stop` says so (the caller checks `stop` and discards the lists).
fn nearest_by_codes_until(
    lists: &[Vec<u32>],
    k: usize,
    pq: &PqQuantizer,
    stop: &Stop,
) -> Vec<Vec<u32>> {
    thread_local! {
        static SCRATCH: RefCell<(Vec<f32>, QueryTable)> = RefCell::default();
    }
    let dim = pq.codebook.dim;
    let distances = |u: u32, ids: &[u32], out: &mut [f32]| {
        if stop() {
            out.fill(0.0);
            return;
        }
        SCRATCH.with_borrow_mut(|(query, table)| {
            query.resize(dim, 0.0);
            pq.decode(u, query);
            pq.prepare(query, table);
            pq.estimate_many(table, ids, out);
        })
    };
    crate::graph::two_hop::nearest_in_two_hops(lists, k, &distances)
}

/// The nearest nodes to place by, when `params.nearest_k` resolves to more
/// than 0 for `lists` in blocks of `capacity` (`None`: place by the graph).
/// `load_pq` gives the codes to rank them by; it is called only then
/// (relayout reads them from disk).
pub fn nearest_for<P: Borrow<PqQuantizer>>(
    lists: &[Vec<u32>],
    capacity: &Capacity,
    params: &ShuffleParams,
    load_pq: impl FnOnce() -> Result<P>,
) -> Result<Option<Vec<Vec<u32>>>> {
    nearest_for_until(lists, capacity, params, load_pq, &crate::progress::never)
}

/// [`nearest_for`] that stops early when `stop` says so: the lists are
/// then incomplete, and the caller must check `stop` and discard them.
pub fn nearest_for_until<P: Borrow<PqQuantizer>>(
    lists: &[Vec<u32>],
    capacity: &Capacity,
    params: &ShuffleParams,
    load_pq: impl FnOnce() -> Result<P>,
    stop: &Stop,
) -> Result<Option<Vec<Vec<u32>>>> {
    match params.nearest_k(capacity, lists.len()) {
        0 => Ok(None),
        k => Ok(Some(nearest_by_codes_until(
            lists,
            k,
            load_pq()?.borrow(),
            stop,
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::rng::Rng;

    /// Ranked by PQ, the nearest are mostly the ones exact distances pick
    /// (the placement only needs them close, not exact; picking 8 of the
    /// ~140 within two hops at random would share about 6%).
    #[test]
    fn codes_rank_mostly_like_exact_distances() {
        let (n, dim, k) = (1500, 16, 8);
        let mut rng = Rng::new(3);
        let x: Vec<f32> = (0..n * dim).map(|_| rng.normal()).collect();
        let lists = crate::layout::shuffle::random_graph(n, 12, &mut rng);
        let pq = PqQuantizer::fit_l2(&x, dim, 8, 8);
        let by_codes = nearest_by_codes(&lists, k, &pq);
        let exact = |u: u32, ids: &[u32], out: &mut [f32]| {
            let xu = &x[u as usize * dim..(u as usize + 1) * dim];
            for (o, &v) in out.iter_mut().zip(ids) {
                let xv = &x[v as usize * dim..(v as usize + 1) * dim];
                *o = stratavec_simd::scalar::l2_sq_f32(xu, xv);
            }
        };
        let by_exact = crate::graph::two_hop::nearest_in_two_hops(&lists, k, &exact);
        let shared: usize = by_codes
            .iter()
            .zip(&by_exact)
            .map(|(a, b)| a.iter().filter(|v| b.contains(v)).count())
            .sum();
        let share = shared as f64 / (n * k) as f64;
        assert!(share > 0.8, "{share}");
        assert!(by_codes.iter().all(|l| l.len() == k));
    }
}
