//! Indexes built before profiles became compositions (issue #20; made by
//! `tests/data/v1-indexes/make.sh` at commit e8951bf) still open, and search
//! exactly as an index built today from the same data and parameters: the
//! build writes the same bytes, and both return the same neighbours.

use crate::common;

use common::*;
use std::path::{Path, PathBuf};
use stratavec::index::Manifest;
use stratavec::plan::SearchPart;
use stratavec::{Index, OpenOptions};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/v1-indexes")
}

#[test]
fn old_indexes_open_and_search_as_todays_build_of_them() {
    let queries = stratavec::data::open(fixture().join("data/query.fbin"))
        .unwrap()
        .to_f32_vec();
    let tmp = tempdir();
    for profile in ["diskann", "starling"] {
        let old_dir = fixture().join(profile);
        let old = Manifest::read(&old_dir).unwrap();
        let new_dir = tmp.path().join(profile);
        stratavec::build_from_file(
            &fixture().join("data/base.fbin"),
            &new_dir,
            &old.build,
            1,
            &stratavec::progress::Silent,
        )
        .unwrap();
        let new = Manifest::read(&new_dir).unwrap();
        for (name, entry) in &old.files {
            assert_eq!(
                new.files.get(name),
                Some(entry),
                "{profile}: {name} differs from the one built before"
            );
        }
        let opts = OpenOptions {
            memory_budget_bytes: Some(2_000_000),
            ..Default::default()
        };
        let (a, b) = (
            Index::open(&old_dir, &opts).unwrap(),
            Index::open(&new_dir, &opts).unwrap(),
        );
        assert_eq!(a.profile.name, profile);
        let params = a.search_defaults(&Default::default());
        let params = stratavec::SearchParams {
            k: 10,
            complexity: 40,
            threads: 1,
            ..params
        };
        let (ra, rb) = (
            a.search_batch(&queries, 8, &params).unwrap(),
            b.search_batch(&queries, 8, &params).unwrap(),
        );
        assert_eq!(ra.failed(), 0);
        assert_eq!(ra.ids, rb.ids, "{profile}");
        assert_eq!(ra.dists, rb.dists, "{profile}");
        assert!(ra.ids.iter().all(|&i| i < 600));
    }
}

/// The v2 set (`tests/data/v2-indexes/make.sh`, made at commit 9a74618,
/// before the manifest recorded a plan of parts, issue #52): one index of
/// every profile, the ivf profile with codes, and f16 records with a ranked
/// node cache.
const V2: &[&str] = &[
    "diskann",
    "starling",
    "gorgeous",
    "laser",
    "pipeann",
    "octopus",
    "tiered",
    "ivf",
    "ivf-codes",
    "diskann-f16",
];

fn v2() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/v2-indexes")
}

/// The v2 index `name` (its directory and manifest) and today's build of
/// it from the same data and parameters, in `tmp`.
fn rebuild(name: &str, tmp: &Path) -> (PathBuf, Manifest, PathBuf) {
    let old_dir = v2().join(name);
    let old = Manifest::read(&old_dir).unwrap();
    let new_dir = tmp.join(name);
    stratavec::build_from_file(
        &v2().join("data/base.fbin"),
        &new_dir,
        &old.build,
        1,
        &stratavec::progress::Silent,
    )
    .unwrap();
    (old_dir, old, new_dir)
}

/// Today's build of every v2 index writes the same bytes in every file;
/// the manifests differ in nothing but what a newer build records.
#[test]
fn every_profile_builds_the_same_bytes_as_before_the_plan() {
    let tmp = tempdir();
    for name in V2 {
        let (old_dir, old, new_dir) = rebuild(name, tmp.path());
        let new = Manifest::read(&new_dir).unwrap();
        assert_eq!(
            old.files.keys().collect::<Vec<_>>(),
            new.files.keys().collect::<Vec<_>>(),
            "{name}: the files written"
        );
        for (file, entry) in &old.files {
            assert_eq!(new.files.get(file), Some(entry), "{name}: {file} differs");
        }
        assert_eq!(old.build, new.build, "{name}: build parameters");
        // What the open works out for the old index is what today's build
        // records.
        assert!(old.plan.is_none(), "{name}: a v2 manifest has no plan");
        assert_eq!(
            stratavec::plan::plan_of(&old_dir, &old).unwrap(),
            new.plan.clone().unwrap(),
            "{name}: plan"
        );
        assert_eq!(
            (&old.profile, &old.layout, &old.quantizer, old.medoid),
            (&new.profile, &new.layout, &new.quantizer, new.medoid),
            "{name}"
        );
    }
}

