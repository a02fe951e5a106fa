//! Ground-truth files (.ibin with and without distances, .ivecs) and recall,
//! including big-ann-benchmarks' distance-tie rule.

use stratavec::data::{recall, recall_at_k, write_ibin, write_ivecs, GroundTruth};

fn assert_mentions(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "message {msg:?} should mention {p:?}");
    }
}

fn sample(with_dists: bool) -> GroundTruth {
    let ids = vec![4, 1, 9, 0, 2, 7];
    let dists = with_dists.then(|| vec![0.5, 1.0, 1.5, 0.0, 2.0, 8.0]);
    GroundTruth::new(2, 3, ids, dists).unwrap()
}

#[test]
fn ibin_round_trip_with_and_without_distances() {
    let dir = tempfile::tempdir().unwrap();
    for with in [true, false] {
        let gt = sample(with);
        let p = dir.path().join(format!("gt{with}.ibin"));
        write_ibin(&p, &gt).unwrap();
        let len = std::fs::metadata(&p).unwrap().len();
        assert_eq!(len, if with { 8 + 8 * 6 } else { 8 + 4 * 6 });
        let back = GroundTruth::read(&p).unwrap();
        assert_eq!(back, gt);
        assert_eq!(back.ids_of(1), &[0, 2, 7]);
        assert_eq!(back.dists_of(0).is_some(), with);
    }
    // big-ann-benchmarks names ground truth `.bin` or leaves the extension off.
    let p = dir.path().join("gt100-public");
    sample(true).write_ibin(&p).unwrap();
    assert_eq!(GroundTruth::read(&p).unwrap(), sample(true));
}

#[test]
fn ivecs_round_trip_and_padding() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("gt.ivecs");
    write_ivecs(&p, &sample(true)).unwrap();
    assert_eq!(GroundTruth::read(&p).unwrap(), sample(false));
    // -1 (fewer than k neighbors) reads as the padding id u32::MAX.
    let mut b = Vec::new();
    for v in [2i32, 5, -1] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(&p, &b).unwrap();
    assert_eq!(GroundTruth::read(&p).unwrap().ids, vec![5, u32::MAX]);
}

#[test]
fn ground_truth_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("gt.ibin");
    let mut b = Vec::new();
    for v in [10u32, 100] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.resize(5000, 0);
    std::fs::write(&p, &b).unwrap();
    let e = GroundTruth::read(&p).unwrap_err().to_string();
    assert_mentions(
        &e,
        &[
            "gt.ibin",
            "nq=10, k=100",
            "ids-only file should be 8+4*nq*k = 4008",
            "8+8*nq*k = 8008",
            "5000",
        ],
    );

    // A corrupt header whose sizes overflow u64 is still just a size error.
    std::fs::write(&p, [255u8; 12]).unwrap();
    let e = GroundTruth::read(&p).unwrap_err().to_string();
    assert_mentions(
        &e,
        &[
            "gt.ibin",
            "nq=4294967295, k=4294967295",
            "file has 12 bytes",
        ],
    );

    std::fs::write(&p, [0u8, 0, 0, 0, 3, 0, 0, 0]).unwrap();
    assert_mentions(
        &GroundTruth::read(&p).unwrap_err().to_string(),
        &["gt.ibin", "`nq`", "found 0"],
    );
    std::fs::write(&p, [1u8, 0, 0]).unwrap();
    assert_mentions(
        &GroundTruth::read(&p).unwrap_err().to_string(),
        &["gt.ibin", "header", "3 bytes"],
    );
    std::fs::write(&p, []).unwrap();
    assert_mentions(
        &GroundTruth::read(&p).unwrap_err().to_string(),
        &["gt.ibin", "empty"],
    );

    let e = GroundTruth::new(2, 3, vec![0; 5], None)
        .unwrap_err()
        .to_string();
    assert_mentions(&e, &["number of ids", "2*3", "found 5"]);
    let bad = GroundTruth {
        nq: 2,
        k: 3,
        ids: vec![0; 6],
        dists: Some(vec![0.0; 4]),
    };
    let e = write_ibin(dir.path().join("w.ibin"), &bad)
        .unwrap_err()
        .to_string();
    assert_mentions(&e, &["w.ibin", "number of distances", "found 4"]);
}

