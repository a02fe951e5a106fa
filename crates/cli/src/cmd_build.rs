use crate::progress::Bars;
use anyhow::Result;
use std::path::PathBuf;
use stratavec::data::Metric;
use stratavec::BuildParams;

#[derive(clap::Args)]
pub struct Args {
    /// Base vectors: .fbin, .u8bin, .i8bin, .fvecs, .bvecs, .npy, or a
    /// Parquet (.parquet) or Arrow IPC (.arrow, .feather, .arrows) table.
    data: PathBuf,
    /// Table input: the column of vectors (a fixed-size list or list of
    /// float32, float16 or float64). Default: the table's only such column.
    #[arg(long, value_name = "NAME")]
    column: Option<String>,
    /// Table input: an integer column of ids, kept in the index and
    /// returned by search (`search --output`, Python's `Index.search`)
    /// instead of row numbers. Ids must be unique.
    #[arg(long, value_name = "NAME")]
    id_column: Option<String>,
    /// Index directory to create (an existing index there is replaced only
    /// when the build succeeds).
    index_dir: PathBuf,
    /// Named composition of parts (`stratavec::profile`): diskann (id-order
    /// pages, node cache, beam search), starling (records shuffled into
    /// blocks with their neighbours, block search), gorgeous (adjacency
    /// lists cached before vectors, replicated blocks, two-stage search;
    /// give --memory-budget-mb to size its PQ codes), laser (neighbour
    /// codes in each record and none in RAM, visit-frequency node cache, cluster
    /// entry points, adaptive beam, early dispatch as an option; l2 or
    /// cosine),
    /// pipeann (id-order pages, navigation graph, pipelined search with a
    /// waste-driven width) or octopus (OctopusANN's C5: navigation graph,
    /// shuffled blocks, block search, dynamic width).
    #[arg(long, default_value = stratavec::profile::DEFAULT, value_parser = clap::builder::PossibleValuesParser::new(stratavec::profile::names()))]
    profile: String,
    /// l2, ip or cosine.
    #[arg(long, default_value = "l2")]
    metric: Metric,
    /// Maximum graph out-degree R.
    #[arg(long, short = 'R', default_value_t = 64)]
    graph_degree: usize,
    /// Build search list size L. Default: 128, or R when R is larger.
    #[arg(long)]
    complexity: Option<usize>,
    /// Pruning slack α (1.0-4.0) of the robust prune: an edge p→c is dropped
    /// when a neighbour n already kept has α·d(n, c) <= d(p, c); larger α
    /// drops fewer, keeping longer edges (fewer hops, more edges).
    #[arg(long, default_value_t = 1.2)]
    alpha: f32,
    /// PQ bytes per vector kept in RAM for search. Default: 32, or the
    /// dimension when it is smaller (one byte a dimension).
    #[arg(long)]
    pq_bytes: Option<usize>,
    /// Insertion passes (1 = DiskANN's builder, 2 = the Vamana paper).
    #[arg(long, default_value_t = 1)]
    passes: usize,
    /// Disk page size in bytes: 4096, 8192 or 16384. Default: 4096, or for
    /// shuffled blocks (starling) the smallest that holds 2 records.
    #[arg(long)]
    page_size: Option<usize>,
    /// Seed of every random choice (PQ sample, insertion order, navigation
    /// sample): the same seed and data give a byte-identical index.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Block shuffle of the records: none, bnp, bnf, bns (default: bnf for
    /// the starling profile, none otherwise).
    #[arg(long)]
    shuffle: Option<stratavec::layout::shuffle::Shuffle>,
    /// BNF/BNS iterations β.
    #[arg(long, default_value_t = 8)]
    shuffle_iterations: usize,
    /// Shuffle by the undirected graph (in- and out-neighbours); false uses
    /// out-neighbours only, as the paper does. Default: undirected when
    /// blocks hold 4 or more records.
    #[arg(long)]
    shuffle_undirected: Option<bool>,
    /// Place each record beside its K nearest nodes within two hops in the
    /// graph (ranked by PQ) instead of beside its graph neighbours; 0: by
    /// the graph. Default: 24 when blocks hold 4 or more records, else 0.
    #[arg(long, value_name = "K")]
    shuffle_nearest: Option<usize>,
    /// Navigation graph sample ratio μ (Starling §4.3); 0 = none. Default:
    /// the profile's: 0.005 for gorgeous (Gorgeous §4.1 ②, whose graph
    /// cache is ranked by distance to it); off for diskann and starling,
    /// where with a BFS node cache around the medoid, starting elsewhere
    /// costs more reads than it saves (measured on wordnet-minilm-pca96 20k).
    #[arg(long)]
    nav_sample: Option<f32>,
    /// The memory budget (MB, 10^6 bytes) the index will be opened with.
    /// Profiles that cache the graph (gorgeous) then choose their PQ bytes
    /// for it when --pq-bytes is not given, trying each size on a 1% sample
    /// (Gorgeous §4.1); build_report.json shows the sizes tried.
    #[arg(long)]
    memory_budget_mb: Option<f64>,
    /// Replicated and separated layouts: at most this many neighbour lists
    /// packed into a node's block (Gorgeous §4.1's R). Default: as many as
    /// fit.
    #[arg(long)]
    replicas: Option<usize>,
    /// Disk layout when it is not the profile's: coupled (id order),
    /// blocked (needs --shuffle), replicated (one block per node with its
    /// neighbours' lists, Gorgeous §3.4) or separated (graph blocks, then
    /// vector pages).
    #[arg(long)]
    layout: Option<stratavec::layout::LayoutKind>,
    /// Order in which the graph cache holds adjacency lists (profiles with
    /// one: gorgeous): nav (distance to the navigation graph, Gorgeous
    /// §4.1), indegree (most linked first), bfs (from the medoid) or visits
    /// (most expanded by sample queries).
    #[arg(long, default_value = "nav")]
    cache_rank: stratavec::memory::cache_rank::CacheRank,
    /// Order in which the node cache holds whole records: bfs (from the
    /// medoid, filled at open), nav (nearest the navigation graph's nodes,
    /// where searches start), indegree (most linked first) or visits (most
    /// expanded by sample queries). Default: the profile's (visits for
    /// laser, pipeann and octopus, else bfs).
    #[arg(long)]
    node_cache_rank: Option<stratavec::memory::cache_rank::CacheRank>,
    /// The visits rank: the share of the rows searched in RAM as sample
    /// queries, whose expansions rank the cache (at least 1,000 and at
    /// most 10^6 queries).
    #[arg(long, default_value_t = stratavec::index::build::DEFAULT_VISITS_SAMPLE)]
    visits_sample: f32,
    /// Element type of the vectors stored on disk: f16 halves their bytes
    /// (more records per block, more nodes cached) at a relative rounding
    /// error of 2^-11 per component; f32 data only. Default: the data's type.
    #[arg(long)]
    store: Option<stratavec::data::DType>,
    /// Laser profile: principal (PCA) dimensions the neighbour codes in
    /// each record cover, a multiple of 8 (AlayaLaser §3.2). Default: as
    /// many as the page holds, the page being the smallest that holds codes
    /// over two thirds of the dimensions (`build_report.json` says which).
    #[arg(long)]
    code_dim: Option<usize>,
    /// Laser profile: k-means clusters whose nearest vectors are the
    /// candidate entry points (AlayaLaser §4.1). Default: √n within
    /// 16..=1024.
    #[arg(long)]
    entry_clusters: Option<usize>,
    /// ivf profile: k-means clusters (paper 002 §6). Default: one per 100
    /// vectors.
    #[arg(long)]
    ivf_clusters: Option<usize>,
    /// ivf profile: clusters a vector may join, 1..=8 (1: no replication);
    /// a replica is a 4-byte address, not a copy.
    #[arg(long, default_value_t = 4)]
    ivf_replicas: usize,
    /// ivf profile: a further cluster is joined when its centroid is within
    /// (1 + this) of the nearest one's distance (SPANN's closure).
    #[arg(long, default_value_t = 0.2)]
    ivf_closure: f32,
    /// ivf profile: where each vector is stored: frequency (beside the
    /// cluster sample queries read most, §6.2), primary (its nearest
    /// cluster) or none (id order: every member a small read).
    #[arg(long, default_value = "frequency")]
    ivf_grouping: stratavec::layout::ivf_assign::Grouping,
    /// ivf profile: also keep PQ codes (--pq-bytes) and every cluster's
    /// members in RAM, so a search scores the probed members on the codes
    /// and reads only the best --rerank-factor x k vectors (IVF-PQ with
    /// refinement, as faiss's IVFPQ + refine or LanceDB's IVF_PQ).
    #[arg(long)]
    ivf_codes: bool,
    /// ivf profile: clusters each sample query probes when the build counts
    /// how often each cluster is read (the frequency grouping's h_j, §6.2);
    /// best near the nprobe (-L) searches will use; at most a quarter of the
    /// clusters are probed.
    #[arg(long, default_value_t = stratavec::index::build_ivf::SAMPLE_NPROBE)]
    ivf_sample_nprobe: usize,
    /// Build threads (default: all cores). The index is identical for any value.
    #[arg(long)]
    threads: Option<usize>,
    /// Print the build report as JSON.
    #[arg(long)]
    json: bool,
}

