//! The `stratavec` binary end to end: synth → build → search/info/gt/convert,
//! and the messages it prints for bad input.

mod common;

use common::{ok, run, small_graph, stderr, stdout};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const DIM: usize = 16;

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

#[track_caller]
fn fails(o: Output) -> String {
    assert!(
        !o.status.success(),
        "stratavec succeeded but should not have:\n{}",
        stdout(&o)
    );
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("error:"), "stderr: {e}");
    e
}

/// A tiny synthetic set and an index built from it, shared by the tests.
/// Rebuilt on every run at a fixed path (a static `TempDir` would never be
/// dropped and leak a directory per run).
struct Fixture {
    data: PathBuf,
    index: PathBuf,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-fixture");
        let _ = std::fs::remove_dir_all(&root);
        let data = root.join("data");
        let index = root.join("index");
        let dim = DIM.to_string();
        ok(run(&[
            &"synth",
            &data,
            &"--n",
            &"2000",
            &"--queries",
            &"50",
            &"--dim",
            &dim,
            &"--clusters",
            &"8",
            &"--threads",
            &"2",
        ]));
        for f in ["base.fbin", "query.fbin", "gt.ibin"] {
            assert!(data.join(f).is_file(), "synth wrote no {f}");
        }
        ok(run(&small_graph(&[
            &"build",
            &data.join("base.fbin"),
            &index,
        ])));
        Fixture { data, index }
    })
}

#[test]
fn search_json_rows() {
    let f = fixture();
    let o = ok(run(&[
        &"search",
        &f.index,
        &f.data.join("query.fbin"),
        &"--gt",
        &f.data.join("gt.ibin"),
        &"--json",
        &"-L",
        &"20",
        &"50",
        &"--threads",
        &"2",
    ]));
    let out = stdout(&o);
    let rows: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert_eq!(rows.len(), 2, "one row per L:\n{out}");
    for (row, l) in rows.iter().zip([20, 50]) {
        for key in [
            "L",
            "recall",
            "qps",
            "mean_us",
            "p99_us",
            "reads_per_query",
            "bytes_per_query",
            "memory_bytes",
        ] {
            assert!(row.get(key).is_some(), "row lacks {key}: {row}");
        }
        assert_eq!(row["L"], l);
        assert_eq!(row["failed"], 0);
        let num = |k: &str| {
            row[k]
                .as_f64()
                .unwrap_or_else(|| panic!("{k} not a number: {row}"))
        };
        assert!(num("qps") > 0.0 && num("mean_us") > 0.0 && num("p99_us") > 0.0);
        assert!(num("reads_per_query") > 0.0);
        assert_eq!(num("bytes_per_query"), num("reads_per_query") * 4096.0);
        assert!(num("memory_bytes") > 2000.0 * 8.0);
        let r = num("recall");
        assert!((0.0..=1.0).contains(&r));
    }
    let (r20, r50) = (
        rows[0]["recall"].as_f64().unwrap(),
        rows[1]["recall"].as_f64().unwrap(),
    );
    assert!(r50 >= r20, "recall fell from {r20} (L=20) to {r50} (L=50)");
    assert!(r50 >= 0.9, "recall@10 at L=50: {r50}");
    let reads = |i: usize| rows[i]["reads_per_query"].as_f64().unwrap();
    assert!(reads(1) > reads(0), "a longer list reads more");
}

