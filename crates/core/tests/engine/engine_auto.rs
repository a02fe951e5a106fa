//! `build --profile auto` (issue #57): the planner builds every candidate
//! over a sample, records each one's trial and prediction in the build
//! report, builds the one it chose (the manifest names it, `chosen` says
//! why) and leaves none of its trials behind; without a budget, or on data
//! too small to sample, the default profile is built and the reason given.

use crate::common;

use common::*;
use stratavec::autoplan::AutoPlan;
use stratavec::data::Metric;
use stratavec::index::Manifest;
use stratavec::{BuildParams, Unset};

const DIM: usize = 16;

fn auto(budget: Option<u64>) -> BuildParams {
    BuildParams {
        graph_degree: 16,
        complexity: 32,
        memory_budget: budget,
        // The disk's rate given: no probe in a test.
        device_reads_per_s: Some(50_000.0),
        unset: Unset::all(),
        ..BuildParams::for_profile("auto")
    }
}

fn report(dir: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("build_report.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn auto_tries_every_candidate_and_builds_the_one_it_chose() {
    let (base, queries) = synth(6_000, 20, DIM, 57);
    let tmp = tempdir();
    let dir = tmp.path().join("auto");
    build_f32(&dir, &base, DIM, &auto(Some(2_000_000)), 2);
    let plan: AutoPlan = serde_json::from_value(report(&dir)["auto_plan"].clone()).unwrap();
    let names: Vec<&str> = plan.candidates.iter().map(|c| c.profile.as_str()).collect();
    assert_eq!(names, stratavec::profile::planned());
    assert_eq!(plan.sample, 5_000);
    assert_eq!(plan.device.source, "given");
    for c in &plan.candidates {
        match (&c.trial, &c.predicted) {
            (Some(t), Some(p)) => {
                assert!(t.points.last().unwrap().recall >= 0.95, "{c:?}");
                assert!(t.cpu_us > 0.0 && p.qps > 0.0, "{c:?}");
            }
            _ => assert!(c.skipped.is_some(), "{c:?}"),
        }
    }
    let best = plan
        .candidates
        .iter()
        .filter_map(|c| Some((c.predicted.as_ref()?.qps, &c.profile)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .unwrap();
    assert_eq!(&plan.chosen, best.1);
    // Every candidate but the chosen says why it was not.
    for c in &plan.candidates {
        assert_eq!(c.why_not.is_none(), c.profile == plan.chosen, "{c:?}");
    }
    let m = Manifest::read(&dir).unwrap();
    assert_eq!(m.build.profile, plan.chosen);
    // The layout its best trial had is the one built.
    if let Some(s) = plan.layout.store {
        assert_eq!(m.build.store, Some(s));
    }
    if let Some(p) = plan.layout.page_size {
        assert_eq!(m.build.page_size, p);
    }
    assert!(
        m.chosen["profile"].starts_with(&plan.chosen),
        "{:?}",
        m.chosen
    );
    // The trials are gone, and the index searches.
    let hidden: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(hidden, vec![std::ffi::OsString::from("auto")]);
    // Asked again, the same request names this index whatever the planner
    // chose (a bench reuses it); another budget or a given profile does not.
    let f32 = stratavec::data::DType::F32;
    assert!(
        m.built_as_asked(&auto(Some(2_000_000)), f32).unwrap(),
        "{m:?}"
    );
    assert!(!m.built_as_asked(&auto(Some(3_000_000)), f32).unwrap());
    let other = if plan.chosen == "diskann" {
        "starling"
    } else {
        "diskann"
    };
    let given = BuildParams {
        profile: other.into(),
        ..auto(Some(2_000_000))
    };
    assert!(!m.built_as_asked(&given, f32).unwrap());
    let gt = gt_f32(&base, &queries, DIM, Metric::L2, 10);
    let res = search(&open(&dir), &queries, 10, 64);
    assert!(recall_of(&res, &gt, 10) >= 0.9);
}

#[test]
fn without_a_budget_or_enough_rows_auto_builds_the_default() {
    let tmp = tempdir();
    let (small, _) = synth(1_000, 1, DIM, 58);
    for (name, data, budget, why) in [
        ("no-budget", &small, None, "memory budget"),
        ("small", &small, Some(2_000_000), "samples 5200 rows"),
    ] {
        let dir = tmp.path().join(name);
        build_f32(&dir, data, DIM, &auto(budget), 1);
        let m = Manifest::read(&dir).unwrap();
        assert_eq!(m.build.profile, stratavec::profile::DEFAULT);
        assert!(m.chosen["profile"].contains(why), "{:?}", m.chosen);
        assert!(report(&dir).get("auto_plan").is_none());
    }
}

mod budgets {
    //! No plan exceeds its budget: whatever the budget, the dimension and
    //! the objective, the index `auto` builds holds at most the budget in
    //! RAM once opened with it (the trials it predicted from were opened
    //! with the sample's share of it, `autoplan::sample`).
    use super::*;
    use proptest::prelude::*;
    use stratavec::autoplan::Objective;
    use stratavec::index::OpenOptions;
    use stratavec::Index;

    /// The bytes every index holds whatever its size: two threads' read
    /// buffers and the PQ codebook (`autoplan::sample`'s fixed bytes).
    /// Budgets are this plus a share of the raw vectors, so the share is
    /// what the parts are planned in.
    fn fixed(dim: usize) -> u64 {
        (2 * stratavec::search::READ_SLOTS * 4096 + 256 * dim * 4 + dim * 4) as u64
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3, ..ProptestConfig::default() })]
        #[test]
        fn no_plan_exceeds_its_budget(
            dim in prop_oneof![Just(8usize), Just(24), Just(48)],
            share in 0.05f64..0.4,
            latency in any::<bool>(),
            seed in 0u64..1_000,
        ) {
            let n = 5_400;
            let (base, _) = synth(n, 1, dim, seed);
            let budget = fixed(dim) + (share * (n * dim * 4) as f64) as u64;
            let objective = match latency {
                true => Objective::Latency,
                false => Objective::Throughput,
            };
            let tmp = tempdir();
            let dir = tmp.path().join("auto");
            let params = BuildParams { objective, ..auto(Some(budget)) };
            build_f32(&dir, &base, dim, &params, 2);
            let plan: AutoPlan =
                serde_json::from_value(report(&dir)["auto_plan"].clone()).unwrap();
            prop_assert_eq!(plan.objective, objective);
            // A budget can be too small for every candidate (8-d data at 5%:
            // 1.6 bytes a vector, where PQ codes take 8 and laser's codes
            // never reach the target): the plan says so and builds the
            // default, which then refuses to open in that budget.
            let predicted = plan.candidates.iter().any(|c| c.predicted.is_some());
            if !predicted {
                prop_assert!(plan.why.contains("no candidate reached"), "{}", plan.why);
            }
            let opts = OpenOptions {
                memory_budget_bytes: Some(budget),
                ..Default::default()
            };
            match Index::open(&dir, &opts) {
                Ok(index) => {
                    let held = index.memory().total() as u64;
                    prop_assert!(
                        held <= budget,
                        "{} at {budget} B (dim {dim}, {objective:?}) holds {held} B: {}",
                        plan.chosen,
                        index.memory()
                    );
                }
                Err(e) => {
                    prop_assert!(!predicted, "the chosen {} does not open: {e}", plan.chosen);
                    prop_assert!(e.to_string().contains("memory budget"), "{e}");
                }
            }
        }
    }
}

