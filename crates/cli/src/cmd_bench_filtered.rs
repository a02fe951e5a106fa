//! `stratavec bench-filtered`: filtered search measured (issue #56). Each
//! profile is built once with the data set's labels (`base.labels.spmat`,
//! names from `labels.tsv`) and opened at the memory budget; the filtered
//! queries (`query.filters.spmat`, their bands from `query.filters.tsv`)
//! are searched band by band, each way forced and `auto`, over the list
//! sizes, in interleaved rounds, against `gt.filtered.ibin`. One JSON row
//! a point (`bench::filtered`); `benchmarks/tables/filtered.py` makes the
//! table.

use crate::bench::filtered::{self, BandSet};
use crate::bench::{peers, variants};
use crate::cmd_bench::Rows;
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Instant;
use stratavec::args::{Given, Params};
use stratavec::data::GroundTruth;
use stratavec::index::filtered::FilterWay;
use stratavec::labels::{spmat, store, LabelInput};
use stratavec::{Index, OpenOptions};

#[derive(clap::Args)]
pub struct Args {
    /// Data set directory: base.fbin, query.fbin, base.labels.spmat,
    /// labels.tsv, query.filters.spmat, query.filters.tsv, gt.filtered.ibin
    /// (`scripts/datasets/make.py` makes them).
    #[arg(long)]
    data: PathBuf,
    /// Where the labelled indexes are built (reused when complete).
    #[arg(long, default_value = ".cache/bench-filtered")]
    work: PathBuf,
    /// JSON lines output (overwritten).
    #[arg(long, default_value = "benchmarks/results/filtered.jsonl")]
    out: PathBuf,
    /// Profiles (or other `bench --profiles` variants) to run.
    #[arg(long, value_delimiter = ',', default_values_t = ["diskann", "gorgeous"].map(String::from))]
    profiles: Vec<String>,
    /// Peer engines timed beside the profiles, each with its own filter
    /// (`benchmarks/peers/filtered_peer.py`; `hnswlib`: its filter
    /// callback), in their own virtualenvs.
    #[arg(long, value_delimiter = ',')]
    peers: Vec<String>,
    /// The peers' sweep when not `--sweep`: `L,L,...` for every peer, or
    /// `PEER=L,L,...` for one (repeat the flag). hnswlib's `ef` calls back
    /// into Python for every candidate, so its long lists take seconds a
    /// band; LanceDB's `nprobes` must reach most of its partitions before a
    /// selective filter finds its matches.
    #[arg(long)]
    peer_sweep: Vec<String>,
    /// The ways to time: each forced on every query, and auto.
    #[arg(long, value_delimiter = ',', value_enum, default_values_t = [FilterWay::Auto, FilterWay::Pre, FilterWay::InSearch, FilterWay::Post])]
    ways: Vec<FilterWay>,
    /// List sizes of the sweep.
    #[arg(short = 'L', long, value_delimiter = ',', default_values_t = [10, 16, 25, 40, 64, 100, 160])]
    sweep: Vec<usize>,
    /// Neighbours a query asks for.
    #[arg(short = 'k', default_value_t = 10)]
    k: usize,
    /// Threads of every build and search.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Memory budget as a fraction of the raw vector bytes.
    #[arg(long, default_value_t = 0.2)]
    memory_fraction: f64,
    /// Interleaved rounds: each round times every band, way and L once.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// A timed point repeats its queries until it has run this long.
    #[arg(long, default_value_t = 0.5)]
    min_pass_seconds: f64,
    /// Build again even when a complete index is there.
    #[arg(long)]
    rebuild: bool,
    #[command(flatten)]
    graph: variants::GraphBuildFlags,
}