#[test]
fn info_prints_the_manifest() {
    let f = fixture();
    let out = stdout(&ok(run(&[&"info", &f.index])));
    let json = out.split("\nbuild report").next().unwrap();
    let shown: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {out}"));
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(f.index.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(shown, file);
    assert_eq!(shown["n"], 2000);
    assert_eq!(shown["dim"], DIM);
    assert_eq!(shown["build"]["graph_degree"], 16);
    assert!(out.contains("build report"), "{out}");
    // --verify re-hashes every file.
    let out = stdout(&ok(run(&[&"info", &f.index, &"--verify"])));
    assert!(out.contains("verified"), "{out}");
}

/// `build --store f16`: the manifest says f16, the pages shrink, search
/// still finds the neighbours; a bad element type is named.
#[test]
fn build_store_f16() {
    let f = fixture();
    let tmp = tempdir();
    let idx = tmp.path().join("f16");
    let base = f.data.join("base.fbin");
    let args = |store: &'static str, dir: &Path| -> Vec<std::ffi::OsString> {
        let mut v: Vec<std::ffi::OsString> = vec!["build".into(), base.clone().into(), dir.into()];
        for a in [
            "-R",
            "16",
            "--complexity",
            "32",
            "--pq-bytes",
            "8",
            "--store",
            store,
        ] {
            v.push(a.into());
        }
        v
    };
    let owned = args("f16", &idx);
    ok(run(&owned
        .iter()
        .map(|a| a as &dyn AsRef<std::ffi::OsStr>)
        .collect::<Vec<_>>()));
    let m: Value =
        serde_json::from_str(&std::fs::read_to_string(idx.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["dtype"], "f16");
    assert_eq!(m["build"]["store"], "f16");
    let size = |d: &Path| std::fs::metadata(d.join("pages.bin")).unwrap().len();
    assert!(size(&idx) < size(&f.index), "f16 pages are not smaller");
    let out = stdout(&ok(run(&[
        &"search",
        &idx,
        &f.data.join("query.fbin"),
        &"--gt",
        &f.data.join("gt.ibin"),
        &"--json",
        &"-L",
        &"50",
    ])));
    let row: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert!(row["recall"].as_f64().unwrap() >= 0.9, "{row}");
    let bad = args("f64", &tmp.path().join("bad"));
    // A usage error (clap's exit code 2) naming the value and the choices.
    let o = run(&bad
        .iter()
        .map(|a| a as &dyn AsRef<std::ffi::OsStr>)
        .collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(2));
    let msg = stderr(&o);
    assert!(
        msg.contains("--store") && msg.contains("f64") && msg.contains("f16"),
        "{msg}"
    );
}

#[test]
fn gt_reproduces_synth_ground_truth() {
    let f = fixture();
    let tmp = tempdir();
    let out = tmp.path().join("gt.ibin");
    ok(run(&[
        &"gt",
        &f.data.join("base.fbin"),
        &f.data.join("query.fbin"),
        &out,
        &"-k",
        &"100",
        &"--threads",
        &"2",
    ]));
    let ours = std::fs::read(&out).unwrap();
    let synth = std::fs::read(f.data.join("gt.ibin")).unwrap();
    // Header (nq, k) and ids.
    let ids_end = 8 + 4 * 50 * 100;
    assert!(ours.len() >= ids_end && synth.len() >= ids_end);
    assert_eq!(ours[..8], synth[..8], "header");
    assert!(ours[..ids_end] == synth[..ids_end], "ids differ");
    assert!(ours == synth, "distances differ");
}

#[test]
fn convert_round_trip_is_byte_identical() {
    let f = fixture();
    let tmp = tempdir();
    let npy = tmp.path().join("base.npy");
    let back = tmp.path().join("back.fbin");
    ok(run(&[&"convert", &f.data.join("base.fbin"), &npy]));
    ok(run(&[&"convert", &npy, &back]));
    assert!(std::fs::read(&npy).unwrap().starts_with(b"\x93NUMPY"));
    assert!(
        std::fs::read(f.data.join("base.fbin")).unwrap() == std::fs::read(&back).unwrap(),
        "fbin -> npy -> fbin changed the bytes"
    );
}

fn eight_dim_queries(dir: &Path) -> PathBuf {
    ok(run(&[
        &"synth",
        &dir,
        &"--n",
        &"100",
        &"--queries",
        &"5",
        &"--dim",
        &"8",
        &"--threads",
        &"1",
    ]));
    dir.join("query.fbin")
}

#[test]
fn search_with_wrong_dimension_queries_fails() {
    let f = fixture();
    let tmp = tempdir();
    let q = eight_dim_queries(&tmp.path().join("d8"));
    let e = fails(run(&[&"search", &f.index, &q, &"--json", &"-L", &"20"]));
    assert!(
        e.contains(&q.display().to_string()),
        "stderr does not name the file: {e}"
    );
    assert!(
        e.contains("dimension 8"),
        "stderr does not name the query dimension: {e}"
    );
    assert!(
        e.contains("16"),
        "stderr does not name the index dimension: {e}"
    );
}

#[test]
fn wrong_dimension_message_calls_16_the_index_dimension() {
    let f = fixture();
    let tmp = tempdir();
    let q = eight_dim_queries(&tmp.path().join("d8"));
    let e = fails(run(&[&"search", &f.index, &q, &"-L", &"20"]));
    assert!(e.contains("index dimension 16"), "{e}");
}

#[test]
fn build_into_existing_file_fails() {
    let f = fixture();
    let tmp = tempdir();
    let file = tmp.path().join("notes.txt");
    std::fs::write(&file, b"keep me").unwrap();
    let e = fails(run(&[
        &"build",
        &f.data.join("base.fbin"),
        &file,
        &"-R",
        &"16",
        &"--complexity",
        &"32",
        &"--pq-bytes",
        &"8",
        &"--threads",
        &"1",
    ]));
    assert!(e.contains(&file.display().to_string()), "{e}");
    assert!(e.contains("refusing to overwrite"), "{e}");
    assert_eq!(std::fs::read(&file).unwrap(), b"keep me");
    let hidden: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "left behind: {hidden:?}");
}

