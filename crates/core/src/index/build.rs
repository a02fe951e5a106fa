//! The build pipeline (docs/architecture.md, "Building an index"): validate → quantizer
//! training and encoding → Vamana graph → disk layout → manifest, all staged in
//! a temporary sibling directory and committed at the end.

use super::commit::{file_entry_until, Staging};
use super::fit::{fit, Unset};
use super::ids::IDS_FILE;
use super::interrupt::{cancelled, checkpoint, unless_cancelled, StopWriter};
use super::manifest::{Manifest, BUILD_REVISION, FORMAT_VERSION, MANIFEST};
use super::placement;
use crate::data::{DType, Elems, Metric, VectorRows, Vectors};
use crate::entry::clusters::{self, ClusterEntries, ENTRY_FILE};
use crate::error::{Error, FileContext, Result};
use crate::graph::{self, BuildSpace, VamanaParams};
use crate::layout::replication::ReplicationStats;
use crate::layout::shuffle::{shuffle_until, Shuffle, ShuffleParams, ShuffleReport};
use crate::layout::LaserLayout;
use crate::layout::{
    blocked, csr, position_map, BlockedLayout, CoupledLayout, CsrLayout, Layout, LayoutKind,
    ReplicatedLayout, SeparatedLayout,
};
use crate::memory::adjacency_cache::{self, GRAPH_FILE};
use crate::memory::cache_order::{self, ORDER_FILE};
use crate::memory::cache_rank::{self, CacheRank};
use crate::memory::planner::Part;
use crate::memory::pq_plan::{PqPlan, PqPlanInput};
use crate::progress::Progress;
use crate::quant::pq::{PqCodebook, PqQuantizer, PqTrainParams};
use crate::quant::pq_file;
use crate::quant::record_codes::{RecordCodes, RECORD_CODES_FILE};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

/// Everything that decides the bytes of an index. Thread count is not here:
/// the build gives the same bytes for any number of threads.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct BuildParams {
    pub profile: String,
    pub metric: Metric,
    /// Maximum out-degree R.
    pub graph_degree: usize,
    /// Build list size L.
    pub complexity: usize,
    pub alpha: f32,
    /// Insertion passes (1 = DiskANN's builder, 2 = the Vamana paper).
    pub passes: usize,
    /// PQ code bytes per vector (sub-spaces M).
    pub pq_bytes: usize,
    /// Vectors sampled to train PQ.
    pub pq_sample: usize,
    /// k-means iterations per PQ sub-space.
    pub pq_iters: usize,
    /// Disk page size: 4096, 8192 or 16384.
    pub page_size: usize,
    /// Largest insertion batch as a fraction of n.
    pub max_batch_fraction: f32,
    pub seed: u64,
    /// Block shuffle of the records (Starling §4.1); `none` keeps id order
    /// (DiskANN's coupled layout).
    #[serde(default = "no_shuffle")]
    pub shuffle: Shuffle,
    /// BNF/BNS iterations β.
    #[serde(default = "default_shuffle_iterations")]
    pub shuffle_iterations: usize,
    /// BNF/BNS OR(G) gain threshold τ.
    #[serde(default = "default_shuffle_gain")]
    pub shuffle_gain: f64,
    /// Shuffle by the undirected graph (`ShuffleParams::undirected`;
    /// `None`: by the records per block).
    #[serde(default)]
    pub shuffle_undirected: Option<bool>,
    /// Place records beside their k nearest nodes
    /// (`ShuffleParams::nearest`; `None`: by the records per block). An
    /// index from before this choice placed by the graph: it reads as 0.
    #[serde(default = "by_the_graph")]
    pub shuffle_nearest: Option<usize>,
    /// In-memory navigation graph over this fraction of the vectors
    /// (Starling §4.3); 0 = start every query at the medoid.
    #[serde(default)]
    pub nav_sample: f32,
    /// Degree of the navigation graph.
    #[serde(default = "default_nav_degree")]
    pub nav_degree: usize,
    /// How records are laid on disk when it is not what the shuffle implies
    /// (coupled without one, blocked with one): the replicated or separated
    /// layouts of Gorgeous §3.4. `None`: as the shuffle implies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<LayoutKind>,
    /// Replicated and separated layouts: at most this many neighbour lists
    /// packed into a node's block (Gorgeous §4.1's R); `None`: as many as
    /// fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<usize>,
    /// The memory budget (bytes) the index is meant to be opened with: with
    /// `pq_bytes` left unset, profiles that cache the graph choose their PQ
    /// bytes by it (`memory::pq_plan`, Gorgeous §4.1 ①).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_budget: Option<u64>,
    /// Order in which the graph cache holds adjacency lists (profiles
    /// whose memory plan has one; `memory::cache_rank`).
    #[serde(default)]
    pub cache_rank: CacheRank,
    /// Order in which the node cache holds whole records, when not the
    /// profile's (`Profile::node_cache`): `bfs` leaves it to the open
    /// (breadth-first from the medoid), any other rank is computed here and
    /// written as `order.bin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_cache_rank: Option<CacheRank>,
    /// The `visits` rank (of either cache): the share of the rows searched
    /// in RAM as sample queries, whose expansions it counts
    /// (`cache_rank::visit_queries`). An index from before this was a
    /// parameter sampled 1%.
    #[serde(default = "built_before_visits_sample")]
    pub visits_sample: f32,
    /// Element type of the vectors stored on disk when it differs from the
    /// data's: `f16` (from float data) halves the record's vector bytes, so
    /// a block holds more records and the node cache more nodes, at a
    /// relative rounding error of 2^-11 per component in exact distances.
    /// `None`: the data's own type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<DType>,
    /// Laser layout: principal dimensions the neighbour codes cover
    /// (AlayaLaser §3.2; a multiple of 4). `None`: fitted to the data
    /// (`fit::default_code_dim`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_dim: Option<usize>,
    /// Laser profile: k-means clusters whose nearest vectors are the entry
    /// candidates (AlayaLaser §4.1). `None`: √n within 16..=1024.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_clusters: Option<usize>,
    /// ivf profile (paper 002 §6): k-means clusters (`None`: one per
    /// `build_ivf::VECTORS_PER_CLUSTER` vectors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ivf_clusters: Option<usize>,
    /// ivf profile: clusters a vector may join, 1..=8 (1: no replication).
    #[serde(default = "one")]
    pub ivf_replicas: usize,
    /// ivf profile: a further cluster is joined when its centroid is within
    /// (1 + this) of the nearest's distance (SPANN's closure ε).
    #[serde(default = "default_ivf_closure")]
    pub ivf_closure: f32,
    /// ivf profile: where each vector is stored (§6.2).
    #[serde(default)]
    pub ivf_grouping: crate::layout::ivf_assign::Grouping,
    /// ivf profile: the clusters each sample query probes when the build
    /// counts how often each cluster is read (§6.2's h_j, which the
    /// frequency grouping ranks clusters by): best near the nprobe the
    /// searches will use; at most a quarter of the clusters are probed. (A manifest without it was built with 8, the
    /// value before it was a parameter.)
    #[serde(default = "built_before_ivf_sample_nprobe")]
    pub ivf_sample_nprobe: usize,
    /// ivf profile: also train `pq_bytes` PQ codes and keep every
    /// cluster's members beside them (`codes.bin`, `members.bin`), so a
    /// search scores the probed members in RAM and reads only the best few
    /// vectors (IVF-PQ with refinement; `layout::ivf_members`).
    #[serde(default)]
    pub ivf_codes: bool,
    /// Parameters the caller left to the build, which picks them to fit the
    /// data (`index::fit`). Never written: the manifest holds the values
    /// used, and its `chosen` says why where they differ from the defaults.
    #[serde(skip)]
    pub unset: Unset,
}

