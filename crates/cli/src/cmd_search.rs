use crate::measured::{measure, Measured};
use crate::search_target::{self, Target};
use anyhow::{Context, Result};
use serde::Serialize;
use std::path::PathBuf;
use stratavec::data::GroundTruth;
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
    /// Neighbours to return per query; recall is recall@k.
    #[arg(short = 'k', default_value_t = 10)]
    k: usize,
    /// Search list sizes to sweep, one row each (raised to k when below).
    #[arg(short = 'L', long = "complexity", num_args = 1.., default_values_t = [20, 50, 100, 200])]
    l: Vec<usize>,
    /// Reads per hop (DiskANN's beam width W). Default: the index profile's
    /// (4 for diskann, 2 for starling).
    #[arg(long, short = 'W')]
    beam_width: Option<usize>,
    /// RAM the index may hold (PQ codes + node cache + I/O buffers), in MB
    /// (10^6 bytes). Default: codes and buffers only, no cache.
    #[arg(long)]
    memory_budget_mb: Option<f64>,
    /// Search threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Queries each thread keeps in flight. Default: 128 / W (32 at W = 4,
    /// 64 at W = 2); their reads share 64 buffers a thread.
    #[arg(long)]
    in_flight: Option<usize>,
    /// Block search: use every record of each page read (Starling §4.2).
    /// Default: on for indexes of the starling profile.
    #[arg(long)]
    page_search: Option<bool>,
    /// Block search pruning ratio σ.
    #[arg(long, default_value_t = 0.3)]
    prune_ratio: f32,
    /// I/O–computation pipeline: issue the next reads before the work that
    /// does not route the search (Starling §4.2). Default: on for indexes of
    /// the starling profile.
    #[arg(long)]
    pipeline: Option<bool>,
    /// Two-stage search (Gorgeous §4.2): search on PQ estimates, reading
    /// only blocks whose adjacency list is not cached, then read the exact
    /// vectors of the top ⌈σ·L⌉ candidates. Default: on for indexes of the
    /// gorgeous profile.
    #[arg(long)]
    two_stage: Option<bool>,
    /// PipeANN's pipelined search (OctopusANN §4.3.2): up to W reads
    /// outstanding, each node expanded as its read arrives, no hop
    /// barrier. Default: on for indexes of the pipeann profile.
    #[arg(long)]
    pipelined: Option<bool>,
    /// How a query's reads grow to W (OctopusANN §4.3.1): fixed, schedule
    /// (by settled candidates), double (1, 2, 4, ...) or adaptive (grow while
    /// few reads are wasted). Default: the index profile's (fixed for
    /// diskann, schedule for octopus, adaptive for pipeann).
    #[arg(long)]
    width: Option<stratavec::search::WidthPolicy>,
    /// Two-stage search refinement ratio σ in (0, 1].
    #[arg(long, default_value_t = 0.5)]
    refine_ratio: f32,
    /// Laser indexes: rounds read 1, 2, 4, ... nodes up to W (AlayaLaser
    /// §4.2); false reads W from the first round.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    adaptive_beam: bool,
    /// Laser indexes: the share of a round's reads that must arrive before
    /// the next round goes out (AlayaLaser §4.3, early dispatch); 1 waits
    /// for all of them, as DiskANN's hop does (the default: see
    /// `DEFAULT_DISPATCH_RATIO`).
    #[arg(long, default_value_t = stratavec::search::DEFAULT_DISPATCH_RATIO)]
    dispatch_ratio: f32,
    /// ivf indexes built with --ivf-codes: vectors read for exact
    /// distances, as a multiple of k (the best by PQ estimate among the
    /// probed clusters' members); 0 reads every probed member.
    #[arg(long, default_value_t = 4.0)]
    rerank_factor: f32,
    /// Microseconds a worker polls for a read's completion before it
    /// sleeps in the kernel (io_uring); 0 sleeps at once. Polling saves a
    /// wake-up a completion, which a lone query pays on every read, and
    /// spends the otherwise idle core. Default: 1000 for the pipelined
    /// search (PipeANN's loop never sleeps), else 0.
    #[arg(long)]
    poll_us: Option<u32>,
    /// Start from the index's entry part when it has one (the navigation
    /// graph, Starling §4.3; laser's cluster entries, AlayaLaser §4.1);
    /// false starts from the medoid and gives its memory to the cache.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    nav_graph: bool,
    /// Search list size of the navigation graph's search (its best 4 nodes
    /// start the disk search).
    #[arg(long, default_value_t = stratavec::search::NAV_COMPLEXITY)]
    nav_complexity: usize,
    /// Range search: every vector within this distance; --gt must then be a
    /// range ground truth (`stratavec gt --radius`). Reports AP, recall and
    /// precision instead of recall@k.
    #[arg(long)]
    radius: Option<f32>,
    /// Range search: the window doubles while results fill this share of it.
    #[arg(long, default_value_t = 0.5)]
    range_phi: f32,
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
}

