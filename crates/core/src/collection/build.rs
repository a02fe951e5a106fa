//! Building a collection: partition the vectors, build each segment as an
//! index of its own (its rows' global ids kept in it, its share of the
//! budget), describe them in `collection.json`, and publish the directory
//! at once — a failed segment build leaves the previous collection as it
//! was, as a failed index build does.
//!
//! The steps are separate so another driver (Python on Ray) can build the
//! segments its own way, in parallel, and publish them the same way:
//! [`partition::plan`], then an index a segment under
//! `STAGING/seg-NNNN`, then [`commit_collection`].

use super::manifest::{
    budget_shares, segment_dir_name, CollectionManifest, Partition, SegmentEntry, CENTROIDS_FILE,
    COLLECTION_FILE, COLLECTION_VERSION,
};
use super::partition;
use crate::data::{Elems, VectorRows, Vectors};
use crate::error::{Error, FileContext, Result};
use crate::index::build::{build_index_with, check_ids, Attached, BuildParams, BuildReport};
use crate::index::commit::{check_target, publish, Staging};
use crate::index::ids::{IdMap, IDS_FILE};
use crate::index::manifest::Manifest;
use crate::labels::LabelInput;
use crate::progress::Progress;
use serde::Serialize;
use std::path::Path;
use std::time::Instant;

/// How a collection is split.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CollectionParams {
    pub segments: usize,
    pub partition: Partition,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct CollectionReport {
    pub n: usize,
    pub dim: usize,
    pub partition_s: f64,
    pub total_s: f64,
    pub collection_bytes: u64,
    pub segments: Vec<BuildReport>,
}

/// The rows `rows` of `data` (`dim` wide), copied.
fn gather(data: Elems<'_>, dim: usize, rows: &[u32]) -> OwnedElems {
    fn pick<T: Copy>(v: &[T], dim: usize, rows: &[u32]) -> Vec<T> {
        let mut out = Vec::with_capacity(rows.len() * dim);
        for &r in rows {
            out.extend_from_slice(&v[r as usize * dim..(r as usize + 1) * dim]);
        }
        out
    }
    match data {
        Elems::F32(v) => OwnedElems::F32(pick(v, dim, rows)),
        Elems::U8(v) => OwnedElems::U8(pick(v, dim, rows)),
        Elems::I8(v) => OwnedElems::I8(pick(v, dim, rows)),
    }
}

enum OwnedElems {
    F32(Vec<f32>),
    U8(Vec<u8>),
    I8(Vec<i8>),
}

impl OwnedElems {
    fn elems(&self) -> Elems<'_> {
        match self {
            OwnedElems::F32(v) => Elems::F32(v),
            OwnedElems::U8(v) => Elems::U8(v),
            OwnedElems::I8(v) => Elems::I8(v),
        }
    }
}

/// Builds a collection of `data` at `dir`: `cp.segments` indexes built with
/// `params` (its `memory_budget`, if any, split over the segments by their
/// vectors), one after another, each on `threads` threads. Global ids are
/// `attached.ids` when given, else row numbers; each segment keeps the
/// labels of its rows (`attached.labels`, issue #56) with their names.
#[allow(clippy::too_many_arguments)]
pub fn build_collection(
    data: Vectors<'_>,
    attached: Attached<'_>,
    source: &str,
    dir: &Path,
    params: &BuildParams,
    cp: &CollectionParams,
    threads: usize,
    progress: &dyn Progress,
) -> Result<CollectionReport> {
    let t_all = Instant::now();
    let dim = data.dim();
    let n = data.elems().len() / dim;
    partition::check(n, cp.segments, cp.partition, params.metric)?;
    let Attached { ids, labels } = attached;
    check_ids(ids, n, source)?;
    if let Some(l) = labels {
        l.check(n, source)?;
    }
    let staging = Staging::new(dir)?;
    progress.stage("partition", 0);
    let t = Instant::now();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .map_err(|e| Error::argument("threads", "a thread pool", e))?;
    let plan = pool.install(|| {
        partition::plan(
            data.elems(),
            dim,
            cp.segments,
            cp.partition,
            params.metric,
            params.seed,
        )
    })?;
    progress.finish();
    let partition_s = t.elapsed().as_secs_f64();
    let rows = plan.rows();
    let sizes: Vec<usize> = rows.iter().map(|r| r.len()).collect();
    let budgets = params.memory_budget.map(|b| budget_shares(b, &sizes));
    let mut reports = Vec::with_capacity(rows.len());
    for (i, rows) in rows.iter().enumerate() {
        if progress.cancelled() {
            return Err(Error::Cancelled {
                what: format!("build of {}", dir.display()),
            });
        }
        progress.note(&format!(
            "segment {}/{}: {} vectors",
            i + 1,
            cp.segments,
            rows.len()
        ));
        let owned = gather(data.elems(), dim, rows);
        let vectors = Vectors::new(owned.elems(), dim)
            .map_err(|e| Error::argument("segment vectors", "rows of the data", e))?;
        let global: Vec<i64> = rows
            .iter()
            .map(|&r| ids.map_or(r as i64, |ids| ids[r as usize]))
            .collect();
        let seg_params = BuildParams {
            memory_budget: budgets.as_ref().map(|b| b[i]),
            ..params.clone()
        };
        let seg_labels = labels.map(|l| l.sets.select(rows.iter().map(|&r| r as usize)));
        let attached = Attached {
            ids: Some(&global),
            labels: labels.zip(seg_labels.as_ref()).map(|(l, sets)| LabelInput {
                sets,
                names: l.names,
            }),
        };
        reports.push(build_index_with(
            vectors,
            attached,
            &format!("{source} (segment {i})"),
            &staging.dir.join(segment_dir_name(i)),
            &seg_params,
            threads,
            progress,
        )?);
    }
    describe(
        &staging.dir,
        cp.partition,
        plan.centroids.as_deref(),
        params.memory_budget,
    )?;
    let collection_bytes = dir_bytes(&staging.dir)?;
    staging.commit()?;
    Ok(CollectionReport {
        n,
        dim,
        partition_s,
        total_s: t_all.elapsed().as_secs_f64(),
        collection_bytes,
        segments: reports,
    })
}