fn one() -> usize {
    1
}

fn default_ivf_sample_nprobe() -> usize {
    crate::index::build_ivf::SAMPLE_NPROBE
}

fn built_before_ivf_sample_nprobe() -> usize {
    8
}

/// The `visits` rank's sample share (`BuildParams::visits_sample`).
pub const DEFAULT_VISITS_SAMPLE: f32 = 0.1;

fn built_before_visits_sample() -> f32 {
    0.01
}

fn default_ivf_closure() -> f32 {
    0.2
}

fn default_nav_degree() -> usize {
    32
}

fn by_the_graph() -> Option<usize> {
    Some(0)
}

fn no_shuffle() -> Shuffle {
    Shuffle::None
}
fn default_shuffle_iterations() -> usize {
    8
}
fn default_shuffle_gain() -> f64 {
    0.01
}

impl BuildParams {
    /// The build defaults of the profile called `profile`
    /// (`profile::PROFILES`); an unknown name keeps the default parts and
    /// is refused when the build checks its parameters.
    pub fn for_profile(profile: &str) -> Self {
        let parts = crate::profile::get(profile).unwrap_or(&crate::profile::PROFILES[0]);
        BuildParams {
            profile: profile.to_string(),
            shuffle: parts.shuffle,
            nav_sample: parts.nav_sample,
            layout: parts.layout,
            // Recorded in the manifest when the profile ranks its cache at
            // build, so an index built before the profile did is not reused
            // as if it held the order.
            node_cache_rank: Some(parts.node_cache).filter(|&r| r != CacheRank::Bfs),
            ..Default::default()
        }
    }

    /// Whether an index built with `self` is the one `other` would build:
    /// equal parameters, except that the shuffle's tuning does not matter
    /// when neither shuffles (a diskann index from before a shuffle option
    /// existed is still the same index).
    pub fn builds_same_index(&self, other: &BuildParams) -> bool {
        // The visits rank's sample share changes nothing in an index that
        // ranks neither cache by visits.
        if self.visits_sample != other.visits_sample
            && !self.ranks_by_visits()
            && !other.ranks_by_visits()
        {
            return self.builds_same_index(&BuildParams {
                visits_sample: self.visits_sample,
                ..other.clone()
            });
        }
        // Parameters `other` leaves to the build: whatever it chose (the
        // planner's PQ bytes for this budget, the page size that fits).
        let planned_pq = other.unset.pq_bytes && other.memory_budget.is_some();
        if planned_pq || other.unset.page_size {
            let fitted = BuildParams {
                pq_bytes: if planned_pq {
                    self.pq_bytes
                } else {
                    other.pq_bytes
                },
                page_size: if other.unset.page_size {
                    self.page_size
                } else {
                    other.page_size
                },
                unset: Unset {
                    pq_bytes: other.unset.pq_bytes && !planned_pq,
                    page_size: false,
                    ..other.unset
                },
                ..other.clone()
            };
            return self.builds_same_index(&fitted);
        }
        if self.shuffle != Shuffle::None || other.shuffle != Shuffle::None {
            return self == other;
        }
        let unshuffled = |p: &BuildParams| BuildParams {
            shuffle_iterations: 0,
            shuffle_gain: 0.0,
            shuffle_undirected: None,
            shuffle_nearest: None,
            ..p.clone()
        };
        unshuffled(self) == unshuffled(other)
    }

    /// Whether either cache is ranked by visits (`cache_rank::by_visits`),
    /// which `visits_sample` sizes.
    pub fn ranks_by_visits(&self) -> bool {
        self.cache_rank == CacheRank::Visits || self.node_cache_rank == Some(CacheRank::Visits)
    }

    /// The layout the records are written in.
    pub fn layout_kind(&self) -> LayoutKind {
        match (self.layout, self.shuffle) {
            (Some(kind), _) => kind,
            (None, Shuffle::None) => LayoutKind::Coupled,
            (None, _) => LayoutKind::Blocked,
        }
    }

    /// The block shuffle these parameters ask for.
    pub fn shuffle_params(&self) -> ShuffleParams {
        ShuffleParams {
            method: self.shuffle,
            iterations: self.shuffle_iterations,
            gain_threshold: self.shuffle_gain,
            undirected: self.shuffle_undirected,
            nearest: self.shuffle_nearest,
        }
    }
}

impl Default for BuildParams {
    fn default() -> Self {
        BuildParams {
            profile: "diskann".into(),
            metric: Metric::L2,
            graph_degree: 64,
            complexity: 128,
            alpha: 1.2,
            passes: 1,
            pq_bytes: 32,
            pq_sample: 65_536,
            pq_iters: 10,
            page_size: 4096,
            max_batch_fraction: 0.02,
            seed: 42,
            shuffle: Shuffle::None,
            shuffle_iterations: 8,
            shuffle_gain: 0.01,
            shuffle_undirected: None,
            shuffle_nearest: None,
            nav_sample: 0.0,
            nav_degree: 32,
            cache_rank: CacheRank::Nav,
            node_cache_rank: None,
            visits_sample: DEFAULT_VISITS_SAMPLE,
            layout: None,
            replicas: None,
            memory_budget: None,
            store: None,
            code_dim: None,
            entry_clusters: None,
            ivf_clusters: None,
            ivf_replicas: 4,
            ivf_closure: default_ivf_closure(),
            ivf_grouping: Default::default(),
            ivf_codes: false,
            ivf_sample_nprobe: default_ivf_sample_nprobe(),
            unset: Unset::default(),
        }
    }
}

