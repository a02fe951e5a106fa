//! `stratavec build-collection DATA DIR --segments N [--partition range|kmeans]`:
//! a collection of N segment indexes, built one after another with the
//! build's own options (each segment gets its share of --memory-budget-mb,
//! and the --labels of its rows).

use crate::cmd_build;
use crate::progress::Bars;
use anyhow::Result;
use stratavec::collection::{build_collection, CollectionParams, Partition};

// clap names each derived group after its struct; the flattened build
// options are `Args` too, so this one opts out of the group.
#[derive(clap::Args)]
#[group(skip)]
pub struct Args {
    #[command(flatten)]
    build: cmd_build::Args,
    /// Segments: each an index of its own over about n / N of the vectors.
    #[arg(long)]
    segments: usize,
    /// How vectors are assigned to segments: range (consecutive rows; a
    /// query searches every segment) or kmeans (balanced k-means; a query
    /// may search only its `search --probe` nearest segments; l2 or cosine).
    #[arg(long, default_value = "range")]
    partition: Partition,
}

pub fn run(a: Args) -> Result<()> {
    let params = cmd_build::params(&a.build)?;
    let threads = a.build.threads();
    let (data, dir) = (a.build.data(), a.build.out_dir());
    if a.build.table_columns_given() || stratavec::data::is_table(data) {
        anyhow::bail!(
            "{}: build-collection reads vector files (.fbin, .u8bin, .i8bin, .fvecs, .bvecs, \
             .npy); build an index from the table, or convert it first",
            data.display()
        );
    }
    let (sets, names) = cmd_build::read_labels(&a.build)?;
    let labels = sets.as_ref().map(|sets| stratavec::labels::LabelInput {
        sets,
        names: names.as_deref(),
    });
    let file = stratavec::data::open(data)?;
    let vectors = file.vectors().ok_or_else(|| {
        anyhow::anyhow!(
            "{}: expected contiguous rows, found interleaved rows",
            data.display()
        )
    })?;
    stratavec_io::signals::catch_interrupts()?;
    let bars = Bars::default();
    let built = build_collection(
        vectors,
        stratavec::Attached { ids: None, labels },
        &data.display().to_string(),
        dir,
        &params,
        &CollectionParams {
            segments: a.segments,
            partition: a.partition,
        },
        threads,
        &bars,
    );
    let report = match built {
        Err(e) if e.kind() == stratavec::ErrorKind::Cancelled => {
            stratavec::progress::Progress::finish(&bars);
            crate::progress::exit_interrupted(dir)
        }
        r => r?,
    };
    if a.build.json() {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    let sizes: Vec<String> = report.segments.iter().map(|s| s.n.to_string()).collect();
    println!(
        "built collection {} ({} x {}, {} segments of {} vectors, {} partition) in {:.1} s \
         (partition {:.1} s) with {threads} threads; {:.1} MB",
        dir.display(),
        report.n,
        report.dim,
        report.segments.len(),
        sizes.join("/"),
        a.partition,
        report.total_s,
        report.partition_s,
        report.collection_bytes as f64 / 1e6
    );
    Ok(())
}
