//! The gorgeous profile end to end (issue #20): graph cache, replicated and
//! separated layouts, two-stage search, the memory plan under every
//! budget, PQ bytes planned for a budget, and indexes built before all this
//! still opening and searching the same.

use crate::common;

use common::*;
use stratavec::data::Metric;
use stratavec::layout::LayoutKind;
use stratavec::{BuildParams, Index, OpenOptions, SearchParams};

const DIM: usize = 16;
const N: usize = 3000;

fn gorgeous(layout: LayoutKind) -> BuildParams {
    BuildParams {
        layout: Some(layout),
        nav_sample: 0.01,
        ..BuildParams {
            profile: "gorgeous".into(),
            ..small_params(Metric::L2)
        }
    }
}

fn open_with(dir: &std::path::Path, budget: u64) -> Index {
    let opts = OpenOptions {
        memory_budget_bytes: Some(budget),
        ..Default::default()
    };
    Index::open(dir, &opts).unwrap_or_else(|e| panic!("open {}: {e}", dir.display()))
}

/// The bytes an open holds whatever its budget (codes, buffers, nav).
fn required(dir: &std::path::Path) -> u64 {
    let plain = Index::open(dir, &OpenOptions::default()).unwrap();
    plain.memory().total() as u64
}

#[test]
fn every_layout_finds_neighbours_and_the_graph_cache_saves_reads() {
    let (base, queries) = synth(N, 100, DIM, 21);
    let gt = gt_f32(&base, &queries, DIM, Metric::L2, 10);
    let tmp = tempdir();
    let diskann = tmp.path().join("diskann");
    build_f32(&diskann, &base, DIM, &small_params(Metric::L2), 2);
    let params = |l| SearchParams {
        two_stage: true,
        ..search_params(10, l)
    };
    let d = open_with(&diskann, required(&diskann) + 20_000);
    let dr = d
        .search_batch(&queries, DIM, &search_params(10, 40))
        .unwrap();
    for layout in [
        LayoutKind::Replicated,
        LayoutKind::Separated,
        LayoutKind::Coupled,
    ] {
        let dir = tmp.path().join(layout.name());
        build_f32(&dir, &base, DIM, &gorgeous(layout), 2);
        assert_eq!(
            stratavec::index::Manifest::read(&dir).unwrap().layout,
            layout.name()
        );
        // The same bytes beyond the required parts as diskann's cache got:
        // here they hold adjacency lists, several per cached record.
        let g = open_with(&dir, required(&dir) + 20_000);
        assert!(g.memory().get("adjacency") > 0, "{}", g.memory());
        let gr = g.search_batch(&queries, DIM, &params(40)).unwrap();
        assert_eq!(gr.failed(), 0);
        check_results(&gr, &base, &queries, DIM, Metric::L2);
        let (rd, rg) = (recall_of(&dr, &gt, 10), recall_of(&gr, &gt, 10));
        assert!(rg >= 0.9, "{layout}: recall {rg}");
        let (reads_d, reads_g) = (dr.total().reads, gr.total().reads);
        assert!(
            reads_g < reads_d,
            "{layout}: two-stage read {reads_g} blocks, diskann {reads_d} (recall {rg} vs {rd})"
        );
        // Without the two-stage search a gorgeous index is searched as
        // diskann searches it, and finds as much; the separated layout's
        // blocks hold no vectors, so it refuses to.
        let beam = g.search_batch(&queries, DIM, &search_params(10, 40));
        match layout {
            LayoutKind::Separated => {
                let e = beam.err().unwrap().to_string();
                assert!(e.contains("two-stage") && e.contains("separated"), "{e}");
            }
            _ => assert!(recall_of(&beam.unwrap(), &gt, 10) >= 0.9, "{layout}"),
        }
    }
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("replicated/build_report.json")).unwrap(),
    )
    .unwrap();
    let blowup = report["replication"]["blowup_vs_coupled"].as_f64().unwrap();
    assert!(blowup > 1.0, "{report}");
}

