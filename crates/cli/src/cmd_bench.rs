use crate::bench::{ablation, device, peers, range, rounds, run, stats, summary, variants};
use anyhow::{Context, Result};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use stratavec::args::{Given, Params};
use stratavec::autoplan::AUTO;
use stratavec::data::{GroundTruth, Metric};
use stratavec::{BuildParams, SearchParams};

#[derive(clap::Args)]
pub struct Args {
    /// Data set directory with base.fbin, query.fbin, gt.ibin (and, where
    /// it has them, learn.fbin: the queries `auto` variants plan with).
    #[arg(long)]
    data: PathBuf,
    /// Where indexes are built (and reused when their parameters match).
    #[arg(long, default_value = ".cache/bench")]
    work: PathBuf,
    /// JSON lines output (appended to by nothing else; overwritten).
    #[arg(long, default_value = "benchmarks/results/bench.jsonl")]
    out: PathBuf,
    /// stratavec systems to run: the profiles `diskann`, `starling`,
    /// `gorgeous` and `laser`; the Starling ablations `starling-shuffle`,
    /// `starling-page`, `starling-nav`, `starling-pipeline` (each technique
    /// alone on top of diskann) and `starling-all` (the profile plus the
    /// navigation graph); the Gorgeous ablations `gorgeous-two-stage`,
    /// `gorgeous-graph-cache`, `gorgeous-replicated`, `gorgeous-separated`
    /// and `gorgeous-8k`; the laser ablations `laser-layout`, `laser-cache`,
    /// `laser-entry`, `laser-dispatch` (laser + early dispatch), and
    /// `laser-wide` (no adaptive beam);
    /// the profiles `pipeann` and `octopus` and OctopusANN's ablations
    /// `octopus-width` (dynamic width alone), `octopus-pipe` (the pipelined
    /// search alone), `octopus-c2` (both), `octopus-schedule` and
    /// `octopus-adaptive` (C5 with the scheduled or waste-driven width),
    /// `gorgeous-pipe` (gorgeous with pipelined refinement),
    /// `pipeann-blocks` (the pipelined search over octopus's blocks) and
    /// `pipeann-blocks-f16` (the same over f16 records); `tiered`,
    /// `tiered-f16`; the cluster indexes `ivf`, `ivf-r1`, `ivf-r2`,
    /// `ivf-r8`, `ivf-nogroup`, and IVF-PQ `ivf-pq`, `ivf-pq-r4` (codes and
    /// members in RAM) (`bench::variants` lists what each is).
    #[arg(long, value_delimiter = ',', default_values_t = [stratavec::profile::DEFAULT.to_string()])]
    profiles: Vec<String>,
    /// OctopusANN's study (paper 003 §5, §7): runs each technique alone on
    /// the PQ baseline and the compositions C1-C5 (besides any --profiles),
    /// records each index's overlap ratio OR(G) and records a page, and
    /// prints the study's table with the page-I/O model's reads (eq. 2)
    /// beside the measured ones.
    #[arg(long)]
    ablate: bool,
    /// Navigation graph sample ratio μ for the variants that have one.
    /// Default: each variant's (0.02 for starling-nav and starling-all,
    /// 0.005 for gorgeous, as its paper).
    #[arg(long)]
    nav_sample: Option<f32>,
    /// Peers to run in the same session: diskannpy, diskannpy-rust, hnswlib, faiss-ivfpq.
    #[arg(long, value_delimiter = ',')]
    peers: Vec<String>,
    #[arg(short = 'L', long, value_delimiter = ',', default_values_t = [10, 20, 30, 40, 50, 60, 80, 100, 150, 200])]
    sweep: Vec<usize>,
    #[arg(short = 'k', default_value_t = 10)]
    k: usize,
    /// Reads per hop; default: each system's own (4; 2 for block search
    /// over blocks of 6+ records; peers 4).
    #[arg(long, short = 'W')]
    beam_width: Option<usize>,
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Queries in flight per thread; default: 128 / W (32 at W = 4, 64 at
    /// W = 2); their reads share 64 buffers a thread.
    #[arg(long)]
    in_flight: Option<usize>,
    /// Latency mode: 1 thread x 1 query in flight for every system (the
    /// peers make one single-query call at a time), so each row's p50 / p99
    /// / p99.9 is one query's own latency, not its wait behind others.
    /// Overrides --threads and --in-flight.
    #[arg(long)]
    latency: bool,
    /// Microseconds each stratavec worker polls for a read's completion
    /// before it sleeps (0: sleeps at once), for every system whose variant
    /// does not set its own (the `-poll` and `-sleep` variants). Default:
    /// the search's own (1000 for the pipelined search, else 0).
    #[arg(long)]
    poll_us: Option<u32>,
    /// io_uring readers submit through a kernel thread (SQPOLL) for every
    /// system whose variant does not set its own (the `-sqpoll` variants):
    /// see `stratavec search --sqpoll`.
    #[arg(long)]
    sqpoll: bool,
    /// Memory budget as a fraction of the raw vector bytes (0.2 = the papers' 20%).
    #[arg(long, default_value_t = 0.2)]
    memory_fraction: f64,
    #[arg(long, default_value = "l2")]
    metric: Metric,
    /// Graph degree R.
    #[arg(long, short = 'R', default_value_t = 64)]
    graph_degree: usize,
    #[arg(long, default_value_t = 128)]
    complexity: usize,
    #[arg(long, default_value_t = 1.2)]
    alpha: f32,
    #[arg(long, default_value_t = 48)]
    pq_bytes: usize,
    /// Element type of the vectors the stratavec indexes store (`build
    /// --store`); f16 indexes get their own directories. Peers store f32.
    #[arg(long)]
    store: Option<stratavec::data::DType>,
    /// Timed rounds. Each round times every system (stratavec and peers) at
    /// one L, then the next L, so a slow spell of the machine falls on all
    /// systems alike; every pass is a row, and the summary reports each
    /// figure and each ratio as the median over rounds with its range.
    #[arg(long, alias = "repeats", default_value_t = 3)]
    rounds: usize,
    /// Seconds of each burst probe of the device (one per queue depth
    /// before the rounds, at depth 64 between and after them); 0 skips them.
    #[arg(long, default_value_t = 2.0)]
    device_seconds: f64,
    /// Seconds of the sustained device probe at depth 64 (counted per
    /// second, after --warmup-seconds), before, between and after the
    /// rounds; the ceiling searches are held to. 0 skips it.
    #[arg(long, default_value_t = 20.0)]
    sustained_seconds: f64,
    /// A timed pass repeats the query set until it has run this many
    /// seconds (QPS, reads and CPU are per query over all repetitions;
    /// recall and latency from the first): a pass of 0.1 s measures one
    /// burst of the device. 0: one repetition.
    #[arg(long, default_value_t = 1.0)]
    min_pass_seconds: f64,
    /// Seconds of reads before the sustained probe starts counting.
    #[arg(long, default_value_t = 3.0)]
    warmup_seconds: f64,
    /// Also run range search at this radius (reported distance unit) and the
    /// doubling-k k-NN baseline, scored by average precision (AP).
    #[arg(long)]
    radius: Option<f32>,
    /// Range ground truth for --radius (`stratavec gt --radius`); default:
    /// computed by brute force and kept in --work.
    #[arg(long)]
    range_gt: Option<PathBuf>,
    /// Range search: the window doubles while results fill this share of it.
    #[arg(long, default_value_t = 0.5)]
    range_phi: f32,
    /// I/O backend of the stratavec systems: auto, io_uring, pread,
    /// buffered, ram, mmap, simulated:LAT_NS[,GBPS]. `ram` and `mmap` read
    /// the index through memory (a fast second tier; the device out of the
    /// way); `simulated` holds each read to a tier's latency and bandwidth
    /// (paper 002 §4). Peers do their own I/O.
    #[arg(long, default_value = "auto")]
    io: stratavec_io::Backend,
    /// Run every stratavec system on each tier given (repeat the flag) in
    /// the same rounds, as systems named `stratavec-VARIANT@TIER`: `ssd`
    /// (the --io backend), `mmap` (local memory, the computation bound) and
    /// `simulated:LAT_NS[,GBPS]` tiers (paper 002's 0.3-3 µs: e.g. --tier
    /// ssd --tier mmap --tier simulated:1000,10). Builds once.
    #[arg(long)]
    tier: Vec<String>,
    /// Rebuild indexes even when a matching one exists (one made by older
    /// build logic, an earlier build revision, is always rebuilt).
    #[arg(long)]
    rebuild: bool,
}

fn dataset_name(dir: &Path) -> String {
    dir.file_name()
        .map_or("data".into(), |s| s.to_string_lossy().into_owned())
}

pub fn run(mut a: Args) -> Result<()> {
    let build_threads = latency_mode(&mut a);
    let base = a.data.join("base.fbin");
    let set = DataSet::load(&a, &base)?;
    std::fs::create_dir_all(&a.work)?;
    let mut rows = Rows::create(&a.out)?;
    rows.emit(vec![run_row(&a, &set)])?;
    eprintln!(
        "bench: {} n={} d={}, budget {:.1} MB ({}% of raw), {} threads",
        set.name,
        set.n,
        set.dim,
        set.budget as f64 / 1e6,
        a.memory_fraction * 100.0,
        a.threads
    );
    let range = match a.radius {
        Some(radius) => Some(range::RangeSpec {
            radius,
            gt: range_truth(&a, &base, &set.name, radius)?,
            phi: a.range_phi,
        }),
        None => None,
    };
    if a.ablate {
        a.profiles = ablation::profiles(&a.profiles);
    }
    let (mut systems, first_index) =
        stratavec_systems(&a, &set, &base, build_threads, range.as_ref())?;
    peer_systems(&a, &set, build_threads, &mut systems)?;
    let ceiling = first_index.map(|file| device::Ceiling {
        file,
        dataset: set.name.clone(),
        threads: a.threads,
        block: 4096,
        burst_s: a.device_seconds,
        sustained_s: a.sustained_seconds,
        warmup_s: a.warmup_seconds,
    });
    rounds::run(
        &mut systems,
        &a.sweep,
        a.rounds,
        ceiling.as_ref(),
        &mut |v| rows.emit(v),
    )?;
    for system in systems {
        match system {
            rounds::System::Stratavec(o) => {
                if o.s.range.is_some() {
                    eprintln!("bench: range search on {}", o.s.system);
                    rows.emit(o.range_rows()?)?;
                }
            }
            rounds::System::Peer(p) => p.finish()?,
        }
    }
    print_summary(&rows.rows);
    print_range_summary(&rows.rows);
    if a.ablate {
        ablation::print(&rows.rows);
    }
    eprintln!("bench: rows written to {}", a.out.display());
    Ok(())
}

/// `--latency` times every search with 1 thread x 1 query in flight;
/// returns the threads builds use, every core whatever the searches are
/// timed with.
fn latency_mode(a: &mut Args) -> usize {
    let build_threads = if a.latency {
        crate::default_threads()
    } else {
        a.threads
    };
    if a.latency {
        a.threads = 1;
        a.in_flight = Some(1);
    }
    build_threads
}

/// What the run measures against: the base's shape, the queries and their
/// ground truth, and the memory budget every system gets.
struct DataSet {
    name: String,
    n: usize,
    dim: usize,
    queries: Vec<f32>,
    gt: GroundTruth,
    /// `--memory-fraction` of the raw f32 vector bytes.
    budget: u64,
}

impl DataSet {
    fn load(a: &Args, base: &Path) -> Result<Self> {
        let bfile = stratavec::data::open(base)?;
        let (n, dim) = (bfile.n(), bfile.dim());
        drop(bfile);
        let qfile = stratavec::data::open(a.data.join("query.fbin"))?;
        qfile.check_dim(dim, "queries")?;
        let queries = qfile.to_f32_vec();
        let gt = GroundTruth::read(a.data.join("gt.ibin"))?;
        Ok(DataSet {
            name: dataset_name(&a.data),
            n,
            dim,
            queries,
            gt,
            budget: (n as f64 * dim as f64 * 4.0 * a.memory_fraction) as u64,
        })
    }
}

/// The rows of the run: each written to `--out` as a JSON line when it is
/// emitted (flushed, so an interrupted run keeps what it measured) and
/// kept for the summaries.
pub(crate) struct Rows {
    out: std::fs::File,
    rows: Vec<Value>,
}

impl Rows {
    pub(crate) fn create(path: &Path) -> Result<Self> {
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p)?;
        }
        let out =
            std::fs::File::create(path).with_context(|| format!("create {}", path.display()))?;
        Ok(Rows {
            out,
            rows: Vec::new(),
        })
    }

    pub(crate) fn emit(&mut self, v: Vec<Value>) -> Result<()> {
        for r in v {
            writeln!(self.out, "{}", serde_json::to_string(&r)?)?;
            self.rows.push(r);
        }
        self.out.flush()?;
        Ok(())
    }
}

