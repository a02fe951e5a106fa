//! Range search: every vector within a radius, with the candidate window
//! doubling while results fill the share φ of it (Starling, range search).

use crate::common;

use common::*;
use stratavec::data::Metric;
use stratavec::{Index, OpenOptions, SearchParams};

const DIM: usize = 16;

fn brute_range(base: &[f32], q: &[f32], radius: f32) -> Vec<u32> {
    let mut v: Vec<u32> = base
        .chunks_exact(DIM)
        .enumerate()
        .filter(|(_, r)| stratavec_simd::scalar::l2_sq_f32(r, q) <= radius)
        .map(|(i, _)| i as u32)
        .collect();
    v.sort_unstable();
    v
}

fn range_params(radius: f32, phi: f32, max: usize) -> SearchParams {
    SearchParams {
        radius: Some(radius),
        range_phi: phi,
        range_max_complexity: max,
        ..search_params(10, 32)
    }
}

/// A radius that holds about `per_query` vectors for a typical query.
fn radius_for(base: &[f32], queries: &[f32], per_query: usize) -> f32 {
    let mut ds: Vec<f32> = queries
        .chunks_exact(DIM)
        .map(|q| {
            let mut d: Vec<f32> = base
                .chunks_exact(DIM)
                .map(|r| stratavec_simd::scalar::l2_sq_f32(r, q))
                .collect();
            d.sort_by(|a, b| a.total_cmp(b));
            d[per_query]
        })
        .collect();
    ds.sort_by(|a, b| a.total_cmp(b));
    ds[ds.len() / 2]
}

#[test]
fn tiny_set_equals_brute_force() {
    let (base, queries) = synth(400, 20, DIM, 31);
    let tmp = tempdir();
    let dir = tmp.path().join("r");
    build_f32(&dir, &base, DIM, &small_params(Metric::L2), 1);
    let index = Index::open(&dir, &OpenOptions::default()).unwrap();
    let radius = radius_for(&base, &queries, 60);
    // Widening to the whole set makes the search exhaustive.
    let res = index
        .search_batch(&queries, DIM, &range_params(radius, 0.01, 512))
        .unwrap();
    assert_eq!(res.failed(), 0);
    for (qi, q) in queries.chunks_exact(DIM).enumerate() {
        let mut got: Vec<u32> = res.ranges[qi].iter().map(|e| e.0).collect();
        got.sort_unstable();
        assert_eq!(got, brute_range(&base, q, radius), "query {qi}");
        assert!(
            res.ranges[qi].windows(2).all(|w| w[0].1 <= w[1].1),
            "nearest first"
        );
    }
}

#[test]
fn widening_finds_more_than_a_fixed_list_and_stays_exact() {
    let (base, queries) = synth(4000, 50, DIM, 32);
    let tmp = tempdir();
    let dir = tmp.path().join("r");
    build_f32(&dir, &base, DIM, &small_params(Metric::L2), 2);
    let index = Index::open(&dir, &OpenOptions::default()).unwrap();
    // About 200 vectors per query: far more than the initial list of 32.
    let radius = radius_for(&base, &queries, 200);
    let res = index
        .search_batch(&queries, DIM, &range_params(radius, 0.5, 4096))
        .unwrap();
    let (mut found, mut truth, mut wrong) = (0usize, 0usize, 0usize);
    for (qi, q) in queries.chunks_exact(DIM).enumerate() {
        let want = brute_range(&base, q, radius);
        truth += want.len();
        for &(id, d) in &res.ranges[qi] {
            if want.binary_search(&id).is_ok() {
                found += 1;
            } else {
                wrong += 1;
            }
            assert!(d <= radius * (1.0 + 1e-5));
        }
    }
    let recall = found as f64 / truth as f64;
    eprintln!(
        "range recall {recall:.4} over {truth} true results, widenings {}",
        res.total().widenings
    );
    assert_eq!(wrong, 0, "results outside the radius");
    assert!(recall >= 0.9, "range recall {recall}");
    assert!(res.total().widenings > 0);
}

#[test]
fn a_bad_radius_is_refused() {
    let (base, queries) = synth(300, 2, DIM, 33);
    let tmp = tempdir();
    let dir = tmp.path().join("r");
    build_f32(&dir, &base, DIM, &small_params(Metric::L2), 1);
    let index = Index::open(&dir, &OpenOptions::default()).unwrap();
    let err = index
        .search_batch(&queries, DIM, &range_params(f32::NAN, 0.5, 512))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("radius"), "{err}");
}
