use crate::progress::Bars;
use anyhow::Result;
use std::path::PathBuf;
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
    /// Labels of the vectors, for filtered search (`search --filter`): a
    /// big-ann-benchmarks filter-track `.spmat` file, a row a vector, its
    /// nonzero columns the vector's label ids.
    #[arg(long, value_name = "FILE.spmat", conflicts_with = "label_column")]
    labels: Option<PathBuf>,
    /// Table input: a column of labels for filtered search — integer label
    /// ids or strings (named labels), one a row or a list a row; a null row
    /// has none.
    #[arg(long, value_name = "NAME")]
    label_column: Option<String>,
    /// The labels' names, so filters may name them (`lex:noun.animal`): a
    /// table `id<TAB>name[<TAB>count]` with a header line, a label a line
    /// in id order. Default: `labels.tsv` beside the --labels file, if
    /// there is one.
    #[arg(long, value_name = "FILE.tsv", requires = "labels")]
    label_names: Option<PathBuf>,
    /// Index directory to create (an existing index there is replaced only
    /// when the build succeeds).
    index_dir: PathBuf,
    /// The build's parameters (`stratavec::BuildParams`, each stated there).
    #[command(flatten)]
    params: crate::params::BuildFlags,
    /// Build threads (default: all cores). The index is identical for any value.
    #[arg(long)]
    threads: Option<usize>,
    /// Print the build report as JSON.
    #[arg(long)]
    json: bool,
}

/// The build parameters the arguments ask for (what they leave unset is
/// fitted to the data by the build).
pub fn params(a: &Args) -> Result<BuildParams> {
    Ok(a.params.0.build_params()?)
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
        self.column.is_some() || self.id_column.is_some() || self.label_column.is_some()
    }
}

/// The --labels matrix and the names for it (--label-names, or the
/// `labels.tsv` beside the matrix).
pub(crate) type ReadLabels = (Option<stratavec::labels::LabelSets>, Option<Vec<String>>);

pub(crate) fn read_labels(a: &Args) -> Result<ReadLabels> {
    let Some(path) = &a.labels else {
        return Ok((None, None));
    };
    let sets = stratavec::labels::spmat::read(path)?;
    let beside = path.with_file_name("labels.tsv");
    let names_path = match &a.label_names {
        Some(p) => Some(p.clone()),
        None if beside.is_file() => {
            eprintln!("label names from {}", beside.display());
            Some(beside)
        }
        None => None,
    };
    let names = match names_path {
        Some(p) => {
            let text = std::fs::read_to_string(&p).map_err(|e| {
                anyhow::anyhow!("{}: cannot read the label names: {e}", p.display())
            })?;
            Some(stratavec::labels::store::parse_names(&text, &p)?)
        }
        None => None,
    };
    Ok((Some(sets), names))
}

pub fn run(a: Args) -> Result<()> {
    let params = params(&a)?;
    let threads = a.threads();
    let table = stratavec::data::is_table(&a.data);
    if !table && (a.column.is_some() || a.id_column.is_some() || a.label_column.is_some()) {
        anyhow::bail!(
            "{}: --column, --id-column and --label-column: expected a Parquet (.parquet) or \
             Arrow (.arrow, .feather, .arrows) table, found a .{} file",
            a.data.display(),
            a.data
                .extension()
                .map_or("extensionless".into(), |e| e.to_string_lossy())
        );
    }
    let columns = stratavec::data::TableColumns {
        vectors: a.column.clone(),
        ids: a.id_column.clone(),
        labels: a.label_column.clone(),
    };
    let (sets, names) = read_labels(&a)?;
    let labels = sets.as_ref().map(|sets| stratavec::labels::LabelInput {
        sets,
        names: names.as_deref(),
    });
    // Ctrl-C and SIGTERM stop the build cleanly (`Bars::cancelled`) instead
    // of killing it with its staging directory left behind.
    stratavec_io::signals::catch_interrupts()?;
    let bars = Bars::default();
    let built = stratavec::build_from_input(
        &a.data,
        &columns,
        labels,
        &a.index_dir,
        &params,
        threads,
        &bars,
    );
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
    if let Some(p) = &report.auto_plan {
        print_auto_plan(p);
    }
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

/// `--profile auto`: each candidate's sample figures and the choice.
fn print_auto_plan(p: &stratavec::autoplan::AutoPlan) {
    println!(
        "auto plan ({:?}, R@10 {} on {} sample rows, {} queries, {:.1} MB; device {:.0} reads/s, {}):",
        p.objective,
        p.target_recall,
        p.sample,
        p.queries,
        p.sample_budget as f64 / 1e6,
        p.device.reads_per_s,
        p.device.source
    );
    for (page, rate) in &p.device.pages {
        println!("  device at {page}-byte reads: {rate:.0} reads/s");
    }
    for c in &p.candidates {
        match (&c.trial, &c.predicted) {
            (Some(t), Some(pr)) => println!(
                "  {:<9} {:>14} L {:>5.1}  {:>5.1} reads  {:>6.0} µs CPU  predicted {:>7.0} QPS ({}-bound){}",
                c.profile,
                t.label(),
                t.complexity,
                t.reads,
                t.cpu_us,
                pr.qps,
                pr.bound,
                pr.p50_us
                    .map_or(String::new(), |l| format!(", p50 {l:.0} µs"))
            ),
            _ => println!(
                "  {:<9} skipped: {}",
                c.profile,
                c.skipped.as_deref().unwrap_or("")
            ),
        }
    }
    println!("chosen: {} ({})", p.chosen, p.why);
    if !p.stages.is_empty() {
        let parts: Vec<String> = p
            .stages
            .iter()
            .map(|(name, s)| format!("{name} {s:.1}s"))
            .collect();
        println!("plan: {:.1} s: {}", p.seconds, parts.join(", "));
    }
}