/// The run's first row: the data set, the command, the settings and the
/// machine, so the rows after it can be read without the shell history.
fn run_row(a: &Args, set: &DataSet) -> Value {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    serde_json::json!({
        "kind": "run", "dataset": set.name, "n": set.n, "d": set.dim, "nq": set.gt.nq,
        "data": a.data.display().to_string(),
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "unix_time": started, "loadavg": load.trim(), "threads": a.threads, "rounds": a.rounds.max(1),
        "memory_budget_bytes": set.budget, "simd": stratavec_simd::kernel_name(),
        "amx": stratavec_simd::amx::active(),
        "store": a.store.map(|s| s.to_string()),
        "stratavec_version": env!("CARGO_PKG_VERSION"),
        "machine": machine(),
    })
}

/// Builds (or reuses) the index of every `--profiles` variant and opens it
/// once per tier; returns the systems and the first index's pages file
/// (the file the device probes read).
fn stratavec_systems<'s>(
    a: &'s Args,
    set: &'s DataSet,
    base: &Path,
    build_threads: usize,
    range: Option<&'s range::RangeSpec>,
) -> Result<(Vec<rounds::System<'s>>, Option<PathBuf>)> {
    let chosen = a
        .profiles
        .iter()
        .map(|p| variants::find(p))
        .collect::<Result<Vec<_>>>()?;
    let mut systems = Vec::new();
    let mut first_index: Option<PathBuf> = None;
    for variant in chosen {
        let params = build_params(a, variant, set.budget)?;
        let dir = a.work.join(variant.index_name(&set.name, &params)?);
        let build = run::build_or_reuse(base, &dir, &params, build_threads, a.rebuild)?;
        first_index.get_or_insert(dir.join(stratavec::layout::PAGES_FILE));
        for (label, io) in tiers(&a.tier, a.io)? {
            let system = match label {
                Some(t) => format!("stratavec-{}@{t}", variant.name),
                None => format!("stratavec-{}", variant.name),
            };
            eprintln!("bench: opening {system} ({})", variant.about);
            let opening = Opening {
                system,
                index_dir: dir.clone(),
                build: build.clone(),
                io,
                range,
            };
            systems.push(rounds::System::Stratavec(Box::new(run::open(
                opening.sweep(a, set, variant)?,
            )?)));
        }
    }
    Ok((systems, first_index))
}

