//! Exact duplicate vectors stay reachable (`graph::duplicates`): robust
//! prune lets a node link to one copy of a group only, which can leave a
//! copy with no in-edge. Querying with a stored vector must return all of
//! its copies at distance 0.

use crate::common;

use common::*;
use stratavec::data::Metric;

const DIM: usize = 16;
const COPIES: usize = 3;

#[test]
fn every_copy_of_a_stored_vector_is_found() {
    let (unique, _) = synth(1500, 1, DIM, 21);
    // Each vector stored COPIES times, interleaved as a re-ingested corpus
    // would hold them: copies of row i are ids COPIES*i .. COPIES*i+COPIES.
    let base: Vec<f32> = unique
        .chunks_exact(DIM)
        .flat_map(|row| std::iter::repeat_n(row, COPIES).flatten().copied())
        .collect();
    let tmp = tempdir();
    build_f32(tmp.path(), &base, DIM, &small_params(Metric::L2), 2);
    let index = open(tmp.path());
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("build_report.json")).unwrap(),
    )
    .unwrap();
    // Every copy gets its successor in the cycle unless prune kept it.
    let links = report["duplicate_links"].as_u64().unwrap();
    assert!(
        links > 0 && links <= base.len() as u64 / DIM as u64,
        "{links}"
    );

    // Every 7th unique vector as a query: its COPIES ids are its nearest.
    let rows: Vec<usize> = (0..1500).step_by(7).collect();
    let queries: Vec<f32> = rows
        .iter()
        .flat_map(|&i| unique[i * DIM..(i + 1) * DIM].iter().copied())
        .collect();
    let res = search(&index, &queries, COPIES, 32);
    let mut missing = 0;
    for (q, &i) in rows.iter().enumerate() {
        let mut got: Vec<u32> = res.ids[q * COPIES..(q + 1) * COPIES].to_vec();
        got.sort_unstable();
        let want: Vec<u32> = (0..COPIES).map(|c| (i * COPIES + c) as u32).collect();
        if got != want {
            missing += 1;
        }
        for &d in &res.dists[q * COPIES..(q + 1) * COPIES] {
            assert!(d <= 1e-5 || got != want, "query {q}: distance {d}");
        }
    }
    assert_eq!(
        missing,
        0,
        "{missing} of {} queries missed a copy",
        rows.len()
    );
}
