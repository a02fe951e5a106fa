//! What a newcomer and an operator read: each message the binary prints for
//! a mistake says it once, before any work, and names the file, field,
//! expected and found value (issue 19, items 2, 3 and 7).

mod common;

use common::{ok, run, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

/// The error message of a run that must fail; it must have printed nothing
/// on stdout (no table header before the error).
#[track_caller]
fn fails(o: Output) -> String {
    assert_eq!(o.status.code(), Some(1), "stderr: {}", stderr(&o));
    assert_eq!(stdout(&o), "", "output before the error");
    let e = stderr(&o);
    assert!(e.starts_with("error: "), "stderr: {e}");
    e
}

/// A 16-d set of 50 vectors (5 queries, ground truth of depth 100 capped at
/// n = 50), built with every default: the smallest set a newcomer tries.
struct Small {
    data: PathBuf,
    index: PathBuf,
}

fn small() -> &'static Small {
    static S: OnceLock<Small> = OnceLock::new();
    S.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("messages-fixture");
        let _ = std::fs::remove_dir_all(&root);
        let data = root.join("data");
        let index = root.join("index");
        ok(run(&[
            &"synth",
            &data,
            &"--n",
            &"50",
            &"--queries",
            &"5",
            &"--dim",
            &"16",
        ]));
        ok(run(&[&"build", &data.join("base.fbin"), &index]));
        Small { data, index }
    })
}

#[test]
fn an_os_error_is_printed_once() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let missing = tmp.path().join("missing.fbin");
    let e = fails(run(&[&"convert", &missing, &tmp.path().join("out.npy")]));
    assert_eq!(e.matches("os error 2").count(), 1, "{e}");
    assert!(e.contains(&missing.display().to_string()), "{e}");
}

#[test]
fn a_tiny_16_d_set_builds_and_searches_with_every_default() {
    let s = small();
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(s.index.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["build"]["pq_bytes"], 16);
    assert!(
        m["chosen"]["pq_bytes"].as_str().unwrap().contains("16-d"),
        "{m}"
    );
    let out = ok(run(&[
        &"search",
        &s.index,
        &s.data.join("query.fbin"),
        &"--gt",
        &s.data.join("gt.ibin"),
    ]));
    let table = stdout(&out);
    assert_eq!(table.lines().count(), 5, "{table}");
    assert!(!table.contains(" - "), "recall missing: {table}");
    // gt's default depth (100) is capped at the 50 base vectors.
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let gt = tmp.path().join("gt.ibin");
    let said = ok(run(&[
        &"gt",
        &s.data.join("base.fbin"),
        &s.data.join("query.fbin"),
        &gt,
    ]));
    assert!(
        stderr(&said).contains("5 queries x top-50 over 50 vectors"),
        "{}",
        stderr(&said)
    );
    // The starling profile too, and the choice is said on stderr.
    let idx = tmp.path().join("s");
    let built = ok(run(&[
        &"build",
        &s.data.join("base.fbin"),
        &idx,
        &"--profile",
        &"starling",
    ]));
    let note = stderr(&built);
    assert!(
        note.contains(
            "note: pq_bytes = 16: one byte a dimension (16-d data cannot take the default 32)"
        ),
        "{note}"
    );
    ok(run(&[
        &"search",
        &idx,
        &s.data.join("query.fbin"),
        &"--gt",
        &gt,
    ]));
}

#[test]
fn an_impossible_starling_build_fails_in_under_a_second() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let data = tmp.path().join("d");
    ok(run(&[
        &"synth",
        &data,
        &"--n",
        &"5000",
        &"--queries",
        &"1",
        &"--dim",
        &"768",
    ]));
    let t = std::time::Instant::now();
    let e = fails(run(&[
        &"build",
        &data.join("base.fbin"),
        &tmp.path().join("s"),
        &"--profile",
        &"starling",
        &"--page-size",
        &"4096",
    ]));
    assert!(t.elapsed().as_secs_f64() < 1.0, "{:?}", t.elapsed());
    assert_eq!(
        e.trim_end(),
        "error: page_size: expected pages that hold at least 2 shuffled records of 3182 bytes \
         (768 x f32 and 64 neighbours): 8192 or more (leave --page-size unset and the profile \
         picks it), found 1 per 4096-byte page"
    );
}