/// What the run gives every variant's build: its flags as build keywords,
/// its --nav-sample and its memory budget (`Variant::build_keywords`).
fn run_build(a: &Args, budget: u64) -> variants::RunBuild {
    let mut keywords = vec![
        ("metric".to_string(), a.metric.as_str().to_string()),
        ("graph_degree".into(), a.graph_degree.to_string()),
        ("complexity".into(), a.complexity.to_string()),
        ("alpha".into(), a.alpha.to_string()),
        ("pq_bytes".into(), a.pq_bytes.to_string()),
    ];
    if let Some(store) = a.store {
        keywords.push(("store".into(), store.to_string()));
    }
    variants::RunBuild {
        keywords,
        nav_sample: a.nav_sample,
        budget,
    }
}

/// The build parameters of `variant` under the run's flags. `auto` plans
/// with the data set's learn queries where it has them (`learn.fbin`,
/// scripts/datasets/learnstep.py): never with the queries it is scored on.
fn build_params(a: &Args, variant: &variants::Variant, budget: u64) -> Result<BuildParams> {
    let mut p = variant.build_params(&run_build(a, budget))?;
    let learn = a.data.join(LEARN_FILE);
    if variant.profile == stratavec::autoplan::AUTO && learn.is_file() {
        p.plan_queries = Some(learn);
    }
    Ok(p)
}