/// The build parameters the arguments ask for (what they leave unset is
/// fitted to the data by the build).
pub fn params(a: &Args) -> BuildParams {
    let base = BuildParams::for_profile(&a.profile);
    let shuffle = a.shuffle.unwrap_or(base.shuffle);
    BuildParams {
        shuffle,
        shuffle_iterations: a.shuffle_iterations,
        shuffle_undirected: a.shuffle_undirected,
        shuffle_nearest: a.shuffle_nearest,
        nav_sample: a.nav_sample.unwrap_or(base.nav_sample),
        cache_rank: a.cache_rank,
        node_cache_rank: a.node_cache_rank.or(base.node_cache_rank),
        visits_sample: a.visits_sample,
        memory_budget: a.memory_budget_mb.map(|mb| (mb * 1e6) as u64),
        replicas: a.replicas,
        layout: a.layout.or(base.layout),
        profile: a.profile.clone(),
        metric: a.metric,
        graph_degree: a.graph_degree,
        complexity: a.complexity.unwrap_or(base.complexity),
        alpha: a.alpha,
        passes: a.passes,
        pq_bytes: a.pq_bytes.unwrap_or(base.pq_bytes),
        page_size: a.page_size.unwrap_or(base.page_size),
        seed: a.seed,
        store: a.store,
        code_dim: a.code_dim,
        entry_clusters: a.entry_clusters,
        ivf_clusters: a.ivf_clusters,
        ivf_replicas: a.ivf_replicas,
        ivf_closure: a.ivf_closure,
        ivf_grouping: a.ivf_grouping,
        ivf_codes: a.ivf_codes,
        ivf_sample_nprobe: a.ivf_sample_nprobe,
        // What was not given is fitted to the data (and said on stderr).
        unset: stratavec::Unset {
            pq_bytes: a.pq_bytes.is_none(),
            page_size: a.page_size.is_none(),
            complexity: a.complexity.is_none(),
        },
        ..base
    }
}

