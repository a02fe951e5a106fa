//! One stratavec profile in a bench run: build (in a child process, so its
//! peak RSS is its own) or reuse a matching index, then sweep L.

/// What a row's latency counts (`latency_mode`): a query's share of its
/// start (query preparation, tables, entry search: work before its first
/// read), then admission to completion, with `in_flight` queries a thread.
/// Rows before this counted from admission only, 20-90 µs less a query at
/// 384-d; `benchmarks/*_table.py` label those.
pub const LATENCY_MODE: &str =
    "in-batch (its start, then admission to completion; in_flight queries per thread)";

use crate::measured::measure;
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use stratavec::args::Given;
use stratavec::data::GroundTruth;
use stratavec::index::Manifest;
use stratavec::{BatchResult, BuildParams, Index, OpenOptions, SearchParams};

/// Builds `params` at `dir` unless a complete index with exactly these
/// parameters, made by this build revision, is already there. Returns the build report as JSON.
pub fn build_or_reuse(
    base: &Path,
    dir: &Path,
    params: &BuildParams,
    threads: usize,
    rebuild: bool,
) -> Result<Value> {
    let report_path = dir.join(stratavec::index::build::BUILD_REPORT);
    if !rebuild {
        if let Ok(m) = Manifest::read(dir) {
            let dtype = stratavec::data::open(base)?.dtype();
            if m.built_as_asked(params, dtype)? {
                // Built by older build logic, the same parameters may name
                // a different index (`BUILD_REVISION`): build it again.
                if m.build_revision != stratavec::index::BUILD_REVISION {
                    eprintln!(
                        "{}: rebuilding: built by build revision {}, this one builds {}",
                        dir.display(),
                        m.build_revision,
                        stratavec::index::BUILD_REVISION
                    );
                } else if let Ok(text) = std::fs::read_to_string(&report_path) {
                    let mut v: Value = serde_json::from_str(&text)?;
                    v["reused"] = true.into();
                    return Ok(v);
                }
            }
        }
    }
    let exe = std::env::current_exe()?;
    let status = Command::new(exe)
        .arg("build")
        .arg(base)
        .arg(dir)
        .args([
            "--profile",
            &params.profile,
            "--metric",
            params.metric.as_str(),
        ])
        .args(["--graph-degree", &params.graph_degree.to_string()])
        .args(["--complexity", &params.complexity.to_string()])
        .args(["--alpha", &params.alpha.to_string()])
        .args(
            match params.memory_budget.filter(|_| params.unset.pq_bytes) {
                // Planned: the build chooses PQ bytes for the budget.
                Some(b) => [
                    "--memory-budget-mb".to_string(),
                    (b as f64 / 1e6).to_string(),
                ],
                None => ["--pq-bytes".to_string(), params.pq_bytes.to_string()],
            },
        )
        .args(
            params
                .layout
                .iter()
                .flat_map(|l| ["--layout".to_string(), l.to_string()]),
        )
        .args(["--passes", &params.passes.to_string()])
        .args(
            Some(params.page_size)
                .filter(|_| !params.unset.page_size)
                .iter()
                .flat_map(|p| ["--page-size".to_string(), p.to_string()]),
        )
        .args(["--seed", &params.seed.to_string()])
        .args(["--shuffle", &params.shuffle.to_string()])
        .args(["--nav-sample", &params.nav_sample.to_string()])
        .args(["--threads", &threads.to_string()])
        .args(["--ivf-replicas", &params.ivf_replicas.to_string()])
        .args(["--ivf-grouping", &params.ivf_grouping.to_string()])
        .args(["--ivf-closure", &params.ivf_closure.to_string()])
        .args(params.ivf_codes.then_some("--ivf-codes"))
        .args(
            params
                .exrabitq_bits
                .iter()
                .flat_map(|b| ["--exrabitq-bits".to_string(), b.to_string()]),
        )
        .args(["--ivf-sample-nprobe", &params.ivf_sample_nprobe.to_string()])
        .args(
            params
                .plan_queries
                .iter()
                .flat_map(|q| ["--plan-queries".into(), q.as_os_str().to_owned()]),
        )
        .args(
            Some(params.pipelined_refinement)
                .filter(|_| !params.unset.pipelined_refinement)
                .map(|p| format!("--pipelined-refinement={p}")),
        )
        .args(
            params
                .ivf_clusters
                .iter()
                .flat_map(|c| ["--ivf-clusters".to_string(), c.to_string()]),
        )
        .args(
            params
                .store
                .iter()
                .flat_map(|s| ["--store".to_string(), s.to_string()]),
        )
        .args(
            params
                .node_cache_rank
                .iter()
                .flat_map(|r| ["--node-cache-rank".to_string(), r.to_string()]),
        )
        .args(["--visits-sample", &params.visits_sample.to_string()])
        .args(auto_args(params))
        .status()
        .context("start the build child")?;
    if !status.success() {
        bail!("building {} failed ({status})", dir.display());
    }
    let text = std::fs::read_to_string(&report_path)
        .with_context(|| format!("read {}", report_path.display()))?;
    let mut v: Value = serde_json::from_str(&text)?;
    v["reused"] = false.into();
    Ok(v)
}

