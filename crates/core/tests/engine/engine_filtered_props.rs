//! Every way of a filtered search returns only rows its filter matches
//! (issue #56), for random expressions — labels, AND, OR, NOT, nested —
//! over labels of every selectivity from 50% to 0.07%, on one labelled
//! index per profile family (a graph read from disk, a graph whose
//! adjacency is in RAM). The reference is the expression evaluated on
//! each row's own labels (`Expr::matches`), not the inverted lists the
//! search used.

use super::engine_filtered::{build_labelled, labels, names, DIM, N};
use crate::common::*;
use proptest::prelude::*;
use std::sync::{Arc, OnceLock};
use stratavec::index::filtered::{Allowed, FilterWay};
use stratavec::labels::{Expr, Labels};
use stratavec::Index;

struct Shared {
    _tmp: tempfile::TempDir,
    indexes: Vec<(&'static str, Index)>,
    queries: Vec<f32>,
    labels: Labels,
}

fn shared() -> &'static Shared {
    static S: OnceLock<Shared> = OnceLock::new();
    S.get_or_init(|| {
        let (base, queries) = synth(N, 8, DIM, 577);
        let tmp = tempdir();
        let indexes = ["diskann", "gorgeous"]
            .into_iter()
            .map(|p| {
                let dir = tmp.path().join(p);
                build_labelled(&dir, &base, p);
                (p, open(&dir))
            })
            .collect();
        Shared {
            _tmp: tmp,
            indexes,
            queries,
            labels: Labels::from_sets(&labels(), Some(names())),
        }
    })
}

/// A random filter's text: labels by name or id, under NOT, AND, OR and
/// parentheses, up to three levels deep.
fn expr_text() -> impl Strategy<Value = String> {
    let leaf = (0u32..8, any::<bool>()).prop_map(|(l, by_name)| match by_name {
        true => format!("tag:{l}"),
        false => l.to_string(),
    });
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            inner.clone().prop_map(|e| format!("NOT ({e})")),
            proptest::collection::vec(inner.clone(), 2..4)
                .prop_map(|v| format!("({})", v.join(" AND "))),
            proptest::collection::vec(inner, 2..4).prop_map(|v| format!("({})", v.join(" OR "))),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn every_way_returns_only_what_the_filter_matches(text in expr_text(), l in 10usize..80) {
        let s = shared();
        let e = Expr::parse(&text, &s.labels).unwrap();
        let rows = e.rows(&s.labels);
        let sets = labels();
        for r in 0..N as u32 {
            prop_assert_eq!(rows.contains(r), e.matches(sets.row(r as usize)), "{} row {}", text, r);
        }
        let nq = s.queries.len() / DIM;
        let allowed: Vec<Allowed> = vec![Some(Arc::new(rows.clone())); nq];
        for (profile, index) in &s.indexes {
            for way in [FilterWay::Auto, FilterWay::Pre, FilterWay::InSearch, FilterWay::Post] {
                let res = index
                    .search_filtered(&s.queries, DIM, &search_params(10, l), &allowed, way)
                    .unwrap();
                prop_assert_eq!(res.failed(), 0);
                for qi in 0..nq {
                    let got: Vec<u32> = res.ids[qi * 10..(qi + 1) * 10]
                        .iter()
                        .copied()
                        .filter(|&id| id != u32::MAX)
                        .collect();
                    for &id in &got {
                        prop_assert!(
                            e.matches(sets.row(id as usize)),
                            "{} {:?} {}: query {} returned row {}, which does not match",
                            profile, way, text, qi, id
                        );
                    }
                    let mut unique = got.clone();
                    unique.sort_unstable();
                    unique.dedup();
                    prop_assert_eq!(unique.len(), got.len(), "{} {:?} {}: a row twice", profile, way, text);
                    if rows.is_empty() {
                        prop_assert!(got.is_empty());
                    }
                }
            }
        }
    }
}
