//! The systems `stratavec bench --profiles` can name: the two profiles, and
//! each Starling technique alone on top of `diskann` (the ablation the
//! Starling paper reports in §5.4 and issue #4 asks for). A variant is a
//! profile plus overrides in the parameters' own words: build keywords over
//! the profile's parameters, search keywords over the index's defaults
//! (`stratavec::args::describe` lists both), and what it opens of the
//! index. One index serves every variant that only differs at search or
//! open time.

use anyhow::{bail, Result};
use stratavec::args::{Given, Params};
use stratavec::layout::LayoutKind;
use stratavec::BuildParams;

/// Keywords and their values, in the words of `stratavec::args::describe`
/// (the long flags, `_` for `-`).
pub type Keywords = &'static [(&'static str, &'static str)];

#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    /// The name given to `--profiles` (the system is `stratavec-<name>`).
    pub name: &'static str,
    /// What the row measures, for reports.
    pub about: &'static str,
    /// Build profile (its memory plan and search defaults).
    pub profile: &'static str,
    /// Build keywords over the profile's parameters
    /// (`args::describe(Params::Build)`).
    pub build: Keywords,
    /// The memory planner chooses PQ bytes for the run's budget (the
    /// build's `memory_budget_mb`; the bench's --pq-bytes is not used).
    pub plan_pq: bool,
    /// Search keywords over the index's defaults for them
    /// (`args::describe(Params::Search)`).
    pub search: Keywords,
    /// The parts the index is opened with.
    pub open: Open,
}

/// What a variant opens of its index: neither a build nor a search
/// parameter (`OpenOptions`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Open {
    /// The graph cache (indexes that have one).
    pub graph_cache: bool,
    /// The node cache (the budget's remainder).
    pub node_cache: bool,
    /// The entry part the index has (navigation graph, cluster entries)
    /// even when the variant builds no navigation graph.
    pub entries: bool,
    /// io_uring submission through a kernel thread (SQPOLL), when not the
    /// bench's --sqpoll.
    pub sqpoll: Option<bool>,
}

/// Every part the index has, the entry part only with a navigation graph.
const OPEN: Open = Open {
    graph_cache: true,
    node_cache: true,
    entries: false,
    sqpoll: None,
};

/// Build keywords every bench index has unless its variant says
/// otherwise: one cluster a vector (the ivf profile's 4 is stated by its
/// variants). The bench has always built its indexes so, and an index is
/// reused only when its recorded parameters are equal.
pub const BENCH_BUILD: Keywords = &[("ivf_replicas", "1")];

/// Search keywords every bench search has unless its variant says
/// otherwise: the laser search's adaptive beam off (the laser variants
/// state it), as the bench has always searched and recorded it.
pub const BENCH_SEARCH: Keywords = &[("adaptive_beam", "false")];

/// An `auto` index is searched as a user opening it would: with the
/// search defaults of whatever the planner built, the adaptive beam
/// included (read by the laser search alone). Off, as `BENCH_SEARCH` has
/// it, an auto-built laser index read 5% more a query and ran 0.92x the
/// fixed laser on the same files (wordnet-mpnet, 5%).
const AUTO_SEARCH: Keywords = &[("adaptive_beam", "true")];

/// Every part, reads submitted by an io_uring kernel thread.
const SQPOLL: Open = Open {
    sqpoll: Some(true),
    ..OPEN
};

/// What a variant that differs from no profile default has.
const PLAIN: Variant = Variant {
    name: "",
    about: "",
    profile: "diskann",
    build: &[],
    plan_pq: false,
    search: &[],
    open: OPEN,
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
    search: &[("adaptive_beam", "true")],
    open: Open {
        entries: true,
        ..OPEN
    },
    ..PLAIN
};

