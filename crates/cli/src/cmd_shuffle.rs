use anyhow::Result;
use std::path::PathBuf;
use stratavec::index::placement::nearest_for;
use stratavec::index::Manifest;
use stratavec::layout::blocked;
use stratavec::layout::shuffle::{shuffle, Capacity, Shuffle, ShuffleParams};
use stratavec::quant::pq_file;

/// The shuffles' tuning, shared by `stratavec shuffle` and `stratavec
/// relayout`.
#[derive(clap::Args)]
pub struct ShuffleTuning {
    /// BNF/BNS iterations β.
    #[arg(long, default_value_t = 8)]
    iterations: usize,
    /// OR(G) gain threshold τ.
    #[arg(long, default_value_t = 0.01)]
    gain: f64,
    /// Place nodes by the undirected graph (in- and out-neighbours; OR(G)
    /// is still reported on the directed one); false: out-neighbours only,
    /// as the paper does. Default: undirected when blocks hold 4 or more
    /// records.
    #[arg(long)]
    undirected: Option<bool>,
    /// Place each node beside its K nearest nodes within two hops in the
    /// graph (ranked by the index's PQ codes); 0: by the graph. Default: 24
    /// when blocks hold 4 or more records, else 0.
    #[arg(long, value_name = "K")]
    nearest: Option<usize>,
}

impl ShuffleTuning {
    pub fn params(&self, method: Shuffle) -> ShuffleParams {
        ShuffleParams {
            method,
            iterations: self.iterations,
            gain_threshold: self.gain,
            undirected: self.undirected,
            nearest: self.nearest,
        }
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// An index directory (its graph is read from pages.bin).
    index_dir: PathBuf,
    /// Equal records per block, as with fixed-size records (default: the
    /// blocked layout's packed records, as many as fit each page).
    #[arg(long)]
    per_block: Option<usize>,
    /// Shuffles to report, each starting from BNP where the paper does.
    #[arg(long, value_delimiter = ',', default_values_t = [Shuffle::Bnp, Shuffle::Bnf])]
    methods: Vec<Shuffle>,
    #[command(flatten)]
    tuning: ShuffleTuning,
    /// One JSON object per shuffle method instead of text.
    #[arg(long)]
    json: bool,
}

/// Reports the overlap ratio OR(G) (Starling eq. 5) of the index's id-order
/// layout and after each shuffle, with its time (the nearest nodes it
/// places by, when it does, are found once: `nearest_seconds`).
pub fn run(a: Args) -> Result<()> {
    let (layout, _, lists) = stratavec::index::graph_file::read_graph(&a.index_dir)?;
    let cap = match a.per_block {
        Some(k) => Capacity::slots(k),
        None => blocked::capacity(layout.page_size, layout.dim, layout.dtype, &lists)?,
    };
    // The nearest nodes to place by do not depend on the method: found once.
    let t = std::time::Instant::now();
    let nearest = nearest_for(&lists, &cap, &a.tuning.params(Shuffle::Bnf), || {
        pq_file::load(&a.index_dir, &Manifest::read(&a.index_dir)?)
    })?;
    let nearest_s = t.elapsed().as_secs_f64();
    for &method in &a.methods {
        let p = a.tuning.params(method);
        let t = std::time::Instant::now();
        let (assignment, report) = shuffle(&lists, &cap, &p, nearest.as_deref());
        let total = t.elapsed().as_secs_f64();
        assignment.validate().map_err(anyhow::Error::msg)?;
        let per_block = lists.len() as f64 / assignment.blocks().max(1) as f64;
        if a.json {
            println!(
                "{}",
                serde_json::json!({"method": method.to_string(), "per_block": per_block, "undirected": report.undirected,
                    "nearest": report.nearest, "nearest_seconds": nearest_s,
                    "n": lists.len(), "or_id_order": report.id_order, "stages": report.stages, "seconds": total})
            );
        } else {
            let stages: Vec<String> = report
                .stages
                .iter()
                .map(|(s, or, t)| format!("{s} OR={or:.4} ({t:.2} s)"))
                .collect();
            println!(
                "{method}: {:.2} records/block, OR(G) id order {:.4}; {} (placed by {})",
                per_block,
                report.id_order,
                stages.join(", "),
                report.placed_by()
            );
        }
    }
    Ok(())
}
