//! The parameter sets against plain references: keywords and flags give the
//! same parameters, nothing given gives the defaults, every field is a
//! parameter, and bad input is refused naming what it was.

use proptest::prelude::*;
use stratavec::args::{describe, Given, Params};
use stratavec::layout::shuffle::Shuffle;
use stratavec::search::{in_flight_for, Switches, WidthPolicy};
use stratavec::{BuildParams, SearchParams, Unset};

fn kw(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn flags(params: Params, argv: &[&str]) -> Given {
    Given::from_matches(&params.command().try_get_matches_from(argv).unwrap())
}

#[test]
fn nothing_given_is_the_default_profile_with_everything_fitted() {
    let p = Given::none(Params::Build).build_params().unwrap();
    let want = BuildParams {
        unset: Unset::all(),
        ..BuildParams::for_profile(stratavec::profile::DEFAULT)
    };
    assert_eq!(p, want);
    for profile in stratavec::profile::names() {
        let given = Given::from_keywords(Params::Build, &kw(&[("profile", profile)])).unwrap();
        let want = BuildParams {
            unset: Unset::all(),
            ..BuildParams::for_profile(profile)
        };
        assert_eq!(given.build_params().unwrap(), want, "{profile}");
    }
}

#[test]
fn keywords_and_flags_give_the_same_parameters() {
    let by_keyword = Given::from_keywords(
        Params::Build,
        &kw(&[
            ("profile", "starling"),
            ("graph_degree", "48"),
            ("memory_budget_mb", "1.5"),
            ("ivf_codes", "true"),
            ("shuffle", "bns"),
        ]),
    )
    .unwrap()
    .build_params()
    .unwrap();
    let by_flag = flags(
        Params::Build,
        &[
            "--profile",
            "starling",
            "-R",
            "48",
            "--memory-budget-mb",
            "1.5",
            "--ivf-codes",
            "--shuffle",
            "bns",
        ],
    )
    .build_params()
    .unwrap();
    assert_eq!(by_keyword, by_flag);
    assert_eq!(by_keyword.graph_degree, 48);
    assert_eq!(by_keyword.memory_budget, Some(1_500_000));
    assert!(by_keyword.ivf_codes);
    assert_eq!(by_keyword.shuffle, Shuffle::Bns);
    // What was given is not left to the build; what was not, is.
    let given = Given::from_keywords(Params::Build, &kw(&[("pq_bytes", "16")])).unwrap();
    let p = given.build_params().unwrap();
    assert_eq!(
        (p.pq_bytes, p.unset.pq_bytes, p.unset.page_size),
        (16, false, true)
    );
}

#[test]
fn a_search_applies_what_was_given_over_the_index_defaults() {
    let defaults = |s: &Switches| SearchParams {
        page_search: s.page_search.unwrap_or(true),
        width: s.width.unwrap_or(WidthPolicy::Double),
        beam_width: 2,
        in_flight: in_flight_for(2),
        ..SearchParams::default()
    };
    let none = Given::none(Params::Search).search_params(defaults).unwrap();
    assert_eq!(none, defaults(&Switches::default()));
    let given = Given::from_keywords(
        Params::Search,
        &kw(&[("page_search", "false"), ("beam_width", "8"), ("k", "100")]),
    )
    .unwrap();
    let p = given.search_params(defaults).unwrap();
    assert!(!p.page_search);
    assert_eq!(p.width, WidthPolicy::Double);
    // Queries in flight follow the beam width; a list below k is raised.
    assert_eq!((p.beam_width, p.in_flight), (8, in_flight_for(8)));
    assert_eq!((p.k, p.complexity), (100, 100));
    let range = Given::from_keywords(
        Params::Search,
        &kw(&[("radius", "0.5"), ("complexity", "8")]),
    )
    .unwrap()
    .search_params(defaults)
    .unwrap();
    assert_eq!((range.k, range.complexity, range.radius), (1, 8, Some(0.5)));
}

#[test]
fn an_unknown_keyword_is_refused_naming_it_and_the_accepted_ones() {
    let e = Given::from_keywords(Params::Build, &kw(&[("graph_degre", "48")]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("graph_degre=48"), "{e}");
    assert!(e.contains("graph_degree") && e.contains("ivf_codes"), "{e}");
}

#[test]
fn a_bad_value_is_refused_naming_the_keyword_what_it_takes_and_what_was_found() {
    for (keyword, value, expected) in [
        ("graph_degree", "4.5", "a non-negative integer"),
        ("metric", "hamming", "l2"),
        ("shuffle", "random", "bnf"),
        ("page_search", "yes", "true"),
        ("memory_budget_mb", "-3", "MB"),
    ] {
        let params = match keyword {
            "page_search" => Params::Search,
            _ => Params::Build,
        };
        let e = Given::from_keywords(params, &kw(&[(keyword, value)]))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(keyword), "{e}");
        assert!(e.contains(expected) && e.contains(value), "{e}");
    }
}

/// Every field of the record is a parameter a caller can give, once.
#[test]
fn every_field_is_a_parameter_once() {
    let full = BuildParams {
        layout: Some(stratavec::layout::LayoutKind::Coupled),
        replicas: Some(1),
        memory_budget: Some(1),
        store: Some(stratavec::data::DType::F16),
        code_dim: Some(8),
        entry_clusters: Some(1),
        ivf_clusters: Some(1),
        node_cache_rank: Some(stratavec::memory::cache_rank::CacheRank::Bfs),
        exrabitq_bits: Some(4),
        exrabitq_centres: Some(16),
        pipelined_refinement: true,
        plan_queries: Some("learn.fbin".into()),
        ..BuildParams::default()
    };
    let search = SearchParams {
        radius: Some(1.0),
        ..SearchParams::default()
    };
    for (params, record) in [
        (Params::Build, serde_json::to_value(full).unwrap()),
        (Params::Search, serde_json::to_value(search).unwrap()),
    ] {
        let fields: Vec<String> = describe(params).into_iter().map(|d| d.field).collect();
        let mut keys: Vec<String> = record.as_object().unwrap().keys().cloned().collect();
        let mut sorted = fields.clone();
        sorted.sort();
        sorted.dedup();
        keys.sort();
        assert_eq!(sorted.len(), fields.len(), "a field named twice");
        assert_eq!(sorted, keys, "{}", params.name());
    }
}

proptest! {
    /// Any integer a keyword is given comes back as the field's value.
    #[test]
    fn integers_round_trip(r in 1usize..10_000, l in 1usize..10_000, w in 1usize..64) {
        let p = Given::from_keywords(Params::Build, &kw(&[
            ("graph_degree", &r.to_string()), ("complexity", &l.to_string()),
        ])).unwrap().build_params().unwrap();
        prop_assert_eq!((p.graph_degree, p.complexity), (r, l));
        let s = Given::from_keywords(Params::Search, &kw(&[("beam_width", &w.to_string())]))
            .unwrap().search_params(|_| SearchParams::default()).unwrap();
        prop_assert_eq!(s.beam_width, w);
    }
}
