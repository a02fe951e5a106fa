//! Relayout: turns an existing index with the coupled id-order layout (the
//! `diskann` profile) into a block-shuffled one (the `starling` profile)
//! without rebuilding the graph (Starling §4.2 reorders a built index the
//! same way). It streams: the graph is read once, sequentially, a page at a
//! time (`graph_file`); the shuffled pages are written in block order, each
//! record read from the source with one positioned read. What it holds in RAM
//! is the neighbour lists and the block assignment, never the vectors or the
//! whole pages file. PQ codes and a navigation graph are copied as they are
//! (both are keyed by id, not by position). The result is byte-identical to
//! building the same parameters with `--profile starling` (tested), and
//! with `store` = f16 to building them with `--store f16` too: an f32 index
//! becomes an f16 one without a graph build.

use super::build::{peak_rss_bytes, write_report, BuildReport, BUILD_REPORT};
use super::commit::{file_entry, Staging};
use super::graph_file::read_graph;
use super::manifest::{Manifest, MANIFEST};
use super::placement::nearest_for;
use crate::data::DType;
use crate::error::{Error, FileContext, Result};
use crate::layout::shuffle::{shuffle, Shuffle, ShuffleParams};
use crate::layout::{blocked, position_map, BlockedLayout, CoupledLayout, Layout};
use crate::quant::pq_file;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Instant;

/// Blocks of the source's page size must hold two records; checked from
/// the manifest before the graph is read (`index::fit` does the same for a
/// build), with the largest degree the graph can have.
fn check_blocks(m: &Manifest, store: Option<DType>) -> Result<()> {
    let stored = super::build::stored_dtype(store, m.dtype)?;
    let degree = m.build.graph_degree.min(m.n.saturating_sub(1));
    let largest = blocked::largest_entry(m.dim, stored, m.n, degree);
    if blocked::holds_two(m.page_size, largest) {
        return Ok(());
    }
    let f16 = if stored == DType::F32 {
        ", or relayout with --store f16"
    } else {
        ""
    };
    Err(Error::argument(
        "page_size",
        format!(
            "pages that hold at least 2 shuffled records of {largest} bytes ({} x {stored} and \
             {degree} neighbours); relayout keeps the source's pages (build with --profile \
             starling, which picks the page size{f16})",
            m.dim
        ),
        format!(
            "{} per {}-byte page",
            (m.page_size - 2) / largest,
            m.page_size
        ),
    ))
}

