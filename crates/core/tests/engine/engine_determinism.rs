//! The build is deterministic: the same data and parameters give
//! byte-identical pages.bin, codes.bin and manifest.json, run after run and
//! for any number of build threads (BuildParams' doc: "the build gives the
//! same bytes for any number of threads").

use crate::common;

use common::*;
use std::path::Path;
use stratavec::data::Metric;

const FILES: [&str; 3] = ["pages.bin", "codes.bin", "manifest.json"];

fn assert_same_files(a: &Path, b: &Path, what: &str) {
    for f in FILES {
        let (x, y) = (
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
        );
        assert_eq!(x.len(), y.len(), "{what}: {f} sizes differ");
        if let Some(i) = x.iter().zip(&y).position(|(p, q)| p != q) {
            panic!("{what}: {f} differs first at byte {i} (of {})", x.len());
        }
    }
}

#[test]
fn builds_are_byte_identical_across_runs_and_thread_counts() {
    let tmp = tempdir();
    let (base, _) = synth(3000, 0, 24, 21);
    let params = small_params(Metric::L2);
    let one_a = tmp.path().join("t1a");
    let one_b = tmp.path().join("t1b");
    let two = tmp.path().join("t2");
    build_f32(&one_a, &base, 24, &params, 1);
    build_f32(&one_b, &base, 24, &params, 1);
    assert_same_files(&one_a, &one_b, "threads=1 twice");
    build_f32(&two, &base, 24, &params, 2);
    assert_same_files(&one_a, &two, "threads=1 vs threads=2");
    let three = tmp.path().join("t3");
    build_f32(&three, &base, 24, &params, 3);
    assert_same_files(&one_a, &three, "threads=1 vs threads=3");
    // A build report (timings) exists beside the manifest, and is the only
    // file allowed to differ.
    assert!(one_a.join("build_report.json").is_file());
}

#[test]
fn different_seed_gives_a_different_index() {
    let tmp = tempdir();
    let (base, _) = synth(1500, 0, 16, 22);
    let mut params = small_params(Metric::L2);
    build_f32(&tmp.path().join("s1"), &base, 16, &params, 2);
    params.seed += 1;
    build_f32(&tmp.path().join("s2"), &base, 16, &params, 2);
    let a = std::fs::read(tmp.path().join("s1/pages.bin")).unwrap();
    let b = std::fs::read(tmp.path().join("s2/pages.bin")).unwrap();
    assert_ne!(a, b, "the seed does not reach the build");
}