/// How the build went: timings and peak memory, written to
/// `build_report.json` beside the manifest (kept out of the manifest so the
/// manifest stays byte-identical between runs).
#[derive(Clone, Debug, Serialize, Deserialize, Default)]
pub struct BuildReport {
    pub n: usize,
    pub dim: usize,
    pub threads: usize,
    /// (stage, seconds) in order.
    pub stages: Vec<(String, f64)>,
    pub total_s: f64,
    /// Peak resident memory of the process (VmHWM) at the end of the build.
    pub peak_rss_bytes: u64,
    pub index_bytes: u64,
    pub graph_mean_degree: f64,
    /// Edges added to link exact duplicate vectors in cycles
    /// (`graph::duplicates`); 0 when the data has none.
    #[serde(default)]
    pub duplicate_links: usize,
    /// OR(G) of id order and after each shuffle stage (Starling eq. 5).
    #[serde(default)]
    pub shuffle: Option<ShuffleReport>,
    /// The memory planner's PQ sizes tried on a sample, when it chose them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pq_plan: Option<PqPlan>,
    /// The planner's test of the navigation graph on sample queries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nav_plan: Option<crate::memory::nav_plan::NavPlan>,
    /// Replicated and separated layouts: the lists packed, and the disk
    /// blow-up against the coupled layout (Gorgeous §4.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication: Option<ReplicationStats>,
    /// Parameters the build chose for the data because the caller left them
    /// unset, with why (also in the manifest); empty when the defaults fit.
    #[serde(default)]
    pub chosen: BTreeMap<String, String>,
}

pub const BUILD_REPORT: &str = "build_report.json";

fn check_params(p: &BuildParams, n: usize, dim: usize, dtype: DType) -> Result<()> {
    let arg = |what: &str, expected: &str, found: &dyn ToString| {
        Err(Error::argument(what, expected, found.to_string()))
    };
    crate::profile::get(&p.profile)?;
    if p.layout.is_some_and(|k| k.replicates()) && p.shuffle != Shuffle::None {
        return arg(
            "shuffle",
            &format!(
                "none with the {} layout (it keeps id order)",
                p.layout_kind()
            ),
            &p.shuffle,
        );
    }
    if p.layout_kind() == LayoutKind::Ivf {
        if p.shuffle != Shuffle::None {
            return arg("shuffle", "none with the ivf layout", &p.shuffle);
        }
        if !super::build_ivf::supports(p.metric) {
            return arg(
                "metric",
                "l2 or cosine for the ivf layout (clusters are ranked by L2 to their centroids)",
                &p.metric,
            );
        }
        if !(1..=8).contains(&p.ivf_replicas) {
            return arg("ivf_replicas", "1..=8", &p.ivf_replicas);
        }
        if p.ivf_sample_nprobe == 0 {
            return arg("ivf_sample_nprobe", "at least 1", &0);
        }
        if p.ivf_clusters == Some(0) {
            return arg("ivf_clusters", "at least 1", &0);
        }
        if !(p.ivf_closure >= 0.0 && p.ivf_closure.is_finite()) {
            return arg("ivf_closure", "a finite number >= 0", &p.ivf_closure);
        }
    }
    if p.layout_kind() == LayoutKind::Csr && p.shuffle != Shuffle::None {
        return arg(
            "shuffle",
            "none with the csr layout (it keeps id order)",
            &p.shuffle,
        );
    }
    if p.layout_kind() == LayoutKind::Laser {
        if p.shuffle != Shuffle::None {
            return arg(
                "shuffle",
                "none with the laser layout (it keeps id order)",
                &p.shuffle,
            );
        }
        if p.metric == Metric::InnerProduct {
            return arg(
                "metric",
                "l2 or cosine for the laser layout (its codes estimate Euclidean distances)",
                &p.metric,
            );
        }
    }
    if p.layout == Some(LayoutKind::Blocked) && p.shuffle == Shuffle::None {
        return arg(
            "shuffle",
            "bnp, bnf or bns for the blocked layout",
            &p.shuffle,
        );
    }
    if p.graph_degree == 0 || p.graph_degree > 1024 {
        return arg("graph_degree (R)", "1..=1024", &p.graph_degree);
    }
    if p.complexity < p.graph_degree.min(n) || p.complexity == 0 {
        return arg(
            "complexity (L_build)",
            &format!("at least graph_degree = {}", p.graph_degree.min(n)),
            &p.complexity,
        );
    }
    if !(p.alpha >= 1.0 && p.alpha <= 4.0) {
        return arg("alpha", "1.0..=4.0", &p.alpha);
    }
    if p.pq_bytes == 0 || p.pq_bytes > dim {
        return arg(
            "pq_bytes",
            &format!("1..={dim} (the dimension)"),
            &p.pq_bytes,
        );
    }
    if ![4096, 8192, 16384].contains(&p.page_size) {
        return arg("page_size", "4096, 8192 or 16384", &p.page_size);
    }
    if !(0.0..=0.5).contains(&p.nav_sample) {
        return arg("nav_sample", "a fraction in 0..=0.5", &p.nav_sample);
    }
    if p.nav_sample > 0.0 && (p.nav_degree == 0 || p.nav_degree > 256) {
        return arg("nav_degree", "1..=256", &p.nav_degree);
    }
    if p.passes == 0 || p.passes > 4 {
        return arg("passes", "1..=4", &p.passes);
    }
    if !(p.visits_sample > 0.0 && p.visits_sample <= 1.0) {
        return arg("visits_sample", "a fraction in (0, 1]", &p.visits_sample);
    }
    if !(p.max_batch_fraction > 0.0 && p.max_batch_fraction <= 1.0) {
        return arg("max_batch_fraction", "in (0, 1]", &p.max_batch_fraction);
    }
    stored_dtype(p.store, dtype)?;
    if dtype != DType::F32 && p.metric != Metric::L2 {
        return arg(
            "metric",
            &format!("l2 for {} data", dtype.as_str()),
            &p.metric,
        );
    }
    if n >= u32::MAX as usize {
        return arg("number of vectors", "fewer than 2^32 - 1", &n);
    }
    Ok(())
}

