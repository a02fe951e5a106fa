use crate::measured::{measure, Measured};
use crate::search_target::{self, Target};
use anyhow::{Context, Result};
use serde::Serialize;
use std::path::PathBuf;
use stratavec::data::GroundTruth;
use stratavec::index::filtered::FilterWay;
use stratavec::{BatchResult, OpenOptions, SearchParams};
use stratavec_io::Backend;

#[derive(clap::Args)]
pub struct Args {
    /// Index directory (made by `stratavec build`) or collection directory
    /// (made by `stratavec build-collection`).
    index_dir: PathBuf,
    /// Query vectors.
    queries: PathBuf,
    /// Ground truth (.ibin/.ivecs); without it recall is not reported.
    #[arg(long)]
    gt: Option<PathBuf>,
    /// The search's parameters (`stratavec::SearchParams`, each stated
    /// there); -L takes a list, one row each.
    #[command(flatten)]
    params: crate::params::SearchFlags,
    /// RAM the index may hold (PQ codes + node cache + I/O buffers), in MB
    /// (10^6 bytes). Default: codes and buffers only, no cache.
    #[arg(long)]
    memory_budget_mb: Option<f64>,
    /// Start from the index's entry part when it has one (the navigation
    /// graph, Starling §4.3; laser's cluster entries, AlayaLaser §4.1);
    /// false starts from the medoid and gives its memory to the cache.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    nav_graph: bool,
    /// I/O backend: auto, io_uring, pread, buffered, ram; the memory tiers
    /// mmap (the file mapped, local memory) and simulated:LAT_NS[,GBPS]
    /// (mmap held to a tier's latency and bandwidth).
    #[arg(long, default_value = "auto")]
    io: Backend,
    /// io_uring: submit through a kernel thread (SQPOLL), which also takes
    /// the reads' completion work off the searching thread. For latency
    /// mode (`--threads 1 --in-flight 1`) with a spare core: it keeps a core
    /// busy (a kernel thread a searching thread) while queries come.
    #[arg(long)]
    sqpoll: bool,
    /// Write the neighbours found at the last -L to this `.npy` (int64,
    /// queries x k): the ids the index was built with (`build
    /// --id-column`), else row numbers; -1 where a query found fewer than k
    /// or failed.
    #[arg(long, value_name = "FILE.npy")]
    output: Option<PathBuf>,
    /// Collections with a k-means partition: the segments a query searches,
    /// those whose centroids are nearest it. Default: every segment.
    #[arg(long)]
    probe: Option<usize>,
    /// Collections with a k-means partition: each further segment a query
    /// searches (by centroid distance) gets this fraction of the list size
    /// of the one before, never below k: 0.5 searches 40, 20, 10 at -L 40;
    /// 1 searches all at -L.
    #[arg(long, value_name = "FRACTION")]
    probe_shrink: Option<f32>,
    /// Search only the vectors whose labels match (an index built with
    /// `--labels`): label names or ids joined by AND, OR, NOT and
    /// parentheses, e.g. 'lex:noun.animal AND NOT pos:v'. Every query
    /// takes it.
    #[arg(long, value_name = "EXPR", conflicts_with = "filter_file")]
    filter: Option<String>,
    /// One filter a query: a filter-track `.spmat` whose row i lists the
    /// labels query i ANDs (big-ann-benchmarks' `query.filters.spmat`).
    #[arg(long, value_name = "FILE.spmat")]
    filter_file: Option<PathBuf>,
    /// How filtered queries are searched: auto (each query by its filter's
    /// selectivity and a cost model), or every one pre (rank the matches'
    /// codes, read the best), in-search (the search with its list grown,
    /// admitting only matches) or post (a wider unfiltered search, the
    /// rest dropped).
    #[arg(long, value_enum, default_value_t = FilterWay::Auto)]
    filter_way: FilterWay,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Row {
    #[serde(rename = "L")]
    l: usize,
    k: usize,
    #[serde(flatten)]
    measured: Measured,
    memory_bytes: usize,
    beam_width: usize,
    threads: usize,
    in_flight: usize,
    /// Collections: segments a query searched (its probe), and the merge's
    /// share of the wall time.
    #[serde(skip_serializing_if = "Option::is_none")]
    probe: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    probe_shrink: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    merge_share: Option<f64>,
    /// Filtered searches: the share of the queries that went each way,
    /// and the rows a filter matched, on average.
    #[serde(skip_serializing_if = "Option::is_none")]
    filter: Option<FilterMix>,
}

#[derive(Serialize)]
struct FilterMix {
    way: FilterWay,
    pre: f64,
    in_search: f64,
    post: f64,
    matches_mean: f64,
}

impl FilterMix {
    /// The line under a row of the table.
    fn print(&self) {
        eprintln!(
            "      filter ({:?}): pre {:.0}%, in-search {:.0}%, post {:.0}% of queries; {:.0} matching rows a query",
            self.way,
            100.0 * self.pre,
            100.0 * self.in_search,
            100.0 * self.post,
            self.matches_mean
        );
    }