#[test]
fn search_missing_index_fails() {
    let f = fixture();
    let tmp = tempdir();
    let missing = tmp.path().join("no-index");
    let e = fails(run(&[&"search", &missing, &f.data.join("query.fbin")]));
    assert!(
        e.contains(&missing.display().to_string()) && e.contains("index directory"),
        "{e}"
    );
}

fn read_fbin(path: &Path) -> (usize, Vec<f32>) {
    let b = std::fs::read(path).unwrap();
    let dim = u32::from_le_bytes(b[4..8].try_into().unwrap()) as usize;
    let v = b[8..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    (dim, v)
}

/// A bench run kept short on the tiny fixture: a small graph and PQ, one
/// round, no device probes, one repetition a pass, and a budget that
/// leaves a small cache (the tiny set's 20% would not even hold the I/O
/// buffers), so most expansions are reads.
const QUICK_BENCH: [&str; 16] = [
    "-R",
    "16",
    "--complexity",
    "32",
    "--pq-bytes",
    "8",
    "--device-seconds",
    "0",
    "--sustained-seconds",
    "0",
    "--rounds",
    "1",
    "--min-pass-seconds",
    "0",
    "--memory-fraction",
    "5",
];

/// `bench` runs the Starling ablation variants (search-time variants share
/// the diskann index) and range search with its doubling-k baseline, all
/// scored against exact ground truth.
#[test]
fn bench_runs_variants_and_range_search() {
    let f = fixture();
    let tmp = tempdir();
    let (dim, base) = read_fbin(&f.data.join("base.fbin"));
    let (_, queries) = read_fbin(&f.data.join("query.fbin"));
    // A radius holding ~5 vectors for the median query.
    let mut fifth: Vec<f32> = queries
        .chunks(dim)
        .map(|q| {
            let mut d: Vec<f32> = base
                .chunks(dim)
                .map(|b| q.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum())
                .collect();
            d.sort_by(f32::total_cmp);
            d[4]
        })
        .collect();
    fifth.sort_by(f32::total_cmp);
    let radius = fifth[fifth.len() / 2].to_string();
    let (work, out) = (tmp.path().join("work"), tmp.path().join("rows.jsonl"));
    let bench = |profiles: &'static str, more: &[&dyn AsRef<std::ffi::OsStr>]| {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![
            &"bench",
            &"--data",
            &f.data,
            &"--work",
            &work,
            &"--out",
            &out,
            &"--profiles",
        ];
        args.push(&profiles);
        args.extend_from_slice(more);
        args.extend(QUICK_BENCH.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>));
        run(&args)
    };
    let o = ok(bench(
        "diskann,starling-page,starling-nav,starling-all",
        &[
            &"--nav-sample",
            &"0.05",
            &"-L",
            &"20,40",
            &"--radius",
            &radius,
        ],
    ));
    assert!(stdout(&o).contains("knn-doubling"), "{}", stdout(&o));
    let rows: Vec<Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |kind: &str, system: &str| -> Vec<&Value> {
        rows.iter()
            .filter(|r| r["kind"] == kind && r["system"] == system)
            .collect()
    };
    for v in ["diskann", "starling-page", "starling-nav", "starling-all"] {
        let system = format!("stratavec-{v}");
        let search = of("search", &system);
        assert_eq!(search.len(), 2, "{system}: one row per L");
        assert!(search
            .iter()
            .all(|r| r["recall_at_10"].as_f64().unwrap() > 0.5));
        let range = of("range", &system);
        // Two L for range search, three multipliers for the baseline.
        assert_eq!(range.len(), 5, "{system}: {range:?}");
        for r in &range {
            let ap = r["ap"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&ap), "{r}");
            assert!(r["reads_per_query"].as_f64().unwrap() > 0.0, "{r}");
        }
        let best = range
            .iter()
            .filter(|r| r["method"] == "range")
            .map(|r| r["ap"].as_f64().unwrap())
            .fold(0.0, f64::max);
        assert!(best >= 0.8, "{system}: range AP {best}");
    }
    let page = &of("search", "stratavec-starling-page")[0];
    assert_eq!(page["page_search"], true);
    assert_eq!(page["pipeline"], false);
    // Search-time variants reuse the diskann index; nav variants have their own.
    let mut dirs: Vec<String> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".bin"))
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 3, "{dirs:?}");
    // An index that older build logic made is built again, not reused.
    let manifests: Vec<_> = dirs
        .iter()
        .map(|d| work.join(d).join("manifest.json"))
        .collect();
    for m in &manifests {
        let text = std::fs::read_to_string(m).unwrap();
        let older: String = text
            .lines()
            .filter(|l| !l.contains("\"build_revision\""))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_ne!(older, text, "{}", m.display());
        std::fs::write(m, older).unwrap();
    }
    let o = ok(bench("diskann", &[&"-L", &"20"]));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("rebuilding: built by build revision 0"),
        "{err}"
    );
    let revision = |d: &String| {
        stratavec::index::Manifest::read(&work.join(d))
            .unwrap()
            .build_revision
    };
    let revisions: Vec<u32> = dirs.iter().map(revision).collect();
    assert_eq!(
        revisions
            .iter()
            .filter(|&&r| r == stratavec::index::BUILD_REVISION)
            .count(),
        1,
        "only the diskann index is built again: {revisions:?}"
    );
    let o = ok(bench("diskann", &[&"-L", &"20"]));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !err.contains("rebuilding"),
        "a current index is reused: {err}"
    );
    let err = fails(bench("starlin", &[]));
    assert!(
        err.contains("starling-page") && err.contains("starlin"),
        "{err}"
    );
}

