//! The systems `stratavec bench --profiles` can name: the two profiles, and
//! each Starling technique alone on top of `diskann` (the ablation the
//! Starling paper reports in §5.4 and issue #4 asks for). A variant is an
//! index to build (or reuse) plus how to open and search it, so one index
//! serves every variant that only differs at search time.

use anyhow::{bail, Result};
use stratavec::data::DType;
use stratavec::layout::ivf_assign::Grouping;
use stratavec::layout::shuffle::Shuffle;
use stratavec::layout::LayoutKind;
use stratavec::memory::cache_rank::CacheRank;
use stratavec::search::WidthPolicy;

#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    /// The name given to `--profiles` (the system is `stratavec-<name>`).
    pub name: &'static str,
    /// What the row measures, for reports.
    pub about: &'static str,
    /// Build profile (its memory plan and search defaults).
    pub profile: &'static str,
    pub shuffle: Shuffle,
    /// The layout, when not what the shuffle implies.
    pub layout: Option<LayoutKind>,
    /// Page size, when not the bench's (Gorgeous §5.3's 8 KB blocks).
    pub page_size: Option<usize>,
    /// Build a navigation graph, over `nav_share` of the vectors unless the
    /// bench's --nav-sample says otherwise.
    pub nav: bool,
    pub nav_share: f32,
    /// The memory planner chooses PQ bytes for the budget (the bench's
    /// --pq-bytes is ignored).
    pub plan_pq: bool,
    pub page_search: bool,
    pub pipeline: bool,
    pub two_stage: bool,
    /// Open with the graph cache (indexes that have one).
    pub graph_cache: bool,
    /// Open with the node cache (the budget's remainder).
    pub node_cache: bool,
    /// Open with the entry part the index has (navigation graph, cluster
    /// entries) even when the variant builds no navigation graph.
    pub entries: bool,
    /// Laser search: widening rounds (AlayaLaser §4.2) and the share of a
    /// round that must arrive before the next (§4.3; 1 = hop barrier).
    pub adaptive_beam: bool,
    pub dispatch_ratio: f32,
    /// PipeANN's pipelined search (OctopusANN §4.3.2) and how a query's
    /// reads grow to W (§4.3.1).
    pub pipelined: bool,
    pub width: WidthPolicy,
    /// Element type the records store, when not the bench's --store.
    pub store: Option<DType>,
    /// ivf profile (paper 002 §6): clusters a vector joins, and where it
    /// is stored.
    pub ivf_replicas: usize,
    pub ivf_grouping: Grouping,
    /// ivf profile: PQ codes and members in RAM (IVF-PQ with refinement).
    pub ivf_codes: bool,
    /// The node cache's order when not the profile's (`--node-cache-rank`).
    pub node_rank: Option<CacheRank>,
    /// Microseconds a worker polls for a completion before it sleeps, when
    /// not the bench's --poll-us.
    pub poll_us: Option<u32>,
    /// io_uring submission through a kernel thread (SQPOLL), when not the
    /// bench's --sqpoll.
    pub sqpoll: Option<bool>,
}

const BASE: Variant = Variant {
    name: "",
    about: "",
    profile: "diskann",
    shuffle: Shuffle::None,
    layout: None,
    page_size: None,
    nav: false,
    nav_share: 0.02,
    plan_pq: false,
    page_search: false,
    pipeline: false,
    two_stage: false,
    graph_cache: true,
    node_cache: true,
    entries: false,
    adaptive_beam: false,
    dispatch_ratio: 1.0,
    pipelined: false,
    width: WidthPolicy::Fixed,
    store: None,
    ivf_replicas: 1,
    ivf_grouping: Grouping::Frequency,
    ivf_codes: false,
    node_rank: None,
    poll_us: None,
    sqpoll: None,
};

