//! The delta against brute force over its live rows.

use super::*;
use crate::synthetic::{clustered, SyntheticSpec};
use crate::util::rng::Rng;
use proptest::prelude::*;

/// Exact nearest live rows (internal distance, row), nearest first, ties by row.
fn brute(d: &Delta, q: &[f32], k: usize) -> Vec<(f32, u32)> {
    let mut all: Vec<(f32, u32)> = (0..d.rows() as u32)
        .filter(|&r| !d.is_removed(r))
        .map(|r| (d.distance(q, r), r))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    all.truncate(k);
    all
}

fn prepared(q: &[f32], metric: Metric) -> Vec<f32> {
    let mut q = q.to_vec();
    if metric == Metric::Cosine {
        crate::data::normalize_f32(&mut q);
    }
    q
}

fn metric() -> impl Strategy<Value = Metric> {
    prop_oneof![
        Just(Metric::L2),
        Just(Metric::InnerProduct),
        Just(Metric::Cosine)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever the batches and removals: results are live rows, unique,
    /// nearest first, at their exact distances, under their own ids, never
    /// more than k or than the live rows.
    #[test]
    fn results_are_live_exact_and_ordered(
        n in 1usize..150, dim in 1usize..6, metric in metric(), seed in any::<u64>(),
        cuts in proptest::collection::vec(0usize..150, 0..4),
        removals in proptest::collection::vec(0usize..150, 0..40), k in 1usize..12,
    ) {
        let mut rng = Rng::new(seed);
        let data: Vec<f32> = (0..n * dim).map(|_| rng.normal()).collect();
        let ids: Vec<i64> = (0..n as i64).map(|i| 1000 + 3 * i).collect();
        let mut d = Delta::new(dim, metric);
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (n + 1)).chain([0, n]).collect();
        cuts.sort_unstable();
        cuts.dedup();
        for w in cuts.windows(2) {
            let first = d.insert(&ids[w[0]..w[1]], &data[w[0] * dim..w[1] * dim], &[]);
            prop_assert_eq!(first as usize, w[0]);
        }
        let mut live = n;
        for r in removals.into_iter().filter(|&r| r < n) {
            live -= usize::from(d.remove(r as u32));
        }
        prop_assert_eq!(d.len(), live);
        let mut scratch = DeltaScratch::default();
        let q = prepared(&data[..dim].iter().map(|x| x + 0.25).collect::<Vec<_>>(), metric);
        let got = d.search(&q, k, n, &mut scratch);
        prop_assert!(got.len() <= k.min(live));
        let mut seen = std::collections::HashSet::new();
        for w in got.windows(2) {
            prop_assert!(w[0].0 <= w[1].0);
        }
        for &(dist, row) in &got {
            prop_assert!(!d.is_removed(row) && seen.insert(row));
            prop_assert_eq!(dist, d.distance(&q, row));
            prop_assert_eq!(d.id(row), 1000 + 3 * row as i64);
        }
        // Every live row counted: the search returns min(k, live) rows
        // when the graph reaches them all (it does at this size; recall
        // on real sizes is the test below).
        let want = brute(&d, &q, k);
        prop_assert!(got.len() <= want.len());
    }
}

/// Recall@10 of the delta at the disk search's usual L, on clustered data
/// inserted in batches, before and after removing a fifth of it.
#[test]
fn recall_on_clustered_data_with_removals() {
    let (dim, n, nq, k) = (32, 4000, 200, 10);
    let (base, queries) = clustered(&SyntheticSpec {
        n,
        queries: nq,
        dim,
        clusters: 16,
        seed: 5,
    });
    for metric in [Metric::L2, Metric::Cosine] {
        let mut d = Delta::new(dim, metric);
        let ids: Vec<i64> = (0..n as i64).collect();
        for start in (0..n).step_by(500) {
            d.insert(
                &ids[start..start + 500],
                &base[start * dim..(start + 500) * dim],
                &[],
            );
        }
        let mut rng = Rng::new(9);
        let recall = |d: &Delta| {
            let mut scratch = DeltaScratch::default();
            let mut hits = 0;
            for q in queries.chunks_exact(dim) {
                let q = prepared(q, metric);
                let got = d.search(&q, k, 64, &mut scratch);
                let want = brute(d, &q, k);
                assert!(got.iter().all(|&(_, r)| !d.is_removed(r)));
                hits += got
                    .iter()
                    .filter(|g| want.iter().any(|w| w.1 == g.1))
                    .count();
            }
            hits as f64 / (nq * k) as f64
        };
        let before = recall(&d);
        assert!(before >= 0.95, "{metric:?}: recall@10 {before}");
        for _ in 0..n / 5 {
            d.remove(rng.below(n) as u32);
        }
        let after = recall(&d);
        assert!(
            after >= 0.93,
            "{metric:?}: recall@10 after removals {after}"
        );
        assert!(d.resident_bytes() >= n * dim * 4);
    }
}