/// `bench --ablate` runs OctopusANN's study (each technique alone on the
/// PQ baseline, C1-C5), records each index's OR(G) and records a page, and
/// prints the page-I/O model's reads beside the measured ones.
#[test]
fn bench_ablate_prints_the_study_with_the_page_model() {
    let f = fixture();
    let tmp = tempdir();
    let (work, out) = (tmp.path().join("work"), tmp.path().join("rows.jsonl"));
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![
        &"bench",
        &"--data",
        &f.data,
        &"--work",
        &work,
        &"--out",
        &out,
        &"--ablate",
        &"-L",
        &"40",
    ];
    args.extend(QUICK_BENCH.iter().map(|a| a as &dyn AsRef<std::ffi::OsStr>));
    let o = ok(run(&args));
    let text = stdout(&o);
    for want in [
        "OctopusANN's study",
        "| MemGraph |",
        "| C5: MemG + PS + PSe + DW |",
        "model reads",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
    let rows: Vec<Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &Value| r["kind"] == "search")
        .collect();
    let row = |system: &str| {
        rows.iter()
            .find(|r| r["system"] == system)
            .unwrap_or_else(|| panic!("no row of {system}"))
    };
    let f64_of = |r: &Value, k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{k}: {r}"));
    // Twelve systems, each named for its technique.
    assert_eq!(
        rows.iter().filter(|r| r["technique"].is_string()).count(),
        12
    );
    let (disk, starling) = (row("stratavec-diskann"), row("stratavec-starling"));
    assert_eq!(disk["technique"], "Baseline (PQ, node cache)");
    // BNF blocks hold neighbours together; id order does not.
    assert!(f64_of(starling, "overlap_ratio") > 5.0 * f64_of(disk, "overlap_ratio"));
    assert!(f64_of(starling, "records_per_page") >= 2.0);
    // Without page search the model is the expansions that needed a page.
    let disk_pages = f64_of(disk, "hops_per_query") - f64_of(disk, "cache_hits_per_query");
    assert!((f64_of(disk, "model_reads_per_query") - disk_pages).abs() < 1e-9);
    // With it, each read is expected to serve more than one expansion.
    let s_pages = f64_of(starling, "hops_per_query") - f64_of(starling, "cache_hits_per_query");
    assert!(f64_of(starling, "model_reads_per_query") < s_pages);
    // The pipelined searches poll for completions by default (PipeANN's
    // loop never sleeps); the beam searches sleep.
    for (system, poll) in [
        ("stratavec-pipeann", 1000),
        ("stratavec-octopus-pipe", 1000),
        ("stratavec-diskann", 0),
        ("stratavec-starling", 0),
    ] {
        assert_eq!(row(system)["poll_us"], poll, "{system}");
    }
}