pub fn run(a: Args) -> Result<()> {
    let d = &a.data;
    let base = stratavec::data::open(d.join("base.fbin"))?;
    let (n, dim) = (base.n(), base.dim());
    drop(base);
    let qfile = stratavec::data::open(d.join("query.fbin"))?;
    qfile.check_dim(dim, "queries")?;
    let queries = qfile.to_f32_vec();
    let nq = qfile.n();
    let labels = spmat::read(&d.join("base.labels.spmat"))?;
    let names = read_names(&d.join("labels.tsv"))?;
    let filters = spmat::read(&d.join("query.filters.spmat"))?;
    let gt = GroundTruth::read(d.join("gt.filtered.ibin"))?;
    let bands = filtered::bands(&d.join("query.filters.tsv"), nq)?;
    let name = d
        .file_name()
        .map_or("data".into(), |s| s.to_string_lossy().into_owned());
    let budget = (n as f64 * dim as f64 * 4.0 * a.memory_fraction) as u64;
    let mut rows = Rows::create(&a.out)?;
    rows.emit(vec![json!({
        "kind": "run", "dataset": name, "n": n, "d": dim, "nq": nq, "k": a.k,
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "threads": a.threads, "memory_budget_bytes": budget, "memory_fraction": a.memory_fraction,
        "rounds": a.rounds, "bands": bands.iter().map(|b| json!({"band": b.band, "queries": b.members.len()})).collect::<Vec<_>>(),
        "loadavg": std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
    })])?;
    let input = LabelInput {
        sets: &labels,
        names: names.as_deref(),
    };
    let mut own = Vec::new();
    for profile in &a.profiles {
        let variant = variants::find(profile)?;
        let params = variant.build_params(&run_build(&a, budget))?;
        let dir = a.work.join(format!("{name}-{}", variant.name));
        let mut build_row = build_or_reuse(&d.join("base.fbin"), &dir, &params, input, &a)?;
        let system = format!("stratavec-{}", variant.name);
        build_row["system"] = system.clone().into();
        rows.emit(vec![build_row])?;
        let opts = OpenOptions {
            memory_budget_bytes: Some(budget),
            reserve_threads: a.threads,
            ..Default::default()
        };
        let index = Index::open(&dir, &opts)?;
        let search =
            Given::from_keywords(Params::Search, &variant.search_keywords(&run_search(&a)))?;
        let warm = search.search_params(|s| index.search_defaults(s))?;
        let sets = bands
            .iter()
            .map(|b| BandSet::new(b, &queries, dim, &filters, &gt, &index))
            .collect::<Result<Vec<_>>>()?;
        own.push(Own {
            system,
            index,
            warm,
            sets,
        });
    }
    let mut peers = start_peers(&a, &name, budget)?;
    let band_numbers: Vec<usize> = bands.iter().map(|b| b.band).collect();
    // Interleaved: a round times every system, band, way and L once.
    for round in 0..a.rounds {
        for o in &own {
            o.round(&a, round, &mut rows)?;
        }
        for (peer, sweep) in &mut peers {
            for &band in &band_numbers {
                for &l in sweep.iter() {
                    let row = peer.band_point(l, round, band)?;
                    log_point(&peer.name, round, band, "peer", l, &row);
                    rows.emit(vec![row])?;
                }
            }
        }
    }
    for (peer, _) in peers {
        peer.finish()?;
    }
    eprintln!("bench-filtered: rows written to {}", a.out.display());
    Ok(())
}

/// One of stratavec's profiles, opened at the budget with its bands.
struct Own {
    system: String,
    index: Index,
    warm: stratavec::SearchParams,
    sets: Vec<BandSet>,
}

impl Own {
    /// One round: every band, list size and way timed once. The ways of
    /// one L run back to back, so the ratio of two ways at a point compares
    /// passes a second apart, not the two ends of a band's sweep (the
    /// device's rate drifts over minutes); odd rounds run them in reverse,
    /// so neither way always follows the other (a second pass over the
    /// same rows finds the device's own cache warmer).
    fn round(&self, a: &Args, round: usize, rows: &mut Rows) -> Result<()> {
        let mut ways = a.ways.clone();
        if round % 2 == 1 {
            ways.reverse();
        }
        for set in &self.sets {
            for &l in &a.sweep {
                for &way in &ways {
                    let p = stratavec::SearchParams {
                        complexity: l.max(a.k),
                        ..self.warm.clone()
                    };
                    let mut row = filtered::point(&self.index, set, &p, way, a.min_pass_seconds)?;
                    row["system"] = self.system.clone().into();
                    row["round"] = round.into();
                    log_point(&self.system, round, set.band, &format!("{way:?}"), l, &row);
                    rows.emit(vec![row])?;
                }
            }
        }
        Ok(())
    }
}

fn log_point(system: &str, round: usize, band: usize, way: &str, l: usize, row: &Value) {
    eprintln!(
        "  {system} round {round} band {band} {way} L {l}: recall {:.4}, {:.0} QPS, {:.1} reads",
        row["recall"].as_f64().unwrap_or(0.0),
        row["qps"].as_f64().unwrap_or(0.0),
        row["reads_per_query"].as_f64().unwrap_or(0.0)
    );
}