#[test]
fn recall_plain() {
    let gt = sample(false);
    assert_eq!(
        recall_at_k(&[vec![9u32, 4, 1], vec![7, 2, 0]], &gt, 3).unwrap(),
        1.0
    );
    // Query 0: 1 of 3; query 1: 2 of 3 (order within the top-k does not matter).
    let r = recall(&[vec![4u32, 5, 6], vec![2, 0, 3]], &gt, 3).unwrap();
    assert_eq!(r.per_query, vec![1.0 / 3.0, 2.0 / 3.0]);
    assert!((r.mean - 0.5).abs() < 1e-12);
    // k=1 only looks at rank 0 of both sides.
    assert_eq!(
        recall_at_k(&[vec![4u32, 1], vec![2, 0]], &gt, 1).unwrap(),
        0.5
    );
}

#[test]
fn recall_padding_duplicates_and_short_lists() {
    let gt = sample(false);
    // Padding never counts, a repeated id counts once, a short list is fine.
    let r = recall(&[vec![u32::MAX, 4, 4], vec![0]], &gt, 3).unwrap();
    assert_eq!(r.per_query, vec![1.0 / 3.0, 1.0 / 3.0]);
    let r = recall_at_k(&[vec![-1i64, 4, 9], vec![0, 2, 7]], &gt, 3).unwrap();
    assert!((r - 5.0 / 6.0).abs() < 1e-12);
    assert_eq!(
        recall_at_k(&[[4u64, 1, 9], [0, 2, 7]], &gt, 3).unwrap(),
        1.0
    );
    // Entries beyond k are ignored.
    assert_eq!(
        recall_at_k(&[vec![5u32, 4], vec![6, 0]], &gt, 1).unwrap(),
        0.0
    );
}

#[test]
fn recall_counts_distance_ties() {
    // Query 0's distances tie at ranks 1..=3, so for k=2 any of ids 11, 12,
    // 13 is as good as the listed rank-1 id 11.
    let gt = GroundTruth::new(
        2,
        5,
        vec![10, 11, 12, 13, 14, 20, 21, 22, 23, 24],
        Some(vec![1.0, 2.0, 2.0, 2.0, 5.0, 1.0, 2.0, 3.0, 4.0, 5.0]),
    )
    .unwrap();
    let results = [vec![10u32, 13], vec![20, 22]];
    let r = recall(&results, &gt, 2).unwrap();
    assert_eq!(r.per_query, vec![1.0, 0.5]);
    assert_eq!(r.queries_with_ties, 1);
    // Without distances the same results only get the plain overlap.
    let plain = GroundTruth {
        dists: None,
        ..gt.clone()
    };
    assert_eq!(
        recall(&results, &plain, 2).unwrap().per_query,
        vec![0.5, 0.5]
    );
    // Ties do not reach past the first distance that differs (id 14).
    assert_eq!(
        recall(&[vec![10u32, 14], vec![20, 21]], &gt, 2)
            .unwrap()
            .per_query,
        vec![0.5, 1.0]
    );

    // The tolerance is big-ann-benchmarks' absolute 1e-6.
    let near = GroundTruth::new(1, 3, vec![0, 1, 2], Some(vec![1.0, 2.0, 2.0 + 5e-7])).unwrap();
    assert_eq!(recall_at_k(&[vec![0u32, 2]], &near, 2).unwrap(), 1.0);
    let far = GroundTruth::new(1, 3, vec![0, 1, 2], Some(vec![1.0, 2.0, 2.00001])).unwrap();
    assert_eq!(recall_at_k(&[vec![0u32, 2]], &far, 2).unwrap(), 0.5);
}

#[test]
fn recall_argument_errors() {
    let gt = sample(true);
    let res = [vec![0u32; 3], vec![0; 3]];
    let e = recall_at_k(&res, &gt, 0).unwrap_err().to_string();
    assert_mentions(&e, &["`k`", "1..=3", "found 0"]);
    let e = recall_at_k(&res, &gt, 4).unwrap_err().to_string();
    assert_mentions(&e, &["`k`", "1..=3", "found 4"]);
    let e = recall_at_k(&res[..1], &gt, 3).unwrap_err().to_string();
    assert_mentions(&e, &["number of result lists", "2", "found 1"]);
    let broken = GroundTruth {
        ids: vec![0; 5],
        ..gt
    };
    let e = recall_at_k(&res, &broken, 3).unwrap_err().to_string();
    assert_mentions(&e, &["ground truth", "2*3", "5 ids"]);
}
