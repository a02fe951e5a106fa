//! The named compositions (docs/architecture.md, "How a plan becomes
//! running parts"; COMPOSITION.md, example D). A profile is nothing more than a
//! recorded choice of parts: how the build lays records out, what the
//! memory planner fills after the codes, and which search runs by default.
//! Everything below reads a [`Profile`]; nothing else compares profile
//! names, so a new profile is one entry here plus its parts.

use crate::error::{Error, Result};
use crate::index::BuildParams;
use crate::layout::shuffle::Shuffle;
use crate::layout::LayoutKind;
use crate::memory::cache_rank::CacheRank;
use crate::memory::planner::Part;
use crate::plan::{CodesPart, EntryPart, Plan, SearchPart, PLAN_VERSION};
use crate::search::WidthPolicy;

/// One composition of parts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Profile {
    pub name: &'static str,
    /// One line for `--help` and reports.
    pub about: &'static str,
    /// Block shuffle of the records (Starling §4.1); `None` keeps id order.
    pub shuffle: Shuffle,
    /// The layout, where the shuffle does not imply it (coupled without a
    /// shuffle, blocked with one): Gorgeous's replicated blocks.
    pub layout: Option<LayoutKind>,
    /// What the memory planner fills, in this order, once the codes,
    /// I/O buffers and the layout's own map are in (Gorgeous §4.1 ②–④).
    pub memory: &'static [Part],
    /// The order the node cache takes records in (`memory::cache_rank`):
    /// `Bfs` fills it breadth-first from the medoid at open (DiskANN); any
    /// other rank is computed at build and kept as `order.bin`.
    pub node_cache: CacheRank,
    /// The search that runs by default, with its switches: block search
    /// and the pipeline (Starling §4.2), the two-stage search (Gorgeous
    /// §4.2), the pipelined search (OctopusANN §4.3.2), and how the reads
    /// outstanding grow (OctopusANN §4.3.1).
    pub search: SearchPart,
    /// Build defaults: the navigation graph's share of the vectors
    /// (Starling §4.3, Gorgeous §4.1 ②); 0 starts at the medoid.
    pub nav_sample: f32,
    /// Whether `--profile auto` tries it (`autoplan`): the graph profiles
    /// for an SSD; the cluster (ivf) and memory-tier (tiered) profiles
    /// serve other needs (a tier slower than RAM, almost nothing in RAM).
    pub planned: bool,
}

/// The profile a build uses unless told otherwise (`PROFILES[0]`).
pub const DEFAULT: &str = "diskann";

