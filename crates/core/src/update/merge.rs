//! Merge: the generation, its deletes and the delta written as the next
//! generation (issue #55). FreshDiskANN's StreamingMerge (Singh et al.
//! 2021, §4.3, Algorithms 4–5) in three phases over the old graph:
//!
//! 1. **Delete.** Every kept node with a deleted out-neighbour takes, in
//!    its place, the [`REPLACEMENTS`] nearest of that neighbour's live
//!    out-neighbours (IP-DiskANN, arXiv 2502.13826: c = 3), so the paths
//!    that ran through deleted nodes survive them; a list that grows past
//!    R is pruned back (robust prune, alpha of the build). FreshDiskANN's
//!    Algorithm 4 prunes every such list over all of the deleted
//!    neighbours' out-neighbours instead: with 10% deleted nearly every
//!    node has a deleted neighbour, and those prunes over ~300 candidates
//!    took most of a merge (0.45x of a build at 20k vectors, against this
//!    rule's share measured in BENCHMARKS.md).
//! 2. **Insert.** Every live delta point searches the repaired graph and
//!    links in with the build's own batch step (`insert_batch`): out-edges
//!    by robust prune, reverse edges merged per target.
//! 3. **Patch and write.** Lists over R are pruned back; then every other
//!    part of the index is made by the build's own stages from the new
//!    graph (`index::stages::run` with `Given`): PQ codes with the old
//!    codebook (new points encoded, nothing retrained), the layout's pages
//!    (shuffled blocks, replicated lists, laser records, CSR), navigation
//!    graph, cache orders, ids, manifest, and the same atomic publish.
//!
//! Memory: the kept and inserted vectors as f32 (what a build of the new
//! set holds) plus the old and new adjacency lists; the old vectors are
//! read one record at a time and never held twice. Streaming the vectors
//! too (FreshDiskANN writes the merged index block by block) is the next
//! step for sets larger than RAM.

use super::delta::Delta;
use super::tombstones::Tombstones;
use crate::data::{DType, Elems};
use crate::error::{Error, Result};
use crate::graph::prune::{robust_prune, PruneScratch};
use crate::graph::vamana::{final_prune, insert_batch};
use crate::graph::{BuildSpace, BuildStats, Graph, VamanaParams};
use crate::index::build::BuildReport;
use crate::index::commit::Staging;
use crate::index::stages::{self, Build, Given};
use crate::index::Index;
use crate::progress::Progress;
use rayon::prelude::*;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Instant;

/// What a merge did.
#[derive(Clone, Debug)]
pub struct Merged {
    /// Delta vectors written into the new generation.
    pub inserted: usize,
    /// Generation rows dropped.
    pub deleted: usize,
    pub n_before: usize,
    /// The build report of the new generation (its stages, bytes, time).
    pub report: BuildReport,
}

/// What one merge starts from.
pub(crate) struct MergeInput<'a> {
    pub base: &'a Index,
    pub delta: &'a Delta,
    pub deleted: &'a Tombstones,
    /// The last log record the new generation holds.
    pub update_seq: u64,
    pub threads: usize,
}

/// The kept rows of the generation and the live delta rows, renumbered:
/// kept generation rows first in their order, then the delta's.
struct NewSet {
    /// f32 rows (cosine: normalised, as stored).
    data: Vec<f32>,
    /// The stored bytes for u8/i8 records.
    ints: Vec<u8>,
    ids: Vec<i64>,
    /// Old row -> new row (`u32::MAX`: deleted).
    new_of_old: Vec<u32>,
    /// The generation's adjacency lists, in old row numbers.
    old_lists: Vec<Vec<u32>>,
    kept: usize,
    old_medoid: u32,
    metric: crate::data::Metric,
    /// The kept rows' labels then the inserted rows', when the generation
    /// keeps labels (issue #56), and their names.
    labels: Option<crate::labels::LabelSets>,
    label_names: Vec<String>,
}

impl NewSet {
    fn label_input(&self) -> Option<crate::labels::LabelInput<'_>> {
        self.labels.as_ref().map(|sets| crate::labels::LabelInput {
            sets,
            names: (!self.label_names.is_empty()).then_some(self.label_names.as_slice()),
        })
    }
}

