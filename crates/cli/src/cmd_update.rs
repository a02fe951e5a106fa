//! `stratavec insert`, `delete` and `merge`: an index or a collection that
//! changes (issue #55). Each batch is logged and fsynced before it counts;
//! a merge writes the next generation and publishes it the way a build
//! does (a collection: each segment with updates, `collection::update`).

use crate::progress::Bars;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::Instant;
use stratavec::collection::{is_collection, Collection};
use stratavec::update::live::{Applied, LiveIndex, UpdateOptions};
use stratavec::OpenOptions;

/// What the commands write to.
enum Writable {
    Index(Box<LiveIndex>),
    Collection(Collection),
}

impl Writable {
    fn dim(&self) -> usize {
        match self {
            Writable::Index(i) => i.dim(),
            Writable::Collection(c) => c.dim(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Writable::Index(i) => i.len(),
            Writable::Collection(c) => c.len(),
        }
    }

    fn pending(&self) -> (usize, usize) {
        match self {
            Writable::Index(i) => i.pending(),
            Writable::Collection(c) => c.pending(),
        }
    }

    fn add(
        &self,
        vectors: &[f32],
        ids: Option<&[i64]>,
        labels: &[Vec<u32>],
    ) -> stratavec::Result<Applied> {
        match self {
            Writable::Index(i) => i.add_labelled(vectors, ids, labels, 0),
            Writable::Collection(c) => c.add_labelled(vectors, ids, labels, 0),
        }
    }

    fn remove(&self, ids: &[i64]) -> stratavec::Result<Applied> {
        match self {
            Writable::Index(i) => i.remove(ids, 0),
            Writable::Collection(c) => c.remove(ids, 0),
        }
    }

    /// Merges; (vectors inserted, rows deleted, generations written, bytes
    /// of the new indexes).
    fn merge(
        &self,
        threads: usize,
        progress: &dyn stratavec::progress::Progress,
    ) -> stratavec::Result<(usize, usize, usize, u64)> {
        let merged = match self {
            Writable::Index(i) => vec![i.merge(threads, progress)?],
            Writable::Collection(c) => c.merge(threads, progress)?,
        };
        Ok((
            merged.iter().map(|m| m.inserted).sum(),
            merged.iter().map(|m| m.deleted).sum(),
            merged.len(),
            merged.iter().map(|m| m.report.index_bytes).sum(),
        ))
    }
}

/// How the index is opened for a write.
#[derive(clap::Args)]
pub struct Open {
    /// Memory budget (MB, 10^6 bytes) of the open; the delta of inserted
    /// vectors and the deleted rows get --delta-share of it. Without one,
    /// the delta may hold 256 MB.
    #[arg(long)]
    memory_budget_mb: Option<f64>,
    /// The share of the budget for the delta and the deleted rows.
    #[arg(long, default_value_t = 0.1)]
    delta_share: f64,
    /// Refuse an insert that fills the delta's share instead of merging.
    #[arg(long)]
    no_auto_merge: bool,
    /// Threads of a merge.
    #[arg(long)]
    threads: Option<usize>,
}

impl Open {
    fn open(&self, dir: &Path) -> Result<Writable> {
        let opts = OpenOptions {
            memory_budget_bytes: self.memory_budget_mb.map(|mb| (mb * 1e6) as u64),
            ..Default::default()
        };
        let updates = UpdateOptions {
            delta_share: self.delta_share,
            auto_merge: !self.no_auto_merge,
            merge_threads: self.threads(),
        };
        Ok(match is_collection(dir) {
            true => Writable::Collection(Collection::open_with(dir, &opts, &updates)?),
            false => Writable::Index(Box::new(LiveIndex::open_with(dir, &opts, &updates)?)),
        })
    }

