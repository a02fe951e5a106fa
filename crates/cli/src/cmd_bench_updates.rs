//! `stratavec bench-updates`: indexes that change, measured (issue #55).
//! Every profile goes through the same runbook (`bench::runbook`: a churn
//! of the data set, or big-ann-benchmarks' streaming-track YAML) within
//! the memory budget, and each measurement is a JSON row (`bench::updates`
//! says which). The live sets and their exact truth are worked out once
//! (`bench::update_plan`); `benchmarks/tables/updates.py` makes the
//! table and plot from the rows.

use crate::bench::runbook::{self, Runbook};
use crate::bench::update_plan::{Data, Plan};
use crate::bench::{updates, variants};
use crate::cmd_bench::Rows;
use anyhow::{bail, Context, Result};
use serde_json::json;
use std::path::{Path, PathBuf};
use stratavec::args::{Given, Params};
use stratavec::data::GroundTruth;

#[derive(clap::Args)]
pub struct Args {
    /// Data set directory with base.fbin, query.fbin, gt.ibin.
    #[arg(long)]
    data: PathBuf,
    /// Where the indexes are built, changed and merged (replaced each run).
    #[arg(long, default_value = ".cache/bench-updates")]
    work: PathBuf,
    /// JSON lines output (overwritten).
    #[arg(long, default_value = "benchmarks/results/updates.jsonl")]
    out: PathBuf,
    /// Profiles (or other `bench --profiles` variants) to run.
    #[arg(long, value_delimiter = ',', default_values_t = ["diskann", "starling", "gorgeous", "ivf"].map(String::from))]
    profiles: Vec<String>,
    /// `churn:STEPS:FRACTION` — every row inserted (the build), then each
    /// step deletes the next FRACTION of the rows, searches, inserts them
    /// back and searches — or a big-ann-benchmarks streaming runbook,
    /// `FILE.yaml[:DATASET]` (DATASET: the data directory's name).
    #[arg(long, default_value = "churn:10:0.05")]
    runbook: String,
    /// The list size of every search step (clusters probed for ivf).
    #[arg(short = 'L', long = "search-l", default_value_t = 40)]
    l: usize,
    /// List sizes of the last sweep, the merged index against a fresh build.
    #[arg(long, value_delimiter = ',', default_values_t = [16, 20, 25, 30, 40, 60, 80, 120])]
    sweep: Vec<usize>,
    /// Neighbours a query asks for (recall@k against the live set's truth).
    #[arg(short = 'k', default_value_t = 10)]
    k: usize,
    /// Threads of every build, merge and search.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Memory budget as a fraction of the raw vector bytes.
    #[arg(long, default_value_t = 0.2)]
    memory_fraction: f64,
    /// The share of the budget inserted vectors and deletes may hold.
    #[arg(long, default_value_t = 0.1)]
    delta_share: f64,
    /// Vectors an insert call carries (one log record and fsync each).
    #[arg(long, default_value_t = 1000)]
    batch: usize,
    /// Rounds of the last sweep.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// A timed pass repeats the queries until it has run this long.
    #[arg(long, default_value_t = 1.0)]
    min_pass_seconds: f64,
    /// Use only the first N queries (0: all): for a profile whose search
    /// takes seconds a hundred queries (ivf on an SSD), so each step's
    /// live and fresh searches stay short.
    #[arg(long, default_value_t = 0)]
    max_queries: usize,
    /// Skip the fresh build of each search step's live set (they take most
    /// of a run's time); the last sweep still has its fresh build.
    #[arg(long)]
    no_fresh: bool,
    /// The share of the live set deleted and inserted again before the
    /// timed merges.
    #[arg(long, default_value_t = 0.1)]
    merge_share: f64,
    #[command(flatten)]
    graph: variants::GraphBuildFlags,
}