pub fn run(a: Args) -> Result<()> {
    let threads = a.threads.unwrap_or_else(crate::default_threads);
    // Every argument is checked before any output or work: first what needs
    // no index, then (after opening it) what does.
    for &l in &a.l {
        a.params(SearchParams::default(), l, threads).check()?;
    }
    let opts = OpenOptions {
        memory_budget_bytes: a.memory_budget_mb.map(|mb| (mb * 1e6) as u64),
        io: a.io,
        sqpoll: a.sqpoll,
        reserve_threads: threads,
        navigation_graph: a.nav_graph,
        ..Default::default()
    }
    .reserve_for(a.beam_width, a.in_flight);
    let probe = a.probe();
    if let Some(p) = &probe {
        p.check()?;
    }
    let index = search_target::open(&a.index_dir, &opts, probe.as_ref())?;
    let qfile = stratavec::data::open(&a.queries)?;
    qfile.check_dim(index.dim(), "index")?;
    let nq = qfile.n();
    // Each L's request, made once and checked before any output or work.
    let defaults = index.search_defaults(&a.switches());
    let requests: Vec<(usize, SearchParams)> =
        a.l.iter()
            .map(|&l| (l, a.params(defaults.clone(), l, threads)))
            .collect();
    for (_, params) in &requests {
        index.check_search(params, nq)?;
    }
    let queries = qfile.to_f32_vec();
    if let Some(radius) = a.radius {
        return run_range(&a, index.single()?, &queries, qfile.dim(), radius, threads);
    }
    let gt = match &a.gt {
        Some(p) => {
            let gt = GroundTruth::read(p)?;
            if gt.nq != nq {
                anyhow::bail!(
                    "{}: nq: expected {nq} (the query file), found {}",
                    p.display(),
                    gt.nq
                );
            }
            Some(gt)
        }
        None => None,
    };
    // Recall@k needs the true k nearest; a shallower ground truth leaves the
    // column empty, and the note below the table says why.
    let shallow = match (&a.gt, &gt) {
        (Some(p), Some(gt)) if gt.k < a.k => Some(format!(
            "note: recall@{k} needs ground truth of depth >= {k}; {} has depth {}",
            p.display(),
            gt.k,
            k = a.k
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
        let (res, merge_share) = index
            .search(&queries, qfile.dim(), &params, probe.as_ref())
            .with_context(|| format!("search at L={l}"))?;
        let res = last.insert(res);
        let row = Row {
            l,
            k: a.k,
            measured: measure(res, gt.as_ref(), a.k)?,
            memory_bytes: index.memory_bytes(),
            beam_width: params.beam_width,
            threads,
            in_flight: params.in_flight,
            probe: a.probe,
            probe_shrink: merge_share.map(|_| probe.unwrap_or_default().shrink),
            merge_share,
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

    fn switches(&self) -> stratavec::search::Switches {
        stratavec::search::Switches {
            page_search: self.page_search,
            pipeline: self.pipeline,
            two_stage: self.two_stage,
            pipelined: self.pipelined,
            width: self.width,
        }
    }

    /// The search parameters of the row at list size `l` (raised to k for
    /// k-NN, the starting window for range search): `base` (the index's
    /// defaults: block search for the starling profile, and the beam that
    /// suits its blocks) under whatever was given.
    fn params(&self, base: SearchParams, l: usize, threads: usize) -> SearchParams {
        let knn = SearchParams {
            k: self.k,
            complexity: l.max(self.k),
            threads,
            prune_ratio: self.prune_ratio,
            refine_ratio: self.refine_ratio,
            nav_complexity: self.nav_complexity,
            adaptive_beam: self.adaptive_beam,
            dispatch_ratio: self.dispatch_ratio,
            rerank_factor: self.rerank_factor,
            poll_us: self.poll_us.unwrap_or(base.poll_us),
            ..base
        };
        let p = match self.radius {
            Some(radius) => SearchParams {
                k: 1,
                complexity: l,
                radius: Some(radius),
                range_phi: self.range_phi,
                ..knn
            },
            None => knn,
        };
        p.with_io(self.beam_width, self.in_flight)
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
    threads: usize,
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
    for &l in &a.l {
        let params = a.params(index.search_defaults(&a.switches()), l, threads);
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