/// The latency objective on a two-stage index, its refinement not given:
/// the build searches the staged index both ways one query a thread and
/// records the sooner (`stages::refinement`) in the plan, the parameters
/// and `chosen`; given, it is kept and nothing is measured.
#[test]
fn the_latency_objective_measures_the_refinement_on_the_index() {
    use stratavec::autoplan::Objective;
    use stratavec::plan::SearchPart;
    let (base, _) = synth(6_000, 1, DIM, 59);
    let tmp = tempdir();
    let gorgeous = |given: Option<bool>| BuildParams {
        profile: "gorgeous".into(),
        objective: Objective::Latency,
        pipelined_refinement: given.unwrap_or(false),
        unset: Unset {
            pipelined_refinement: given.is_none(),
            ..Unset::all()
        },
        ..auto(Some(2_000_000))
    };
    let dir = tmp.path().join("measured");
    build_f32(&dir, &base, DIM, &gorgeous(None), 2);
    let m = Manifest::read(&dir).unwrap();
    let why = &m.chosen["pipelined_refinement"];
    assert!(
        why.contains("one query a thread") && why.contains("plain"),
        "{why}"
    );
    let pipelined = m.build.pipelined_refinement;
    assert!(why.starts_with(&pipelined.to_string()), "{why}");
    assert_eq!(m.plan.unwrap().search, SearchPart::TwoStage { pipelined });
    let stages = report(&dir)["stages"].to_string();
    assert!(stages.contains("refinement"), "{stages}");
    // Asked again, the same parameters name this index, whichever it chose
    // (a bench reuses it); the other refinement given names another.
    let asked = |unset: bool| BuildParams {
        pipelined_refinement: !pipelined,
        unset: Unset {
            pipelined_refinement: unset,
            ..Unset::default()
        },
        ..m.build.clone()
    };
    assert!(m.build.builds_same_index(&asked(true)));
    assert!(!m.build.builds_same_index(&asked(false)));
    for given in [false, true] {
        let dir = tmp.path().join(format!("given-{given}"));
        build_f32(&dir, &base, DIM, &gorgeous(Some(given)), 2);
        let m = Manifest::read(&dir).unwrap();
        assert!(!m.chosen.contains_key("pipelined_refinement"));
        assert_eq!(
            m.plan.unwrap().search,
            SearchPart::TwoStage { pipelined: given }
        );
        assert!(!report(&dir)["stages"].to_string().contains("refinement"));
    }
}