/// Writes `dst`, the index at `src` with its records shuffled by `params`
/// and, when `store` is f16 and the source f32, its vectors stored as f16.
/// `src` is left as it is; a failure leaves `dst` as it was.
pub fn relayout(
    src: &Path,
    dst: &Path,
    params: &ShuffleParams,
    store: Option<DType>,
    threads: usize,
) -> Result<BuildReport> {
    let t_all = Instant::now();
    let mut manifest = coupled_source(src)?;
    if params.method == Shuffle::None {
        return Err(Error::argument("shuffle", "bnp, bnf or bns", "none"));
    }
    check_blocks(&manifest, store)?;
    let mut stages = Vec::new();
    let t = Instant::now();
    let (coupled, medoid, lists) = read_graph(src)?;
    let dtype = super::build::stored_dtype(store, coupled.dtype)?;
    let to_f16 = dtype != coupled.dtype;
    stages.push(("read graph".to_string(), t.elapsed().as_secs_f64()));
    let cap = blocked::capacity(coupled.page_size, coupled.dim, dtype, &lists)?;
    let staging = Staging::new(dst)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .map_err(|e| Error::argument("threads", "a thread pool", e))?;
    let t = Instant::now();
    let nearest =
        pool.install(|| nearest_for(&lists, &cap, params, || pq_file::load(src, &manifest)))?;
    if nearest.is_some() {
        stages.push(("nearest".to_string(), t.elapsed().as_secs_f64()));
    }
    let t = Instant::now();
    let (assignment, report) = pool.install(|| shuffle(&lists, &cap, params, nearest.as_deref()));
    drop(nearest);
    stages.push(("shuffle".to_string(), t.elapsed().as_secs_f64()));

    let t = Instant::now();
    let layout = BlockedLayout::new(
        coupled.page_size,
        coupled.dim,
        dtype,
        coupled.max_degree,
        assignment.block_of.clone(),
        assignment.blocks(),
    );
    let source = SourceVectors::open(src, &coupled, to_f16)?;
    let vector_bytes = |id: u32, out: &mut [u8]| source.fill(id, out);
    let pages_path = staging.dir.join(crate::layout::PAGES_FILE);
    let mut w = BufWriter::with_capacity(
        1 << 20,
        std::fs::File::create(&pages_path).at("create", &pages_path)?,
    );
    layout
        .write(&mut w, medoid, &assignment, &lists, &vector_bytes)
        .and_then(|_| w.flush())
        .at("write", &pages_path)?;
    drop(w);
    source.finish()?;
    let map_path = staging.dir.join(crate::layout::position_map::MAP_FILE);
    let mut mw = BufWriter::new(std::fs::File::create(&map_path).at("create", &map_path)?);
    position_map::write(&mut mw, layout.blocks(), &layout.block_map())
        .and_then(|_| mw.flush())
        .at("write", &map_path)?;
    drop(mw);
    let mut names = vec![
        crate::layout::PAGES_FILE,
        crate::layout::position_map::MAP_FILE,
    ];
    copy_parts(src, &staging, &manifest, &mut names)?;
    stages.push(("write".to_string(), t.elapsed().as_secs_f64()));
    let profile = crate::profile::of_layout(crate::layout::LayoutKind::Blocked).name;
    manifest.profile = profile.into();
    manifest.build.profile = profile.into();
    manifest.build.shuffle = params.method;
    manifest.build.shuffle_iterations = params.iterations;
    manifest.build.shuffle_gain = params.gain_threshold;
    manifest.build.shuffle_undirected = params.undirected;
    manifest.build.shuffle_nearest = params.nearest;
    if to_f16 {
        manifest.dtype = DType::F16;
        manifest.build.store = Some(DType::F16);
    }
    manifest.layout = layout.name().into();
    commit(
        src,
        staging,
        manifest,
        &names,
        stages,
        threads,
        t_all,
        Some(report),
    )
}

/// The manifest of `src`, which must be an index in the coupled layout
/// (the diskann profile): what every relayout starts from.
pub(super) fn coupled_source(src: &Path) -> Result<Manifest> {
    let manifest = Manifest::read(src)?;
    if manifest.layout != "coupled" {
        return Err(Error::index(
            &src.join(MANIFEST),
            "layout",
            "coupled (an index of the diskann profile)",
            &manifest.layout,
        ));
    }
    Ok(manifest)
}

/// The source's vectors, one positioned read of its record each (the
/// writers ask in their own order), as f16 when `to_f16`. The first read
/// error, or the first component f16 cannot hold, is kept for `finish`.
pub(super) struct SourceVectors {
    path: std::path::PathBuf,
    input: std::fs::File,
    coupled: CoupledLayout,
    to_f16: bool,
    record: RefCell<Vec<u8>>,
    floats: RefCell<Vec<f32>>,
    failed: RefCell<Option<std::io::Error>>,
    /// (node, component, value)
    too_big: RefCell<Option<(u32, usize, f32)>>,
}

impl SourceVectors {
    pub(super) fn open(src: &Path, coupled: &CoupledLayout, to_f16: bool) -> Result<Self> {
        let path = src.join(crate::layout::PAGES_FILE);
        let input = std::fs::File::open(&path).at("open", &path)?;
        Ok(SourceVectors {
            path,
            input,
            coupled: coupled.clone(),
            to_f16,
            record: RefCell::new(vec![0u8; coupled.record_bytes]),
            floats: RefCell::new(Vec::new()),
            failed: RefCell::new(None),
            too_big: RefCell::new(None),
        })
    }

