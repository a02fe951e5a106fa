use anyhow::{Context, Result};
use serde::Serialize;
use std::path::PathBuf;
use stratavec::data::{recall, GroundTruth};
use stratavec::{Index, OpenOptions, SearchParams};
use stratavec_io::Backend;

#[derive(clap::Args)]
pub struct Args {
    index_dir: PathBuf,
    /// Query vectors.
    queries: PathBuf,
    /// Ground truth (.ibin/.ivecs); without it recall is not reported.
    #[arg(long)]
    gt: Option<PathBuf>,
    #[arg(short = 'k', default_value_t = 10)]
    k: usize,
    /// Search list sizes to sweep, one row each.
    #[arg(short = 'L', long = "complexity", num_args = 1.., default_values_t = [20, 50, 100, 200])]
    l: Vec<usize>,
    /// Reads per hop (DiskANN's beam width W).
    #[arg(long, short = 'W', default_value_t = 4)]
    beam_width: usize,
    /// RAM the index may hold (PQ codes + node cache + I/O buffers), in MB
    /// (10^6 bytes). Default: codes and buffers only, no cache.
    #[arg(long)]
    memory_budget_mb: Option<f64>,
    /// Search threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Queries each thread keeps in flight.
    #[arg(long, default_value_t = 16)]
    in_flight: usize,
    /// I/O backend: auto, io_uring, pread, buffered, ram.
    #[arg(long, default_value = "auto")]
    io: Backend,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Row {
    #[serde(rename = "L")]
    l: usize,
    k: usize,
    recall: Option<f64>,
    qps: f64,
    mean_us: f64,
    p50_us: f64,
    p99_us: f64,
    reads_per_query: f64,
    bytes_per_query: f64,
    /// Reads per query as the kernel counted them (/proc/self/io).
    proc_reads_per_query: Option<f64>,
    hops_per_query: f64,
    cache_hits_per_query: f64,
    memory_bytes: usize,
    failed: usize,
    beam_width: usize,
    threads: usize,
    in_flight: usize,
    io_backend: String,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

pub fn run(a: Args) -> Result<()> {
    let threads = a.threads.unwrap_or_else(crate::default_threads);
    let opts = OpenOptions {
        memory_budget_bytes: a.memory_budget_mb.map(|mb| (mb * 1e6) as u64),
        io: a.io,
        reserve_threads: threads,
        reserve_in_flight: a.in_flight,
        reserve_beam_width: a.beam_width,
        ..Default::default()
    };
    let index = Index::open(&a.index_dir, &opts)?;
    let qfile = stratavec::data::open(&a.queries)?;
    qfile.check_dim(index.dim(), "index")?;
    let queries = qfile.to_f32_vec();
    let nq = qfile.n();
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
    if !a.json {
        eprintln!(
            "index {} ({} x {}, {}), {} queries, memory {}, {} cached nodes",
            a.index_dir.display(),
            index.len(),
            index.dim(),
            index.manifest.profile,
            nq,
            index.memory(),
            index.cached_nodes()
        );
        println!(
            "{:>5} {:>8} {:>9} {:>9} {:>9} {:>8} {:>8} {:>9} {:>8}",
            "L", "recall", "QPS", "mean_us", "p99_us", "reads", "(kernel)", "KB/query", "failed"
        );
    }
    for &l in &a.l {
        let params = SearchParams {
            k: a.k,
            complexity: l.max(a.k),
            beam_width: a.beam_width,
            threads,
            in_flight: a.in_flight,
        };
        let res = index
            .search_batch(&queries, qfile.dim(), &params)
            .with_context(|| format!("search at L={l}"))?;
        let recall = match &gt {
            Some(gt) => {
                let lists: Vec<&[u32]> = res.ids.chunks(a.k).collect();
                Some(recall(&lists, gt, a.k)?.mean)
            }
            None => None,
        };
        let total = res.total();
        let mut lat: Vec<f64> = res.stats.iter().map(|s| s.latency_us).collect();
        lat.sort_by(|x, y| x.total_cmp(y));
        let nqf = nq as f64;
        let span = if total.reads > 0 {
            total.bytes as f64 / total.reads as f64
        } else {
            4096.0
        };
        let row = Row {
            l,
            k: a.k,
            recall,
            qps: nqf / res.wall_s,
            mean_us: total.latency_us / nqf,
            p50_us: percentile(&lat, 0.5),
            p99_us: percentile(&lat, 0.99),
            reads_per_query: total.reads as f64 / nqf,
            bytes_per_query: total.bytes as f64 / nqf,
            proc_reads_per_query: res.proc_read_bytes.map(|b| b as f64 / span / nqf),
            hops_per_query: total.hops as f64 / nqf,
            cache_hits_per_query: total.cache_hits as f64 / nqf,
            memory_bytes: index.memory().total(),
            failed: res.failed(),
            beam_width: a.beam_width,
            threads,
            in_flight: a.in_flight,
            io_backend: res.io_backend.clone(),
        };
        if a.json {
            println!("{}", serde_json::to_string(&row)?);
        } else {
            println!(
                "{:>5} {:>8} {:>9.0} {:>9.0} {:>9.0} {:>8.1} {:>8} {:>9.1} {:>8}",
                row.l,
                row.recall.map_or("-".into(), |r| format!("{r:.4}")),
                row.qps,
                row.mean_us,
                row.p99_us,
                row.reads_per_query,
                row.proc_reads_per_query
                    .map_or("-".into(), |r| format!("{r:.1}")),
                row.bytes_per_query / 1024.0,
                row.failed
            );
        }
        if let Some(e) = res.errors.iter().flatten().next() {
            eprintln!("warning: {} queries failed; first error: {e}", res.failed());
        }
    }
    Ok(())
}
