//! brute_force_knn against a naive O(nq * n) reference: exact equality of ids
//! and distances, for every metric and dtype, with many ties (values drawn
//! from a tiny alphabet, and duplicated rows).

use proptest::prelude::*;
use stratavec::data::{
    brute_force_knn, recall_at_k, write_fvecs, write_ibin, DType, Elems, GroundTruth, Metric,
    VectorFile, VectorRows, Vectors,
};

/// The reference: every distance, sorted by (distance, id), first k.
fn naive(base: &dyn VectorRows, queries: &dyn VectorRows, metric: Metric, k: usize) -> GroundTruth {
    let mut ids = Vec::new();
    let mut dists = Vec::new();
    for q in 0..queries.n() {
        let mut all: Vec<(f32, u32)> = (0..base.n())
            .map(|j| (metric.distance(queries.row(q), base.row(j)), j as u32))
            .collect();
        all.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
        for &(d, j) in &all[..k] {
            ids.push(j);
            dists.push(d);
        }
    }
    GroundTruth::new(queries.n(), k, ids, Some(dists)).unwrap()
}

const METRICS: [Metric; 3] = [Metric::L2, Metric::InnerProduct, Metric::Cosine];

/// n rows of d small integers, with some rows copied over others so that
/// exact duplicates (distance ties at every query) are common.
fn rows(max_n: usize) -> impl Strategy<Value = (usize, usize, Vec<i8>)> {
    (1..max_n, 1usize..6).prop_flat_map(|(n, d)| {
        (
            Just(n),
            Just(d),
            prop::collection::vec(-2i8..=2, n * d),
            prop::collection::vec(0..n, 0..n),
        )
            .prop_map(|(n, d, mut v, dups)| {
                for (i, &src) in dups.iter().enumerate() {
                    let dst = (i * 7 + 3) % n;
                    v.copy_within(src * d..(src + 1) * d, dst * d);
                }
                (n, d, v)
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn equals_naive_reference(
        (n, d, base) in rows(80),
        nq in 1usize..6,
        qseed in any::<u64>(),
        kfrac in 0.0f64..1.0,
        threads in 1usize..4,
    ) {
        // Queries are taken from the base (plus an offset pattern), so
        // distance-0 and other ties are frequent.
        let q: Vec<i8> = (0..nq * d)
            .map(|i| base[(i + qseed as usize % n * d) % base.len()].saturating_add((i % 3) as i8 - 1))
            .collect();
        let k = 1 + ((n - 1) as f64 * kfrac) as usize;
        let bf: Vec<f32> = base.iter().map(|&x| x as f32).collect();
        let qf: Vec<f32> = q.iter().map(|&x| x as f32).collect();
        let bu: Vec<u8> = base.iter().map(|&x| (x + 2) as u8 * 60).collect();
        let qu: Vec<u8> = q.iter().map(|&x| (x.clamp(-2, 2) + 2) as u8 * 60).collect();
        let sets = [
            (Vectors::f32(&bf, d).unwrap(), Vectors::f32(&qf, d).unwrap()),
            (Vectors::u8(&bu, d).unwrap(), Vectors::u8(&qu, d).unwrap()),
            (Vectors::i8(&base, d).unwrap(), Vectors::i8(&q, d).unwrap()),
        ];
        for (b, qs) in &sets {
            for metric in METRICS {
                let got = brute_force_knn(b, qs, metric, k, threads).unwrap();
                let want = naive(b, qs, metric, k);
                prop_assert_eq!(&got, &want, "{:?} {}", b.dtype(), metric);
            }
        }
    }
}

/// Enough rows that the base is split into several ranges and tiles, so the
/// merge of partial top-k lists is exercised; results must not depend on the
/// thread count.
#[test]
fn split_base_matches_naive_and_is_thread_independent() {
    let (n, d, nq, k) = (20_000, 3, 5, 25);
    let mut state = 12345u64;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 33) % 7) as f32 - 3.0
    };
    let base: Vec<f32> = (0..n * d).map(|_| next()).collect();
    let q: Vec<f32> = (0..nq * d).map(|_| next()).collect();
    let (b, qs) = (
        Vectors::f32(&base, d).unwrap(),
        Vectors::f32(&q, d).unwrap(),
    );
    for metric in METRICS {
        let want = naive(&b, &qs, metric, k);
        for threads in [1, 3, 8] {
            assert_eq!(
                brute_force_knn(&b, &qs, metric, k, threads).unwrap(),
                want,
                "{metric}"
            );
        }
    }
}

#[test]
fn works_on_interleaved_files_and_round_trips_through_ibin() {
    let dir = tempfile::tempdir().unwrap();
    let (n, d) = (50, 4);
    let data: Vec<f32> = (0..n * d).map(|i| ((i * 13) % 17) as f32).collect();
    let p = dir.path().join("base.fvecs");
    write_fvecs(&p, n, d, &data).unwrap();
    let file = VectorFile::open(&p).unwrap();
    let mem = Vectors::f32(&data, d).unwrap();
    let gt = brute_force_knn(&file, &file, Metric::L2, 10, 2).unwrap();
    assert_eq!(gt, brute_force_knn(&mem, &mem, Metric::L2, 10, 2).unwrap());
    // Every row is its own nearest neighbor (or ties with a duplicate at 0).
    for q in 0..n {
        assert_eq!(gt.dists_of(q).unwrap()[0], 0.0);
    }
    let gp = dir.path().join("gt.ibin");
    write_ibin(&gp, &gt).unwrap();
    let back = GroundTruth::read(&gp).unwrap();
    assert_eq!(back, gt);
    let results: Vec<&[u32]> = (0..n).map(|q| back.ids_of(q)).collect();
    assert_eq!(recall_at_k(&results, &back, 10).unwrap(), 1.0);
}

#[test]
fn argument_errors() {
    let b = [0.0f32; 12];
    let base = Vectors::f32(&b, 3).unwrap();
    let q2 = Vectors::f32(&b[..4], 2).unwrap();
    let e = brute_force_knn(&base, &q2, Metric::L2, 1, 1)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("queries dim") && e.contains("3") && e.contains("found 2"),
        "{e}"
    );
    let u = [0u8; 3];
    let qu = Vectors::u8(&u, 3).unwrap();
    let e = brute_force_knn(&base, &qu, Metric::L2, 1, 1)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("dtype") && e.contains("f32") && e.contains("u8"),
        "{e}"
    );
    let e = brute_force_knn(&base, &base, Metric::L2, 5, 1)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`k`") && e.contains("1..=4") && e.contains("found 5"),
        "{e}"
    );
    assert!(Vectors::f32(&b, 5).is_err());
    assert_eq!(base.dtype(), DType::F32);
    assert_eq!(base.row(1), Elems::F32(&b[3..6]));
}
