//! The build of a graph index, stage by stage (docs/architecture.md,
//! "Building an index"): prepare the vectors → graph → codes → pages in
//! the plan's layout → entry part → ranked caches → manifest and commit.
//! Each stage is a file; what they share is a [`Build`]. Which layout,
//! codes and entry part are written is the plan's to say; no stage tests
//! a profile.

mod caches;
mod codes;
mod entry;
mod finish;
mod graph;
mod pages;
mod refinement;

use super::build::{BuildParams, BuildReport};
use super::commit::Staging;
use super::interrupt::{cancelled, checkpoint};
use crate::data::{DType, Elems};
use crate::error::{Error, FileContext, Result};
use crate::graph::{BuildSpace, BuildStats, Graph};
use crate::plan::Plan;
use crate::progress::Progress;
use crate::quant::pq::PqCodebook;
use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

/// What every stage of one build reads and adds to.
pub(crate) struct Build<'a> {
    /// The parameters as fitted (the memory planner may still set the PQ
    /// bytes).
    pub params: BuildParams,
    pub plan: Plan,
    /// Parameters chosen for the caller, with why (the manifest's `chosen`).
    pub chosen: BTreeMap<String, String>,
    pub report: BuildReport,
    /// The vectors as f32 (cosine data normalised).
    pub data: &'a [f32],
    /// Exact distances between them (the graph's, and the replicated
    /// layouts' choice of lists to pack), made once.
    pub space: BuildSpace<'a>,
    /// The vectors as given (u8 and i8 records keep their own bytes).
    pub elems: Elems<'a>,
    pub ids: Option<&'a [i64]>,
    /// Labels to keep beside the vectors (issue #56).
    pub labels: Option<crate::labels::LabelInput<'a>>,
    pub dim: usize,
    pub n: usize,
    /// What the records hold.
    pub dtype: DType,
    pub pool: &'a rayon::ThreadPool,
    pub progress: &'a dyn Progress,
    /// The index directory being built (named in errors and stops).
    pub dir: &'a Path,
    pub staging: Staging,
    /// Files written besides pages.bin, for the manifest.
    pub files: Vec<&'static str>,
    /// Seconds of stages run inside the write stage.
    pub nested: f64,
    /// What a merge brings instead of building it (`update/merge.rs`).
    pub given: Given,
    /// Measure which refinement the index answers one query a thread
    /// sooner with, before the commit (`refinement`): the latency
    /// objective, the refinement not given.
    pub measure_refinement: bool,
}

/// Parts a merge already has (issue #55): the graph it repaired and
/// extended, the generation's PQ codebook (FreshDiskANN §4.3 keeps the
/// codebook across merges: new points are encoded with it), and the last
/// update-log record the new generation holds.
#[derive(Default)]
pub(crate) struct Given {
    pub graph: Option<(Graph, BuildStats)>,
    pub codebook: Option<PqCodebook>,
    pub update_seq: u64,
}

impl Build<'_> {
    /// Ends a stage at a point where stopping is safe.
    pub fn checkpoint(&self, stage: &str) -> Result<()> {
        checkpoint(self.progress, self.dir, stage)
    }

    /// Records a stage's own time (`within`: stages nested in it); returns
    /// its whole time.
    pub fn stage(&mut self, name: &str, t: Instant, within: f64) -> f64 {
        let secs = t.elapsed().as_secs_f64();
        self.report.stages.push((name.into(), secs - within));
        secs
    }

    /// A parameter the build chose, with why, in the manifest and report.
    pub fn choose(&mut self, field: &str, why: String) {
        self.chosen.insert(field.into(), why);
        self.report.chosen = self.chosen.clone();
    }

    /// Writes `name` into the staging directory through a buffer, and lists
    /// it for the manifest.
    pub fn write_file(
        &mut self,
        name: &'static str,
        write: impl FnOnce(&mut BufWriter<std::fs::File>) -> std::io::Result<()>,
    ) -> Result<()> {
        let path = self.staging.dir.join(name);
        let mut w = BufWriter::new(std::fs::File::create(&path).at("create", &path)?);
        write(&mut w).and_then(|_| w.flush()).at("write", &path)?;
        self.files.push(name);
        Ok(())
    }

    /// The stored bytes of vector `id` (f16 when the records hold halves).
    pub fn vector_bytes(&self, id: u32, out: &mut [u8]) {
        let (s, e) = (id as usize * self.dim, (id as usize + 1) * self.dim);
        if self.dtype == DType::F16 {
            stratavec_simd::half::encode_f16(&self.data[s..e], out);
            return;
        }
        match self.elems {
            Elems::F32(_) => {
                for (o, x) in out.chunks_exact_mut(4).zip(&self.data[s..e]) {
                    o.copy_from_slice(&x.to_le_bytes());
                }
            }
            Elems::U8(v) => out.copy_from_slice(&v[s..e]),
            Elems::I8(v) => {
                for (o, &x) in out.iter_mut().zip(&v[s..e]) {
                    *o = x as u8;
                }
            }
        }
    }
}

/// Builds the graph index of `b`'s vectors and commits it: every stage in
/// order, each writing what the plan names.
pub(crate) fn run(mut b: Build<'_>, pq_unset: bool, t_all: Instant) -> Result<BuildReport> {
    let (graph, stats) = match b.given.graph.take() {
        Some(given) => given,
        None => graph::build(&mut b)?,
    };
    // A given graph too (a merge's keeps its PQ bytes: `pq_unset` false;
    // the planner's sample graph leaves them to be planned).
    graph::plan_pq(&mut b, &graph, pq_unset)?;
    let codes = codes::train(&mut b)?;
    // Stages timed before the write window (the record codes' training)
    // are not inside it: only those after count against it (a laser build
    // once reported "write -16.2s").
    let before = b.nested;
    let t = Instant::now();
    b.progress.stage("write pages", 0);
    let layout = pages::write(&mut b, &graph, &codes)?;
    codes::write_records(&mut b, &codes)?;
    let entries = entry::write_clusters(&mut b)?;
    let nav = entry::write_nav(&mut b, &graph, &codes)?;
    b.plan = (b.plan.clone().as_built(nav.kept))
        .with_ids(b.ids.is_some())
        .with_labels(b.labels.is_some());
    let ranks = caches::Ranks {
        graph: &graph,
        nav: nav.graph.as_ref(),
        nav_kept: nav.kept,
        entries: entries.as_ref(),
        pq: codes.pq(),
    };
    caches::write_node_order(&mut b, &ranks)?;
    caches::write_graph_cache(&mut b, &ranks)?;
    finish::write_ids(&mut b)?;
    finish::write_labels(&mut b)?;
    codes::write_pq(&mut b, &codes)?;
    b.progress.finish();
    let nested = b.nested - before;
    b.stage("write", t, nested);
    finish::commit(b, layout, &graph, &stats, t_all)
}

/// The stop of a stage that returned nothing because the caller stopped it.
pub(crate) fn stopped_at(dir: &Path) -> Error {
    cancelled(dir)
}