/// Every profile, the default first.
pub const PROFILES: &[Profile] = &[
    Profile {
        name: "diskann",
        about: "DiskANN: id-order records, PQ codes and a BFS node cache in RAM, beam search",
        shuffle: Shuffle::None,
        layout: None,
        memory: &[Part::Nav, Part::Nodes],
        node_cache: CacheRank::Bfs,
        search: SearchPart::Beam {
            width: WidthPolicy::Fixed,
        },
        nav_sample: 0.0,
        planned: true,
    },
    Profile {
        name: "starling",
        about: "Starling: records shuffled into blocks (BNF), block search with the pipeline",
        shuffle: Shuffle::Bnf,
        layout: None,
        memory: &[Part::Nav, Part::Nodes],
        node_cache: CacheRank::Bfs,
        search: SearchPart::Block {
            pipeline: true,
            width: WidthPolicy::Fixed,
        },
        nav_sample: 0.0,
        planned: true,
    },
    Profile {
        name: "gorgeous",
        about: "Gorgeous: adjacency lists cached before vectors, two-stage search",
        shuffle: Shuffle::None,
        layout: Some(LayoutKind::Replicated),
        memory: &[Part::Nav, Part::Adjacency, Part::Nodes],
        node_cache: CacheRank::Bfs,
        search: SearchPart::TwoStage { pipelined: false },
        nav_sample: 0.005,
        planned: true,
    },
    Profile {
        name: "laser",
        about:
            "AlayaLaser: neighbour codes in each record (no codes in RAM), in-degree node cache, \
                cluster entry points, adaptive beam (early dispatch an option)",
        shuffle: Shuffle::None,
        layout: Some(LayoutKind::Laser),
        // The entry candidates (§4.1), then the node cache. AlayaLaser
        // ranks it by in-degree (§3.3); ranked by how often sample
        // searches from the cluster entries expand each node (exact
        // distances, `memory::cache_rank`) it serves more: on
        // wordnet-mpnet at L = 28, 3.20 hops a query against 2.37 and 27.7
        // reads against 28.7; on wordnet-minilm at L = 60, 7.7 against 5.2
        // and 54.5 reads against 57.3 (`--node-cache-rank indegree` keeps
        // the paper's rule).
        memory: &[Part::Nav, Part::Nodes],
        node_cache: CacheRank::Visits,
        search: SearchPart::Laser,
        nav_sample: 0.0,
        planned: true,
    },
    Profile {
        name: "pipeann",
        about: "PipeANN: id-order records, navigation graph entry, pipelined search with \
                waste-driven width",
        shuffle: Shuffle::None,
        layout: None,
        memory: &[Part::Nav, Part::Nodes],
        // As octopus's: the records its searches, started at the
        // navigation graph, expand most. A breadth-first cache from the
        // medoid holds the approach the navigation graph skips: on
        // wordnet-minilm (L = 40, 1 thread x 1 query) 38.3 reads a query
        // with it against 36.2 (`benchmarks/results/pipeann-latency-384.jsonl`,
        // pipeann-bfs against pipeann).
        node_cache: CacheRank::Visits,
        search: SearchPart::Pipelined {
            width: WidthPolicy::Adaptive,
        },
        // PipeANN enters through an in-memory graph over a sample (its
        // `mem_L` search).
        nav_sample: 0.01,
        planned: true,
    },
    Profile {
        name: "octopus",
        about: "OctopusANN (C5): navigation graph, shuffled blocks with block search, \
                dynamic width (doubling)",
        shuffle: Shuffle::Bnf,
        layout: None,
        memory: &[Part::Nav, Part::Nodes],
        // The cache of the records its searches expand most, counted over
        // sample queries started at the navigation graph (OctopusANN §4.1's
        // visit-frequency cache): a breadth-first cache from the medoid
        // holds the approach a navigation graph skips, and cost C5 3% more
        // reads than starling (BENCHMARKS.md, issue #22).
        node_cache: CacheRank::Visits,
        // OctopusANN's C5 grows its width by a schedule over the search's
        // progress (§4.3.1); measured here (BENCHMARKS.md, issue #22) the
        // schedule's width-1 start costs hops that a saturated device
        // pays for, 0.73-0.84x starling's QPS, where AlayaLaser's doubling
        // (1, 2, 4, .. W a hop) gave 1.01-1.03x.
        search: SearchPart::Block {
            pipeline: true,
            width: WidthPolicy::Double,
        },
        // OctopusANN samples 0.1% of the vectors (§5.1); 0.2% keeps a few
        // hundred starts at 10^5 vectors and leaves the rest to the cache.
        nav_sample: 0.002,
        planned: true,
    },
    Profile {
        name: "tiered",
        about: "Second-tier memory (paper 002 §5): compact CSR records (no page padding, packed \
                ids), PQ codes in RAM, beam search across many queries a thread; search it \
                with --io mmap or simulated:LAT_NS,GBPS",
        shuffle: Shuffle::None,
        layout: Some(LayoutKind::Csr),
        memory: &[Part::Nav, Part::Nodes],
        node_cache: CacheRank::Bfs,
        search: SearchPart::Beam {
            width: WidthPolicy::Fixed,
        },
        nav_sample: 0.0,
        planned: false,
    },
    Profile {
        name: "ivf",
        about: "Decoupled cluster index (paper 002 §6): balanced clusters, vectors stored once \
                (grouped by the cluster that reads them most), replicas as addresses; -L is \
                the clusters probed",
        shuffle: Shuffle::None,
        layout: Some(LayoutKind::Ivf),
        memory: &[],
        node_cache: CacheRank::Bfs,
        search: SearchPart::Clusters,
        nav_sample: 0.0,
        planned: false,
    },
];