/// Over a grid of budgets: the open never holds more than its budget, the
/// graph cache fills before the node cache, and a budget below the
/// required parts is refused naming them.
#[test]
fn the_memory_plan_never_exceeds_the_budget() {
    let (base, _) = synth(N, 1, DIM, 22);
    let tmp = tempdir();
    let dir = tmp.path().join("g");
    build_f32(&dir, &base, DIM, &gorgeous(LayoutKind::Replicated), 2);
    let req = required(&dir);
    let all_lists = {
        let g = open_with(&dir, u64::MAX / 2);
        g.memory().get("adjacency") as u64
    };
    assert!(all_lists > 0);
    let mut last_adjacency = 0;
    for step in 0..40u64 {
        let budget = req + step * (all_lists + 200_000) / 30;
        let g = open_with(&dir, budget);
        let m = g.memory();
        assert!(m.total() as u64 <= budget, "budget {budget}: {m}");
        let adjacency = m.get("adjacency");
        assert!(adjacency >= last_adjacency, "budget {budget}: {m}");
        if m.get("cache") > 0 {
            assert_eq!(adjacency as u64, all_lists, "nodes before every list: {m}");
        }
        last_adjacency = adjacency;
        assert!(m.plan.iter().map(|g| g.bytes).sum::<usize>() as u64 <= budget);
    }
    let opts = OpenOptions {
        memory_budget_bytes: Some(req / 2),
        ..Default::default()
    };
    let e = Index::open(&dir, &opts).err().unwrap().to_string();
    assert!(e.contains("memory budget") && e.contains("PQ codes"), "{e}");
}