/// `bench` times the systems round-robin: in each round every system runs
/// at one L before any runs the next, the order rotating; the device is
/// probed before, between and after the rounds (burst and sustained); every
/// pass is a row with its round, the reads/s it drew and its CPU share; the
/// summary gives per-round ratios. With STRATAVEC_TEST_PYTHON (a Python
/// with numpy; test.sh sets it) a peer process joins the rounds too.
#[test]
fn bench_times_systems_round_robin_and_probes_the_device() {
    let f = fixture();
    let tmp = tempdir();
    let (work, out) = (tmp.path().join("work"), tmp.path().join("rows.jsonl"));
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = std::env::var_os("STRATAVEC_TEST_PYTHON");
    let mut c = Command::new(env!("CARGO_BIN_EXE_stratavec"));
    c.current_dir(&repo)
        .arg("bench")
        .arg("--data")
        .arg(&f.data)
        .arg("--work")
        .arg(&work)
        .arg("--out")
        .arg(&out)
        .args(["--profiles", "diskann,starling-page"])
        .args(["-R", "16", "--complexity", "32", "--pq-bytes", "8"])
        .args(["-L", "20,40", "--rounds", "2", "--memory-fraction", "5"])
        .args(["--device-seconds", "0.1", "--sustained-seconds", "0.3"])
        .args(["--warmup-seconds", "0.1", "--min-pass-seconds", "0.05"]);
    let mut systems = vec!["stratavec-diskann", "stratavec-starling-page"];
    match &python {
        Some(py) => {
            c.env("STRATAVEC_PEER_PYTHON", py)
                .args(["--peers", "bruteforce"]);
            systems.push("bruteforce");
        }
        None => stratavec_testkit::skipped(
            "bench's peer part",
            stratavec_testkit::Need::Python,
            "no STRATAVEC_TEST_PYTHON (a Python with numpy; test.sh sets it)",
        ),
    }
    let o = ok(c.output().expect("run stratavec bench"));
    let text = stdout(&o);
    assert!(text.contains("QPS ratio, per round"), "{text}");
    assert!(text.contains("sustained"), "{text}");
    let rows: Vec<Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let search: Vec<&Value> = rows.iter().filter(|r| r["kind"] == "search").collect();
    // Round by round, point by point: every system once at each point.
    let mut at = 0;
    for round in 0..2u64 {
        for l in [20u64, 40] {
            let chunk = &search[at..at + systems.len()];
            let mut names: Vec<&str> = chunk
                .iter()
                .map(|r| r["system"].as_str().unwrap())
                .collect();
            assert!(
                chunk.iter().all(|r| r["round"] == round && r["L"] == l),
                "{chunk:?}"
            );
            names.sort_unstable();
            let mut want = systems.clone();
            want.sort_unstable();
            assert_eq!(names, want, "round {round}, L {l}");
            at += systems.len();
        }
    }
    assert_eq!(at, search.len());
    // The order rotates: a different system leads at the second point.
    assert_ne!(search[0]["system"], search[systems.len()]["system"]);
    for r in &search {
        let twin = search
            .iter()
            .find(|o| o["system"] == r["system"] && o["L"] == r["L"] && o["round"] != r["round"])
            .unwrap();
        // Recall and reads are exact: the same in every round.
        assert_eq!(r["recall_at_10"], twin["recall_at_10"]);
        assert_eq!(r["reads_per_query"], twin["reads_per_query"]);
        // A pass repeats the queries until it has run --min-pass-seconds:
        // its repetitions times their mean time reach it (however loaded
        // the machine, which decides how many it took).
        let reps = r["repetitions"].as_u64().unwrap() as f64;
        assert!(
            reps >= 1.0 && reps * r["search_s"].as_f64().unwrap() >= 0.05 - 1e-9,
            "{r}"
        );
        let cpu = r["cpu_util"].as_f64().unwrap();
        assert!(cpu > 0.0 && cpu < 4.0, "{r}");
        if r["system"].as_str().unwrap().starts_with("stratavec") {
            let reads = r["proc_reads_per_query"]
                .as_f64()
                .or(r["reads_per_query"].as_f64())
                .unwrap();
            let rate = r["reads_per_s"].as_f64().unwrap();
            assert!((rate - reads * r["qps"].as_f64().unwrap()).abs() <= 1e-6 * rate.max(1.0));
        }
    }
    let device: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| r["kind"] == "device")
        .map(|r| (r["phase"].as_str().unwrap(), r["mode"].as_str().unwrap()))
        .collect();
    let count = |phase: &str, mode: &str| device.iter().filter(|d| **d == (phase, mode)).count();
    assert_eq!(
        count("before", "burst"),
        5,
        "one burst probe a depth: {device:?}"
    );
    for phase in ["before", "between rounds 1 and 2", "after"] {
        assert_eq!(count(phase, "sustained"), 1, "{phase}: {device:?}");
    }
    assert_eq!(count("between rounds 1 and 2", "burst"), 1);
    assert_eq!(count("after", "burst"), 1);
    assert_eq!(device.len(), 10);
    for r in rows.iter().filter(|r| r["mode"] == "sustained") {
        assert_eq!(
            r["per_s"].as_array().unwrap().len(),
            1,
            "0.3 s in 1 s intervals: {r}"
        );
        assert_eq!(r["depth"], 64);
    }
}