/// The laser profile as searched by default (AlayaLaser): neighbour codes
/// in the records, node cache (visit-frequency), cluster entries, adaptive
/// beam. Its ablation adds one part at a time (§5.3, Figure 14); the last,
/// early dispatch, is `laser-dispatch` (off by default: see
/// `DEFAULT_DISPATCH_RATIO`).
const LASER: Variant = Variant {
    name: "laser",
    about: "the laser profile: neighbour codes in each record, visit-frequency cache, cluster \
            entries, adaptive beam",
    profile: "laser",
    layout: Some(LayoutKind::Laser),
    entries: true,
    adaptive_beam: true,
    ..BASE
};

/// The gorgeous profile as built by default: PQ bytes planned for the
/// budget, replicated blocks, navigation graph, graph cache, two-stage
/// search. Its ablations change one part each.
const GORGEOUS: Variant = Variant {
    name: "gorgeous",
    about: "the gorgeous profile as built by default: planned PQ bytes, graph cache, \
            replicated blocks, navigation graph, two-stage search",
    profile: "gorgeous",
    layout: Some(LayoutKind::Replicated),
    nav: true,
    // Gorgeous §4.1 ②: 0.5% of the vectors.
    nav_share: 0.005,
    plan_pq: true,
    two_stage: true,
    ..BASE
};

/// PipeANN as its profile builds it: id-order records, navigation graph
/// entry, pipelined search with the waste-driven width (OctopusANN's C4).
const PIPEANN: Variant = Variant {
    name: "pipeann",
    about: "the pipeann profile: navigation graph + pipelined search + adaptive width (C4), \
            visit-frequency node cache",
    profile: "pipeann",
    nav: true,
    nav_share: 0.01,
    pipelined: true,
    width: WidthPolicy::Adaptive,
    ..BASE
};

/// Gorgeous with the pipelined refinement (issue #22's composition).
const GORGEOUS_PIPE: Variant = Variant {
    name: "gorgeous-pipe",
    about: "gorgeous with pipelined refinement: settled candidates' vectors read during the \
            search stage (issue #22's composition)",
    pipelined: true,
    ..GORGEOUS
};

/// OctopusANN's C5 as its profile builds it: navigation graph, BNF blocks,
/// block search (with Starling's I/O–compute overlap) and dynamic width.
const OCTOPUS: Variant = Variant {
    name: "octopus",
    about: "the octopus profile (C5): navigation graph + shuffle + block search + dynamic width \
            (doubling)",
    profile: "octopus",
    shuffle: Shuffle::Bnf,
    nav: true,
    nav_share: 0.002,
    page_search: true,
    pipeline: true,
    width: WidthPolicy::Double,
    ..BASE
};

/// Paper 002 §5 as its profile builds it: compact CSR records (no page
/// padding, packed ids), PQ codes and a node cache in RAM, beam search.
/// Meant for `--tier mmap,simulated:...`; on the SSD its reads widen to
/// the pages around each record.
const TIERED: Variant = Variant {
    name: "tiered",
    about: "the tiered profile: compact CSR records for a byte-granular memory tier",
    profile: "tiered",
    layout: Some(LayoutKind::Csr),
    ..BASE
};

/// Paper 002 §6 as its profile builds it: balanced clusters, each vector
/// in up to 4 (replicas as addresses), stored beside the cluster that reads
/// it most; -L is the clusters probed.
const IVF: Variant = Variant {
    name: "ivf",
    about: "the ivf profile: decoupled clusters, replication 4, grouping by frequency",
    profile: "ivf",
    layout: Some(LayoutKind::Ivf),
    node_cache: false,
    ivf_replicas: 4,
    ..BASE
};

/// The pipelined search over octopus's index: BNF blocks, block search,
/// navigation graph, adaptive width.
const PIPEANN_BLOCKS: Variant = Variant {
    name: "pipeann-blocks",
    about: "the pipelined search with block search over octopus's shuffled blocks \
            and navigation graph, adaptive width",
    page_search: true,
    pipeline: false,
    pipelined: true,
    width: WidthPolicy::Adaptive,
    ..OCTOPUS
};