/// The gorgeous profile as built by default: PQ bytes planned for the
/// budget, replicated blocks, navigation graph (Gorgeous §4.1 ②: 0.5% of
/// the vectors), graph cache, two-stage search. Its ablations change one
/// part each.
const GORGEOUS: Variant = Variant {
    name: "gorgeous",
    about: "the gorgeous profile as built by default: planned PQ bytes, graph cache, \
            replicated blocks, navigation graph, two-stage search",
    profile: "gorgeous",
    plan_pq: true,
    ..PLAIN
};

/// PipeANN as its profile builds it: id-order records, navigation graph
/// entry, pipelined search with the waste-driven width (OctopusANN's C4).
const PIPEANN: Variant = Variant {
    name: "pipeann",
    about: "the pipeann profile: navigation graph + pipelined search + adaptive width (C4), \
            visit-frequency node cache",
    profile: "pipeann",
    ..PLAIN
};

/// Gorgeous with the pipelined refinement (issue #22's composition).
const GORGEOUS_PIPE: Variant = Variant {
    name: "gorgeous-pipe",
    about: "gorgeous with pipelined refinement: settled candidates' vectors read during the \
            search stage (issue #22's composition)",
    search: &[("pipelined", "true")],
    ..GORGEOUS
};

/// OctopusANN's C5 as its profile builds it: navigation graph, BNF blocks,
/// block search (with Starling's I/O–compute overlap) and dynamic width.
const OCTOPUS: Variant = Variant {
    name: "octopus",
    about: "the octopus profile (C5): navigation graph + shuffle + block search + dynamic width \
            (doubling)",
    profile: "octopus",
    ..PLAIN
};

/// Paper 002 §5 as its profile builds it: compact CSR records (no page
/// padding, packed ids), PQ codes and a node cache in RAM, beam search.
/// Meant for `--tier mmap,simulated:...`; on the SSD its reads widen to
/// the pages around each record.
const TIERED: Variant = Variant {
    name: "tiered",
    about: "the tiered profile: compact CSR records for a byte-granular memory tier",
    profile: "tiered",
    ..PLAIN
};

/// Paper 002 §6 as its profile builds it: balanced clusters, each vector
/// in up to 4 (replicas as addresses), stored beside the cluster that reads
/// it most; -L is the clusters probed.
const IVF: Variant = Variant {
    name: "ivf",
    about: "the ivf profile: decoupled clusters, replication 4, grouping by frequency",
    profile: "ivf",
    build: &[("ivf_replicas", "4")],
    open: Open {
        node_cache: false,
        ..OPEN
    },
    ..PLAIN
};

/// The pipelined search over octopus's index: BNF blocks, block search,
/// navigation graph, adaptive width.
const PIPEANN_BLOCKS: Variant = Variant {
    name: "pipeann-blocks",
    about: "the pipelined search with block search over octopus's shuffled blocks \
            and navigation graph, adaptive width",
    search: &[
        ("pipeline", "false"),
        ("pipelined", "true"),
        ("width", "adaptive"),
    ],
    ..OCTOPUS
};

