//! Defaults that fit the data (`index::fit`): a 16-d set and a set of 50
//! vectors build and search with every parameter left unset, the choices
//! are recorded in the manifest, and a build that cannot work fails before
//! its first expensive stage.

use crate::common;

use common::*;
use std::time::Instant;
use stratavec::data::{DType, Metric, Vectors};
use stratavec::index::Manifest;
use stratavec::progress::Silent;
use stratavec::{build_index, BuildParams, Unset};

fn unset(profile: &str) -> BuildParams {
    BuildParams {
        unset: Unset::all(),
        ..BuildParams::for_profile(profile)
    }
}

#[test]
fn a_tiny_16_d_set_builds_and_searches_with_every_default() {
    let (base, queries) = synth(50, 5, 16, 3);
    let gt = gt_f32(&base, &queries, 16, Metric::L2, 10);
    for profile in ["diskann", "starling"] {
        let tmp = tempdir();
        let dir = tmp.path().join(profile);
        build_f32(&dir, &base, 16, &unset(profile), 2);
        let m = Manifest::read(&dir).unwrap();
        assert_eq!(m.build.pq_bytes, 16, "{profile}");
        assert_eq!(m.quantizer, "pq16");
        assert!(m.chosen["pq_bytes"].contains("16-d"), "{:?}", m.chosen);
        let index = open(&dir);
        let res = search(&index, &queries, 10, 20);
        assert!(recall_of(&res, &gt, 10) >= 0.9, "{profile}");
    }
}

#[test]
fn given_parameters_are_not_replaced() {
    // pq_bytes given as 32 on 16-d data is an error, not a silent 16.
    let (base, _) = synth(50, 1, 16, 3);
    let tmp = tempdir();
    let e = build_index(
        Vectors::f32(&base, 16).unwrap(),
        "test data",
        &tmp.path().join("x"),
        &BuildParams::default(),
        1,
        &Silent,
    )
    .unwrap_err()
    .to_string();
    assert_mentions(&e, &["pq_bytes", "1..=16", "found 32"]);
}

#[test]
fn an_impossible_starling_build_fails_in_under_a_second() {
    // 768-d f32 records (3.2 KB) at the 4 KB page the caller asked for: the
    // graph of 20k vectors would take a minute; the check takes none of it.
    let n = 20_000;
    let base = vec![0.5f32; n * 768];
    let tmp = tempdir();
    let params = BuildParams::for_profile("starling");
    let t = Instant::now();
    let e = build_index(
        Vectors::f32(&base, 768).unwrap(),
        "test data",
        &tmp.path().join("s"),
        &params,
        2,
        &Silent,
    )
    .unwrap_err()
    .to_string();
    assert!(t.elapsed().as_secs_f64() < 1.0, "{:?}", t.elapsed());
    assert_mentions(
        &e,
        &[
            "page_size",
            "2 shuffled records of",
            "8192",
            "4096-byte page",
        ],
    );
    assert!(!tmp.path().join("s").exists());
}

#[test]
fn starling_picks_the_page_that_holds_two_records() {
    let (base, queries) = synth(300, 5, 768, 4);
    let tmp = tempdir();
    let dir = tmp.path().join("s");
    build_f32(&dir, &base, 768, &unset("starling"), 2);
    let m = Manifest::read(&dir).unwrap();
    assert_eq!((m.page_size, m.build.page_size), (8192, 8192));
    assert!(
        m.chosen["page_size"].starts_with("8192: a 4096-byte page holds fewer than 2"),
        "{:?}",
        m.chosen
    );
    // As f16 the records fit 4 KB pages: nothing chosen, nothing recorded.
    let half = BuildParams {
        store: Some(DType::F16),
        ..unset("starling")
    };
    build_f32(&tmp.path().join("h"), &base, 768, &half, 2);
    let m = Manifest::read(&tmp.path().join("h")).unwrap();
    assert_eq!(m.page_size, 4096);
    assert!(m.chosen.is_empty());
    let res = search(&open(&dir), &queries, 5, 20);
    assert_eq!(res.failed(), 0);
}

#[test]
fn a_search_needing_more_buffers_than_reserved_says_what_to_do() {
    let s = shared();
    let index = open(&s.dir);
    let p = stratavec::SearchParams {
        threads: 64,
        in_flight: 32,
        ..search_params(10, 20)
    };
    // Checked before any work, and by search_batch the same way.
    let e = err_msg(index.check_search(&p, SHARED_NQ));
    assert_eq!(e, err_msg(index.search_batch(&s.queries, s.dim, &p)));
    assert_mentions(
        &e,
        &[
            "I/O buffers for this search (threads x min(in_flight x beam_width, 64) x page)",
            "reserved when the index was opened (search with fewer threads",
            "found 64 x min(32 x 4, 64) x 4096",
        ],
    );
    assert!(
        !e.contains("READ_SLOTS") && !e.contains("OpenOptions"),
        "{e}"
    );
}
