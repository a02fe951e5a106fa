//! The build pipeline (docs/architecture.md, "Building an index"): validate → quantizer
//! training and encoding → Vamana graph → disk layout → manifest, all staged in
//! a temporary sibling directory and committed at the end.

use super::build_checks::{check_f16_range, check_finite, check_params};
pub(crate) use super::build_checks::{stored_dtype, F16_LIMIT, F16_MAX};
use super::commit::Staging;
use super::fit::{fit, Unset};
use super::interrupt::{cancelled, checkpoint};
use super::stages::Build;
use crate::data::{DType, Metric, VectorRows, Vectors};
use crate::error::{Error, FileContext, Result};
use crate::labels::LabelInput;
use crate::layout::replication::ReplicationStats;
use crate::layout::shuffle::{Shuffle, ShuffleParams, ShuffleReport};
use crate::layout::LayoutKind;
use crate::memory::cache_rank::CacheRank;
use crate::memory::pq_plan::PqPlan;
use crate::progress::Progress;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

/// Everything that decides the bytes of an index. Thread count is not here:
/// the build gives the same bytes for any number of threads.
///
/// Each field is a parameter stated once: its doc line is the CLI's help
/// (`stratavec build --help`) and Python's docstring (`build_index`), its
/// name the flag and the keyword (`crate::args`); a default that depends on
/// the profile or the data comes from [`BuildParams::for_profile`] and the
/// build's fit (`index::fit`), not from the flag.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, clap::Args)]
pub struct BuildParams {
    /// Named composition of parts (`stratavec::profile`): diskann (id-order
    /// pages, node cache, beam search), starling (records shuffled into
    /// blocks with their neighbours, block search), gorgeous (adjacency
    /// lists cached before vectors, replicated blocks, two-stage search;
    /// give --memory-budget-mb to size its PQ codes), laser (neighbour codes
    /// in each record and none in RAM, visit-frequency node cache, cluster
    /// entry points, adaptive beam; l2 or cosine), pipeann (id-order pages,
    /// navigation graph, pipelined search with a waste-driven width),
    /// octopus (OctopusANN's C5: navigation graph, shuffled blocks, block
    /// search, dynamic width), tiered or ivf (second-tier memory), or auto
    /// (with --memory-budget-mb: each of diskann, starling, gorgeous, laser,
    /// pipeann and octopus is built over a 2% sample and searched, and the
    /// one predicted best for --objective is built; the build report's
    /// auto_plan says why). Default: diskann.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(crate::profile::build_names()))]
    pub profile: String,
    /// Distance: l2 (squared Euclidean), ip (maximum inner product; aliases
    /// inner_product, mips) or cosine (angular); uint8 and int8 data support
    /// l2 only. Default: l2.
    #[arg(long)]
    pub metric: Metric,
    /// Maximum out-degree R of the graph. Default: 64.
    #[arg(long, short = 'R')]
    pub graph_degree: usize,
    /// Build search list size L; at least R. Default: 128, or R when R is
    /// larger.
    #[arg(long)]
    pub complexity: usize,
    /// Pruning slack α (1.0-4.0) of the robust prune: an edge p→c is dropped
    /// when a neighbour n already kept has α·d(n, c) <= d(p, c); larger α
    /// drops fewer, keeping longer edges (fewer hops, more edges). Default:
    /// 1.2.
    #[arg(long)]
    pub alpha: f32,
    /// Insertion passes (1 = DiskANN's builder, 2 = the Vamana paper).
    /// Default: 1.
    #[arg(long)]
    pub passes: usize,
    /// PQ code bytes per vector kept in RAM for search (sub-spaces M); at
    /// most the dimension. More bytes: better recall, more memory. Default:
    /// 32, or the dimension when it is smaller; with --memory-budget-mb, profiles
    /// that cache the graph (gorgeous) choose it for the budget.
    #[arg(long)]
    pub pq_bytes: usize,
    /// Vectors sampled to train PQ. Default: 65536.
    #[arg(long)]
    pub pq_sample: usize,
    /// k-means iterations per PQ sub-space. Default: 10.
    #[arg(long)]
    pub pq_iters: usize,
    /// Disk page size in bytes: 4096, 8192 or 16384. Default: 4096, or for
    /// shuffled blocks (starling) the smallest that holds 2 records.
    #[arg(long)]
    pub page_size: usize,
    /// Largest insertion batch of the graph build, as a fraction of n.
    /// Default: 0.02.
    #[arg(long)]
    pub max_batch_fraction: f32,
    /// Seed of every random choice (PQ sample, insertion order, navigation
    /// sample): the same seed and data give a byte-identical index.
    /// Default: 42.
    #[arg(long)]
    pub seed: u64,
    /// Block shuffle of the records (Starling §4.1): none, bnp, bnf or bns;
    /// none keeps id order (DiskANN's coupled layout). Default: bnf for the
    /// starling and octopus profiles, none otherwise.
    #[serde(default = "no_shuffle")]
    #[arg(long)]
    pub shuffle: Shuffle,
    /// BNF/BNS iterations β. Default: 8.
    #[serde(default = "default_shuffle_iterations")]
    #[arg(long)]
    pub shuffle_iterations: usize,
    /// BNF/BNS gain threshold τ of the overlap ratio OR(G). Default: 0.01.
    #[serde(default = "default_shuffle_gain")]
    #[arg(long)]
    pub shuffle_gain: f64,
    /// Shuffle by the undirected graph (in- and out-neighbours); false uses
    /// out-neighbours only, as the paper does. Default: undirected when
    /// blocks hold 4 or more records.
    // `None`: by the records per block (`ShuffleParams::undirected`).
    #[serde(default)]
    #[arg(long)]
    pub shuffle_undirected: Option<bool>,
    /// Place each record beside its K nearest nodes within two hops in the
    /// graph (ranked by PQ) instead of beside its graph neighbours; 0: by
    /// the graph. Default: 24 when blocks hold 4 or more records, else 0.
    // `None`: by the records per block (`ShuffleParams::nearest`). An index
    // from before this choice placed by the graph: it reads as 0.
    #[serde(default = "by_the_graph")]
    #[arg(long, value_name = "K")]
    pub shuffle_nearest: Option<usize>,
    /// Share of the vectors (0 to 0.5) sampled into an in-memory navigation
    /// graph that picks each query's entry points (Starling §4.3); 0 = start
    /// every query at the medoid. Default: the profile's (0.005 for
    /// gorgeous, 0.01 for pipeann, 0.002 for octopus; 0 for diskann and
    /// starling, where with a BFS node cache around the medoid, starting
    /// elsewhere costs more reads than it saves).
    #[serde(default)]
    #[arg(long)]
    pub nav_sample: f32,
    /// Out-degree of the navigation graph. Default: 32.
    #[serde(default = "default_nav_degree")]
    #[arg(long)]
    pub nav_degree: usize,
    /// Disk layout when it is not the profile's: coupled (id order),
    /// blocked (needs a shuffle), replicated (one block per node with its
    /// neighbours' lists, Gorgeous §3.4) or separated (graph blocks, then
    /// vector pages). Default: the profile's, or what the shuffle implies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub layout: Option<LayoutKind>,
    /// Replicated and separated layouts: at most this many neighbour lists
    /// packed into a node's block (Gorgeous §4.1's R). Default: as many as
    /// fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub replicas: Option<usize>,
    /// The memory budget (MB, 10^6 bytes) the index will be opened with.
    /// Profiles that cache the graph (gorgeous) then choose their PQ bytes
    /// for it when --pq-bytes is not given, trying each size on a 1% sample
    /// (Gorgeous §4.1 ①); the build report's pq_plan shows the sizes tried.
    // Recorded in bytes (`memory::pq_plan`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long = "memory-budget-mb", value_name = "MB", value_parser = crate::args::megabytes)]
    pub memory_budget: Option<u64>,
    /// Order in which the graph cache holds adjacency lists (profiles with
    /// one: gorgeous): nav (distance to the navigation graph, Gorgeous
    /// §4.1), indegree (most linked first), bfs (from the medoid) or visits
    /// (most expanded by sample queries). Default: nav.
    // `memory::cache_rank`.
    #[serde(default)]
    #[arg(long)]
    pub cache_rank: CacheRank,
    /// Order in which the node cache holds whole records: bfs (from the
    /// medoid, filled at open), nav (nearest the navigation graph's nodes,
    /// where searches start), indegree (most linked first) or visits (most
    /// expanded by sample queries). Default: the profile's (visits for
    /// laser, pipeann and octopus, else bfs).
    // Any rank but bfs is computed by the build and written as `order.bin`
    // (`Profile::node_cache`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub node_cache_rank: Option<CacheRank>,
    /// The visits rank: the share of the rows searched in RAM as sample
    /// queries, whose expansions rank the cache (at least 1,000 and at most
    /// 10^6 queries), in (0, 1]. Default: 0.1.
    // `cache_rank::visit_queries`. An index from before this was a
    // parameter sampled 1%.
    #[serde(default = "built_before_visits_sample")]
    #[arg(long)]
    pub visits_sample: f32,
    /// Element type of the vectors stored on disk, when not the data's own:
    /// f16 (float data only) halves their bytes, so a block holds more
    /// records and the node cache more nodes, at a relative rounding error
    /// of 2^-11 per component in exact distances; values beyond ±65504 are
    /// refused. Default: the data's type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub store: Option<DType>,
    /// Laser profile: principal (PCA) dimensions the neighbour codes in each
    /// record cover, a multiple of 8 (AlayaLaser §3.2). Default: as many as
    /// the page holds, the page being the smallest that holds codes over
    /// two thirds of the dimensions (the build report says which).
    // `fit::default_code_dim`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub code_dim: Option<usize>,
    /// Laser profile: k-means clusters whose nearest vectors are the
    /// candidate entry points (AlayaLaser §4.1). Default: √n within
    /// 16..=1024.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub entry_clusters: Option<usize>,
    /// ivf profile: k-means clusters (paper 002 §6). Default: one per 100
    /// vectors.
    // `build_ivf::VECTORS_PER_CLUSTER`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub ivf_clusters: Option<usize>,
    /// ivf profile: clusters a vector may join, 1..=8 (1: no replication); a
    /// replica is a 4-byte address, not a copy. Default: 4.
    #[serde(default = "one")]
    #[arg(long)]
    pub ivf_replicas: usize,
    /// ivf profile: a further cluster is joined when its centroid is within
    /// (1 + this) of the nearest one's distance (SPANN's closure ε).
    /// Default: 0.2.
    #[serde(default = "default_ivf_closure")]
    #[arg(long)]
    pub ivf_closure: f32,
    /// ivf profile: where each vector is stored: frequency (beside the
    /// cluster sample queries read most, §6.2), primary (its nearest
    /// cluster) or none (id order: every member a small read). Default:
    /// frequency.
    #[serde(default)]
    #[arg(long)]
    pub ivf_grouping: crate::layout::ivf_assign::Grouping,
    /// ivf profile: clusters each sample query probes when the build counts
    /// how often each cluster is read (the frequency grouping's h_j, §6.2);
    /// best near the nprobe (-L) searches will use; at most a quarter of
    /// the clusters are probed. Default: 64.
    // A manifest without it was built with 8, the value before it was a
    // parameter.
    #[serde(default = "built_before_ivf_sample_nprobe")]
    #[arg(long)]
    pub ivf_sample_nprobe: usize,
    /// ivf profile: also keep PQ codes (--pq-bytes) and every cluster's
    /// members in RAM, so a search scores the probed members on the codes
    /// and reads only the best --rerank-factor x k vectors (IVF-PQ with
    /// refinement, as faiss's IVFPQ + refine or LanceDB's IVF_PQ; files
    /// `codes.bin`, `members.bin`). Default: false.
    #[serde(default)]
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub ivf_codes: bool,
    /// Graph profiles: the search estimates from extended-RaBitQ codes of
    /// this many bits a dimension (1-8) instead of PQ codes, and the
    /// two-stage refinement reads only candidates their error bounds leave
    /// undecided (`quant::exrabitq`, issue #57). The PQ codes are still
    /// made for the build's own ranking (placement, caches) and merges,
    /// and stay on disk. Default: none (PQ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub exrabitq_bits: Option<usize>,
    /// With --exrabitq-bits: the cluster centres vectors are coded
    /// against (1-65536; 1: the data's mean alone), so an estimate's error
    /// scales with a vector's distance to its centre, not to the mean
    /// (`quant::exrabitq_centres`; faiss's IVF-RaBitQ nlist). Default: one
    /// for every 400 vectors (a power of two, at most 256), or the mean
    /// alone where that bounds the rows' near pairs more narrowly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub exrabitq_centres: Option<usize>,
    /// Two-stage profiles (gorgeous): the index searches with the
    /// pipelined refinement by default (the settled candidates' vectors
    /// read while the search stage goes on, issue #22's composition): the
    /// lower latency at one query a thread, usually more reads a query.
    /// `--profile auto --objective latency` sets it where its trial was
    /// faster. A search's `--pipelined` still overrides it. Default: false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub pipelined_refinement: bool,
    /// A label-aware graph (needs labels): a closer neighbour occludes an
    /// edge only if it carries every label the edge's two ends share
    /// (FilteredVamana's pruning, Filtered-DiskANN §3.3), so each label's
    /// vectors stay linked among themselves and a filtered search walks
    /// through matches. Default: false.
    #[serde(default)]
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub label_aware: bool,
    /// With --profile auto: what the planner maximises, throughput (queries
    /// a second with the build's threads) or latency (one query's median at
    /// one a thread), at --target-recall. Default: throughput.
    #[serde(default)]
    #[arg(long)]
    pub objective: crate::autoplan::Objective,
    /// With --profile auto: queries to plan with (a vector file of the
    /// data's dimension, e.g. a sample of the query log): the trials search
    /// with up to 200 of them instead of rows held out of the data.
    /// Queries unlike the rows (questions against passages, example
    /// sentences against glosses) need longer lists than held-out rows, and
    /// which composition answers them best can change with that (issue
    /// #57). Default: rows held out of the data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub plan_queries: Option<std::path::PathBuf>,
    /// With --profile auto: the recall@10 the planner compares the
    /// profiles at, on held-out sample queries. Default: 0.95.
    #[serde(default = "default_target_recall")]
    #[arg(long)]
    pub target_recall: f64,
    /// With --profile auto: the device's sustained random 4 KiB reads a
    /// second, if known; else the planner probes it for a second on its
    /// sample index (REFERENCE.md: 88-110k at depth on this machine's disk).
    #[serde(default)]
    #[arg(long)]
    pub device_reads_per_s: Option<f64>,
    /// Parameters the caller left to the build, which picks them to fit the
    /// data (`index::fit`). Never written: the manifest holds the values
    /// used, and its `chosen` says why where they differ from the defaults.
    #[serde(skip)]
    #[arg(skip)]
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

fn default_target_recall() -> f64 {
    0.95
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

    /// These parameters with the parts of `profile` in place of their own
    /// profile's (what `--profile auto` does once it has chosen): the
    /// shuffle, layout, navigation sample and cache rank that
    /// [`Self::for_profile`] sets; everything else kept.
    pub fn with_profile(&self, profile: &str) -> Self {
        let parts = Self::for_profile(profile);
        BuildParams {
            profile: parts.profile,
            shuffle: parts.shuffle,
            nav_sample: parts.nav_sample,
            layout: parts.layout,
            node_cache_rank: parts.node_cache_rank,
            ..self.clone()
        }
    }

    /// These parameters with every one a planner chose (the keys of a
    /// manifest's `chosen`) taken from `built`, the parameters it built
    /// with: what an `auto` request is once the choices are made, so a
    /// cached `auto` index compares equal to the request that made it. A
    /// key `built` leaves out (a choice kept in its own file, such as the
    /// extended-RaBitQ centres) is left out here too.
    pub fn with_chosen<'a>(
        &self,
        built: &BuildParams,
        chosen: impl IntoIterator<Item = &'a String>,
    ) -> Self {
        let (Ok(serde_json::Value::Object(mut mine)), Ok(serde_json::Value::Object(theirs))) =
            (serde_json::to_value(self), serde_json::to_value(built))
        else {
            return self.clone();
        };
        // A layout choice sets every field `autoplan::variants::Layout`
        // applies: the records' shuffle into blocks, the page, the stored
        // type and laser's code dimensions.
        let fields = |key: &'a String| match key.as_str() {
            "layout" => crate::autoplan::variants::Layout::FIELDS.to_vec(),
            k => vec![k],
        };
        for key in chosen.into_iter().flat_map(fields) {
            match theirs.get(key) {
                Some(v) => mine.insert(key.to_string(), v.clone()),
                // Left out of `built` at its default (`skip_serializing_if`).
                None => mine.remove(key),
            };
        }
        match serde_json::from_value::<BuildParams>(serde_json::Value::Object(mine)) {
            Ok(p) => BuildParams {
                unset: self.unset,
                ..p
            },
            Err(_) => self.clone(),
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
        // A refinement left to the build: the latency objective measured
        // it (`stages::refinement`), any other kept the default.
        if other.unset.pipelined_refinement {
            let measured = other.objective == crate::autoplan::Objective::Latency;
            return self.builds_same_index(&BuildParams {
                pipelined_refinement: match measured {
                    true => self.pipelined_refinement,
                    false => other.pipelined_refinement,
                },
                unset: Unset {
                    pipelined_refinement: false,
                    ..other.unset
                },
                ..other.clone()
            });
        }
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

    /// The graph build's parameters among these.
    pub fn vamana(&self) -> crate::graph::VamanaParams {
        crate::graph::VamanaParams {
            degree: self.graph_degree,
            complexity: self.complexity,
            alpha: self.alpha,
            passes: self.passes,
            max_batch_fraction: self.max_batch_fraction,
            seed: self.seed,
        }
    }

    /// Whether either cache is ranked by visits (`cache_rank::by_visits`),
    /// which `visits_sample` sizes.
    pub fn ranks_by_visits(&self) -> bool {
        self.cache_rank == CacheRank::Visits || self.node_cache_rank == Some(CacheRank::Visits)
    }

    /// The layout the records are written in.
    pub fn layout_kind(&self) -> LayoutKind {
        LayoutKind::implied(self.layout, self.shuffle)
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
            profile: crate::profile::DEFAULT.into(),
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
            exrabitq_bits: None,
            exrabitq_centres: None,
            label_aware: false,
            pipelined_refinement: false,
            plan_queries: None,
            objective: Default::default(),
            target_recall: default_target_recall(),
            device_reads_per_s: None,
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
    /// `--profile auto`: every candidate's trial and prediction, and the
    /// choice (`autoplan`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_plan: Option<crate::autoplan::AutoPlan>,
}

pub const BUILD_REPORT: &str = "build_report.json";

/// Creates `path` and writes it through a buffer; errors name the file.
pub(super) fn write_file(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<()> {
    let mut w = BufWriter::new(std::fs::File::create(path).at("create", path)?);
    write(&mut w).and_then(|_| w.flush()).at("write", path)
}

/// The pool a build (or a merge: `role`) runs on, its threads named for it.
pub(crate) fn thread_pool(threads: usize, role: &'static str) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(move |i| format!("stratavec-{role}-{i}"))
        .build()
        .map_err(|e| Error::argument("threads", "a thread pool", e))
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
    let attached = Attached { ids, labels: None };
    build_index_with(data, attached, source, dir, params, threads, progress)
}

/// What a build keeps beside the vectors, one a row: the caller's ids
/// (returned by searches instead of row numbers) and labels (searches
/// filter by them, issue #56).
#[derive(Clone, Copy, Debug, Default)]
pub struct Attached<'a> {
    pub ids: Option<&'a [i64]>,
    pub labels: Option<LabelInput<'a>>,
}

/// [`build_index`] keeping `attached` in the index.
pub fn build_index_with(
    data: Vectors<'_>,
    attached: Attached<'_>,
    source: &str,
    dir: &Path,
    params: &BuildParams,
    threads: usize,
    progress: &dyn Progress,
) -> Result<BuildReport> {
    let given = super::stages::Given::default();
    build_given(
        data, attached, source, dir, params, threads, progress, given,
    )
}

/// [`build_index`] over a graph already built on `data` with `params`'
/// graph parameters, and with the PQ `codebook` where one was trained on
/// `data` at `params`' PQ bytes: the planner's trials (`autoplan`) lay out
/// one sample graph in each profile's parts instead of building it again
/// for each, and train each PQ size once for every profile tried at it.
pub(crate) fn build_over_graph(
    data: Vectors<'_>,
    dir: &Path,
    params: &BuildParams,
    threads: usize,
    progress: &dyn Progress,
    graph: (crate::graph::Graph, crate::graph::BuildStats),
    codebook: Option<crate::quant::pq::PqCodebook>,
) -> Result<BuildReport> {
    let given = super::stages::Given {
        graph: Some(graph),
        codebook,
        ..Default::default()
    };
    let attached = Attached::default();
    build_given(
        data,
        attached,
        "the planner's sample",
        dir,
        params,
        threads,
        progress,
        given,
    )
}

#[allow(clippy::too_many_arguments)]
fn build_given(
    data: Vectors<'_>,
    attached: Attached<'_>,
    source: &str,
    dir: &Path,
    params: &BuildParams,
    threads: usize,
    progress: &dyn Progress,
    given: super::stages::Given,
) -> Result<BuildReport> {
    let t_all = Instant::now();
    let dim = data.dim();
    let n = data.elems().len() / dim;
    let data_dtype = data.elems().dtype();
    let Attached { ids, labels } = attached;
    check_ids(ids, n, source)?;
    if let Some(l) = labels {
        l.check(n, source)?;
    }
    if params.label_aware && labels.is_none() {
        return Err(Error::argument(
            "label_aware",
            "labels to build by (--labels or --label-column)",
            "none",
        ));
    }
    // `auto`: the planner's trials choose the profile first.
    let (auto_params, auto_plan, mut chosen) = match params.profile == crate::autoplan::AUTO {
        true => super::build_auto::resolve(&data, params, dir, threads, progress)?,
        false => (params.clone(), None, BTreeMap::new()),
    };
    let params = &auto_params;
    // Every check that the parameters can work runs here, before any work.
    let pq_unset = params.unset.pq_bytes;
    let refinement_unset = params.unset.pipelined_refinement;
    let (params, fitted) = fit(params, n, dim, data_dtype)?;
    chosen.extend(fitted);
    check_params(&params, n, dim, data_dtype)?;
    let plan = crate::profile::plan(&params)?;
    for (field, why) in &chosen {
        progress.note(&format!("{field} = {why}"));
    }
    // What the records hold (the manifest's dtype).
    let dtype = stored_dtype(params.store, data_dtype)?;
    let pool = thread_pool(threads, "build")?;
    let mut report = BuildReport {
        n,
        dim,
        threads: threads.max(1),
        chosen: chosen.clone(),
        ..Default::default()
    };
    if let Some(p) = auto_plan {
        report.stages.push(("auto plan".into(), p.seconds));
        report.auto_plan = Some(p);
    }
    let staging = Staging::new(dir)?;
    checkpoint(progress, dir, "prepare")?;
    let t = Instant::now();
    let f32_data = prepare(&data, &pool, &params, dtype, source)?;
    report
        .stages
        .push(("prepare".into(), t.elapsed().as_secs_f64()));
    if !plan.graph() {
        let input = super::build_ivf::Input {
            data: &f32_data,
            data_dtype,
            dim,
            ids,
            labels,
            given: Default::default(),
        };
        return super::build_ivf::build(&input, staging, &params, &pool, report, t_all);
    }
    let aware = labels.filter(|_| params.label_aware).map(|l| l.sets);
    let space = crate::graph::BuildSpace::new(&f32_data, dim, params.metric).with_labels(aware);
    let build = Build {
        measure_refinement: params.objective == crate::autoplan::Objective::Latency
            && refinement_unset,
        space,
        params,
        plan,
        chosen,
        report,
        data: &f32_data,
        elems: data.elems(),
        ids,
        labels,
        dim,
        n,
        dtype,
        pool: &pool,
        progress,
        dir,
        staging,
        files: Vec::new(),
        nested: 0.0,
        given,
    };
    super::stages::run(build, pq_unset, t_all)
}

/// The f32 view the build works on: borrowed when possible, checked
/// finite (and within f16's range when stored as halves); cosine data
/// normalised once (the stored vectors are the normalised ones too).
fn prepare<'a>(
    data: &Vectors<'a>,
    pool: &rayon::ThreadPool,
    params: &BuildParams,
    dtype: DType,
    source: &str,
) -> Result<Cow<'a, [f32]>> {
    let dim = data.dim();
    pool.install(|| -> Result<Cow<[f32]>> {
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
    build_from_input(table, columns, None, dir, params, threads, progress)
}

/// [`build_from_table`] or [`build_from_file`] by the file's kind, keeping
/// `labels` (one set a row) in the index.
pub fn build_from_input(
    data_path: &Path,
    columns: &crate::data::TableColumns,
    labels: Option<LabelInput<'_>>,
    dir: &Path,
    params: &BuildParams,
    threads: usize,
    progress: &dyn Progress,
) -> Result<BuildReport> {
    if !crate::data::is_table(data_path) {
        let file = crate::data::open(data_path)?;
        let Some(vectors) = file.vectors() else {
            return Err(Error::argument(
                format!("{}", data_path.display()),
                "contiguous rows",
                "interleaved rows",
            ));
        };
        let source = data_path.display().to_string();
        let attached = Attached { ids: None, labels };
        return build_index_with(vectors, attached, &source, dir, params, threads, progress);
    }
    let table = data_path;
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
    if labels.is_some() && imported.labels.is_some() {
        return Err(Error::argument(
            "labels",
            "a label matrix or a label column, not both",
            "both",
        ));
    }
    let from_table = imported.labels.as_ref().map(|t| LabelInput {
        sets: &t.sets,
        names: t.names.as_deref(),
    });
    let attached = Attached {
        ids: imported.ids.as_deref(),
        labels: labels.or(from_table),
    };
    build_index_with(vectors, attached, &source, dir, params, threads, progress)
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
    let columns = crate::data::TableColumns::default();
    build_from_input(data_path, &columns, None, dir, params, threads, progress)
}