/// `relayout` and `shuffle` place records by their nearest nodes when blocks
/// hold many records (16-d: dozens), by the graph when told `--nearest 0`,
/// and say which.
#[test]
fn relayout_and_shuffle_say_what_records_are_placed_by() {
    let f = fixture();
    let tmp = tempdir();
    let (near, graph) = (tmp.path().join("near"), tmp.path().join("graph"));
    let out = stdout(&ok(run(&[&"relayout", &f.index, &near])));
    assert!(
        out.contains("placed by the 24 nearest within two hops"),
        "{out}"
    );
    let out = stdout(&ok(run(&[
        &"relayout",
        &f.index,
        &graph,
        &"--nearest",
        &"0",
    ])));
    assert!(out.contains("placed by the undirected graph"), "{out}");
    let differ = std::fs::read(near.join("pages.bin")).unwrap()
        != std::fs::read(graph.join("pages.bin")).unwrap();
    assert!(differ, "the two placements wrote the same pages");
    let out = stdout(&ok(run(&[&"shuffle", &f.index, &"--json"])));
    for line in out.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["nearest"], 24, "{line}");
    }
}

/// `build-collection` then `search` of the collection: rows with recall,
/// probe and the merge's share; `--probe` refused for an index, a radius
/// refused for a collection, both by name; then a delete and a merge.
#[test]
fn build_collection_and_search_it() {
    let f = fixture();
    let tmp = tempdir();
    let dir = tmp.path().join("c");
    let o = ok(run(&small_graph(&[
        &"build-collection",
        &f.data.join("base.fbin"),
        &dir,
        &"--segments",
        &"3",
        &"--partition",
        &"kmeans",
    ])));
    assert!(stdout(&o).contains("3 segments"), "{}", stdout(&o));
    assert!(dir.join("collection.json").is_file());
    let queries = f.data.join("query.fbin");
    let search = |extra: &[&dyn AsRef<std::ffi::OsStr>]| {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"search", &dir, &queries];
        args.extend_from_slice(extra);
        run(&args)
    };
    let gt = f.data.join("gt.ibin");
    let o = ok(search(&[
        &"--gt", &gt, &"--json", &"-L", &"40", &"--probe", &"3",
    ]));
    let row: Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    assert_eq!(row["probe"], 3);
    assert!(row["recall"].as_f64().unwrap() >= 0.9, "{row}");
    let share = row["merge_share"].as_f64().unwrap();
    assert!((0.0..1.0).contains(&share), "{row}");
    let e = fails(search(&[&"--radius", &"1.0"]));
    assert!(e.contains("range search"), "{e}");
    let e = fails(run(&[
        &"search",
        &f.index,
        &f.data.join("query.fbin"),
        &"--probe",
        &"2",
    ]));
    assert!(
        e.contains("--probe") && e.contains("collection") && e.contains("index"),
        "{e}"
    );
    // Writes route to the segments: a delete finds its ids' segments, a
    // merge writes each segment that has updates.
    let gone = tmp.path().join("gone.txt");
    std::fs::write(&gone, "0\n1\n2\n77777\n").unwrap();
    let out = stdout(&ok(run(&[&"delete", &dir, &"--ids", &gone])));
    assert!(
        out.contains("deleted 3 of 4 ids") && out.contains("1 not there"),
        "{out}"
    );
    let out = stdout(&ok(run(&[&"merge", &dir, &"--threads", &"2"])));
    assert!(
        out.contains("0 vectors inserted, 3 deleted (2000 -> 1997 vectors)"),
        "{out}"
    );
}