/// A budget no candidate fits (8-d data at 5%: 1.6 bytes a vector, where
/// PQ codes take 8 and laser's codes never reach the target): the plan
/// says so and builds the default, which then refuses to open in that
/// budget, naming it (the case `no_plan_exceeds_its_budget` drew once).
#[test]
fn a_budget_no_candidate_fits_builds_the_default_and_says_so() {
    let (dim, n) = (8, 5_400);
    let (base, _) = synth(n, 1, dim, 0);
    let fixed = (2 * stratavec::search::READ_SLOTS * 4096 + 256 * dim * 4 + dim * 4) as u64;
    let budget = fixed + (0.05 * (n * dim * 4) as f64) as u64;
    let tmp = tempdir();
    let dir = tmp.path().join("auto");
    build_f32(&dir, &base, dim, &auto(Some(budget)), 2);
    let plan: AutoPlan = serde_json::from_value(report(&dir)["auto_plan"].clone()).unwrap();
    assert!(plan.candidates.iter().all(|c| c.predicted.is_none()));
    assert!(plan.why.contains("no candidate reached"), "{}", plan.why);
    assert_eq!(plan.chosen, stratavec::profile::DEFAULT);
    let opts = stratavec::index::OpenOptions {
        memory_budget_bytes: Some(budget),
        ..Default::default()
    };
    let e = stratavec::Index::open(&dir, &opts).err().expect("refused");
    assert!(e.to_string().contains("memory budget"), "{e}");
}

/// Every part a plan chose counts as asked: a layout choice brings the
/// shuffle, page and stored type it applied, a key the built parameters
/// leave out (kept in its own file) is left out, and a part the plan did
/// not choose still has to match.
#[test]
fn the_parts_a_plan_chose_count_as_asked() {
    // As `fit` leaves a request: the complexity given, the PQ bytes, page
    // and refinement still the build's.
    let asked = BuildParams {
        unset: Unset {
            complexity: false,
            ..Unset::all()
        },
        ..auto(Some(2_000_000))
    };
    let built = BuildParams {
        layout: Some(stratavec::layout::LayoutKind::Blocked),
        shuffle: stratavec::layout::shuffle::Shuffle::Bnf,
        page_size: 8192,
        store: Some(stratavec::data::DType::F16),
        exrabitq_bits: Some(4),
        unset: Unset::default(),
        ..asked.with_profile("gorgeous")
    };
    let keys = |k: &[&str]| k.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let all = keys(&["profile", "layout", "exrabitq_bits", "exrabitq_centres"]);
    let as_chosen = |k: &[String]| {
        asked
            .with_profile(&built.profile)
            .with_chosen(&built, k.iter())
    };
    let full = as_chosen(&all);
    assert_eq!(full.page_size, 8192);
    assert_eq!(full.exrabitq_centres, None);
    assert_eq!(full.unset, asked.unset);
    assert!(built.builds_same_index(&full), "{full:?}");
    // The layout or the codes not among the choices: another index.
    for missing in ["layout", "exrabitq_bits"] {
        let fewer: Vec<String> = all.iter().filter(|k| *k != missing).cloned().collect();
        assert!(!built.builds_same_index(&as_chosen(&fewer)), "{missing}");
    }
}