/// Every variant, in the order reports list them.
pub const ALL: &[Variant] = &[
    Variant {
        name: "diskann",
        about: "DiskANN: id-order coupled layout, medoid entry, beam search",
        ..BASE
    },
    Variant {
        name: "starling-shuffle",
        about: "diskann + BNF block shuffling only (blocked layout, no block search)",
        profile: "starling",
        shuffle: Shuffle::Bnf,
        ..BASE
    },
    Variant {
        name: "starling-page",
        about: "diskann + block search only (id-order pages)",
        page_search: true,
        ..BASE
    },
    Variant {
        name: "starling-nav",
        about: "diskann + in-memory navigation graph only",
        nav: true,
        ..BASE
    },
    Variant {
        name: "starling-pipeline",
        about: "diskann + I/O-compute pipeline only",
        pipeline: true,
        ..BASE
    },
    Variant {
        name: "starling",
        about: "the starling profile as built by default: shuffle + block search + pipeline",
        profile: "starling",
        shuffle: Shuffle::Bnf,
        page_search: true,
        pipeline: true,
        ..BASE
    },
    Variant {
        name: "starling-all",
        about: "every Starling technique: the starling profile + navigation graph",
        profile: "starling",
        shuffle: Shuffle::Bnf,
        nav: true,
        page_search: true,
        pipeline: true,
        ..BASE
    },
    GORGEOUS,
    Variant {
        name: "gorgeous-two-stage",
        about: "diskann's index (node cache, no graph cache) + two-stage search only",
        two_stage: true,
        ..BASE
    },
    Variant {
        name: "gorgeous-graph-cache",
        about: "gorgeous on the coupled layout: graph cache + two-stage search \
                (a cached list has no vector, so the cache needs the refinement stage)",
        layout: Some(LayoutKind::Coupled),
        ..GORGEOUS
    },
    Variant {
        name: "gorgeous-replicated",
        about: "gorgeous without the graph cache: replicated blocks + node cache + two-stage",
        graph_cache: false,
        ..GORGEOUS
    },
    Variant {
        name: "gorgeous-separated",
        about: "gorgeous on the separated layout (graph blocks, then vector pages; §5.3 Sep)",
        layout: Some(LayoutKind::Separated),
        ..GORGEOUS
    },
    Variant {
        name: "gorgeous-8k",
        about: "gorgeous with 8 KB replicated blocks (§5.3)",
        page_size: Some(8192),
        ..GORGEOUS
    },
    GORGEOUS_PIPE,
    Variant {
        name: "laser-layout",
        about: "the laser layout alone: no node cache, medoid entry, W reads a hop, hop barrier",
        node_cache: false,
        entries: false,
        adaptive_beam: false,
        dispatch_ratio: 1.0,
        ..LASER
    },
    Variant {
        name: "laser-cache",
        about: "laser layout + visit-frequency node cache",
        entries: false,
        adaptive_beam: false,
        dispatch_ratio: 1.0,
        ..LASER
    },
    Variant {
        name: "laser-entry",
        about: "laser layout + cache + cluster entry points",
        adaptive_beam: false,
        dispatch_ratio: 1.0,
        ..LASER
    },
    LASER,
    Variant {
        name: "laser-dispatch",
        about: "laser + early dispatch (§4.3): the next round goes out once half of this \
                round's reads are in",
        dispatch_ratio: 0.5,
        ..LASER
    },
    Variant {
        name: "octopus-width",
        about: "diskann + dynamic width only (OctopusANN §4.3.1, the scheduled policy)",
        width: WidthPolicy::Schedule,
        ..BASE
    },
    Variant {
        name: "octopus-pipe",
        about: "diskann + PipeANN's pipelined search only (fixed width)",
        pipelined: true,
        ..BASE
    },
    Variant {
        name: "octopus-c2",
        about: "diskann + pipelined search + adaptive width (OctopusANN's C2)",
        pipelined: true,
        width: WidthPolicy::Adaptive,
        ..BASE
    },
    PIPEANN,
    PIPEANN_BLOCKS,
    Variant {
        name: "pipeann-blocks-f16",
        about: "pipeann-blocks over f16 records (4 a 4 KB block at 384-d instead of 2)",
        store: Some(DType::F16),
        ..PIPEANN_BLOCKS
    },
    OCTOPUS,
    Variant {
        name: "octopus-schedule",
        about: "octopus (C5) with OctopusANN's scheduled width instead of the doubling one",
        width: WidthPolicy::Schedule,
        ..OCTOPUS
    },
    Variant {
        name: "diskann-poll",
        about: "diskann with its workers polling for completions instead of sleeping",
        // As long as the pipelined searches poll by default.
        poll_us: Some(stratavec::search::PIPELINED_POLL_US),
        ..BASE
    },
    Variant {
        name: "pipeann-sleep",
        about: "pipeann with its workers sleeping until a completion arrives instead of polling",
        poll_us: Some(0),
        ..PIPEANN
    },
    Variant {
        name: "diskann-sqpoll",
        about: "diskann with its reads submitted (and their completions' work done) by an \
                io_uring kernel thread on another core (SQPOLL)",
        sqpoll: Some(true),
        ..BASE
    },
    Variant {
        name: "pipeann-sqpoll",
        about: "pipeann with its reads submitted by an io_uring kernel thread (SQPOLL)",
        sqpoll: Some(true),
        ..PIPEANN
    },
    Variant {
        name: "gorgeous-pipe-sqpoll",
        about: "gorgeous-pipe with its reads submitted by an io_uring kernel thread (SQPOLL)",
        sqpoll: Some(true),
        ..GORGEOUS_PIPE
    },
    Variant {
        name: "octopus-navcache",
        about: "octopus (C5) with its node cache nearest the navigation graph's nodes, where its \
                searches start, instead of breadth-first from the medoid",
        node_rank: Some(CacheRank::Nav),
        ..OCTOPUS
    },
    Variant {
        name: "octopus-fixed",
        about: "octopus (C5) with every hop W reads wide from the first (no dynamic width)",
        width: WidthPolicy::Fixed,
        ..OCTOPUS
    },
    Variant {
        name: "octopus-bfs",
        about: "octopus (C5) with DiskANN's node cache, breadth-first from the medoid, instead \
                of the visit-frequency one",
        node_rank: Some(CacheRank::Bfs),
        ..OCTOPUS
    },
    Variant {
        name: "pipeann-bfs",
        about: "pipeann with DiskANN's node cache, breadth-first from the medoid, instead of \
                the visit-frequency one",
        node_rank: Some(CacheRank::Bfs),
        ..PIPEANN
    },
    Variant {
        name: "octopus-adaptive",
        about: "octopus (C5) with the waste-driven width instead of the doubling one",
        width: WidthPolicy::Adaptive,
        ..OCTOPUS
    },
    TIERED,
    Variant {
        name: "tiered-f16",
        about: "the tiered profile over f16 records",
        store: Some(DType::F16),
        ..TIERED
    },
    IVF,
    Variant {
        name: "ivf-r1",
        about: "ivf without replication, each vector in its cluster's group (classic IVF)",
        ivf_replicas: 1,
        ..IVF
    },
    Variant {
        name: "ivf-r2",
        about: "ivf, replication 2, grouping by frequency",
        ivf_replicas: 2,
        ..IVF
    },
    Variant {
        name: "ivf-r8",
        about: "ivf, replication 8, grouping by frequency",
        ivf_replicas: 8,
        ..IVF
    },
    Variant {
        name: "ivf-nogroup",
        about: "ivf, replication 4, vectors in id order (every member a small read, §6.1)",
        ivf_grouping: Grouping::None,
        ..IVF
    },
    Variant {
        name: "ivf-pq",
        about: "ivf without replication, with PQ codes and members in RAM: probed members \
                scored on codes, the best rerank-factor x k vectors read (IVF-PQ + refine)",
        ivf_replicas: 1,
        ivf_codes: true,
        ..IVF
    },
    Variant {
        name: "ivf-pq-r4",
        about: "ivf-pq with replication 4 (grouping by frequency)",
        ivf_codes: true,
        ..IVF
    },
    Variant {
        name: "laser-wide",
        about: "the laser profile with every round W wide (no adaptive beam): for one query \
                alone on the device, where a wide first round costs no time",
        adaptive_beam: false,
        ..LASER
    },
];