/// `insert`, `delete` and `merge` on a copy of the fixture's index: each
/// says what it did, a search finds an inserted vector by itself, a bad
/// ids file is named with its line, and a merge empties the delta.
#[test]
fn insert_delete_merge() {
    let f = fixture();
    let tmp = tempdir();
    let index = tmp.path().join("index");
    std::fs::create_dir(&index).unwrap();
    for e in std::fs::read_dir(&f.index).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), index.join(e.file_name())).unwrap();
    }
    // Ten of the queries, inserted as vectors with ids 5000..5010.
    let queries = f.data.join("query.fbin");
    let (dim, q) = read_fbin(&queries);
    assert_eq!(dim, DIM);
    let new = tmp.path().join("new.fbin");
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&10u32.to_le_bytes());
    bytes.extend_from_slice(&(DIM as u32).to_le_bytes());
    for x in &q[..10 * DIM] {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    std::fs::write(&new, bytes).unwrap();
    let ids = tmp.path().join("ids.txt");
    std::fs::write(
        &ids,
        (5000..5010)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .unwrap();
    let out = stdout(&ok(run(&[&"insert", &index, &new, &"--ids", &ids])));
    assert!(
        out.contains("inserted 10 vectors")
            && out.contains("not yet merged: 10 inserted, 0 deleted"),
        "{out}"
    );
    let gone = tmp.path().join("gone.txt");
    std::fs::write(&gone, "3\n5001\n\n99999\n").unwrap();
    let out = stdout(&ok(run(&[&"delete", &index, &"--ids", &gone])));
    assert!(
        out.contains("deleted 2 of 3 ids") && out.contains("1 not there"),
        "{out}"
    );
    let bad = tmp.path().join("bad.txt");
    std::fs::write(&bad, "7\nseven\n").unwrap();
    let e = fails(run(&[&"delete", &index, &"--ids", &bad]));
    assert!(e.contains("line 2") && e.contains("\"seven\""), "{e}");
    let e = fails(run(&[&"insert", &index, &new, &"--ids", &ids]));
    assert!(e.contains("5000, which is live"), "{e}");
    let out = stdout(&ok(run(&[&"merge", &index, &"--threads", &"2"])));
    // One of each deleted: 5001 from the delta (never written), 3 from the generation.
    assert!(
        out.contains("9 vectors inserted, 1 deleted (2000 -> 2008 vectors)"),
        "{out}"
    );
    let out = stdout(&ok(run(&[&"info", &index, &"--verify"])));
    assert!(
        out.contains("\"update_seq\": 2") && out.contains("verified"),
        "{out}"
    );
}

/// `build --labels` (names from the `labels.tsv` beside the matrix),
/// `info` counting them, and `search --filter` / `--filter-file` with a
/// filtered ground truth: every way's recall, the mix each reports, and a
/// bad filter refused naming its token (issue #56).
#[test]
fn build_with_labels_and_search_filtered() {
    let f = fixture();
    let tmp = tempdir();
    let n = 2000usize;
    // Label 0 on even rows, 1 on every 10th, 2 on every 97th.
    let rows: Vec<Vec<i32>> = (0..n)
        .map(|r| {
            [(0, 2), (1, 10), (2, 97)]
                .iter()
                .filter(|(_, e)| r % e == 0)
                .map(|(l, _)| *l)
                .collect()
        })
        .collect();
    let labels = tmp.path().join("base.labels.spmat");
    common::write_spmat(&labels, &rows, 3);
    std::fs::write(
        tmp.path().join("labels.tsv"),
        "id\tname\tcount\n0\teven\t1000\n1\ttenth\t200\n2\trare\t21\n",
    )
    .unwrap();
    let index = tmp.path().join("index");
    let o = ok(run(&small_graph(&[
        &"build",
        &f.data.join("base.fbin"),
        &index,
        &"--labels",
        &labels,
    ])));
    assert!(stderr(&o).contains("label names from"), "{}", stderr(&o));
    let out = stdout(&ok(run(&[&"info", &index])));
    assert!(
        out.contains("labels: 3 (3 on some vector, named)") && out.contains("even 1000 (50.0%)"),
        "{out}"
    );
    // Each query ANDs "even" and "tenth" (every 10th row) or asks "rare".
    let queries = f.data.join("query.fbin");
    let (_, q) = read_fbin(&queries);
    let nq = q.len() / DIM;
    let filters: Vec<Vec<i32>> = (0..nq)
        .map(|i| if i % 2 == 0 { vec![0, 1] } else { vec![2] })
        .collect();
    let filter_file = tmp.path().join("query.filters.spmat");
    common::write_spmat(&filter_file, &filters, 3);
    // The filtered ground truth, by brute force here.
    let (_, base) = read_fbin(&f.data.join("base.fbin"));
    let mut gt = Vec::new();
    gt.extend_from_slice(&(nq as u32).to_le_bytes());
    gt.extend_from_slice(&10u32.to_le_bytes());
    let mut dists = Vec::new();
    for (qi, qv) in q.chunks(DIM).enumerate() {
        let every = if qi % 2 == 0 { 10 } else { 97 };
        let matches = |r: usize| r.is_multiple_of(every);
        let mut d: Vec<(f32, u32)> = (0..n)
            .filter(|&r| matches(r))
            .map(|r| {
                (
                    base[r * DIM..(r + 1) * DIM]
                        .iter()
                        .zip(qv)
                        .map(|(a, b)| (a - b) * (a - b))
                        .sum(),
                    r as u32,
                )
            })
            .collect();
        d.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        for &(dd, id) in d.iter().take(10) {
            gt.extend_from_slice(&id.to_le_bytes());
            dists.push(dd);
        }
    }
    dists
        .iter()
        .for_each(|d| gt.extend_from_slice(&d.to_le_bytes()));
    let gt_path = tmp.path().join("gt.filtered.ibin");
    std::fs::write(&gt_path, gt).unwrap();
    for way in ["auto", "pre", "in-search", "post"] {
        let o = ok(run(&[
            &"search",
            &index,
            &queries,
            &"--filter-file",
            &filter_file,
            &"--filter-way",
            &way,
            &"--gt",
            &gt_path,
            &"-L",
            &"64",
            &"--json",
        ]));
        let row: Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
        let recall = row["recall"].as_f64().unwrap();
        let floor = if way == "post" { 0.0 } else { 0.9 };
        assert!(recall >= floor, "{way}: recall {recall}\n{row}");
        let mix = &row["filter"];
        let share: f64 = ["pre", "in_search", "post"]
            .iter()
            .map(|k| mix[k].as_f64().unwrap())
            .sum();
        assert!((share - 1.0).abs() < 1e-9, "{way}: {mix}");
    }
    let out = stdout(&ok(run(&[
        &"search",
        &index,
        &queries,
        &"--filter",
        &"rare OR tenth",
        &"-L",
        &"40",
    ])));
    assert!(out.lines().count() >= 2, "{out}");
    let e = fails(run(&[
        &"search",
        &index,
        &queries,
        &"--filter",
        &"tenth AND",
        &"-L",
        &"40",
    ]));
    assert!(
        e.contains("position 9") && e.contains("a label, NOT or '('"),
        "{e}"
    );
    let e = fails(run(&[&"search", &f.index, &queries, &"--filter", &"even"]));
    assert!(e.contains("built with labels"), "{e}");
    insert_with_labels_and_find_them(tmp.path(), &index, &q[..3 * DIM]);
}

/// `insert --labels`: three vectors, the first and last labelled "rare";
/// searched for themselves through "rare", they find exactly those two,
/// and a label matrix of the wrong height is refused.
fn insert_with_labels_and_find_them(tmp: &Path, index: &Path, vectors: &[f32]) {
    let new = tmp.join("new.fbin");
    let mut b = Vec::new();
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(&(DIM as u32).to_le_bytes());
    vectors
        .iter()
        .for_each(|x| b.extend_from_slice(&x.to_le_bytes()));
    std::fs::write(&new, b).unwrap();
    let labels = tmp.join("new.labels.spmat");
    common::write_spmat(&labels, &[vec![2], vec![], vec![2]], 3);
    let short = tmp.join("short.labels.spmat");
    common::write_spmat(&short, &[vec![2]], 3);
    let e = fails(run(&[&"insert", &index, &new, &"--labels", &short]));
    assert!(e.contains("expected one a vector (3), found 1"), "{e}");
    let out = stdout(&ok(run(&[&"insert", &index, &new, &"--labels", &labels])));
    assert!(out.contains("inserted 3 vectors"), "{out}");
    let found = tmp.join("found.npy");
    let filter = [
        &"--filter" as &dyn AsRef<std::ffi::OsStr>,
        &"rare",
        &"-k",
        &"1",
        &"-L",
        &"40",
    ];
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> =
        vec![&"search", &index, &new, &"--output", &found];
    args.extend_from_slice(&filter);
    ok(run(&args));
    let npy = std::fs::read(&found).unwrap();
    let ids: Vec<i64> = npy[npy.len() - 24..]
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(ids[0], 2000, "{ids:?}: the first inserted vector is rare");
    assert_eq!(ids[2], 2002, "{ids:?}");
    assert!(ids[1] != 2001, "{ids:?}: the unlabelled one matched rare");
}