    /// Fills `out` with node `id`'s vector as the result stores it.
    pub(super) fn fill(&self, id: u32, out: &mut [u8]) {
        let coupled = &self.coupled;
        let vector_len = coupled.dim * coupled.dtype.size();
        let mut rec = self.record.borrow_mut();
        let slot = if coupled.nodes_per_page > 0 {
            id as usize % coupled.nodes_per_page
        } else {
            0
        };
        let offset = coupled.span_of(id).offset + (slot * coupled.record_bytes) as u64;
        match self.input.read_exact_at(&mut rec, offset) {
            Ok(()) if self.to_f16 => {
                let mut f = self.floats.borrow_mut();
                stratavec_simd::cast::decode_f32(&rec[..vector_len], &mut f);
                if let Some(c) = f.iter().position(|x| x.abs() >= super::build::F16_LIMIT) {
                    self.too_big.borrow_mut().get_or_insert((id, c, f[c]));
                }
                stratavec_simd::half::encode_f16(&f, out);
            }
            Ok(()) => out.copy_from_slice(&rec[..vector_len]),
            Err(e) => {
                self.failed.borrow_mut().get_or_insert(e);
                out.fill(0);
            }
        }
    }

    /// The first failure while filling, if any.
    pub(super) fn finish(self) -> Result<()> {
        if let Some(e) = self.failed.into_inner() {
            return Err(e).at("read", &self.path);
        }
        if let Some((id, c, x)) = self.too_big.into_inner() {
            return Err(Error::argument(
                format!(
                    "{}: node {id}, component {c} (store f16)",
                    self.path.display()
                ),
                format!("a magnitude of at most {}", super::build::F16_MAX),
                x,
            ));
        }
        Ok(())
    }
}

/// Copies the parts keyed by id, not by position (PQ codes, navigation
/// graph, ids), adding what it copied to `names`.
pub(super) fn copy_parts(
    src: &Path,
    staging: &Staging,
    manifest: &Manifest,
    names: &mut Vec<&'static str>,
) -> Result<()> {
    for name in [
        crate::plan::codes::PQ_FILE,
        crate::plan::entry::NAV_FILE,
        super::ids::IDS_FILE,
    ] {
        if manifest.files.contains_key(name) {
            let (from, to) = (src.join(name), staging.dir.join(name));
            std::fs::copy(&from, &to).at("copy", &from)?;
            names.push(name);
        }
    }
    Ok(())
}

/// Checksums `names`, writes the manifest and the report, and commits.
#[allow(clippy::too_many_arguments)]
pub(super) fn commit(
    src: &Path,
    staging: Staging,
    mut manifest: Manifest,
    names: &[&str],
    stages: Vec<(String, f64)>,
    threads: usize,
    t_all: Instant,
    shuffle: Option<crate::layout::shuffle::ShuffleReport>,
) -> Result<BuildReport> {
    let mut files = BTreeMap::new();
    for &name in names {
        files.insert(name.to_string(), file_entry(&staging.dir.join(name))?);
    }
    manifest.files = files;
    // The plan of the profile the records now follow, as the files the
    // relayout wrote and kept carry it out.
    manifest.plan = None;
    manifest.plan = Some(crate::plan::plan_of(&staging.dir, &manifest)?);
    let out = BuildReport {
        n: manifest.n,
        dim: manifest.dim,
        threads,
        stages,
        total_s: t_all.elapsed().as_secs_f64(),
        peak_rss_bytes: peak_rss_bytes(),
        index_bytes: manifest.files.values().map(|f| f.bytes).sum(),
        graph_mean_degree: manifest.graph_mean_degree,
        // The graph is the source's: so are its duplicate links (the
        // source's report is informational; a missing one gives 0).
        duplicate_links: std::fs::read_to_string(src.join(BUILD_REPORT))
            .ok()
            .and_then(|t| serde_json::from_str::<BuildReport>(&t).ok())
            .map_or(0, |r| r.duplicate_links),
        shuffle,
        replication: None,
        pq_plan: None,
        nav_plan: None,
        auto_plan: None,
        chosen: manifest.chosen.clone(),
    };
    let mpath = staging.dir.join(MANIFEST);
    std::fs::write(&mpath, manifest.to_json()).at("write", &mpath)?;
    write_report(&staging.dir, &out)?;
    staging.commit()?;
    Ok(out)
}
