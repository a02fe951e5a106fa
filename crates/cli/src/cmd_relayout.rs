use anyhow::Result;
use std::path::PathBuf;
use stratavec::layout::shuffle::Shuffle;

#[derive(clap::Args)]
pub struct Args {
    /// An index of the diskann profile (coupled id-order layout).
    src: PathBuf,
    /// The index to write: shuffled blocks (the starling profile's layout),
    /// or with `--layout csr` the tiered profile's compact records.
    dst: PathBuf,
    /// blocked (Starling's shuffled blocks) or csr (paper 002's compact
    /// records for a memory tier; the shuffle options do not apply).
    #[arg(long, default_value = "blocked")]
    layout: stratavec::layout::LayoutKind,
    /// Block shuffling: bnp, bnf (BNP then BNF) or bns (BNP then BNS).
    #[arg(long, default_value_t = Shuffle::Bnf)]
    shuffle: Shuffle,
    #[command(flatten)]
    tuning: crate::cmd_shuffle::ShuffleTuning,
    /// Store the vectors as f16 (from an f32 index): the same index as
    /// `build --profile starling --store f16`, without a graph build.
    #[arg(long)]
    store: Option<stratavec::data::DType>,
    /// Threads (default: all cores). The index is identical for any value.
    #[arg(long)]
    threads: Option<usize>,
}

/// Shuffles an existing index's records into blocks (Starling §4.2) without
/// rebuilding its graph; streams the source.
pub fn run(a: Args) -> Result<()> {
    use stratavec::layout::LayoutKind;
    match a.layout {
        LayoutKind::Blocked => {}
        LayoutKind::Csr => {
            let r = stratavec::index::relayout_csr::relayout_csr(&a.src, &a.dst, a.store)?;
            println!(
                "relayout {} -> {} (csr) in {:.1} s; index {:.1} MB",
                a.src.display(),
                a.dst.display(),
                r.total_s,
                r.index_bytes as f64 / 1e6
            );
            return Ok(());
        }
        other => anyhow::bail!("--layout: expected blocked or csr, found {other}"),
    }
    let params = a.tuning.params(a.shuffle);
    let threads = a.threads.unwrap_or_else(crate::default_threads);
    let r = stratavec::index::relayout::relayout(&a.src, &a.dst, &params, a.store, threads)?;
    let stages: Vec<String> = r
        .shuffle
        .iter()
        .flat_map(|s| s.stages.iter().map(|(m, or, _)| format!("{m} {or:.4}")))
        .collect();
    println!(
        "relayout {} -> {} in {:.1} s; peak RSS {} MB; OR(G): id order {:.4}, {} (placed by {})",
        a.src.display(),
        a.dst.display(),
        r.total_s,
        r.peak_rss_bytes >> 20,
        r.shuffle.as_ref().map_or(0.0, |s| s.id_order),
        stages.join(", "),
        r.shuffle.as_ref().map_or(String::new(), |s| s.placed_by())
    );
    Ok(())
}