/// PQ bytes left unset with a budget: the build tries sizes on a sample and
/// records why it chose one; the codes it chose fit the budget.
#[test]
fn pq_bytes_are_planned_for_the_budget() {
    let n = 12_000;
    let (base, _) = synth(n, 1, DIM, 23);
    let tmp = tempdir();
    let dir = tmp.path().join("planned");
    let budget = 1_500_000u64;
    let params = BuildParams {
        memory_budget: Some(budget),
        unset: stratavec::Unset {
            pq_bytes: true,
            ..Default::default()
        },
        ..gorgeous(LayoutKind::Replicated)
    };
    build_f32(&dir, &base, DIM, &params, 2);
    let m = stratavec::index::Manifest::read(&dir).unwrap();
    let why = &m.chosen["pq_bytes"];
    assert!(why.contains("memory budget"), "{why}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("build_report.json")).unwrap())
            .unwrap();
    let plan = &report["pq_plan"];
    assert_eq!(
        plan["pq_bytes"].as_u64().unwrap() as usize,
        m.build.pq_bytes
    );
    assert!(plan["candidates"].as_array().unwrap().len() >= 2, "{plan}");
    assert!((m.build.pq_bytes * n) as u64 <= budget);
    // The navigation graph was tried on sample queries: kept (nav.bin)
    // exactly when it saved 5% of the search stage's cost, and said why
    // when not. The cost is the estimates, plus the graph's own distances
    // (at dim / (4 x PQ bytes) estimates each), plus the expansions of
    // lists not cached at 2,000 estimates each (`memory::nav_plan`).
    let nav = &report["nav_plan"];
    let kept = nav["kept"].as_bool().unwrap();
    let f = |key: &str| nav[key].as_f64().unwrap();
    assert!(
        f("expansions_from_nav") > 0.0 && f("expansions_from_medoid") > 0.0,
        "{nav}"
    );
    assert!(f("estimates_from_nav") >= f("expansions_from_nav"), "{nav}");
    assert!(f("nav_distances") > 0.0, "{nav}");
    let distance = DIM as f64 / (4.0 * m.build.pq_bytes as f64);
    let miss = (1.0 - f("graph_share")) * 2000.0;
    let cost_from = |way: &str, own: f64| {
        f(&format!("estimates_from_{way}"))
            + own * distance
            + f(&format!("expansions_from_{way}")) * miss
    };
    let (from_nav, from_medoid) = (
        cost_from("nav", f("nav_distances")),
        cost_from("medoid", 0.0),
    );
    assert!(
        (from_nav - f("cost_from_nav")).abs() < 1e-6 * from_nav,
        "{nav}"
    );
    assert!(
        (from_medoid - f("cost_from_medoid")).abs() < 1e-6 * from_medoid,
        "{nav}"
    );
    assert_eq!(kept, from_nav <= 0.95 * from_medoid, "{nav}");
    assert_eq!(dir.join("nav.bin").exists(), kept);
    assert_eq!(m.chosen.contains_key("nav_sample"), !kept);
    // The planned build is the index a second identical request reuses.
    assert!(m.build.builds_same_index(&params));
    // A budget no PQ size fits is refused before the build writes anything.
    let small = BuildParams {
        memory_budget: Some(100_000),
        ..params
    };
    let e = stratavec::build_index(
        stratavec::data::Vectors::f32(&base, DIM).unwrap(),
        "test data",
        &tmp.path().join("too-small"),
        &small,
        2,
        &stratavec::progress::Silent,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("memory budget") && e.contains("PQ"), "{e}");
    assert!(!tmp.path().join("too-small").exists());
}

/// Pipelined refinement (issue #22: gorgeous with `pipelined`): at one
/// query a thread, over the default backend, the refinement reads that go
/// out during the search stage find at least what the plain two-stage
/// search finds (their exact distances join its pool), every read is
/// accounted for (the plain search's plus the early ones that lost), and
/// one query at a time and many in flight agree on recall.
#[test]
fn pipelined_refinement_finds_what_the_two_stage_search_finds() {
    let (base, queries) = synth(N, 100, DIM, 31);
    let gt = gt_f32(&base, &queries, DIM, Metric::L2, 10);
    let tmp = tempdir();
    let dir = tmp.path().join("g");
    build_f32(&dir, &base, DIM, &gorgeous(LayoutKind::Replicated), 2);
    // Every list in RAM, few records: the refinement is all reads.
    let g = open_with(&dir, required(&dir) + 200_000);
    // (So the search stage reads nothing and runs the same either way.)
    assert_eq!(g.cached_lists(), N, "{}", g.memory());
    let params = |pipelined, in_flight| SearchParams {
        two_stage: true,
        pipelined,
        in_flight,
        threads: 1,
        ..search_params(10, 40)
    };
    let plain = g.search_batch(&queries, DIM, &params(false, 1)).unwrap();
    for in_flight in [1, 8] {
        let piped = g
            .search_batch(&queries, DIM, &params(true, in_flight))
            .unwrap();
        assert_eq!(piped.failed(), 0);
        check_results(&piped, &base, &queries, DIM, Metric::L2);
        let (rp, rq) = (recall_of(&plain, &gt, 10), recall_of(&piped, &gt, 10));
        assert!(
            rq >= rp,
            "in flight {in_flight}: pipelined {rq} < plain {rp}"
        );
        let (t, p) = (piped.total(), plain.total());
        assert_eq!(p.wasted, 0);
        assert!(
            t.reads > 0 && t.reads <= p.reads + t.wasted,
            "{t:?} vs {p:?}"
        );
        assert!(t.exact >= p.exact, "{t:?} vs {p:?}");
    }
}

/// `pipelined_refinement` (what `auto --objective latency` sets where its
/// trial was faster, issue #57): the index records it in its plan, opens
/// with the pipelined refinement as its search default (a search's
/// `pipelined` switch still turns it off), and an index built before the
/// field opens with it off.
#[test]
fn a_pipelined_refinement_built_in_is_the_default_search() {
    use stratavec::plan::SearchPart;
    use stratavec::search::Switches;
    let (base, queries) = synth(N, 50, DIM, 32);
    let gt = gt_f32(&base, &queries, DIM, Metric::L2, 10);
    let tmp = tempdir();
    let dir = tmp.path().join("g");
    let params = BuildParams {
        pipelined_refinement: true,
        ..gorgeous(LayoutKind::Replicated)
    };
    build_f32(&dir, &base, DIM, &params, 2);
    let g = open_with(&dir, required(&dir) + 200_000);
    assert_eq!(g.plan.search, SearchPart::TwoStage { pipelined: true });
    let on = g.search_defaults(&Switches::default());
    assert!(on.two_stage && on.pipelined, "{on:?}");
    let off = g.search_defaults(&Switches {
        pipelined: Some(false),
        ..Default::default()
    });
    assert!(off.two_stage && !off.pipelined, "{off:?}");
    let res = g
        .search_batch(
            &queries,
            DIM,
            &SearchParams {
                k: 10,
                complexity: 40,
                threads: 1,
                in_flight: 1,
                ..on
            },
        )
        .unwrap();
    assert_eq!(res.failed(), 0);
    assert!(recall_of(&res, &gt, 10) >= 0.9);
    // A plan written before the field: the plain refinement.
    let old: SearchPart = serde_json::from_str(r#"{"kind":"two_stage"}"#).unwrap();
    assert_eq!(old, SearchPart::TwoStage { pipelined: false });
}