/// The planner's flags, for `--profile auto` builds.
fn auto_args(params: &BuildParams) -> Vec<String> {
    if params.profile != stratavec::autoplan::AUTO {
        return Vec::new();
    }
    let objective = match params.objective {
        stratavec::autoplan::Objective::Throughput => "throughput",
        stratavec::autoplan::Objective::Latency => "latency",
    };
    let mut v = vec![
        "--objective".to_string(),
        objective.to_string(),
        "--target-recall".to_string(),
        params.target_recall.to_string(),
    ];
    if let Some(r) = params.device_reads_per_s {
        v.extend(["--device-reads-per-s".to_string(), r.to_string()]);
    }
    v
}

pub struct Sweep<'a> {
    pub system: String,
    pub dataset: &'a str,
    pub index_dir: std::path::PathBuf,
    pub queries: &'a [f32],
    pub gt: &'a GroundTruth,
    /// The list sizes swept; the first is the warm-up pass's.
    pub ls: &'a [usize],
    /// The search keywords (`Variant::search_keywords`: k, L, threads and
    /// the variant's switches), over the index's defaults for them
    /// (`Index::search_defaults`).
    pub search: Given,
    pub budget_bytes: u64,
    pub build: Value,
    /// What the index is opened with: the graph cache (Gorgeous), the node
    /// cache, the entry part (navigation graph, cluster entries).
    pub graph_cache: bool,
    pub node_cache: bool,
    pub navigation_graph: bool,
    /// Range search rows too (AP against exact range ground truth).
    pub range: Option<&'a super::range::RangeSpec>,
    /// A timed pass repeats the queries until it has run this long.
    pub min_pass_s: f64,
    /// The I/O backend the index is read through.
    pub io: stratavec_io::Backend,
    /// io_uring readers submit through a kernel thread (`OpenOptions::sqpoll`).
    pub sqpoll: bool,
    /// Measure the pages' OR(G) and records a page at open (a scan of the
    /// pages file) for the page-I/O model (`bench::ablation`).
    pub page_utility: bool,
    /// The technique or composition of OctopusANN's study this system
    /// stands for (`bench::ablation`), recorded in its rows.
    pub technique: Option<&'static str>,
}

/// One system opened and warmed, ready to be timed at any L.
pub struct Opened<'a> {
    pub s: Sweep<'a>,
    index: Index,
    warm: SearchParams,
    /// OR(G) and records a page, when asked for and the layout has them.
    pages: Option<stratavec::index::PageUtility>,
}

/// Opens the index of `s` within its budget and runs one discarded pass,
/// which warms the host's cache of the device as the peers' own warm-up
/// does, so no system pays for being measured first.
pub fn open(s: Sweep) -> Result<Opened> {
    let index = Index::open(&s.index_dir, &open_options(&s))?;
    let warm = warm_params(&s, |switches| index.search_defaults(switches))?;
    // Before the warm-up pass, so the scan's reads do not follow it.
    let pages = match s.page_utility {
        true => index.page_utility()?,
        false => None,
    };
    index.search_batch(s.queries, index.dim(), &warm)?;
    Ok(Opened {
        s,
        index,
        warm,
        pages,
    })
}