/// The learn queries a data set may have beside its queries.
const LEARN_FILE: &str = "learn.fbin";

/// What the run gives every variant's search: k, the first L, threads,
/// and -W, --in-flight and --poll-us where given (`Variant::search_keywords`).
fn run_search(a: &Args) -> Vec<(String, String)> {
    let mut keywords = vec![
        ("k".to_string(), a.k.to_string()),
        ("complexity".into(), a.sweep[0].to_string()),
        ("threads".into(), a.threads.to_string()),
    ];
    let given = [
        ("beam_width", a.beam_width.map(|w| w.to_string())),
        ("in_flight", a.in_flight.map(|q| q.to_string())),
        ("poll_us", a.poll_us.map(|p| p.to_string())),
    ];
    for (keyword, value) in given {
        if let Some(v) = value {
            keywords.push((keyword.into(), v));
        }
    }
    keywords
}

/// What differs between the opened systems of one run: the system's name,
/// its index, the build report, the tier and the range spec.
struct Opening<'s> {
    system: String,
    index_dir: PathBuf,
    build: Value,
    io: stratavec_io::Backend,
    range: Option<&'s range::RangeSpec>,
}

impl<'s> Opening<'s> {
    /// The sweep of `variant` under the run's flags.
    fn sweep(
        self,
        a: &'s Args,
        set: &'s DataSet,
        variant: &variants::Variant,
    ) -> Result<run::Sweep<'s>> {
        let keywords = variant.search_keywords(&run_search(a));
        let open = variant.open;
        Ok(run::Sweep {
            system: self.system,
            dataset: &set.name,
            index_dir: self.index_dir,
            queries: &set.queries,
            gt: &set.gt,
            ls: &a.sweep,
            search: Given::from_keywords(Params::Search, &keywords)?,
            budget_bytes: set.budget,
            build: self.build,
            graph_cache: open.graph_cache,
            node_cache: open.node_cache,
            // `auto`'s choice may hold a navigation graph or cluster
            // entries (octopus, gorgeous, laser); an index that holds
            // neither opens the same with the switch on.
            navigation_graph: variant.has_nav()? || open.entries || variant.profile == AUTO,
            range: self.range,
            min_pass_s: a.min_pass_seconds,
            io: self.io,
            sqpoll: open.sqpoll.unwrap_or(a.sqpoll),
            page_utility: a.ablate,
            technique: ablation::technique_of(variant.name).filter(|_| a.ablate),
        })
    }
}