fn check_finite(data: &[f32], dim: usize, source: &str) -> Result<()> {
    use rayon::prelude::*;
    if let Some(i) = data.par_iter().position_first(|x| !x.is_finite()) {
        return Err(Error::argument(
            format!("{source}: row {}, component {}", i / dim, i % dim),
            "a finite number",
            data[i],
        ));
    }
    Ok(())
}

/// The element type records hold when vectors of type `source` are stored
/// as `store` (`BuildParams::store`): the source's own type, or f16 from
/// f32; anything else is an error. Shared by the build and `relayout`.
pub(crate) fn stored_dtype(store: Option<DType>, source: DType) -> Result<DType> {
    match store {
        None => Ok(source),
        Some(s) if s == source => Ok(s),
        Some(DType::F16) if source == DType::F32 => Ok(DType::F16),
        Some(s) => Err(Error::argument(
            "store",
            format!("f16 (from f32 vectors) or the vectors' own type {source}"),
            s,
        )),
    }
}

/// The largest finite f16.
pub(crate) const F16_MAX: f32 = 65504.0;
/// Magnitudes from here on round to an infinite f16.
pub(crate) const F16_LIMIT: f32 = 65520.0;

/// f16 storage needs every component to round to a finite half.
fn check_f16_range(data: &[f32], dim: usize, source: &str) -> Result<()> {
    use rayon::prelude::*;
    if let Some(i) = data.par_iter().position_first(|x| x.abs() >= F16_LIMIT) {
        return Err(Error::argument(
            format!(
                "{source}: row {}, component {} (--store f16)",
                i / dim,
                i % dim
            ),
            format!("a magnitude of at most {F16_MAX}"),
            data[i],
        ));
    }
    Ok(())
}