/// Writes the merged generation into `staging` and publishes it.
pub(crate) fn merge_into(
    input: &MergeInput,
    staging: Staging,
    dir: &Path,
    progress: &dyn Progress,
) -> Result<BuildReport> {
    let t_all = Instant::now();
    let base = input.base;
    let m = &base.manifest;
    if base.len() - input.deleted.len() + input.delta.len() == 0 {
        return Err(Error::argument(
            "merge",
            "at least one vector left to index",
            format!(
                "none: all {} of the generation's rows are deleted and nothing is inserted",
                base.len()
            ),
        ));
    }
    let pool = crate::index::build::thread_pool(input.threads, "merge")?;
    let mut report = BuildReport {
        dim: m.dim,
        threads: input.threads.max(1),
        ..Default::default()
    };
    let t = Instant::now();
    progress.stage("read generation", m.n as u64);
    let set = read_set(input, dir, progress)?;
    progress.finish();
    report
        .stages
        .push(("read".into(), t.elapsed().as_secs_f64()));
    let n = set.data.len() / m.dim;
    report.n = n;
    if !base.plan.graph() {
        return merge_clusters(input, &set, report, staging, dir, &pool, t_all);
    }
    // A label-aware graph stays so (the labels are the merged rows').
    let aware = set.labels.as_ref().filter(|_| m.build.label_aware);
    let space = BuildSpace::new(&set.data, m.dim, m.metric).with_labels(aware);
    let t = Instant::now();
    progress.stage("merge graph", 0);
    let graph = pool.install(|| merged_graph(&set, &space, base, input.delta));
    progress.finish();
    let stats = BuildStats {
        seconds: t.elapsed().as_secs_f64(),
        batches: 0,
        mean_degree: graph.mean_degree(),
        duplicate_links: 0,
    };
    report.stages.push(("graph".into(), stats.seconds));
    let codebook = match base.plan.codes {
        crate::plan::CodesPart::Pq | crate::plan::CodesPart::ExRabitq => {
            let path = dir.join(crate::plan::codes::PQ_FILE);
            Some(crate::quant::pq_file::read(&path, m.n, m.dim)?.0)
        }
        _ => None,
    };
    let elems = match m.dtype {
        DType::F32 | DType::F16 => Elems::F32(&set.data),
        DType::U8 => Elems::U8(&set.ints),
        DType::I8 => Elems::I8(stratavec_simd::cast::as_i8(&set.ints)),
    };
    let build = Build {
        // A merge keeps the refinement its index was built with.
        measure_refinement: false,
        params: m.build.clone(),
        plan: base.plan.clone(),
        chosen: m.chosen.clone(),
        report,
        data: &set.data,
        space,
        elems,
        ids: Some(&set.ids),
        labels: set.label_input(),
        dim: m.dim,
        n,
        dtype: m.dtype,
        pool: &pool,
        progress,
        dir,
        staging,
        files: Vec::new(),
        nested: 0.0,
        given: Given {
            graph: Some((graph, stats)),
            codebook,
            update_seq: input.update_seq,
        },
    };
    stages::run(build, false, t_all)
}

/// The ivf profile's merge: the kept and inserted vectors assigned to the
/// generation's centroids (balanced, replicated and grouped as a build
/// does; nothing re-clustered), IVF-PQ codes from its codebook, written and
/// published by the profile's own build (`index::build_ivf`). Deleted
/// vectors simply are not written: no cluster lists them any more.
fn merge_clusters(
    input: &MergeInput,
    set: &NewSet,
    mut report: BuildReport,
    staging: Staging,
    dir: &Path,
    pool: &rayon::ThreadPool,
    t_all: Instant,
) -> Result<BuildReport> {
    let (base, m) = (input.base, &input.base.manifest);
    let centroids = match base.layout().clusters() {
        Some(c) => c.centroids.clone(),
        None => {
            return Err(Error::index(
                &dir.join(crate::layout::PAGES_FILE),
                "layout",
                "a graph or a cluster layout",
                base.layout().name(),
            ))
        }
    };
    let codebook = match m.build.ivf_codes {
        true => {
            let path = dir.join(crate::plan::codes::PQ_FILE);
            Some(crate::quant::pq_file::read(&path, m.n, m.dim)?.0)
        }
        false => None,
    };
    report.chosen = m.chosen.clone();
    let ivf = crate::index::build_ivf::Input {
        data: &set.data,
        data_dtype: m.dtype,
        dim: m.dim,
        ids: Some(&set.ids),
        labels: set.label_input(),
        given: crate::index::build_ivf::Given {
            centroids: Some(centroids),
            codebook,
            update_seq: input.update_seq,
        },
    };
    crate::index::build_ivf::build(&ivf, staging, &m.build, pool, report, t_all)
}