#[test]
fn argument_errors_come_before_any_output() {
    let s = small();
    let q = s.data.join("query.fbin");
    let e = fails(run(&[&"search", &s.index, &q, &"-k", &"0"]));
    assert_eq!(e.trim_end(), "error: k: expected at least 1, found 0");
    let e = fails(run(&[&"search", &s.index, &q, &"-k", &"51"]));
    assert_eq!(
        e.trim_end(),
        "error: k: expected at most the number of indexed vectors (50), found 51"
    );
    let e = fails(run(&[&"search", &s.index, &q, &"--prune-ratio", &"2"]));
    assert_eq!(
        e.trim_end(),
        "error: prune_ratio (σ): expected in [0, 1], found 2"
    );
    let e = fails(run(&[
        &"search",
        &s.index,
        &q,
        &"--radius",
        &"1",
        &"-L",
        &"0",
    ]));
    assert_eq!(
        e.trim_end(),
        "error: complexity (L): expected at least k = 1, found 0"
    );
}

#[test]
fn a_shallow_ground_truth_says_why_recall_is_missing() {
    let s = small();
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let gt = tmp.path().join("gt5.ibin");
    let q = s.data.join("query.fbin");
    ok(run(&[
        &"gt",
        &s.data.join("base.fbin"),
        &q,
        &gt,
        &"-k",
        &"5",
    ]));
    let out = ok(run(&[
        &"search", &s.index, &q, &"--gt", &gt, &"-k", &"10", &"-L", &"20", &"30",
    ]));
    let note = format!(
        "note: recall@10 needs ground truth of depth >= 10; {} has depth 5",
        gt.display()
    );
    assert_eq!(stderr(&out).matches(&note).count(), 1, "{}", stderr(&out));
    assert!(stdout(&out).lines().skip(1).all(|l| l.contains(" - ")));
}

#[test]
fn a_ground_truth_file_given_as_queries_is_named_as_such() {
    let s = small();
    let e = fails(run(&[&"search", &s.index, &s.data.join("gt.ibin")]));
    assert!(
        e.contains("unknown file extension \"ibin\"")
            && e.contains(".ibin and .ivecs hold ground truth, not vectors: pass them as --gt")
            && !e.contains("::"),
        "{e}"
    );
}

#[test]
fn gt_k_errors_name_the_base_file() {
    let s = small();
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let q = s.data.join("query.fbin");
    let e = fails(run(&[
        &"gt",
        &s.data.join("base.fbin"),
        &q,
        &tmp.path().join("gt.ibin"),
        &"-k",
        &"60",
    ]));
    assert_eq!(
        e.trim_end(),
        format!(
            "error: -k: expected 1..=50 (the number of vectors in {}), found 60",
            s.data.join("base.fbin").display()
        )
    );
}

#[test]
fn build_help_lists_profiles_and_says_what_alpha_and_seed_do() {
    let help = stdout(&ok(run(&[&"build", &"--help"])));
    let one_line = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for want in [
        "[possible values: diskann, starling, gorgeous, laser, pipeann, octopus, tiered, ivf, auto]",
        "Pruning slack α",
        "Seed of every random choice",
        "Default: 32, or the dimension when it is smaller",
        "the smallest that holds 2 records",
    ] {
        assert!(one_line.contains(want), "{want:?} not in:\n{help}");
    }
}

#[test]
fn an_impossible_relayout_fails_before_reading_the_graph() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let data = tmp.path().join("d");
    ok(run(&[
        &"synth",
        &data,
        &"--n",
        &"300",
        &"--queries",
        &"1",
        &"--dim",
        &"768",
    ]));
    let src = tmp.path().join("diskann");
    ok(run(&[&"build", &data.join("base.fbin"), &src]));
    let e = fails(run(&[&"relayout", &src, &tmp.path().join("s")]));
    assert_eq!(
        e.trim_end(),
        "error: page_size: expected pages that hold at least 2 shuffled records of 3150 bytes \
         (768 x f32 and 64 neighbours); relayout keeps the source's pages (build with --profile \
         starling, which picks the page size, or relayout with --store f16), found 1 per \
         4096-byte page"
    );
    // As f16 the records fit.
    ok(run(&[
        &"relayout",
        &src,
        &tmp.path().join("h"),
        &"--store",
        &"f16",
    ]));
}