/// Every v2 index opens with today's code and returns what today's build
/// of it returns, neighbour for neighbour, with the same reads.
#[test]
fn every_v2_index_opens_and_searches_as_todays_build_of_it() {
    let queries = stratavec::data::open(v2().join("data/query.fbin"))
        .unwrap()
        .to_f32_vec();
    let tmp = tempdir();
    for name in V2 {
        let (old_dir, old, new_dir) = rebuild(name, tmp.path());
        // No budget: codes only, every record read; 20 MB: every cache full.
        for budget in [None, Some(20_000_000)] {
            let opts = OpenOptions {
                memory_budget_bytes: budget,
                ..Default::default()
            };
            let (a, b) = (
                Index::open(&old_dir, &opts).unwrap(),
                Index::open(&new_dir, &opts).unwrap(),
            );
            assert_eq!(a.profile.name, old.profile);
            assert_eq!(a.memory(), b.memory(), "{name}: memory held");
            assert_eq!(
                a.search_defaults(&Default::default()),
                b.search_defaults(&Default::default()),
                "{name}: search defaults"
            );
            let params = stratavec::SearchParams {
                k: 10,
                complexity: 24,
                threads: 1,
                // One query at a time: several in flight share a ring, and
                // the order their reads complete in steers the pipelined
                // searches and the adaptive width.
                in_flight: 1,
                ..a.search_defaults(&Default::default())
            };
            same_answers(name, &a, &b, &queries, &params);
        }
    }
}

/// `b` answers as `a` does: the same neighbours, distances and reads a
/// query; for a search steered by when its reads arrive, as close to `a`
/// as `a` is to itself.
fn same_answers(name: &str, a: &Index, b: &Index, queries: &[f32], p: &stratavec::SearchParams) {
    let search = |i: &Index| i.search_batch(queries, 16, p).unwrap();
    let (ra, again, rb) = (search(a), search(a), search(b));
    assert_eq!(ra.failed() + rb.failed(), 0, "{name}");
    assert!(rb.ids.iter().all(|&i| i < 600), "{name}");
    let reads = |r: &stratavec::BatchResult| r.stats.iter().map(|s| s.reads).collect::<Vec<_>>();
    // The pipelined search and the two-stage search (whose refinement
    // reads overlap its graph reads) expand reads in the order they arrive:
    // their paths depend on timing, even when two runs happen to agree.
    let steered = matches!(
        a.plan.search,
        SearchPart::Pipelined { .. } | SearchPart::TwoStage { .. }
    );
    if !steered {
        assert_eq!(
            (&ra.ids, reads(&ra)),
            (&again.ids, reads(&again)),
            "{name}: repeats"
        );
        assert_eq!(ra.ids, rb.ids, "{name}");
        assert_eq!(ra.dists, rb.dists, "{name}");
        assert_eq!(reads(&ra), reads(&rb), "{name}: reads");
        return;
    }
    let shared = |x: &[u32], y: &[u32]| -> usize {
        x.chunks(10)
            .zip(y.chunks(10))
            .map(|(p, q)| p.iter().filter(|i| q.contains(i)).count())
            .sum()
    };
    let floor = shared(&ra.ids, &again.ids).min(ra.ids.len() * 9 / 10);
    assert!(
        shared(&ra.ids, &rb.ids) >= floor,
        "{name}: neighbours shared"
    );
    let sum = |r: &stratavec::BatchResult| reads(r).iter().sum::<u64>() as f64;
    let spread = (sum(&ra) - sum(&again)).abs().max(0.05 * sum(&ra));
    assert!(
        (sum(&ra) - sum(&rb)).abs() <= 2.0 * spread,
        "{name}: reads {} against {}",
        sum(&ra),
        sum(&rb)
    );
}
