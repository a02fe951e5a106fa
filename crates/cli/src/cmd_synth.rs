use anyhow::Result;
use std::path::PathBuf;
use stratavec::data::{self, Metric, Vectors};
use stratavec::synthetic::{clustered, SyntheticSpec};

#[derive(clap::Args)]
pub struct Args {
    /// Output directory: base.fbin, query.fbin, gt.ibin (top-100).
    out: PathBuf,
    /// Base vectors.
    #[arg(long, default_value_t = 20_000)]
    n: usize,
    /// Query vectors (drawn from the same clusters).
    #[arg(long, default_value_t = 1_000)]
    queries: usize,
    /// Dimension.
    #[arg(long, default_value_t = 128)]
    dim: usize,
    /// Gaussian clusters the vectors are drawn around.
    #[arg(long, default_value_t = 64)]
    clusters: usize,
    /// Seed: the same seed gives the same files.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Threads for the exact ground truth (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
}

pub fn run(a: Args) -> Result<()> {
    let spec = SyntheticSpec {
        n: a.n,
        queries: a.queries,
        dim: a.dim,
        clusters: a.clusters,
        seed: a.seed,
    };
    let (base, queries) = clustered(&spec);
    std::fs::create_dir_all(&a.out)?;
    data::write_fbin(a.out.join("base.fbin"), a.n, a.dim, &base)?;
    data::write_fbin(a.out.join("query.fbin"), a.queries, a.dim, &queries)?;
    let gt = data::brute_force_knn(
        &Vectors::f32(&base, a.dim)?,
        &Vectors::f32(&queries, a.dim)?,
        Metric::L2,
        100.min(a.n),
        a.threads.unwrap_or_else(crate::default_threads),
    )?;
    data::write_ibin(a.out.join("gt.ibin"), &gt)?;
    eprintln!(
        "wrote synthetic clustered data (n={}, d={}, {} clusters, seed {}) to {}",
        a.n,
        a.dim,
        a.clusters,
        a.seed,
        a.out.display()
    );
    Ok(())
}
