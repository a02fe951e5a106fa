use anyhow::Result;
use std::path::PathBuf;
use stratavec::data::{brute_force_knn, Metric};

#[derive(clap::Args)]
pub struct Args {
    /// Base vectors (any vector format).
    base: PathBuf,
    /// Query vectors, of the base's dimension and type.
    queries: PathBuf,
    /// Output .ibin (ids then distances) or .ivecs.
    out: PathBuf,
    /// Neighbours per query (the depth of the ground truth: recall@k needs
    /// depth >= k). Default: 100, or every base vector when fewer.
    #[arg(short = 'k')]
    k: Option<usize>,
    /// l2, ip or cosine (as the index will be built).
    #[arg(long, default_value = "l2")]
    metric: Metric,
    /// Threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Range ground truth instead: every vector within this distance of each
    /// query (squared L2 / -dot / 1-cos), in big-ann-benchmarks' range format.
    #[arg(long)]
    radius: Option<f32>,
}

pub fn run(a: Args) -> Result<()> {
    let base = stratavec::data::open(&a.base)?;
    let queries = stratavec::data::open(&a.queries)?;
    base.check_finite()?;
    queries.check_finite()?;
    let t = std::time::Instant::now();
    if let Some(radius) = a.radius {
        let threads = a.threads.unwrap_or_else(crate::default_threads);
        let gt = stratavec::data::brute_force_range(&base, &queries, a.metric, radius, threads);
        gt.write(&a.out)?;
        eprintln!(
            "range ground truth: {} queries, radius {radius}, {} results ({:.1} per query) in {:.1} s -> {}",
            gt.nq(),
            gt.ids.len(),
            gt.ids.len() as f64 / gt.nq().max(1) as f64,
            t.elapsed().as_secs_f64(),
            a.out.display()
        );
        return Ok(());
    }
    // A default a small base cannot meet is not an error: the depth is capped.
    let k = a.k.unwrap_or(100.min(base.n()));
    if k == 0 || k > base.n() {
        anyhow::bail!(
            "-k: expected 1..={n} (the number of vectors in {}), found {k}",
            a.base.display(),
            n = base.n()
        );
    }
    let gt = brute_force_knn(
        &base,
        &queries,
        a.metric,
        k,
        a.threads.unwrap_or_else(crate::default_threads),
    )?;
    match a.out.extension().and_then(|e| e.to_str()) {
        Some("ivecs") => stratavec::data::write_ivecs(&a.out, &gt)?,
        _ => stratavec::data::write_ibin(&a.out, &gt)?,
    }
    eprintln!(
        "ground truth: {} queries x top-{} over {} vectors in {:.1} s -> {}",
        gt.nq,
        gt.k,
        base.n(),
        t.elapsed().as_secs_f64(),
        a.out.display()
    );
    Ok(())
}