/// Creates `path` and writes it through a buffer; errors name the file.
pub(super) fn write_file(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<()> {
    let mut w = BufWriter::new(std::fs::File::create(path).at("create", path)?);
    write(&mut w).and_then(|_| w.flush()).at("write", path)
}

/// Peak resident set size of this process so far (VmHWM), if readable.
pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Builds an index of `data` at `dir`. `source` names the data in errors.
pub fn build_index(
    data: Vectors<'_>,
    source: &str,
    dir: &Path,
    params: &BuildParams,
    threads: usize,
    progress: &dyn Progress,
) -> Result<BuildReport> {
    build_index_with_ids(data, None, source, dir, params, threads, progress)
}

/// `ids`, when given, are one a vector of the `n` and unique (`source`
/// names the data in the error).
pub fn check_ids(ids: Option<&[i64]>, n: usize, source: &str) -> Result<()> {
    if let Some(ids) = ids {
        if ids.len() != n {
            return Err(Error::argument(
                "ids",
                format!("one id a vector ({n})"),
                ids.len(),
            ));
        }
        crate::data::check_unique(Path::new(source), "ids", ids)?;
    }
    Ok(())
}

/// [`build_index`] keeping `ids` (one a row, unique) in the index: search
/// then returns them instead of row numbers (`index::ids`).
pub fn build_index_with_ids(
    data: Vectors<'_>,
    ids: Option<&[i64]>,
    source: &str,
    dir: &Path,
    params: &BuildParams,
    threads: usize,
    progress: &dyn Progress,
) -> Result<BuildReport> {
    let t_all = Instant::now();
    let dim = data.dim();
    let n = data.elems().len() / dim;
    let data_dtype = data.elems().dtype();
    check_ids(ids, n, source)?;
    // Every check that the parameters can work runs here, before any work.
    let pq_unset = params.unset.pq_bytes;
    let (mut params, mut chosen) = fit(params, n, dim, data_dtype)?;
    check_params(&params, n, dim, data_dtype)?;
    let profile = crate::profile::get(&params.profile)?;
    // PQ bytes left unset with a budget given: the memory planner sizes
    // them (Gorgeous §4.1 ①) for profiles that cache the graph.
    let plan_pq = pq_unset
        && params.memory_budget.is_some()
        && profile.memory.contains(&Part::Adjacency)
        && n >= crate::memory::pq_plan::MIN_ROWS;
    for (field, why) in &chosen {
        progress.note(&format!("{field} = {why}"));
    }
    // What the records hold (the manifest's dtype).
    let dtype = stored_dtype(params.store, data_dtype)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|i| format!("stratavec-build-{i}"))
        .build()
        .map_err(|e| Error::argument("threads", "a thread pool", e))?;
    let mut report = BuildReport {
        n,
        dim,
        threads: threads.max(1),
        chosen: chosen.clone(),
        ..Default::default()
    };
    let staging = Staging::new(dir)?;
    // Polled by the long loops; `checkpoint` also polls it between stages.
    let stop = || progress.cancelled();
    // Each stage's own time: `within` is the time of stages nested in it
    // (the shuffle and the navigation graph run inside the write stage).
    let mut stage = |name: &str, t: Instant, within: f64| {
        let secs = t.elapsed().as_secs_f64();
        report.stages.push((name.into(), secs - within));
        secs
    };

    // 1. The f32 view the build works on: borrowed when possible; cosine data
    //    normalised once (the stored vectors are the normalised ones too).
    checkpoint(progress, dir, "prepare")?;
    let t = Instant::now();
    let f32_data: Cow<[f32]> = pool.install(|| -> Result<Cow<[f32]>> {
        let mut v = data.elems().to_f32();
        check_finite(&v, dim, source)?;
        if dtype == DType::F16 {
            check_f16_range(&v, dim, source)?;
        }
        if params.metric == Metric::Cosine {
            use rayon::prelude::*;
            v.to_mut()
                .par_chunks_mut(dim)
                .for_each(crate::data::normalize_f32);
        }
        Ok(v)
    })?;
    stage("prepare", t, 0.0);
    if params.layout_kind() == LayoutKind::Ivf {
        let input = super::build_ivf::Input {
            data: &f32_data,
            data_dtype,
            dim,
            ids,
        };
        return super::build_ivf::build(&input, staging, &params, &pool, report, t_all);
    }

    // 2. The graph.
    checkpoint(progress, dir, "graph")?;
    let t = Instant::now();
    let space = BuildSpace::new(&f32_data, dim, params.metric);
    let vparams = VamanaParams {
        degree: params.graph_degree,
        complexity: params.complexity,
        alpha: params.alpha,
        passes: params.passes,
        max_batch_fraction: params.max_batch_fraction,
        seed: params.seed,
    };
    progress.stage("build graph", (n * params.passes) as u64);
    let (graph, gstats) = pool
        .install(|| graph::build_until(&space, &vparams, &|d, _| progress.set(d as u64), &stop))
        .ok_or_else(|| cancelled(dir))?;
    progress.finish();
    stage("graph", t, 0.0);

    if plan_pq {
        let t = Instant::now();
        progress.stage("plan memory", 0);
        let budget = params.memory_budget.unwrap_or(0) as usize;
        let plan =
            pool.install(|| plan_pq_bytes(&params, &f32_data, dim, dtype, budget, &graph.lists));
        progress.finish();
        let Some(plan) = plan else {
            return Err(Error::argument(
                "memory budget",
                format!(
                    "room for the PQ codes of {n} vectors at {} bytes or more besides the \
                     I/O buffers and navigation graph (or give --pq-bytes)",
                    crate::memory::pq_plan::candidate_sizes(dim)[0]
                ),
                format!("{:.2} MB", budget as f64 / 1e6),
            ));
        };
        {
            let at = plan.candidates.iter().find(|c| c.pq_bytes == plan.pq_bytes);
            chosen.insert(
                "pq_bytes".into(),
                format!(
                    "{}: the fewest predicted reads within the {:.1} MB memory budget \
                     (re-rank depth {} for R@10 {} on a {}-vector sample; build_report.json \
                     has every size tried)",
                    plan.pq_bytes,
                    budget as f64 / 1e6,
                    at.and_then(|c| c.depth)
                        .map_or("> 200".into(), |d| d.to_string()),
                    crate::memory::pq_plan::TARGET_RECALL,
                    plan.sample
                ),
            );
            params.pq_bytes = plan.pq_bytes;
            progress.note(&format!("pq_bytes = {}", chosen["pq_bytes"]));
            report.chosen = chosen.clone();
            report.pq_plan = Some(plan);
        }
        stage("plan", t, 0.0);
    }

    // 3. PQ codebook and codes, after the graph: the memory planner may
    //    size them by the graph it must leave room for. Laser records carry
    //    their own codes: no PQ (AlayaLaser §3.3, nothing per vector in RAM).
    let kind = params.layout_kind();
    let pq = if kind == LayoutKind::Laser {
        None
    } else {
        checkpoint(progress, dir, "pq")?;
        let t = Instant::now();
        progress.stage("train PQ", 0);
        let pq_params = PqTrainParams {
            m: params.pq_bytes,
            sample: params.pq_sample,
            iters: params.pq_iters,
            seed: params.seed,
        };
        let trained = pool.install(|| {
            let cb = PqCodebook::train_until(&f32_data, dim, &pq_params, &stop)?;
            let codes = cb.encode_all_until(&f32_data, &stop)?;
            Some((cb, codes))
        });
        let (codebook, codes) = trained.ok_or_else(|| cancelled(dir))?;
        progress.finish();
        stage("pq", t, 0.0);
        // The shuffle may rank nodes by their codes (`placement`). The
        // quantizer keeps its centroids transposed only: the codebook as
        // trained is what codes.bin holds.
        Some((
            codebook.clone(),
            PqQuantizer::new(codebook, codes, params.metric),
        ))
    };
    let pq_of = || &pq.as_ref().expect("PQ codes for every layout but laser").1;

    // 4. Disk layout and codes.
    let t = Instant::now();
    progress.stage("write pages", 0);
    let mut nested = 0.0;
    let coupled = CoupledLayout::new(params.page_size, n, dim, dtype, params.graph_degree);
    let pages_path = staging.dir.join("pages.bin");
    let file = std::fs::File::create(&pages_path).at("create", &pages_path)?;
    checkpoint(progress, dir, "write")?;
    // Every page goes through the check: a stop ends the write at the next
    // page, and the staging directory (with its partial pages.bin) goes.
    let mut w = StopWriter {
        inner: BufWriter::with_capacity(8 << 20, file),
        progress,
    };
    let elems = data.elems();
    let vector_bytes = |id: u32, out: &mut [u8]| {
        let (s, e) = (id as usize * dim, (id as usize + 1) * dim);
        if dtype == DType::F16 {
            stratavec_simd::half::encode_f16(&f32_data[s..e], out);
            return;
        }
        match elems {
            Elems::F32(_) => {
                for (o, x) in out.chunks_exact_mut(4).zip(&f32_data[s..e]) {
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
    };
    let mut extra_files = vec![];
    // Exact distances between stored vectors, for the replicated layouts'
    // choice of which neighbours' lists to pack (closest first, §4.1).
    let space = &space;
    let distance = |u: u32, v: u32| space.dist(u, v);
    let replicated = |w: &mut StopWriter<_>, kind: LayoutKind| -> Result<ReplicationStats> {
        let (ps, md) = (params.page_size, params.graph_degree);
        let written = match kind {
            LayoutKind::Replicated => ReplicatedLayout::new(ps, n, dim, dtype, md)?.write(
                w,
                graph.medoid,
                &graph.lists,
                &vector_bytes,
                &distance,
                params.replicas,
            ),
            _ => SeparatedLayout::new(ps, n, dim, dtype, md)?.write(
                w,
                graph.medoid,
                &graph.lists,
                &vector_bytes,
                &distance,
                params.replicas,
            ),
        };
        let stats = written
            .and_then(|s| w.flush().map(|_| s))
            .at("write", &pages_path);
        unless_cancelled(progress, dir, stats)
    };
    // Laser's cluster entries, kept for the node cache's `visits` rank.
    let mut cluster_entries: Option<ClusterEntries> = None;
    let layout_name = if kind == LayoutKind::Laser {
        let code_dim = params.code_dim.expect("fitted");
        checkpoint(progress, dir, "codes")?;
        let t = Instant::now();
        progress.stage("train record codes", 0);
        let rc = pool
            .install(|| RecordCodes::train(&f32_data, dim, code_dim, params.metric, params.seed));
        let (codes, factors) = pool.install(|| rc.encode_all(&f32_data, dim));
        progress.finish();
        nested += stage("codes", t, 0.0);
        let layout = LaserLayout::new(
            params.page_size,
            n,
            dim,
            dtype,
            params.graph_degree,
            code_dim,
        )
        .map_err(|e| Error::argument("laser layout", "a record that fits", e))?;
        checkpoint(progress, dir, "write")?;
        let written = layout
            .write(
                &mut w,
                graph.medoid,
                &graph.lists,
                &vector_bytes,
                &codes,
                &factors,
            )
            .and_then(|_| w.flush())
            .at("write", &pages_path);
        unless_cancelled(progress, dir, written)?;
        let path = staging.dir.join(RECORD_CODES_FILE);
        write_file(&path, |w| rc.write(w))?;
        extra_files.push(RECORD_CODES_FILE);
        // The cluster entries (§4.1); the in-degree cache's order (§3.3) is
        // the profile's node cache rank, written below.
        checkpoint(progress, dir, "entry")?;
        let t = Instant::now();
        progress.stage("entry clusters", 0);
        let k = params
            .entry_clusters
            .unwrap_or_else(|| clusters::default_clusters(n));
        let built =
            pool.install(|| ClusterEntries::build(&f32_data, dim, params.metric, k, params.seed));
        let entries = cluster_entries.insert(built);
        let path = staging.dir.join(ENTRY_FILE);
        write_file(&path, |w| entries.write(w))?;
        extra_files.push(ENTRY_FILE);
        progress.finish();
        nested += stage("entry", t, 0.0);
        layout.name()
    } else if kind.replicates() {
        report.replication = Some(replicated(&mut w, kind)?);
        kind.name()
    } else if kind == LayoutKind::Csr {
        let layout = CsrLayout::new(
            params.page_size,
            dim,
            dtype,
            params.graph_degree,
            &graph.lists,
        );
        let written = layout
            .write(&mut w, graph.medoid, &graph.lists, &vector_bytes)
            .and_then(|_| w.flush())
            .at("write", &pages_path);
        unless_cancelled(progress, dir, written)?;
        let path = staging.dir.join(csr::OFFSETS_FILE);
        write_file(&path, |w| layout.write_offsets(w))?;
        extra_files.push(csr::OFFSETS_FILE);
        layout.name()
    } else if kind == LayoutKind::Coupled {
        let written = coupled
            .write(&mut w, graph.medoid, &graph.lists, &vector_bytes)
            .and_then(|_| w.flush())
            .at("write", &pages_path);
        unless_cancelled(progress, dir, written)?;
        coupled.name()
    } else {
        let cap = blocked::capacity(params.page_size, dim, dtype, &graph.lists)?;
        checkpoint(progress, dir, "shuffle")?;
        let t = Instant::now();
        progress.stage("shuffle blocks", 0);
        let sp = params.shuffle_params();
        let nearest = pool.install(|| {
            placement::nearest_for_until(&graph.lists, &cap, &sp, || Ok(pq_of()), &stop)
        });
        let nearest = unless_cancelled(progress, dir, nearest)?;
        if nearest.is_some() {
            nested += stage("nearest", t, 0.0);
        }
        let t = Instant::now();
        let (assignment, shuffle_report) = pool
            .install(|| shuffle_until(&graph.lists, &cap, &sp, nearest.as_deref(), &stop))
            .ok_or_else(|| cancelled(dir))?;
        drop(nearest);
        progress.finish();
        nested += stage("shuffle", t, 0.0);
        progress.stage("write pages", 0);
        report.shuffle = Some(shuffle_report);
        let layout = BlockedLayout::new(
            params.page_size,
            dim,
            dtype,
            params.graph_degree,
            assignment.block_of.clone(),
            assignment.blocks(),
        );
        let written = layout
            .write(
                &mut w,
                graph.medoid,
                &assignment,
                &graph.lists,
                &vector_bytes,
            )
            .and_then(|_| w.flush())
            .at("write", &pages_path);
        unless_cancelled(progress, dir, written)?;
        let map_path = staging.dir.join("map.bin");
        write_file(&map_path, |w| {
            position_map::write(w, layout.blocks(), &layout.block_map())
        })?;
        extra_files.push("map.bin");
        layout.name()
    };
    drop(w);
    let mut nav_graph = None;
    let mut nav_kept = false;
    if params.nav_sample > 0.0 {
        checkpoint(progress, dir, "nav")?;
        let t = Instant::now();
        progress.stage("navigation graph", 0);
        let nav = pool.install(|| {
            crate::entry::NavGraph::build(
                &f32_data,
                dim,
                params.metric,
                params.nav_sample,
                params.nav_degree,
                params.seed,
            )
        });
        // Planned builds keep the graph only if sample queries gain from it
        // (Gorgeous §4.1 ②); it still ranks the graph cache either way.
        let keep = if plan_pq {
            let chosen_size = report
                .pq_plan
                .as_ref()
                .and_then(|p| p.candidates.iter().find(|c| c.pq_bytes == p.pq_bytes));
            let depth = chosen_size.and_then(|c| c.depth).unwrap_or(32);
            let graph_share = chosen_size.map_or(0.0, |c| c.graph_share);
            // The list size the two-stage search needs at σ = 0.5.
            let l = (2 * depth).max(16);
            let plan = pool.install(|| {
                let g = crate::memory::nav_plan::InRam {
                    lists: &graph.lists,
                    medoid: graph.medoid,
                    pq: pq_of(),
                    data: &f32_data,
                    dim,
                    graph_share,
                };
                let nav_l = crate::SearchParams::default().nav_complexity;
                crate::memory::nav_plan::decide(&g, &nav, l, nav_l, params.seed)
            });
            let kept = plan.kept;
            if !kept {
                let why = format!(
                    "none kept: the navigation graph saved too little on {} sample queries \
                     (search-stage cost {:.0} PQ estimates a query from it, {:.0} from the medoid, \
                     with {:.1} expansions against {:.1}, {:.0} f32 distances of its own and {:.0}% \
                     of the lists cached; needs {:.0}% less)",
                    plan.queries,
                    plan.cost_from_nav,
                    plan.cost_from_medoid,
                    plan.expansions_from_nav,
                    plan.expansions_from_medoid,
                    plan.nav_distances,
                    plan.graph_share * 100.0,
                    crate::memory::nav_plan::MIN_GAIN * 100.0
                );
                progress.note(&format!("navigation graph: {why}"));
                chosen.insert("nav_sample".into(), why);
                report.chosen = chosen.clone();
            }
            report.nav_plan = Some(plan);
            kept
        } else {
            true
        };
        if keep {
            let nav_path = staging.dir.join("nav.bin");
            write_file(&nav_path, |w| nav.write(w))?;
            extra_files.push("nav.bin");
        }
        progress.finish();
        nested += stage("nav", t, 0.0);
        nav_graph = Some(nav);
        nav_kept = keep;
    }
    // Every node, best first by `rank` (`memory::cache_rank`).
    let rank_nodes = |rank: CacheRank,
                      nav: Option<&crate::entry::NavGraph>,
                      pq: Option<&dyn crate::quant::Quantizer>| {
        let input = cache_rank::RankInput {
            lists: &graph.lists,
            medoid: graph.medoid,
            data: &f32_data,
            dim,
            nav,
            entry: cluster_entries
                .as_ref()
                .map(|e| e as &dyn crate::entry::EntryPoints),
            pq,
            metric: params.metric,
            seed: params.seed,
            visits_sample: params.visits_sample,
        };
        pool.install(|| cache_rank::rank(rank, &input))
    };
    // The node cache's order where the build ranks it (laser: by in-degree,
    // AlayaLaser §3.3; octopus: by how often sample queries started at the
    // navigation graph expand each node, OctopusANN §4.1's visit-frequency
    // cache); `bfs` is left to the open, which fills the cache
    // breadth-first from the medoid (DiskANN).
    let node_rank = params.node_cache_rank.unwrap_or(profile.node_cache);
    let rank_nav = nav_graph.as_ref().filter(|_| nav_kept);
    let ranked = match node_rank {
        CacheRank::Bfs => false,
        CacheRank::Nav => rank_nav.is_some(),
        CacheRank::Indegree | CacheRank::Visits => true,
    };
    if ranked && profile.memory.contains(&Part::Nodes) {
        checkpoint(progress, dir, "rank")?;
        let t = Instant::now();
        progress.stage("rank node cache", 0);
        let pq = pq.as_ref().map(|p| &p.1 as &dyn crate::quant::Quantizer);
        let order = rank_nodes(node_rank, rank_nav, pq);
        let path = staging.dir.join(ORDER_FILE);
        write_file(&path, |w| cache_order::write(w, &order))?;
        extra_files.push(ORDER_FILE);
        progress.finish();
        nested += stage("rank", t, 0.0);
    }
    // The adjacency lists apart, in the order the graph cache takes them
    // (Gorgeous §4.1), for profiles whose memory plan holds them.
    if profile.memory.contains(&Part::Adjacency) {
        checkpoint(progress, dir, "rank")?;
        let t = Instant::now();
        progress.stage("rank graph cache", 0);
        let order = rank_nodes(params.cache_rank, nav_graph.as_ref(), Some(pq_of()));
        let path = staging.dir.join(GRAPH_FILE);
        write_file(&path, |w| adjacency_cache::write(w, &order, &graph.lists))?;
        extra_files.push(GRAPH_FILE);
        progress.finish();
        nested += stage("rank", t, 0.0);
    }
    if let Some(ids) = ids {
        let path = staging.dir.join(IDS_FILE);
        write_file(&path, |w| super::ids::write(w, ids))?;
        extra_files.push(IDS_FILE);
    }
    if let Some((codebook, pq)) = &pq {
        let codes_path = staging.dir.join("codes.bin");
        write_file(&codes_path, |w| pq_file::write(w, codebook, &pq.codes))?;
        extra_files.push("codes.bin");
    }
    progress.finish();
    stage("write", t, nested);

    // 5. Manifest (last: its presence marks a complete index), then commit.
    checkpoint(progress, dir, "checksum")?;
    let t = Instant::now();
    let mut files = BTreeMap::new();
    for name in ["pages.bin"].into_iter().chain(extra_files) {
        let entry = file_entry_until(&staging.dir.join(name), &stop)?;
        files.insert(name.to_string(), entry.ok_or_else(|| cancelled(dir))?);
    }
    report.index_bytes = files.values().map(|f| f.bytes).sum();
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        build_revision: BUILD_REVISION,
        profile: params.profile.clone(),
        dtype,
        dim,
        n,
        metric: params.metric,
        build: params.clone(),
        layout: layout_name.into(),
        page_size: params.page_size,
        quantizer: match &pq {
            Some(_) => format!("pq{}", params.pq_bytes),
            None => format!("rabitq{} (in records)", params.code_dim.unwrap_or(0)),
        },
        medoid: graph.medoid,
        graph_mean_degree: gstats.mean_degree,
        files,
        chosen,
    };
    let mpath = staging.dir.join(MANIFEST);
    std::fs::write(&mpath, manifest.to_json()).at("write", &mpath)?;
    stage("checksum", t, 0.0);
    report.graph_mean_degree = gstats.mean_degree;
    report.duplicate_links = gstats.duplicate_links;
    report.peak_rss_bytes = peak_rss_bytes();
    report.total_s = t_all.elapsed().as_secs_f64();
    write_report(&staging.dir, &report)?;
    // The last moment to stop: from here on the index is complete and the
    // commit is two renames.
    unless_cancelled(progress, dir, Ok(()))?;
    staging.commit()?;
    Ok(report)
}

/// The PQ bytes the memory planner chooses for `budget` (`memory::pq_plan`):
/// what the rest of the plan holds is estimated from the graph just built.
fn plan_pq_bytes(
    params: &BuildParams,
    data: &[f32],
    dim: usize,
    dtype: DType,
    budget: usize,
    lists: &[Vec<u32>],
) -> Option<PqPlan> {
    let n = lists.len();
    let bits = crate::layout::record::id_bits(n);
    let list_bytes: usize = lists
        .iter()
        .map(|l| crate::layout::record::packed_len(0, l.len(), bits))
        .sum();
    let graph_bytes = adjacency_cache::resident_bytes_for(n, n, list_bytes);
    // What the open will hold besides: I/O buffers at the default reserve
    // (2 threads x 64 pages) and the navigation graph (ids, vectors and
    // lists of its share of the vectors).
    let buffers = 2 * crate::search::READ_SLOTS * params.page_size;
    let nav_nodes = (n as f64 * params.nav_sample as f64).round() as usize;
    let nav = nav_nodes * (4 + 4 * dim + 24 + 4 * params.nav_degree);
    let node_bytes = crate::memory::node_cache::bytes_per_node(crate::layout::record::packed_len(
        dim * dtype.size(),
        params.graph_degree,
        bits,
    ));
    crate::memory::pq_plan::choose(&PqPlanInput {
        data,
        dim,
        metric: params.metric,
        budget,
        fixed: buffers + nav,
        graph_bytes,
        node_bytes,
        seed: params.seed,
    })
}

/// Writes `build_report.json` into an index directory being staged.
pub(crate) fn write_report(dir: &Path, report: &BuildReport) -> Result<()> {
    let rpath = dir.join(BUILD_REPORT);
    std::fs::write(
        &rpath,
        serde_json::to_string_pretty(report).expect("report") + "\n",
    )
    .at("write", &rpath)
}

/// Builds from the Parquet or Arrow IPC table at `table` (`data::table`):
/// the vector column is streamed into an `.fbin` beside `dir` (removed when
/// the build ends, however it ends), and the id column, if named, is kept
/// in the index.
pub fn build_from_table(
    table: &Path,
    columns: &crate::data::TableColumns,
    dir: &Path,
    params: &BuildParams,
    threads: usize,
    progress: &dyn Progress,
) -> Result<BuildReport> {
    let staged = super::commit::StagedFile::new(dir, "import", "fbin")?;
    progress.stage("read table", 0);
    let imported =
        crate::data::import_table(table, columns, &staged.path, &|| progress.cancelled())?;
    progress.finish();
    let imported = imported.ok_or_else(|| cancelled(dir))?;
    progress.note(&format!(
        "read {} vectors of {} {} from column `{}`{}",
        imported.n,
        imported.dim,
        imported.element,
        imported.column,
        columns
            .ids
            .as_deref()
            .map(|c| format!(", ids from column `{c}`"))
            .unwrap_or_default()
    ));
    let file = crate::data::open(&staged.path)?;
    let vectors = file.vectors().expect("an .fbin is contiguous");
    let source = format!("{} (column {})", table.display(), imported.column);
    build_index_with_ids(
        vectors,
        imported.ids.as_deref(),
        &source,
        dir,
        params,
        threads,
        progress,
    )
}

/// Opens, validates and builds from a vector file; a Parquet or Arrow
/// table goes to [`build_from_table`], reading its only column of vectors.
pub fn build_from_file(
    data_path: &Path,
    dir: &Path,
    params: &BuildParams,
    threads: usize,
    progress: &dyn Progress,
) -> Result<BuildReport> {
    if crate::data::is_table(data_path) {
        let columns = crate::data::TableColumns::default();
        return build_from_table(data_path, &columns, dir, params, threads, progress);
    }
    let file = crate::data::open(data_path)?;
    let vectors = match file.vectors() {
        Some(v) => v,
        None => {
            return Err(Error::argument(
                format!("{}", data_path.display()),
                "contiguous rows",
                "interleaved rows",
            ))
        }
    };
    build_index(
        vectors,
        &data_path.display().to_string(),
        dir,
        params,
        threads,
        progress,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A diskann index built before `shuffle_nearest` existed (its manifest
    /// reads as Some(0)) is still the index today's defaults build; a
    /// starling one is not, and no other difference is ignored.
    #[test]
    fn a_laser_index_is_the_one_its_fitted_request_builds() {
        // A request is compared after fitting it to the data (the bench
        // does): what it leaves unset is what today's fit would choose,
        // not whatever an older index holds.
        let asked = BuildParams {
            unset: Unset::all(),
            ..BuildParams::for_profile("laser")
        };
        let (fitted, _) = super::super::fit::fit(&asked, 20_000, 768, DType::F32).unwrap();
        assert_eq!(
            (fitted.code_dim, fitted.store, fitted.page_size),
            (Some(696), Some(DType::F16), 8192)
        );
        assert!(fitted.builds_same_index(&fitted.clone()));
        let older = BuildParams {
            code_dim: Some(184),
            page_size: 4096,
            ..fitted.clone()
        };
        assert!(!older.builds_same_index(&fitted));
    }

    #[test]
    fn shuffle_tuning_matters_only_to_shuffled_indexes() {
        let now = BuildParams::default();
        let old = BuildParams {
            shuffle_nearest: Some(0),
            shuffle_undirected: Some(true),
            ..now.clone()
        };
        assert!(old.builds_same_index(&now));
        let other_pq = BuildParams {
            pq_bytes: 48,
            ..old.clone()
        };
        assert!(!other_pq.builds_same_index(&now));
        let starling = BuildParams::for_profile("starling");
        let old_starling = BuildParams {
            shuffle_nearest: Some(0),
            ..starling.clone()
        };
        assert!(!old_starling.builds_same_index(&starling));
        assert!(starling.builds_same_index(&starling.clone()));
    }

    /// An index whose caches are ranked by visits is rebuilt when the
    /// sample share differs (an octopus index from before the parameter
    /// read 1%, the default is now 10%); any other index is not.
    #[test]
    fn the_visits_sample_matters_only_to_indexes_ranked_by_visits() {
        let manifest_before = |p: &BuildParams| {
            let mut v = serde_json::to_value(p).unwrap();
            v.as_object_mut().unwrap().remove("visits_sample");
            serde_json::from_value::<BuildParams>(v).unwrap()
        };
        for (profile, ranked) in [
            ("octopus", true),
            ("pipeann", true),
            ("laser", true),
            ("diskann", false),
            ("starling", false),
            ("gorgeous", false),
        ] {
            let now = BuildParams::for_profile(profile);
            assert_eq!(now.ranks_by_visits(), ranked, "{profile}");
            assert_eq!(now.visits_sample, DEFAULT_VISITS_SAMPLE);
            let old = manifest_before(&now);
            assert_eq!(old.visits_sample, 0.01, "{profile}");
            assert_eq!(old.builds_same_index(&now), !ranked, "{profile}");
            assert!(now.builds_same_index(&now.clone()), "{profile}");
        }
        let graph_by_visits = BuildParams {
            cache_rank: CacheRank::Visits,
            ..BuildParams::for_profile("gorgeous")
        };
        assert!(!manifest_before(&graph_by_visits).builds_same_index(&graph_by_visits));
    }
}