/// Publishes `staged` — a directory holding `seg-0000`, `seg-0001`, ...,
/// each a built index whose ids are global ids — as the collection `dir`:
/// checks the segments agree (dimension, metric, element type, profile)
/// and their ids are disjoint, writes `collection.json` (and the k-means
/// `centroids`, one a segment), then swaps it into place; a previous
/// collection at `dir` stays untouched if anything fails.
pub fn commit_collection(
    staged: &Path,
    dir: &Path,
    partition: Partition,
    centroids: Option<&[f32]>,
    memory_budget: Option<u64>,
) -> Result<CollectionManifest> {
    check_target(dir)?;
    let manifest = describe(staged, partition, centroids, memory_budget)?;
    publish(staged, dir)?;
    Ok(manifest)
}

/// Reads the segments in `staged` and writes the collection's manifest
/// (and centroids) beside them.
fn describe(
    staged: &Path,
    partition: Partition,
    centroids: Option<&[f32]>,
    memory_budget: Option<u64>,
) -> Result<CollectionManifest> {
    let mut segs: Vec<Manifest> = Vec::new();
    while staged.join(segment_dir_name(segs.len())).is_dir() {
        segs.push(Manifest::read(&staged.join(segment_dir_name(segs.len())))?);
    }
    let first = segs.first().ok_or_else(|| {
        Error::index(
            &staged.join(segment_dir_name(0)),
            "segment",
            "an index (seg-0000 first)",
            "nothing there",
        )
    })?;
    for entry in std::fs::read_dir(staged).at("list", staged)? {
        let name = entry.at("list", staged)?.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("seg-") && !(0..segs.len()).any(|i| segment_dir_name(i) == name) {
            return Err(Error::index(
                &staged.join(&*name),
                "segment",
                format!("seg-0000..{} with no gap", segment_dir_name(segs.len() - 1)),
                "a segment out of sequence",
            ));
        }
    }
    let mut all_ids: Vec<i64> = Vec::new();
    for (i, m) in segs.iter().enumerate() {
        let path = staged.join(segment_dir_name(i));
        let agree = [
            ("dim", m.dim.to_string(), first.dim.to_string()),
            ("metric", m.metric.to_string(), first.metric.to_string()),
            (
                "dtype",
                m.dtype.as_str().into(),
                first.dtype.as_str().into(),
            ),
            ("profile", m.profile.clone(), first.profile.clone()),
        ];
        for (field, found, want) in agree {
            if found != want {
                return Err(Error::index(
                    &path,
                    field,
                    format!("{want} (as seg-0000)"),
                    found,
                ));
            }
        }
        match IdMap::open(&path.join(IDS_FILE), m.n) {
            Ok(map) => all_ids.extend((0..m.n as u32).map(|r| map.get(r))),
            Err(_) if segs.len() == 1 && !path.join(IDS_FILE).exists() => {
                all_ids.extend(0..m.n as i64)
            }
            Err(e) => {
                return Err(Error::index(
                    &path.join(IDS_FILE),
                    "ids",
                    "the global ids of the segment's rows (build it with ids=)",
                    e,
                ))
            }
        }
    }
    all_ids.sort_unstable();
    if let Some(w) = all_ids.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::index(
            staged,
            "segment ids",
            "each global id in one segment",
            format!("id {} in two segments", w[0]),
        ));
    }
    let sizes: Vec<usize> = segs.iter().map(|m| m.n).collect();
    let dim = first.dim;
    match (partition, centroids) {
        (Partition::Kmeans, Some(c)) if c.len() == segs.len() * dim => {
            crate::data::write_fbin(staged.join(CENTROIDS_FILE), segs.len(), dim, c)
                .map_err(|e| Error::index(&staged.join(CENTROIDS_FILE), "write", "", e))?;
        }
        (Partition::Kmeans, c) => {
            return Err(Error::argument(
                "centroids",
                format!("{} x {dim} (one a segment)", segs.len()),
                c.map_or("none".into(), |c| format!("{} values", c.len())),
            ))
        }
        (Partition::Range, Some(_)) => {
            return Err(Error::argument(
                "centroids",
                "none for a range partition",
                "centroids",
            ))
        }
        (Partition::Range, None) => {}
    }
    let budgets = memory_budget.map(|b| budget_shares(b, &sizes));
    let manifest = CollectionManifest {
        format: "stratavec-collection".into(),
        format_version: COLLECTION_VERSION,
        n: sizes.iter().sum(),
        dim,
        metric: first.metric,
        dtype: first.dtype,
        profile: first.profile.clone(),
        partition,
        memory_budget,
        segments: sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| SegmentEntry {
                dir: segment_dir_name(i),
                n,
                memory_budget: budgets.as_ref().map(|b| b[i]),
            })
            .collect(),
    };
    let path = staged.join(COLLECTION_FILE);
    std::fs::write(&path, manifest.to_json()).at("write", &path)?;
    Ok(manifest)
}

/// Bytes of every file under `dir`.
fn dir_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).at("list", dir)? {
        let entry = entry.at("list", dir)?;
        let meta = entry.metadata().at("stat", &entry.path())?;
        total += if meta.is_dir() {
            dir_bytes(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}