    fn threads(&self) -> usize {
        self.threads.unwrap_or_else(crate::default_threads)
    }
}

#[derive(clap::Args)]
pub struct InsertArgs {
    /// Index or collection directory.
    index_dir: PathBuf,
    /// Vectors to insert: .fbin, .u8bin, .i8bin, .fvecs, .bvecs or .npy.
    data: PathBuf,
    /// Their ids, one integer a line (default: the next unused ids).
    #[arg(long)]
    ids: Option<PathBuf>,
    /// Their labels, a row a vector (a `.spmat` file, as `build --labels`):
    /// for an index built with labels.
    #[arg(long)]
    labels: Option<PathBuf>,
    /// Vectors a logged batch (each fsynced before the next).
    #[arg(long, default_value_t = 10_000)]
    batch: usize,
    #[command(flatten)]
    open: Open,
}

#[derive(clap::Args)]
pub struct DeleteArgs {
    /// Index or collection directory.
    index_dir: PathBuf,
    /// Ids to delete, one integer a line.
    #[arg(long)]
    ids: PathBuf,
    #[command(flatten)]
    open: Open,
}

#[derive(clap::Args)]
pub struct MergeArgs {
    /// Index or collection directory.
    index_dir: PathBuf,
    #[command(flatten)]
    open: Open,
}

/// Ids from a text file, one a line (blank lines skipped).
fn read_ids(path: &Path) -> Result<Vec<i64>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("read ids {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            l.trim().parse::<i64>().with_context(|| {
                format!(
                    "{}: line {}: expected an integer id, found {:?}",
                    path.display(),
                    i + 1,
                    l.trim()
                )
            })
        })
        .collect()
}

pub fn insert(a: InsertArgs) -> Result<()> {
    let index = a.open.open(&a.index_dir)?;
    let file = stratavec::data::open(&a.data)?;
    let vectors = file.to_f32_vec();
    let dim = file.dim();
    let ids = a.ids.as_deref().map(read_ids).transpose()?;
    if let Some(ids) = &ids {
        anyhow::ensure!(
            ids.len() == file.n(),
            "{}: expected one id a vector ({}), found {}",
            a.ids.as_ref().unwrap().display(),
            file.n(),
            ids.len()
        );
    }
    anyhow::ensure!(
        dim == index.dim(),
        "{}: dim: expected {} (the index's), found {dim}",
        a.data.display(),
        index.dim()
    );
    let labels: Vec<Vec<u32>> = match &a.labels {
        Some(path) => {
            let sets = stratavec::labels::spmat::read(path)?;
            anyhow::ensure!(
                sets.len() == file.n(),
                "{}: rows: expected one a vector ({}), found {}",
                path.display(),
                file.n(),
                sets.len()
            );
            (0..sets.len()).map(|r| sets.row(r).to_vec()).collect()
        }
        None => Vec::new(),
    };
    let t = Instant::now();
    let rows = a.batch.max(1);
    let mut last = 0;
    for (b, chunk) in vectors.chunks(rows * dim).enumerate() {
        let ids = ids
            .as_ref()
            .map(|ids| &ids[b * rows..b * rows + chunk.len() / dim]);
        let n = chunk.len() / dim;
        let l = match labels.is_empty() {
            true => &[][..],
            false => &labels[b * rows..b * rows + n],
        };
        last = index.add(chunk, ids, l)?.seq;
    }
    let s = t.elapsed().as_secs_f64();
    let (delta, deleted) = index.pending();
    println!(
        "inserted {} vectors into {} in {s:.2} s ({:.0} a second, each batch logged and fsynced; last log record {last}); \
         not yet merged: {delta} inserted, {deleted} deleted",
        file.n(),
        a.index_dir.display(),
        file.n() as f64 / s.max(1e-9)
    );
    Ok(())
}

pub fn delete(a: DeleteArgs) -> Result<()> {
    let index = a.open.open(&a.index_dir)?;
    let ids = read_ids(&a.ids)?;
    let t = Instant::now();
    let r = index.remove(&ids)?;
    println!(
        "deleted {} of {} ids from {} in {:.3} s ({} not there); log record {}",
        r.count,
        ids.len(),
        a.index_dir.display(),
        t.elapsed().as_secs_f64(),
        r.missing,
        r.seq
    );
    Ok(())
}

pub fn merge(a: MergeArgs) -> Result<()> {
    let index = a.open.open(&a.index_dir)?;
    let t = Instant::now();
    let bars = Bars::default();
    let before = index.len() + index.pending().1 - index.pending().0;
    let (inserted, deleted, generations, bytes) = index.merge(a.open.threads(), &bars)?;
    println!(
        "merged {}: {inserted} vectors inserted, {deleted} deleted ({before} -> {} vectors) in {:.2} s; \
         {generations} generation(s) written, {bytes} bytes",
        a.index_dir.display(),
        index.len(),
        t.elapsed().as_secs_f64(),
    );
    Ok(())
}