    fn of(res: &BatchResult, way: FilterWay) -> FilterMix {
        let (t, nq) = (res.total(), res.stats.len().max(1) as f64);
        FilterMix {
            way,
            pre: t.filter_pre as f64 / nq,
            in_search: t.filter_graph as f64 / nq,
            post: t.filter_post as f64 / nq,
            matches_mean: t.filter_matches as f64 / nq,
        }
    }
}

pub fn run(a: Args) -> Result<()> {
    let threads = a.threads();
    // Every argument is checked before any output or work: first what needs
    // no index, then (after opening it) what does.
    for &l in &a.params.complexities {
        a.params(|_| SearchParams::default(), l)?.check()?;
    }
    let opts = OpenOptions {
        memory_budget_bytes: a.memory_budget_mb.map(|mb| (mb * 1e6) as u64),
        io: a.io,
        sqpoll: a.sqpoll,
        reserve_threads: threads,
        navigation_graph: a.nav_graph,
        ..Default::default()
    }
    .reserve_for(a.given().get("beam_width"), a.given().get("in_flight"));
    let probe = a.probe();
    if let Some(p) = &probe {
        p.check()?;
    }
    let index = search_target::open(
        &a.index_dir,
        &opts,
        probe.as_ref(),
        &search_target::read_only(),
    )?;
    let qfile = stratavec::data::open(&a.queries)?;
    qfile.check_dim(index.dim(), "index")?;
    let nq = qfile.n();
    // Each L's request, made once and checked before any output or work.
    let requests = a
        .params
        .complexities
        .iter()
        .map(|&l| Ok((l, a.params(|s| index.search_defaults(s), l)?)))
        .collect::<Result<Vec<(usize, SearchParams)>>>()?;
    for (_, params) in &requests {
        index.check_search(params, nq)?;
    }
    let queries = qfile.to_f32_vec();
    let filters = a.filters()?;
    if let Some(radius) = a.given().get::<f32>("radius") {
        if filters.is_some() {
            anyhow::bail!("--filter with --radius: expected a k-nearest search (a range search takes no filter yet)");
        }
        let dim = qfile.dim();
        return index.with_single(&mut |single: &stratavec::Index| {
            run_range(&a, single, &queries, dim, radius)
        });
    }
    let gt = a.ground_truth(nq)?;
    // Recall@k needs the true k nearest; a shallower ground truth leaves the
    // column empty, and the note below the table says why.
    let k = requests.first().map_or(1, |(_, p)| p.k);
    let shallow = match (&a.gt, &gt) {
        (Some(p), Some(gt)) if gt.k < k => Some(format!(
            "note: recall@{k} needs ground truth of depth >= {k}; {} has depth {}",
            p.display(),
            gt.k,
        )),
        _ => None,
    };
    if !a.json {
        eprintln!(
            "index {} ({} x {}, {}), {} queries, memory {}, {} cached nodes",
            a.index_dir.display(),
            index.len(),
            index.dim(),
            index.profile(),
            nq,
            index.memory(),
            index.cached_nodes()
        );
        println!(
            "{:>5} {:>8} {:>9} {:>9} {:>9} {:>8} {:>8} {:>9} {:>8}",
            "L", "recall", "QPS", "mean_us", "p99_us", "reads", "(kernel)", "KB/query", "failed"
        );
    }
    let mut last = None;
    for (l, params) in requests {
        let (res, merge_share) = match &filters {
            Some(f) => (
                index.search_filtered(
                    &queries,
                    qfile.dim(),
                    &params,
                    probe.as_ref(),
                    f,
                    a.filter_way,
                ),
                None,
            ),
            None => match index.search(&queries, qfile.dim(), &params, probe.as_ref()) {
                Ok((r, m)) => (Ok(r), m),
                Err(e) => (Err(e), None),
            },
        };
        let res = last.insert(res.with_context(|| format!("search at L={l}"))?);
        let row = Row {
            l,
            k,
            measured: measure(res, gt.as_ref(), k)?,
            memory_bytes: index.memory_bytes(),
            beam_width: params.beam_width,
            threads,
            in_flight: params.in_flight,
            probe: a.probe,
            probe_shrink: merge_share.map(|_| probe.unwrap_or_default().shrink),
            merge_share,
            filter: filters.as_ref().map(|_| FilterMix::of(res, a.filter_way)),
        };
        let m = &row.measured;
        // A cluster search reads whole clusters, not about L blocks.
        let graph = !index.is_clusters();
        if let Some(w) = m.runaway(params.complexity).filter(|_| graph) {
            eprintln!("{w}");
        }
        if a.json {
            println!("{}", serde_json::to_string(&row)?);
        } else {
            println!(
                "{:>5} {:>8} {:>9.0} {:>9.0} {:>9.0} {:>8.1} {:>8} {:>9.1} {:>8}",
                row.l,
                m.recall.map_or("-".into(), |r| format!("{r:.4}")),
                m.qps,
                m.mean_us,
                m.p99_us,
                m.reads_per_query,
                m.proc_reads_per_query
                    .map_or("-".into(), |r| format!("{r:.1}")),
                m.bytes_per_query / 1024.0,
                m.failed
            );
        }
        if let (Some(f), false) = (&row.filter, a.json) {
            f.print();
        }
        if let Some(e) = res.errors.iter().flatten().next() {
            eprintln!("warning: {} queries failed; first error: {e}", res.failed());
        }
    }
    if let Some(note) = shallow {
        eprintln!("{note}");
    }
    if let (Some(path), Some(res)) = (&a.output, &last) {
        write_ids(path, &*index, res, nq)?;
    }
    Ok(())
}

/// `--output`: the result ids as an int64 `.npy`, one row a query.
fn write_ids(
    path: &std::path::Path,
    index: &dyn Target,
    res: &BatchResult,
    nq: usize,
) -> Result<()> {
    let k = res.k;
    let mut ids = index.result_ids(&res.ids);
    for (q, e) in res.errors.iter().enumerate() {
        if e.is_some() {
            ids[q * k..(q + 1) * k].fill(-1);
        }
    }
    stratavec::data::write_npy_i64(path, nq, k, &ids)?;
    Ok(())
}

impl Args {
    /// `--filter` or `--filter-file`, if given.
    fn filters(&self) -> Result<Option<search_target::Filters>> {
        Ok(match (&self.filter, &self.filter_file) {
            (Some(text), _) => Some(search_target::Filters::One(text.clone())),
            (None, Some(path)) => Some(search_target::Filters::Rows(
                stratavec::labels::spmat::read(path)?,
            )),
            (None, None) => None,
        })
    }