/// Every variant, in the order reports list them.
pub const ALL: &[Variant] = &[
    Variant {
        name: "diskann",
        about: "DiskANN: id-order coupled layout, medoid entry, beam search",
        ..PLAIN
    },
    Variant {
        name: "starling-shuffle",
        about: "diskann + BNF block shuffling only (blocked layout, no block search)",
        profile: "starling",
        search: &[("page_search", "false"), ("pipeline", "false")],
        ..PLAIN
    },
    Variant {
        name: "starling-page",
        about: "diskann + block search only (id-order pages)",
        search: &[("page_search", "true")],
        ..PLAIN
    },
    Variant {
        name: "starling-nav",
        about: "diskann + in-memory navigation graph only",
        build: &[("nav_sample", "0.02")],
        ..PLAIN
    },
    Variant {
        name: "starling-pipeline",
        about: "diskann + I/O-compute pipeline only",
        search: &[("pipeline", "true")],
        ..PLAIN
    },
    Variant {
        name: "starling",
        about: "the starling profile as built by default: shuffle + block search + pipeline",
        profile: "starling",
        ..PLAIN
    },
    Variant {
        name: "starling-all",
        about: "every Starling technique: the starling profile + navigation graph",
        profile: "starling",
        build: &[("nav_sample", "0.02")],
        ..PLAIN
    },
    GORGEOUS,
    Variant {
        name: "auto",
        about: "--profile auto: each profile tried on a 2% sample at the run's budget, the \
                one predicted to give the most QPS at R@10 0.95 built (issue #57)",
        profile: "auto",
        plan_pq: true,
        search: AUTO_SEARCH,
        ..PLAIN
    },
    Variant {
        name: "auto-latency",
        about: "--profile auto --objective latency: the profile predicted to answer one \
                query a thread soonest at R@10 0.95",
        profile: "auto",
        plan_pq: true,
        build: &[("objective", "latency")],
        search: AUTO_SEARCH,
        ..PLAIN
    },
    Variant {
        name: "diskann-label-aware",
        about: "diskann over a label-aware graph (FilteredVamana's pruning; needs labels, as \
                bench-filtered's builds have)",
        build: &[("label_aware", "true")],
        ..PLAIN
    },
    Variant {
        name: "gorgeous-label-aware",
        about: "gorgeous over a label-aware graph (FilteredVamana's pruning; needs labels, as \
                bench-filtered's builds have)",
        build: &[("label_aware", "true")],
        ..GORGEOUS
    },
    Variant {
        name: "gorgeous-two-stage",
        about: "diskann's index (node cache, no graph cache) + two-stage search only",
        search: &[("two_stage", "true")],
        ..PLAIN
    },
    Variant {
        name: "gorgeous-graph-cache",
        about: "gorgeous on the coupled layout: graph cache + two-stage search \
                (a cached list has no vector, so the cache needs the refinement stage)",
        build: &[("layout", "coupled")],
        ..GORGEOUS
    },
    Variant {
        name: "gorgeous-replicated",
        about: "gorgeous without the graph cache: replicated blocks + node cache + two-stage",
        open: Open {
            graph_cache: false,
            ..OPEN
        },
        ..GORGEOUS
    },
    Variant {
        name: "gorgeous-separated",
        about: "gorgeous on the separated layout (graph blocks, then vector pages; §5.3 Sep)",
        build: &[("layout", "separated")],
        ..GORGEOUS
    },
    Variant {
        name: "gorgeous-8k",
        about: "gorgeous with 8 KB replicated blocks (§5.3)",
        build: &[("page_size", "8192")],
        ..GORGEOUS
    },
    GORGEOUS_PIPE,
    Variant {
        name: "gorgeous-ex4",
        about: "gorgeous estimating from 4-bit extended-RaBitQ codes, its refinement reading \
                only the candidates their error bounds leave open (issue #57)",
        build: &[("exrabitq_bits", "4")],
        ..GORGEOUS
    },
    Variant {
        name: "gorgeous-ex4-pipe",
        about: "gorgeous-ex4 with the pipelined refinement (what `auto --objective latency` \
                builds where its trial was faster, issue #57)",
        build: &[("exrabitq_bits", "4")],
        search: &[("pipelined", "true")],
        ..GORGEOUS
    },
    Variant {
        name: "laser-layout",
        about: "the laser layout alone: no node cache, medoid entry, W reads a hop, hop barrier",
        search: &[("adaptive_beam", "false")],
        open: Open {
            node_cache: false,
            ..OPEN
        },
        ..LASER
    },
    Variant {
        name: "laser-cache",
        about: "laser layout + visit-frequency node cache",
        search: &[("adaptive_beam", "false")],
        open: OPEN,
        ..LASER
    },
    Variant {
        name: "laser-entry",
        about: "laser layout + cache + cluster entry points",
        search: &[("adaptive_beam", "false")],
        ..LASER
    },
    LASER,
    Variant {
        name: "laser-dispatch",
        about: "laser + early dispatch (§4.3): the next round goes out once half of this \
                round's reads are in",
        search: &[("adaptive_beam", "true"), ("dispatch_ratio", "0.5")],
        ..LASER
    },
    Variant {
        name: "octopus-width",
        about: "diskann + dynamic width only (OctopusANN §4.3.1, the scheduled policy)",
        search: &[("width", "schedule")],
        ..PLAIN
    },
    Variant {
        name: "octopus-pipe",
        about: "diskann + PipeANN's pipelined search only (fixed width)",
        search: &[("pipelined", "true")],
        ..PLAIN
    },
    Variant {
        name: "octopus-c2",
        about: "diskann + pipelined search + adaptive width (OctopusANN's C2)",
        search: &[("pipelined", "true"), ("width", "adaptive")],
        ..PLAIN
    },
    PIPEANN,
    PIPEANN_BLOCKS,
    Variant {
        name: "pipeann-blocks-f16",
        about: "pipeann-blocks over f16 records (4 a 4 KB block at 384-d instead of 2)",
        build: &[("store", "f16")],
        ..PIPEANN_BLOCKS
    },
    OCTOPUS,
    Variant {
        name: "octopus-schedule",
        about: "octopus (C5) with OctopusANN's scheduled width instead of the doubling one",
        search: &[("width", "schedule")],
        ..OCTOPUS
    },
    Variant {
        name: "diskann-poll",
        about: "diskann with its workers polling for completions instead of sleeping",
        // As long as the pipelined searches poll by default
        // (`PIPELINED_POLL_US`, which a test holds this to).
        search: &[("poll_us", "1000")],
        ..PLAIN
    },
    Variant {
        name: "pipeann-sleep",
        about: "pipeann with its workers sleeping until a completion arrives instead of polling",
        search: &[("poll_us", "0")],
        ..PIPEANN
    },
    Variant {
        name: "diskann-sqpoll",
        about: "diskann with its reads submitted (and their completions' work done) by an \
                io_uring kernel thread on another core (SQPOLL)",
        open: SQPOLL,
        ..PLAIN
    },
    Variant {
        name: "pipeann-sqpoll",
        about: "pipeann with its reads submitted by an io_uring kernel thread (SQPOLL)",
        open: SQPOLL,
        ..PIPEANN
    },
    Variant {
        name: "gorgeous-pipe-sqpoll",
        about: "gorgeous-pipe with its reads submitted by an io_uring kernel thread (SQPOLL)",
        open: SQPOLL,
        ..GORGEOUS_PIPE
    },
    Variant {
        name: "octopus-navcache",
        about: "octopus (C5) with its node cache nearest the navigation graph's nodes, where its \
                searches start, instead of breadth-first from the medoid",
        build: &[("node_cache_rank", "nav")],
        ..OCTOPUS
    },
    Variant {
        name: "octopus-fixed",
        about: "octopus (C5) with every hop W reads wide from the first (no dynamic width)",
        search: &[("width", "fixed")],
        ..OCTOPUS
    },
    Variant {
        name: "octopus-bfs",
        about: "octopus (C5) with DiskANN's node cache, breadth-first from the medoid, instead \
                of the visit-frequency one",
        build: &[("node_cache_rank", "bfs")],
        ..OCTOPUS
    },
    Variant {
        name: "pipeann-bfs",
        about: "pipeann with DiskANN's node cache, breadth-first from the medoid, instead of \
                the visit-frequency one",
        build: &[("node_cache_rank", "bfs")],
        ..PIPEANN
    },
    Variant {
        name: "octopus-adaptive",
        about: "octopus (C5) with the waste-driven width instead of the doubling one",
        search: &[("width", "adaptive")],
        ..OCTOPUS
    },
    TIERED,
    Variant {
        name: "tiered-f16",
        about: "the tiered profile over f16 records",
        build: &[("store", "f16")],
        ..TIERED
    },
    IVF,
    Variant {
        name: "ivf-r1",
        about: "ivf without replication, each vector in its cluster's group (classic IVF)",
        build: &[("ivf_replicas", "1")],
        ..IVF
    },
    Variant {
        name: "ivf-r2",
        about: "ivf, replication 2, grouping by frequency",
        build: &[("ivf_replicas", "2")],
        ..IVF
    },
    Variant {
        name: "ivf-r8",
        about: "ivf, replication 8, grouping by frequency",
        build: &[("ivf_replicas", "8")],
        ..IVF
    },
    Variant {
        name: "ivf-nogroup",
        about: "ivf, replication 4, vectors in id order (every member a small read, §6.1)",
        build: &[("ivf_replicas", "4"), ("ivf_grouping", "none")],
        ..IVF
    },
    Variant {
        name: "ivf-pq",
        about: "ivf without replication, with PQ codes and members in RAM: probed members \
                scored on codes, the best rerank-factor x k vectors read (IVF-PQ + refine)",
        build: &[("ivf_replicas", "1"), ("ivf_codes", "true")],
        ..IVF
    },
    Variant {
        name: "ivf-pq-r4",
        about: "ivf-pq with replication 4 (grouping by frequency)",
        build: &[("ivf_replicas", "4"), ("ivf_codes", "true")],
        ..IVF
    },
    Variant {
        name: "laser-wide",
        about: "the laser profile with every round W wide (no adaptive beam): for one query \
                alone on the device, where a wide first round costs no time",
        search: &[("adaptive_beam", "false")],
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

/// The build flags of a run whose builds take only the graph's
/// (`bench-updates`, `bench-filtered`).
#[derive(clap::Args, Clone, Debug)]
pub struct GraphBuildFlags {
    /// Distance of the builds (as `bench --metric`).
    #[arg(long, default_value = "l2")]
    pub metric: stratavec::data::Metric,
    /// Graph degree R of the builds.
    #[arg(long, short = 'R', default_value_t = 64)]
    pub graph_degree: usize,
    /// Build list size L of the graph builds.
    #[arg(long, default_value_t = 128)]
    pub complexity: usize,
    /// PQ bytes of the builds whose profile does not plan them.
    #[arg(long, default_value_t = 48)]
    pub pq_bytes: usize,
}

impl GraphBuildFlags {
    /// The run's build at a memory budget of `budget` bytes.
    pub fn run_build(&self, budget: u64) -> RunBuild {
        graph_build(
            self.metric,
            self.graph_degree,
            self.complexity,
            self.pq_bytes,
            budget,
        )
    }
}

/// The build of a run whose flags are only the graph's (`bench-updates`,
/// `bench-filtered`): metric, degree R, build list size, PQ bytes.
pub fn graph_build(
    metric: stratavec::data::Metric,
    degree: usize,
    complexity: usize,
    pq_bytes: usize,
    budget: u64,
) -> RunBuild {
    RunBuild {
        keywords: vec![
            ("metric".to_string(), metric.as_str().to_string()),
            ("graph_degree".into(), degree.to_string()),
            ("complexity".into(), complexity.to_string()),
            ("pq_bytes".into(), pq_bytes.to_string()),
        ],
        nav_sample: None,
        budget,
    }
}

/// What a bench run gives every variant's build.
pub struct RunBuild {
    /// The run's flags as build keywords (`graph_degree`, `pq_bytes`,
    /// `store`, ...), applied where the variant does not set the same one.
    pub keywords: Vec<(String, String)>,
    /// --nav-sample: over the variant's own share, for the variants whose
    /// index has a navigation graph (the others build none whatever it
    /// says).
    pub nav_sample: Option<f32>,
    /// The memory budget in bytes, which the variants that plan their PQ
    /// bytes build for.
    pub budget: u64,
}

impl Variant {
    /// Whether the variant's index has a navigation graph: its profile's
    /// or its own share of the vectors, before the run's --nav-sample.
    pub fn has_nav(&self) -> Result<bool> {
        let own = overlay(&[&owned(&[("profile", self.profile)]), &owned(self.build)]);
        let p = Given::from_keywords(Params::Build, &own)?.build_params()?;
        Ok(p.nav_sample > 0.0)
    }

    /// The build keywords of the variant's index in a run: the run's, then
    /// the bench's, then the variant's own, each over the one before.
    pub fn build_keywords(&self, run: &RunBuild) -> Result<Vec<(String, String)>> {
        let mut last = vec![("profile".to_string(), self.profile.to_string())];
        if self.plan_pq {
            last.push(("memory_budget_mb".into(), megabytes_exactly(run.budget)));
        }
        if let (Some(mu), true) = (run.nav_sample, self.has_nav()?) {
            last.push(("nav_sample".into(), mu.to_string()));
        }
        Ok(overlay(&[
            &run.keywords,
            &owned(BENCH_BUILD),
            &owned(self.build),
            &last,
        ]))
    }

    /// The build parameters of the variant's index in a run.
    pub fn build_params(&self, run: &RunBuild) -> Result<BuildParams> {
        let given = Given::from_keywords(Params::Build, &self.build_keywords(run)?)?;
        let mut p = given.build_params()?;
        // Planned, the planner chooses the PQ bytes; the run's stay
        // recorded beside them, as bench indexes have always had them.
        p.unset.pq_bytes |= self.plan_pq;
        Ok(p)
    }

    /// The search keywords of the variant in a run: the run's (k, L, -W,
    /// ...), then the bench's, then the variant's own, each over the one
    /// before.
    pub fn search_keywords(&self, run: &[(String, String)]) -> Vec<(String, String)> {
        overlay(&[run, &owned(BENCH_SEARCH), &owned(self.search)])
    }

    /// Directory name of the index built with `p` (variants that differ
    /// only at search or open time share it). A planned index is named for
    /// its budget instead of its PQ bytes; the layout, page size and node
    /// cache order appear where the variant states them.
    pub fn index_name(&self, dataset: &str, p: &BuildParams) -> Result<String> {
        let nav = if self.has_nav()? {
            format!("-nav{}", p.nav_sample)
        } else {
            String::new()
        };
        let pq = match p.memory_budget.filter(|_| self.plan_pq) {
            Some(budget) => format!("pqplan{:.1}MB", budget as f64 / 1e6),
            None => format!("pq{}", p.pq_bytes),
        };
        let layout = p.layout.map_or(String::new(), |k| format!("-{k}"));
        let ivf = if p.layout == Some(LayoutKind::Ivf) {
            let codes = if p.ivf_codes { "-codes" } else { "" };
            format!("-r{}-{}{codes}", p.ivf_replicas, p.ivf_grouping)
        } else {
            String::new()
        };
        let page = Some(p.page_size)
            .filter(|_| !p.unset.page_size)
            .map_or(String::new(), |s| format!("-p{s}"));
        let profile_rank = BuildParams::for_profile(self.profile).node_cache_rank;
        let rank = p
            .node_cache_rank
            .filter(|&r| Some(r) != profile_rank)
            .map_or(String::new(), |k| format!("-cache{k}"));
        // f16 indexes get their own directories.
        let store = p.store.map_or(String::new(), |s| format!("-{s}"));
        let ex = p
            .exrabitq_bits
            .map_or(String::new(), |b| format!("-exrabitq{b}"));
        // The planner's objective and queries change what `auto` builds.
        let objective = match (self.profile, p.objective) {
            (stratavec::autoplan::AUTO, stratavec::autoplan::Objective::Latency) => "-latency",
            _ => "",
        };
        let objective = match p.plan_queries {
            Some(_) => format!("{objective}-learnq"),
            None => objective.to_string(),
        };
        Ok(format!(
            "{dataset}-{}-R{}-L{}-{pq}{nav}{layout}{ivf}{page}{rank}{store}{ex}{objective}",
            self.profile, p.graph_degree, p.complexity
        ))
    }
}

fn owned(keywords: &[(&str, &str)]) -> Vec<(String, String)> {
    keywords
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The keywords of `lists`, a later list's value replacing an earlier
/// one's (a keyword given twice is refused by the parser).
fn overlay(lists: &[&[(String, String)]]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (keyword, value) in lists.iter().flat_map(|l| l.iter()) {
        match out.iter_mut().find(|(k, _)| k == keyword) {
            Some(slot) => slot.1 = value.clone(),
            None => out.push((keyword.clone(), value.clone())),
        }
    }
    out
}

/// `bytes` as MB that `args::megabytes` reads back as exactly `bytes`: it
/// truncates MB x 10^6, which a decimal's nearest double can leave a byte
/// short, so the double is nudged by an ulp or two.
fn megabytes_exactly(bytes: u64) -> String {
    let first = bytes as f64 / 1e6;
    let back = |mb: f64| stratavec::args::megabytes(&mb.to_string()).ok();
    let (mut up, mut down) = (first, first);
    for _ in 0..4 {
        for mb in [up, down] {
            if back(mb) == Some(bytes) {
                return mb.to_string();
            }
        }
        (up, down) = (up.next_up(), down.next_down());
    }
    first.to_string()
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
        let run = RunBuild {
            keywords: owned(&[
                ("graph_degree", "64"),
                ("complexity", "128"),
                ("pq_bytes", "48"),
            ]),
            nav_sample: Some(0.02),
            budget: 1_000_000,
        };
        let name = |n: &str| {
            let v = find(n).unwrap();
            v.index_name("d", &v.build_params(&run).unwrap()).unwrap()
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
        // The planner builds for its objective.
        assert_ne!(name("auto"), name("auto-latency"));
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

    /// A renamed or retyped parameter fails here, not in a bench run.
    #[test]
    fn every_variants_keywords_parse() {
        let build = |k: &[(String, String)]| {
            Given::from_keywords(Params::Build, k)
                .and_then(|g| g.build_params())
                .unwrap_or_else(|e| panic!("{k:?}: {e}"))
        };
        let search = |k: &[(String, String)]| {
            Given::from_keywords(Params::Search, k)
                .and_then(|g| g.search_params(|_| stratavec::SearchParams::default()))
                .unwrap_or_else(|e| panic!("{k:?}: {e}"))
        };
        build(&owned(BENCH_BUILD));
        search(&owned(BENCH_SEARCH));
        for v in ALL {
            let own = owned(&[("profile", v.profile)]);
            build(&overlay(&[&own, &owned(v.build)]));
            search(&owned(v.search));
        }
    }

    /// Whatever `auto` built is searched with that profile's defaults:
    /// the bench's adaptive beam off does not reach an auto-built laser
    /// index.
    #[test]
    fn auto_searches_with_the_index_defaults() {
        for name in ["auto", "auto-latency"] {
            let keywords = find(name).unwrap().search_keywords(&[]);
            let p = Given::from_keywords(Params::Search, &keywords)
                .unwrap()
                .search_params(|_| stratavec::SearchParams::default())
                .unwrap();
            assert_eq!(
                p.adaptive_beam,
                stratavec::SearchParams::default().adaptive_beam,
                "{name}"
            );
        }
    }

    #[test]
    fn diskann_poll_polls_as_the_pipelined_search() {
        let v = find("diskann-poll").unwrap();
        let p = Given::from_keywords(Params::Search, &owned(v.search))
            .unwrap()
            .search_params(|_| stratavec::SearchParams::default())
            .unwrap();
        assert_eq!(p.poll_us, stratavec::search::PIPELINED_POLL_US);
    }

    #[test]
    fn budgets_in_megabytes_read_back_exactly() {
        for bytes in [
            0,
            1,
            999_999,
            1_000_000,
            1_234_567,
            7_372_800,
            123_456_789_123,
        ] {
            let mb = megabytes_exactly(bytes);
            assert_eq!(stratavec::args::megabytes(&mb), Ok(bytes), "{mb}");
        }
        for bytes in (0..2_000_000u64).step_by(997) {
            assert_eq!(
                stratavec::args::megabytes(&megabytes_exactly(bytes)),
                Ok(bytes)
            );
        }
    }
}