/// `--peer-sweep` for `peer`: its own list, else the list for every
/// peer, else `--sweep`.
fn sweep_of(a: &Args, peer: &str) -> Result<Vec<usize>> {
    let parse = |list: &str| -> Result<Vec<usize>> {
        list.split(',')
            .map(|x| {
                x.trim().parse::<usize>().with_context(|| {
                    format!("--peer-sweep: expected list sizes (integers), found {x:?}")
                })
            })
            .collect()
    };
    let own = a
        .peer_sweep
        .iter()
        .find_map(|s| s.strip_prefix(peer).and_then(|r| r.strip_prefix('=')));
    let every = a.peer_sweep.iter().find(|s| !s.contains('='));
    match own.or(every.map(String::as_str)) {
        Some(list) => parse(list),
        None => Ok(a.sweep.clone()),
    }
}

/// Every `--peers` engine started on the filtered queries (each builds or
/// reuses its index in `--work`, then loads it), with its sweep.
fn start_peers(a: &Args, name: &str, budget: u64) -> Result<Vec<(peers::Peer, Vec<usize>)>> {
    let repo = std::env::current_dir()?;
    let mut out = Vec::new();
    for peer in &a.peers {
        eprintln!("bench-filtered: starting peer {peer}");
        let idx = a.work.join(format!("{name}-peer-{peer}"));
        let sweep = sweep_of(a, peer)?;
        let started = peers::Peer::start(&peers::PeerRun {
            repo: &repo,
            peer,
            data: &a.data,
            index_dir: &idx,
            threads: a.threads,
            build_threads: a.threads,
            k: a.k,
            sweep: &sweep,
            memory_budget_mb: budget as f64 / 1e6,
            pq_bytes: a.graph.pq_bytes,
            graph_degree: a.graph.graph_degree,
            complexity: a.graph.complexity,
            alpha: 1.2,
            beam_width: stratavec::SearchParams::default().beam_width,
            rebuild: a.rebuild,
            min_pass_s: a.min_pass_seconds,
            filtered: true,
        })?;
        out.push((started, sweep));
    }
    Ok(out)
}

fn read_names(path: &Path) -> Result<Option<Vec<String>>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(store::parse_names(&text, path)?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("read {}", path.display())),
    }
}

/// The labelled index at `dir`, built unless a complete one with these
/// parameters and labels is there; its build row.
fn build_or_reuse(
    base: &Path,
    dir: &Path,
    params: &stratavec::BuildParams,
    labels: LabelInput,
    a: &Args,
) -> Result<serde_json::Value> {
    if !a.rebuild {
        if let Ok(m) = stratavec::index::Manifest::read(dir) {
            // Every build parameter as `bench` compares them (budget, PQ
            // bytes, layout), not the profile alone: the directory is named
            // by data set and variant, so another budget lands in it too.
            let labelled = m.plan.as_ref().is_some_and(|p| p.labels);
            let dtype = stratavec::data::open(base)?.dtype();
            let same = m.n == labels.sets.len() && m.built_as_asked(params, dtype)?;
            if labelled && same && m.build_revision == stratavec::index::BUILD_REVISION {
                let report = dir.join(stratavec::index::build::BUILD_REPORT);
                let text = std::fs::read_to_string(&report).unwrap_or_else(|_| "{}".into());
                let mut v: serde_json::Value = serde_json::from_str(&text)?;
                v["kind"] = "build".into();
                v["reused"] = true.into();
                return Ok(v);
            }
        }
    }
    let t = Instant::now();
    let columns = stratavec::data::TableColumns::default();
    let progress = stratavec::progress::Silent;
    let r = stratavec::build_from_input(
        base,
        &columns,
        Some(labels),
        dir,
        params,
        a.threads,
        &progress,
    )?;
    let mut v = serde_json::to_value(&r)?;
    v["kind"] = "build".into();
    v["seconds"] = t.elapsed().as_secs_f64().into();
    Ok(v)
}

fn run_build(a: &Args, budget: u64) -> variants::RunBuild {
    a.graph.run_build(budget)
}

fn run_search(a: &Args) -> Vec<(String, String)> {
    vec![
        ("k".to_string(), a.k.to_string()),
        ("threads".into(), a.threads.to_string()),
    ]
}