/// The data file and output directory (`build-collection` shares these
/// arguments).
impl Args {
    pub fn data(&self) -> &std::path::Path {
        &self.data
    }

    pub fn out_dir(&self) -> &std::path::Path {
        &self.index_dir
    }

    pub fn threads(&self) -> usize {
        self.threads.unwrap_or_else(crate::default_threads)
    }

    pub fn json(&self) -> bool {
        self.json
    }

    pub fn table_columns_given(&self) -> bool {
        self.column.is_some() || self.id_column.is_some()
    }
}

pub fn run(a: Args) -> Result<()> {
    let params = params(&a);
    let threads = a.threads();
    let table = stratavec::data::is_table(&a.data);
    if !table && (a.column.is_some() || a.id_column.is_some()) {
        anyhow::bail!(
            "{}: --column and --id-column: expected a Parquet (.parquet) or Arrow (.arrow, \
             .feather, .arrows) table, found a .{} file",
            a.data.display(),
            a.data
                .extension()
                .map_or("extensionless".into(), |e| e.to_string_lossy())
        );
    }
    let columns = stratavec::data::TableColumns {
        vectors: a.column.clone(),
        ids: a.id_column.clone(),
    };
    // Ctrl-C and SIGTERM stop the build cleanly (`Bars::cancelled`) instead
    // of killing it with its staging directory left behind.
    stratavec_io::signals::catch_interrupts()?;
    let bars = Bars::default();
    let built = match table {
        true => {
            stratavec::build_from_table(&a.data, &columns, &a.index_dir, &params, threads, &bars)
        }
        false => stratavec::build_from_file(&a.data, &a.index_dir, &params, threads, &bars),
    };
    let report = match built {
        Err(e) if e.kind() == stratavec::ErrorKind::Cancelled => {
            stratavec::progress::Progress::finish(&bars);
            crate::progress::exit_interrupted(&a.index_dir)
        }
        r => r?,
    };
    if a.json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    println!(
        "built {} ({} x {}) in {:.1} s with {} threads; peak RSS {:.0} MB; index {:.1} MB; mean degree {:.1}",
        a.index_dir.display(),
        report.n,
        report.dim,
        report.total_s,
        report.threads,
        report.peak_rss_bytes as f64 / 1e6,
        report.index_bytes as f64 / 1e6,
        report.graph_mean_degree
    );
    let stages: Vec<String> = report
        .stages
        .iter()
        .map(|(s, t)| format!("{s} {t:.1}s"))
        .collect();
    println!("stages: {}", stages.join(", "));
    if let Some(s) = &report.shuffle {
        let after: Vec<String> = s
            .stages
            .iter()
            .map(|(n, or, _)| format!("{n} {or:.4}"))
            .collect();
        println!(
            "overlap ratio OR(G): id order {:.4}, {} (placed by {})",
            s.id_order,
            after.join(", "),
            s.placed_by()
        );
    }
    Ok(())
}