/// Reads every record of the generation once, in row order: the kept
/// vectors into the new set, every adjacency list.
fn read_set(input: &MergeInput, dir: &Path, progress: &dyn Progress) -> Result<NewSet> {
    let base = input.base;
    let (layout, file) = (base.layout(), base.pages_file());
    let (n_old, dim, dtype) = (base.len(), base.dim(), base.manifest.dtype);
    let pages = dir.join(crate::layout::PAGES_FILE);
    let live_delta: Vec<u32> = (0..input.delta.rows() as u32)
        .filter(|&r| !input.delta.is_removed(r))
        .collect();
    let n_new = n_old - input.deleted.len() + live_delta.len();
    let mut set = NewSet {
        data: Vec::with_capacity(n_new * dim),
        ints: Vec::new(),
        ids: Vec::with_capacity(n_new),
        new_of_old: vec![u32::MAX; n_old],
        old_lists: Vec::with_capacity(n_old),
        kept: 0,
        old_medoid: base.manifest.medoid,
        metric: base.metric(),
        labels: None,
        label_names: base.labels().map_or_else(Vec::new, |l| l.names().to_vec()),
    };
    let mut buf = vec![0u8; layout.max_span_bytes()];
    let mut vbuf = vec![0u8; layout.max_span_bytes()];
    let mut floats = Vec::with_capacity(dim);
    for row in 0..n_old as u32 {
        let span = layout.span_of(row);
        let bytes = &mut buf[..span.len as usize];
        file.read_exact_at(bytes, span.offset)
            .map_err(|e| Error::file("read (merge)", &pages, e))?;
        let node = layout.record(row, bytes);
        set.old_lists.push(node.neighbors().collect());
        if input.deleted.contains(row) {
            continue;
        }
        let vector = if layout.records_hold_vectors() {
            node.vector
        } else {
            let vspan = layout.vector_span_of(row);
            let vb = &mut vbuf[..vspan.len as usize];
            file.read_exact_at(vb, vspan.offset)
                .map_err(|e| Error::file("read (merge)", &pages, e))?;
            layout.vector_slice(row, vb)
        };
        decode(vector, dtype, &mut floats);
        set.data.extend_from_slice(&floats);
        if matches!(dtype, DType::U8 | DType::I8) {
            set.ints.extend_from_slice(vector);
        }
        set.ids.push(base.ids().map_or(row as i64, |m| m.get(row)));
        set.new_of_old[row as usize] = set.kept as u32;
        set.kept += 1;
        if row % 4096 == 0 {
            progress.set(row as u64);
        }
    }
    // Inserted vectors keep the labels they came with (empty: none).
    set.labels = base.labels().map(|l| {
        let kept = (0..n_old).filter(|&r| set.new_of_old[r] != u32::MAX);
        let mut sets = l.to_sets().select(kept);
        live_delta
            .iter()
            .for_each(|&r| sets.push(input.delta.labels(r)));
        sets
    });
    for &r in &live_delta {
        let v = input.delta.vector(r);
        set.data.extend_from_slice(v);
        match dtype {
            DType::U8 => set.ints.extend(v.iter().map(|&x| x as u8)),
            DType::I8 => set.ints.extend(v.iter().map(|&x| x as i8 as u8)),
            DType::F32 | DType::F16 => {}
        }
        set.ids.push(input.delta.id(r));
    }
    Ok(set)
}

/// A stored vector as f32.
fn decode(bytes: &[u8], dtype: DType, out: &mut Vec<f32>) {
    out.clear();
    match dtype {
        DType::F32 => stratavec_simd::cast::decode_f32(bytes, out),
        DType::F16 => out.extend(
            bytes
                .chunks_exact(2)
                .map(|h| stratavec_simd::half::f16_to_f32(u16::from_le_bytes([h[0], h[1]]))),
        ),
        DType::U8 => out.extend(bytes.iter().map(|&b| b as f32)),
        DType::I8 => out.extend(bytes.iter().map(|&b| b as i8 as f32)),
    }
}