pub fn run(a: Args) -> Result<()> {
    let base = stratavec::data::open(a.data.join("base.fbin"))?;
    let (n, dim) = (base.n(), base.dim());
    let rows = base.to_f32_vec();
    drop(base);
    let qfile = stratavec::data::open(a.data.join("query.fbin"))?;
    qfile.check_dim(dim, "queries")?;
    let mut queries = qfile.to_f32_vec();
    let mut truth = GroundTruth::read(a.data.join("gt.ibin"))?;
    if a.max_queries > 0 && a.max_queries < truth.nq {
        truth = truth.first(a.max_queries);
        queries.truncate(truth.nq * dim);
    }
    let name = a
        .data
        .file_name()
        .map_or("data".into(), |s| s.to_string_lossy().into_owned());
    let book = runbook_of(&a.runbook, &name, n)?;
    let data = Data {
        rows: &rows,
        dim,
        queries: &queries,
        truth: &truth,
        metric: a.graph.metric,
        k: a.k,
        threads: a.threads,
    };
    eprintln!(
        "bench-updates: {name} n={n} d={dim}, runbook {} ({} steps): the live sets' truth",
        a.runbook,
        book.steps.len()
    );
    let plan = Plan::new(&book, &data)?;
    let budget = (n as f64 * dim as f64 * 4.0 * a.memory_fraction) as u64;
    std::fs::create_dir_all(&a.work).with_context(|| format!("create {}", a.work.display()))?;
    let mut rows_out = Rows::create(&a.out)?;
    rows_out.emit(vec![json!({
        "kind": "run", "dataset": name, "n": n, "d": dim, "nq": truth.nq,
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "runbook": a.runbook, "steps": book.steps.len(), "threads": a.threads,
        "memory_budget_bytes": budget, "memory_fraction": a.memory_fraction,
        "delta_share": a.delta_share, "batch": a.batch, "search_l": a.l,
        "loadavg": std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
    })])?;
    for profile in &a.profiles {
        let variant = variants::find(profile)?;
        let params = variant.build_params(&run_build(&a, budget))?;
        let search =
            Given::from_keywords(Params::Search, &variant.search_keywords(&run_search(&a)))?;
        let setup = updates::Setup {
            system: format!("stratavec-{}", variant.name),
            data: &data,
            params,
            search,
            budget,
            threads: a.threads,
            work: a.work.clone(),
            l: a.l,
            batch: a.batch.max(1),
            delta_share: a.delta_share,
            fresh: !a.no_fresh,
            sweep: &a.sweep,
            rounds: a.rounds,
            min_pass_s: a.min_pass_seconds,
            merge_share: a.merge_share,
        };
        eprintln!("bench-updates: {} ({})", setup.system, variant.about);
        updates::run(&setup, &plan, &mut |v| {
            for r in &v {
                eprintln!("  {}", summary(r));
            }
            rows_out.emit(v)
        })?;
    }
    eprintln!("bench-updates: rows written to {}", a.out.display());
    Ok(())
}

/// The runbook `spec` names: `churn:STEPS:FRACTION`, or `FILE[:DATASET]`.
fn runbook_of(spec: &str, dataset: &str, n: usize) -> Result<Runbook> {
    if let Some(rest) = spec.strip_prefix("churn:") {
        let parsed = rest
            .split_once(':')
            .and_then(|(s, f)| Some((s.parse::<usize>().ok()?, f.parse::<f64>().ok()?)));
        return match parsed {
            Some((steps, f)) if steps > 0 && f > 0.0 && f < 1.0 => {
                Ok(runbook::churn(dataset, n, steps, f))
            }
            _ => bail!(
                "--runbook {spec}: expected churn:STEPS:FRACTION with STEPS >= 1 and FRACTION in (0, 1), such as churn:10:0.05"
            ),
        };
    }
    let (file, set) = match spec.rsplit_once(':') {
        Some((f, s)) if Path::new(f).is_file() => (f, s),
        _ => (spec, dataset),
    };
    let text = std::fs::read_to_string(file).with_context(|| format!("--runbook: read {file}"))?;
    runbook::parse(&text, set, file).map_err(anyhow::Error::msg)
}

/// The run's flags as build keywords (as `bench`'s).
fn run_build(a: &Args, budget: u64) -> variants::RunBuild {
    a.graph.run_build(budget)
}

fn run_search(a: &Args) -> Vec<(String, String)> {
    vec![
        ("k".to_string(), a.k.to_string()),
        ("complexity".into(), a.l.to_string()),
        ("threads".into(), a.threads.to_string()),
    ]
}

/// A row as one progress line.
fn summary(r: &serde_json::Value) -> String {
    let f = |k: &str| r.get(k).and_then(|v| v.as_f64());
    let kind = r["kind"].as_str().unwrap_or("?");
    match kind {
        "search" | "fresh" | "final" => format!(
            "{kind} step {} L {}: recall {:.4}, {:.0} QPS{}",
            r.get("step").map_or("-".into(), |s| s.to_string()),
            r["L"],
            f("recall").unwrap_or(0.0),
            f("qps").unwrap_or(0.0),
            r.get("which").map_or(String::new(), |w| format!(" ({w})"))
        ),
        "step" => format!(
            "step {} {} {}: {:.0}/s",
            r["step"],
            r["op"].as_str().unwrap_or("?"),
            r["count"],
            f("per_s").unwrap_or(0.0)
        ),
        "build" => format!("build {} in {:.1} s", r["n"], f("seconds").unwrap_or(0.0)),
        _ => format!("{kind}: {:.1} s", f("seconds").unwrap_or(0.0)),
    }
}
