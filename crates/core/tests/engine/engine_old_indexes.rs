//! Indexes built before profiles became compositions (issue #20; made by
//! `tests/data/v1-indexes/make.sh` at commit e8951bf) still open, and search
//! exactly as an index built today from the same data and parameters: the
//! build writes the same bytes, and both return the same neighbours.

use crate::common;

use common::*;
use std::path::{Path, PathBuf};
use stratavec::index::Manifest;
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