    /// `--gt`, checked against the query count.
    fn ground_truth(&self, nq: usize) -> Result<Option<GroundTruth>> {
        let Some(p) = &self.gt else { return Ok(None) };
        let gt = GroundTruth::read(p)?;
        if gt.nq != nq {
            anyhow::bail!(
                "{}: nq: expected {nq} (the query file), found {}",
                p.display(),
                gt.nq
            );
        }
        Ok(Some(gt))
    }

    /// The collection probe the options ask for; `None` when neither
    /// `--probe` nor `--probe-shrink` is given.
    fn probe(&self) -> Option<stratavec::collection::Probe> {
        if self.probe.is_none() && self.probe_shrink.is_none() {
            return None;
        }
        let mut p = stratavec::collection::Probe::nearest(self.probe);
        if let Some(s) = self.probe_shrink {
            p.shrink = s;
        }
        Some(p)
    }

    fn given(&self) -> &stratavec::args::Given {
        &self.params.given
    }

    fn threads(&self) -> usize {
        self.given()
            .get("threads")
            .unwrap_or_else(crate::default_threads)
    }

    /// The search parameters of the row at list size `l` (raised to k for
    /// k-NN, the starting window for range search): the index's defaults
    /// (block search for the starling profile, and the beam that suits its
    /// blocks) under whatever was given.
    fn params(
        &self,
        defaults: impl FnOnce(&stratavec::search::Switches) -> SearchParams,
        l: usize,
    ) -> Result<SearchParams> {
        let p = self.given().search_params(defaults)?;
        let complexity = match p.radius {
            Some(_) => l,
            None => l.max(p.k),
        };
        Ok(SearchParams {
            complexity,
            threads: self.threads(),
            ..p
        })
    }
}

/// `search --radius`: one row per L (the starting window): AP, recall and
/// precision against a range ground truth, QPS and reads.
fn run_range(
    a: &Args,
    index: &stratavec::Index,
    queries: &[f32],
    dim: usize,
    radius: f32,
) -> Result<()> {
    let gt = match &a.gt {
        Some(p) => Some(stratavec::data::RangeGroundTruth::read(p)?),
        None => None,
    };
    if !a.json {
        println!(
            "{:>5} {:>8} {:>8} {:>9} {:>9} {:>9} {:>8} {:>9}",
            "L", "AP", "recall", "precision", "results", "QPS", "reads", "widen"
        );
    }
    for &l in &a.params.complexities {
        let params = a.params(|s| index.search_defaults(s), l)?;
        let res = index
            .search_batch(queries, dim, &params)
            .with_context(|| format!("range search at L={l}"))?;
        let lists = res.range_ids();
        let scores = gt
            .as_ref()
            .map(|g| stratavec::data::range_scores(&lists, g));
        let t = res.total();
        let nq = res.stats.len() as f64;
        let results = lists.iter().map(|l| l.len()).sum::<usize>() as f64 / nq;
        if a.json {
            println!(
                "{}",
                serde_json::json!({"L": l, "radius": radius, "ap": scores.map(|s| s.0), "recall": scores.map(|s| s.1),
                    "precision": scores.map(|s| s.2), "results_per_query": results, "qps": nq / res.wall_s,
                    "reads_per_query": t.reads as f64 / nq, "widenings_per_query": t.widenings as f64 / nq,
                    "failed": res.failed()})
            );
        } else {
            let f = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.4}"));
            println!(
                "{:>5} {:>8} {:>8} {:>9} {:>9.1} {:>9.0} {:>8.1} {:>9.2}",
                l,
                f(scores.map(|s| s.0)),
                f(scores.map(|s| s.1)),
                f(scores.map(|s| s.2)),
                results,
                nq / res.wall_s,
                t.reads as f64 / nq,
                t.widenings as f64 / nq
            );
        }
    }
    Ok(())
}