impl Profile {
    /// How this profile lays records out by default.
    pub fn layout_kind(&self) -> LayoutKind {
        LayoutKind::implied(self.layout, self.shuffle)
    }

    /// The plan a build with `params` (this profile's, with the caller's
    /// overrides) makes, before it knows what the data decides (whether the
    /// navigation graph earns its place: `Plan::as_built`).
    pub fn plan(&self, params: &BuildParams) -> Plan {
        let layout = params.layout_kind();
        // Laser records carry their neighbours' codes (AlayaLaser §3.2);
        // a cluster index keeps codes only when asked (IVF-PQ); every other
        // layout's search estimates from PQ codes in RAM.
        let codes = match layout {
            LayoutKind::Laser => CodesPart::Records,
            LayoutKind::Ivf if params.ivf_codes => CodesPart::IvfPq,
            LayoutKind::Ivf => CodesPart::None,
            _ if params.exrabitq_bits.is_some() => CodesPart::ExRabitq,
            _ => CodesPart::Pq,
        };
        let entry = match layout {
            // Laser searches start at cluster entries (§4.1); a cluster
            // index has no graph to enter.
            LayoutKind::Laser => EntryPart::Clusters,
            LayoutKind::Ivf => EntryPart::Medoid,
            _ if params.nav_sample > 0.0 => EntryPart::NavGraph,
            _ => EntryPart::Medoid,
        };
        let resident = self
            .memory
            .iter()
            .copied()
            .filter(|&p| p != Part::Nav || entry != EntryPart::Medoid)
            .collect();
        Plan {
            version: PLAN_VERSION,
            layout,
            codes,
            entry,
            resident,
            node_cache: params.node_cache_rank.unwrap_or(self.node_cache),
            graph_cache: params.cache_rank,
            search: match self.search {
                SearchPart::TwoStage { .. } => SearchPart::TwoStage {
                    pipelined: params.pipelined_refinement,
                },
                search => search,
            },
            ids: false,
            labels: false,
        }
    }
}

/// The plan `params` build (`Profile::plan` of their profile).
pub fn plan(params: &BuildParams) -> Result<Plan> {
    Ok(get(&params.profile)?.plan(params))
}

/// Whether the profile `params` build searches with the two-stage search
/// (its refinement can settle from bounds and be pipelined); false for an
/// unknown profile (`auto`).
pub fn two_stage(params: &BuildParams) -> bool {
    plan(params).is_ok_and(|p| matches!(p.search, SearchPart::TwoStage { .. }))
}

/// The first profile (the default first) whose records are laid out as
/// `kind`: what a relayout into that layout makes of an index.
pub fn of_layout(kind: LayoutKind) -> &'static Profile {
    PROFILES
        .iter()
        .find(|p| p.layout_kind() == kind)
        .unwrap_or(&PROFILES[0])
}

/// The profile called `name`; an error lists the known ones.
pub fn get(name: &str) -> Result<&'static Profile> {
    PROFILES
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| Error::argument("profile", format!("one of {}", names().join(", ")), name))
}

/// The names of every profile, the default first.
pub fn names() -> Vec<&'static str> {
    PROFILES.iter().map(|p| p.name).collect()
}

/// The profiles `--profile auto` tries, in order.
pub fn planned() -> Vec<&'static str> {
    PROFILES
        .iter()
        .filter(|p| p.planned)
        .map(|p| p.name)
        .collect()
}

/// What `build --profile` takes: every profile, and `auto` (the planner
/// chooses one, `autoplan`).
pub fn build_names() -> Vec<&'static str> {
    let mut v = names();
    v.push(crate::autoplan::AUTO);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_is_found_by_its_name_and_unknown_names_list_them() {
        for p in PROFILES {
            assert_eq!(get(p.name).unwrap(), p);
        }
        assert_eq!(PROFILES[0].name, DEFAULT);
        let e = get("gorgeus").unwrap_err().to_string();
        assert!(
            e.contains("diskann, starling, gorgeous, laser, pipeann, octopus, tiered, ivf"),
            "{e}"
        );
        assert!(e.contains("gorgeus"), "{e}");
    }
}