pub fn find(name: &str) -> Result<&'static Variant> {
    match ALL.iter().find(|v| v.name == name) {
        Some(v) => Ok(v),
        None => {
            let names: Vec<&str> = ALL.iter().map(|v| v.name).collect();
            bail!(
                "--profiles: expected one of {}, found {name:?}",
                names.join(", ")
            )
        }
    }
}

impl Variant {
    /// The navigation graph's sample ratio in the index this variant needs:
    /// the bench's --nav-sample when given, else the variant's own.
    pub fn nav_sample(&self, mu: Option<f32>) -> f32 {
        if self.nav {
            mu.unwrap_or(self.nav_share)
        } else {
            0.0
        }
    }

    /// Directory name of the index (variants that differ only at search
    /// or open time share it; the shuffle follows from the profile). A
    /// planned index is named for its budget instead of its PQ bytes.
    pub fn index_name(
        &self,
        dataset: &str,
        r: usize,
        l: usize,
        pq: usize,
        mu: Option<f32>,
        budget_bytes: u64,
    ) -> String {
        let nav = if self.nav {
            format!("-nav{}", self.nav_sample(mu))
        } else {
            String::new()
        };
        let pq = if self.plan_pq {
            format!("pqplan{:.1}MB", budget_bytes as f64 / 1e6)
        } else {
            format!("pq{pq}")
        };
        let layout = self.layout.map_or(String::new(), |k| format!("-{k}"));
        let ivf = if self.layout == Some(LayoutKind::Ivf) {
            let codes = if self.ivf_codes { "-codes" } else { "" };
            format!("-r{}-{}{codes}", self.ivf_replicas, self.ivf_grouping)
        } else {
            String::new()
        };
        let page = self.page_size.map_or(String::new(), |p| format!("-p{p}"));
        let rank = self
            .node_rank
            .map_or(String::new(), |k| format!("-cache{k}"));
        format!(
            "{dataset}-{}-R{r}-L{l}-{pq}{nav}{layout}{ivf}{page}{rank}",
            self.profile
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        for v in ALL {
            assert_eq!(find(v.name).unwrap(), v);
        }
        let err = find("starlin").unwrap_err().to_string();
        assert!(
            err.contains("starling-page") && err.contains("\"starlin\""),
            "{err}"
        );
    }

    #[test]
    fn search_time_variants_share_an_index() {
        let name = |n: &str| {
            find(n)
                .unwrap()
                .index_name("d", 64, 128, 48, Some(0.02), 1_000_000)
        };
        assert_eq!(name("diskann"), name("starling-page"));
        assert_eq!(name("diskann"), name("starling-pipeline"));
        assert_eq!(name("starling-shuffle"), name("starling"));
        assert_ne!(name("starling"), name("starling-all"));
        assert_ne!(name("starling-nav"), name("diskann"));
        assert_eq!(name("diskann"), name("gorgeous-two-stage"));
        assert_eq!(name("gorgeous"), name("gorgeous-replicated"));
        assert_ne!(name("gorgeous"), name("gorgeous-graph-cache"));
        assert_ne!(name("gorgeous"), name("gorgeous-separated"));
        assert_ne!(name("gorgeous"), name("gorgeous-8k"));
        for ablation in [
            "laser-layout",
            "laser-cache",
            "laser-entry",
            "laser-dispatch",
            "laser-wide",
        ] {
            assert_eq!(name("laser"), name(ablation));
        }
        for ablation in ["octopus-width", "octopus-pipe", "octopus-c2"] {
            assert_eq!(name("diskann"), name(ablation));
        }
        assert_eq!(name("gorgeous"), name("gorgeous-pipe"));
        assert_eq!(name("gorgeous"), name("gorgeous-pipe-sqpoll"));
        assert_eq!(name("diskann"), name("diskann-sqpoll"));
        assert_eq!(name("pipeann"), name("pipeann-sqpoll"));
        for same in [
            "pipeann-blocks",
            "octopus-schedule",
            "octopus-adaptive",
            "octopus-fixed",
        ] {
            assert_eq!(name("octopus"), name(same));
        }
        assert_ne!(name("pipeann"), name("starling-nav"));
    }
}