/// The three phases over the new numbering.
fn merged_graph(set: &NewSet, space: &BuildSpace, base: &Index, delta: &Delta) -> Graph {
    let p = &base.manifest.build;
    let (r, alpha) = (p.graph_degree, p.alpha);
    let mut lists = repaired_lists(set, space, r, alpha);
    let n = space.n();
    lists.resize(n, Vec::new());
    let medoid = entry(set, space);
    let params = VamanaParams {
        passes: 1,
        ..p.vamana()
    };
    let max_batch = ((n as f32 * p.max_batch_fraction) as usize).max(1);
    // The entry is already in the graph (a kept row, or with nothing kept
    // the first inserted one, which the others then link to).
    let inserted: Vec<u32> = (set.kept as u32..n as u32)
        .filter(|&x| x != medoid)
        .collect();
    debug_assert_eq!(
        inserted.len() + usize::from(set.kept == 0 && n > 0),
        delta.len()
    );
    let mut done = 0;
    while done < inserted.len() {
        // A batch never outgrows the graph it searches (prefix doubling,
        // as the build's first pass): its points cannot link to each other.
        let in_graph = (set.kept + done).max(1);
        let size = max_batch.min(in_graph).min(inserted.len() - done);
        insert_batch(
            space,
            &mut lists,
            medoid,
            &inserted[done..done + size],
            &params,
            alpha,
            r,
            &crate::progress::never,
        );
        done += size;
    }
    final_prune(space, &mut lists, alpha, r);
    Graph {
        max_degree: r,
        medoid,
        lists,
    }
}

/// Where searches (and the insert phase) start: the old medoid if it was
/// kept; else the medoid of the kept rows (a point already linked in; the
/// medoid of all rows could be an inserted point with no edges yet, and
/// the insert phase would then link the inserted points only to each
/// other); with nothing kept, the first inserted point.
fn entry(set: &NewSet, space: &BuildSpace) -> u32 {
    let old = set.old_medoid as usize;
    match set.new_of_old.get(old) {
        Some(&m) if m != u32::MAX => m,
        _ if set.kept == 0 => 0,
        _ => {
            let dim = space.dim();
            let kept = BuildSpace::new(&set.data[..set.kept * dim], dim, set.metric);
            crate::graph::medoid::medoid(&kept)
        }
    }
}

/// Replacement edges a deleted out-neighbour leaves (IP-DiskANN's c).
pub const REPLACEMENTS: usize = 3;

/// Phase 1: kept nodes' lists in new numbers, those that pointed at
/// deleted nodes repaired through them (see the module's doc).
fn repaired_lists(set: &NewSet, space: &BuildSpace, r: usize, alpha: f32) -> Vec<Vec<u32>> {
    let live = |x: u32| set.new_of_old[x as usize];
    let kept_rows: Vec<u32> = (0..set.old_lists.len() as u32)
        .filter(|&x| live(x) != u32::MAX)
        .collect();
    kept_rows
        .par_iter()
        .map_init(
            || (PruneScratch::default(), Vec::new()),
            |(scratch, out), &old| {
                let me = live(old);
                let list = &set.old_lists[old as usize];
                if list.iter().all(|&x| live(x) != u32::MAX) {
                    return list.iter().map(|&x| live(x)).collect();
                }
                let mut next: Vec<u32> = list
                    .iter()
                    .map(|&x| live(x))
                    .filter(|&y| y != u32::MAX)
                    .collect();
                let mut cands: Vec<(f32, u32)> = Vec::new();
                for &x in list.iter().filter(|&&x| live(x) == u32::MAX) {
                    cands.clear();
                    cands.extend(
                        set.old_lists[x as usize]
                            .iter()
                            .map(|&y| live(y))
                            .filter(|&y| y != u32::MAX && y != me && !next.contains(&y))
                            .map(|y| (space.dist(me, y), y)),
                    );
                    let c = REPLACEMENTS.min(cands.len());
                    if c > 0 && c < cands.len() {
                        cands.select_nth_unstable_by(c - 1, |a, b| a.0.total_cmp(&b.0));
                    }
                    next.extend(cands[..c].iter().map(|&(_, y)| y));
                }
                if next.len() <= r {
                    return next;
                }
                let mut pool: Vec<(f32, u32)> =
                    next.iter().map(|&y| (space.dist(me, y), y)).collect();
                robust_prune(space, me, &mut pool, alpha, r, scratch, out);
                out.clone()
            },
        )
        .collect()
}