/// How `s` opens its index: within its budget, with the parts its
/// variant keeps, reserving buffers for the threads, beam width and
/// queries in flight given (`reserve_for`: the widest search's where not).
pub fn open_options(s: &Sweep) -> OpenOptions {
    let threads = s.search.get::<usize>("threads");
    OpenOptions {
        memory_budget_bytes: Some(s.budget_bytes),
        reserve_threads: threads.unwrap_or_else(|| SearchParams::default().threads),
        navigation_graph: s.navigation_graph,
        graph_cache: s.graph_cache,
        node_cache: s.node_cache,
        io: s.io,
        sqpoll: s.sqpoll,
        ..Default::default()
    }
    .reserve_for(s.search.get("beam_width"), s.search.get("in_flight"))
}

/// The parameters `s` searches with at its first L: its keywords over
/// `defaults` (the index's for the switches given:
/// `Index::search_defaults`).
pub fn warm_params(
    s: &Sweep,
    defaults: impl FnOnce(&stratavec::search::Switches) -> SearchParams,
) -> Result<SearchParams> {
    Ok(s.search.search_params(defaults)?)
}

impl Opened<'_> {
    /// One timed pass at list size `l`: all queries, repeated until the pass
    /// has run `min_pass_s` (a pass of a tenth of a second measures one
    /// burst of the device, not its rate). Returns the first repetition's
    /// results with the mean repetition's wall time, kernel reads and I/O
    /// wait, the CPU seconds of a mean repetition, and the repetitions.
    pub fn run(&self, l: usize) -> Result<(BatchResult, Option<f64>, usize)> {
        let params = SearchParams {
            complexity: l.max(self.warm.k),
            ..self.warm.clone()
        };
        let cpu0 = stratavec_io::process_cpu_seconds();
        let (mut first, mut passes): (Option<BatchResult>, usize) = (None, 0);
        let (mut wall, mut io_wait, mut kernel) = (0.0, 0.0, Some(0u64));
        loop {
            let res = self
                .index
                .search_batch(self.s.queries, self.index.dim(), &params)?;
            passes += 1;
            wall += res.wall_s;
            io_wait += res.io_wait_s;
            kernel = kernel.zip(res.proc_read_bytes).map(|(a, b)| a + b);
            first.get_or_insert(res);
            if wall >= self.s.min_pass_s {
                break;
            }
        }
        let cpu = match (cpu0, stratavec_io::process_cpu_seconds()) {
            (Some(a), Some(b)) => Some((b - a) / passes as f64),
            _ => None,
        };
        let mut res = first.expect("at least one repetition");
        res.wall_s = wall / passes as f64;
        res.io_wait_s = io_wait / passes as f64;
        res.proc_read_bytes = kernel.map(|b| b / passes as u64);
        Ok((res, cpu, passes))
    }

    /// Times list size `l` once and returns its row, tagged with `round`.
    pub fn point(&self, l: usize, round: usize) -> Result<Value> {
        let (res, cpu_s, passes) = self.run(l)?;
        let mut row = self.row(l, &res, cpu_s, round)?;
        row["repetitions"] = passes.into();
        Ok(row)
    }

    /// The row of one timed pass at L = `l`.
    pub fn row(
        &self,
        l: usize,
        res: &BatchResult,
        cpu_s: Option<f64>,
        round: usize,
    ) -> Result<Value> {
        let (s, w) = (&self.s, &self.warm);
        let index = &self.index;
        let measured = measure(res, Some(s.gt), w.k)?;
        // A cluster search reads whole clusters, not about L blocks.
        let graph = index.plan.graph();
        let runaway = measured.runaway(l.max(w.k)).filter(|_| graph);
        if let Some(w) = &runaway {
            eprintln!("{}: {w}", s.system);
        }
        // What the device delivered during the pass: the kernel's count where
        // there is one (cache hits excluded either way).
        let reads = measured
            .proc_reads_per_query
            .unwrap_or(measured.reads_per_query);
        let reads_per_s = reads * measured.qps;
        let nq = res.stats.len().max(1) as f64;
        let cpu_us_per_query = cpu_s.map(|c| c / nq * 1e6);
        // Share of the search threads' cores kept busy: near 1, CPU-bound.
        let cpu_util = cpu_s.map(|c| c / res.wall_s.max(1e-9) / w.threads.max(1) as f64);
        let m = serde_json::to_value(measured)?;
        let mem: serde_json::Map<String, Value> = index
            .memory()
            .parts
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        let index_bytes: u64 = index.manifest.files.values().map(|f| f.bytes).sum();
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        let load1 = load
            .split_whitespace()
            .next()
            .and_then(|x| x.parse::<f64>().ok());
        let mut row = json!({
            "kind": "search", "system": s.system, "label": s.system, "dataset": s.dataset,
            "n": index.len(), "d": index.dim(), "nq": s.gt.nq, "round": round,
            "latency_mode": LATENCY_MODE,
            "L": l, "k": w.k, "beam_width": w.beam_width, "threads": w.threads, "in_flight": w.in_flight,
            "memory_bytes": index.memory().total(), "memory_parts": mem, "memory_budget_bytes": s.budget_bytes,
            "cached_nodes": index.cached_nodes(), "index_bytes": index_bytes,
            "build": s.build, "build_s": s.build["total_s"], "build_peak_rss_bytes": s.build["peak_rss_bytes"],
            "build_params": serde_json::to_value(&index.manifest.build)?,
            "simd": stratavec_simd::kernel_name(), "amx": stratavec_simd::amx::active(),
            "page_search": w.page_search, "pipeline": w.pipeline, "navigation_graph": s.navigation_graph,
            "two_stage": w.two_stage, "graph_cache": s.graph_cache, "node_cache": s.node_cache,
            "adaptive_beam": w.adaptive_beam, "dispatch_ratio": w.dispatch_ratio,
            "rerank_factor": w.rerank_factor, "poll_us": w.poll_us, "sqpoll": s.sqpoll,
            "pipelined": w.pipelined, "width": w.width.as_str(), "tier": s.io.to_string(),
            "runaway": runaway.is_some(), "reads_per_s": reads_per_s,
            "cpu_us_per_query": cpu_us_per_query, "cpu_util": cpu_util, "loadavg_1m": load1,
        });
        if let (Some(row), Value::Object(m)) = (row.as_object_mut(), m) {
            row.extend(m);
        }
        if let Some(t) = s.technique {
            row["technique"] = t.into();
        }
        if let Some(pages) = &self.pages {
            let t = res.total();
            row["overlap_ratio"] = pages.overlap_ratio.into();
            row["records_per_page"] = pages.records_per_page.into();
            row["model_reads_per_query"] = super::ablation::model_reads(
                t.hops as f64 / nq,
                t.cache_hits as f64 / nq,
                self.warm.page_search,
                pages,
            )
            .into();
        }
        Ok(row)
    }

    /// Range search rows (AP against exact range ground truth), if asked.
    pub fn range_rows(&self) -> Result<Vec<Value>> {
        let s = &self.s;
        let Some(spec) = s.range else {
            return Ok(Vec::new());
        };
        let index = &self.index;
        let common = json!({
            "system": s.system, "label": s.system, "dataset": s.dataset, "n": index.len(),
            "d": index.dim(), "nq": s.gt.nq, "radius": spec.radius, "range_phi": spec.phi,
            "beam_width": self.warm.beam_width, "threads": self.warm.threads,
            "in_flight": self.warm.in_flight,
            "memory_bytes": index.memory().total(), "memory_budget_bytes": s.budget_bytes,
        });
        let tag = |mut v: Value| {
            if let (Some(o), Value::Object(c)) = (v.as_object_mut(), common.clone()) {
                o.extend(c);
            }
            v
        };
        super::range::sweep(index, s.queries, &self.warm, s.ls, spec, &tag)
    }
}