/// Starts every `--peers` engine (each builds its index if none matches,
/// then loads it) and adds it to `systems`.
fn peer_systems(
    a: &Args,
    set: &DataSet,
    build_threads: usize,
    systems: &mut Vec<rounds::System>,
) -> Result<()> {
    let repo = std::env::current_dir()?;
    // `--peers ""` (a script's empty list) names none.
    for peer in a.peers.iter().filter(|p| !p.is_empty()) {
        eprintln!(
            "bench: starting peer {peer} (it builds its index if none matches, then loads it)"
        );
        let idx = a.work.join(format!("{}-peer-{peer}", set.name));
        systems.push(rounds::System::Peer(peers::Peer::start(&peers::PeerRun {
            repo: &repo,
            peer,
            data: &a.data,
            index_dir: &idx,
            threads: a.threads,
            build_threads,
            k: a.k,
            sweep: &a.sweep,
            // MB = 10^6 bytes on both sides, so every system gets the same bytes.
            memory_budget_mb: set.budget as f64 / 1e6,
            pq_bytes: a.pq_bytes,
            graph_degree: a.graph_degree,
            complexity: a.complexity,
            alpha: a.alpha,
            beam_width: a.beam_width.unwrap_or(SearchParams::default().beam_width),
            rebuild: a.rebuild,
            min_pass_s: a.min_pass_seconds,
            filtered: false,
        })?));
    }
    Ok(())
}

/// The tiers of `--tier`, each with its label (`ssd` is the `--io`
/// backend); no `--tier`: the `--io` backend, unlabelled.
fn tiers(
    list: &[String],
    io: stratavec_io::Backend,
) -> Result<Vec<(Option<String>, stratavec_io::Backend)>> {
    if list.is_empty() {
        return Ok(vec![(None, io)]);
    }
    list.iter()
        .map(|t| {
            let backend = match t.trim() {
                "ssd" => io,
                other => other
                    .parse()
                    .map_err(|e: String| anyhow::anyhow!("--tier {other:?}: {e} (or ssd)"))?,
            };
            Ok((Some(t.trim().to_string()), backend))
        })
        .collect()
}

/// The machine the rows were measured on, recorded with them so a report
/// re-derived later (or elsewhere) describes this machine, not its own.
fn machine() -> Value {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let field = |text: &str, key: &str| {
        text.lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let mem_kb = field(&read("/proc/meminfo"), "MemTotal")
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok());
    serde_json::json!({
        "ncpu": crate::default_threads(),
        "cpu_model": field(&read("/proc/cpuinfo"), "model name"),
        "mem_total_bytes": mem_kb.map(|k| k * 1024),
        "kernel": read("/proc/sys/kernel/osrelease").trim(),
    })
}

/// The range ground truth: the given file, or one computed by brute force
/// once and kept in the work directory.
fn range_truth(
    a: &Args,
    base: &Path,
    dataset: &str,
    radius: f32,
) -> Result<stratavec::data::RangeGroundTruth> {
    let path = match &a.range_gt {
        Some(p) => p.clone(),
        None => a.work.join(format!(
            "{dataset}-range-r{radius}-{}.bin",
            a.metric.as_str()
        )),
    };
    if !path.exists() {
        eprintln!(
            "bench: range ground truth at radius {radius} -> {}",
            path.display()
        );
        let b = stratavec::data::open(base)?;
        let q = stratavec::data::open(a.data.join("query.fbin"))?;
        let gt = stratavec::data::brute_force_range(&b, &q, a.metric, radius, a.threads);
        gt.write(&path)?;
    }
    Ok(stratavec::data::RangeGroundTruth::read(&path)?)
}

/// The summary `report.py` expands into BENCHMARKS.md: per system, QPS
/// (median and range over rounds) and reads at recall@10 0.90 / 0.95 / 0.99
/// off each round's Pareto front, the reads/s it sustained there against the
/// device's sustained ceiling, and every stratavec system's QPS ratio to
/// each other system, computed per round.
pub fn print_summary(rows: &[Value]) {
    const TARGETS: [f64; 3] = [0.90, 0.95, 0.99];
    let ceiling = device::ceiling(rows);
    let mut systems: Vec<String> = Vec::new();
    for r in rows.iter().filter(|r| r["kind"] == "search") {
        let s = r["system"].as_str().unwrap_or("?").to_string();
        if !systems.contains(&s) {
            systems.push(s);
        }
    }
    println!(
        "| system | R@10 0.90: QPS / reads | 0.95: QPS / reads | 0.99: QPS / reads | max recall |"
    );
    println!("|---|---|---|---|---|");
    for s in &systems {
        let cell = |t: f64| {
            let by = summary::at_recall_by_round(rows, s, t);
            let qps: Vec<f64> = by.iter().map(|(_, p)| p.qps).collect();
            let Some(q) = stats::spread(&qps) else {
                return "never".to_string();
            };
            // Reads are exact and the same in every round.
            let reads = by[0].1.reads;
            let rate = match (ceiling, reads) {
                (Some((c, _)), Some(r)) if r > 0.0 => {
                    format!(
                        ", {:.0}k reads/s ({:.0}% of ceiling)",
                        q.median * r / 1e3,
                        100.0 * q.median * r / c
                    )
                }
                _ => String::new(),
            };
            let reads = reads.map_or("—".into(), |r| format!("{r:.1}"));
            format!("{} / {reads}{rate}", q.show(0))
        };
        let max = summary::rounds_of(rows, s)
            .into_iter()
            .flat_map(|r| summary::points_of(rows, s, r))
            .map(|p| p.recall)
            .fold(0.0, f64::max);
        println!(
            "| {s} | {} | {} | {} | {max:.4} |",
            cell(0.90),
            cell(0.95),
            cell(0.99)
        );
    }
    let ours: Vec<&String> = systems
        .iter()
        .filter(|s| s.starts_with("stratavec"))
        .collect();
    let pairs: Vec<(&String, &String)> = ours
        .iter()
        .flat_map(|a| {
            systems
                .iter()
                .filter(move |b| *b != *a)
                .map(move |b| (*a, b))
        })
        .collect();
    if !pairs.is_empty() {
        println!("\n| QPS ratio, per round: median (range) | R@10 0.90 | 0.95 | 0.99 |");
        println!("|---|---|---|---|");
        for (a, b) in pairs {
            let cell = |t: f64| {
                stats::spread(&summary::ratios_by_round(rows, a, b, t))
                    .map_or("—".to_string(), |r| format!("{}x", r.show(2)))
            };
            println!(
                "| {a} ÷ {b} | {} | {} | {} |",
                cell(TARGETS[0]),
                cell(TARGETS[1]),
                cell(TARGETS[2])
            );
        }
    }
    let show = |mode: &str| {
        stats::spread(&device::rates(rows, mode)).map(|s| {
            let k = |x: f64| format!("{:.1}k", x / 1e3);
            format!("{mode} {} reads/s over {} probe(s)", s.show_with(k), s.n)
        })
    };
    let lines: Vec<String> = ["burst", "sustained"]
        .iter()
        .filter_map(|m| show(m))
        .collect();
    if !lines.is_empty() {
        println!(
            "\ndevice at depth {} (random 4 KiB reads): {}",
            device::DEPTH,
            lines.join("; ")
        );
    }
    if let Some((c, how)) = ceiling {
        println!("ceiling used above: {c:.0} reads/s ({how}); QPS <= that / reads per query");
    }
}

/// Range search against its doubling-k baseline: per system and method, the
/// fewest reads per query reaching AP 0.90 and 0.95, and the best AP seen.
pub fn print_range_summary(rows: &[Value]) {
    let range: Vec<&Value> = rows.iter().filter(|r| r["kind"] == "range").collect();
    if range.is_empty() {
        return;
    }
    println!("\n| system | method | AP >= 0.90: reads (QPS) | AP >= 0.95: reads (QPS) | best AP |");
    println!("|---|---|---|---|---|");
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in &range {
        let k = (
            r["system"].as_str().unwrap_or("?").to_string(),
            r["method"].as_str().unwrap_or("?").to_string(),
        );
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for (system, method) in keys {
        let pts: Vec<(f64, f64, f64)> = range
            .iter()
            .filter(|r| r["system"] == system.as_str() && r["method"] == method.as_str())
            .filter_map(|r| {
                Some((
                    r["ap"].as_f64()?,
                    r["reads_per_query"].as_f64()?,
                    r["qps"].as_f64()?,
                ))
            })
            .collect();
        let cell = |t: f64| {
            pts.iter()
                .filter(|p| p.0 >= t)
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map_or("never".to_string(), |p| format!("{:.1} ({:.0})", p.1, p.2))
        };
        let best = pts.iter().map(|p| p.0).fold(0.0, f64::max);
        println!(
            "| {system} | {method} | {} | {} | {best:.4} |",
            cell(0.90),
            cell(0.95)
        );
    }
}
