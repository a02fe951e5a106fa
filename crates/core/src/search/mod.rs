//! Search: strategies written as state machines, run many at a time per
//! worker thread by the scheduler (docs/architecture.md, "The execution
//! model").
pub mod acorn;
pub mod batch;
pub mod beam;
pub mod block;
pub mod context;
pub mod expansion;
pub mod ivf;
pub mod ivf_pq;
pub mod laser;
pub mod pipe;
pub mod prefilter;
pub mod query;
pub mod range;
pub mod scheduler;
pub mod settle;
pub mod stats;
pub mod strategy;
pub mod two_stage;
pub mod width;

pub use beam::{Beam, BeamSearch};
pub use context::SearchContext;
pub use expansion::Expansion;
pub use laser::Laser;
pub use pipe::{Pipe, PipeSearch};
pub use range::RangeRule;
pub use scheduler::{run_worker, QueryOutcome};
pub use stats::QueryStats;
pub use strategy::Strategy;
pub use two_stage::{TwoStage, TwoStageSearch};
pub use width::{Width, WidthPolicy};

use serde::{Deserialize, Serialize};

/// Parameters of one search call.
///
/// Each field is a parameter stated once: its doc line is the CLI's help
/// (`stratavec search --help`) and Python's docstring (`Index.search`), its
/// name the flag and the keyword (`crate::args`); the defaults a profile
/// sets come from the index (`Index::search_defaults`), not from the flag.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, clap::Args)]
pub struct SearchParams {
    /// Neighbours to return per query; recall is recall@k. Default: 10.
    #[arg(short = 'k', long = "k")]
    pub k: usize,
    /// Search list size L (DiskANN's complexity): larger finds more of the
    /// true neighbours for more reads; raised to k when below. Default: 64.
    #[arg(short = 'L', long)]
    pub complexity: usize,
    /// Reads issued per hop (DiskANN's beam width W), 1 to 64. Default: the
    /// index profile's (4; 2 for block search over blocks of 6 or more
    /// records; 8 for the pipelined search).
    #[arg(long, short = 'W')]
    pub beam_width: usize,
    /// Search threads. Default: all cores.
    #[arg(long)]
    pub threads: usize,
    /// Queries each thread keeps in flight, so their reads overlap. Default:
    /// 128 / W (32 at W = 4, 64 at W = 2); their reads share 64 buffers a
    /// thread.
    #[arg(long)]
    pub in_flight: usize,
    /// Block search (Starling §4.2): every record of each page read gets an
    /// exact distance, not only the one it was read for, and the closest
    /// --prune-ratio share of them are expanded too. Default: on for
    /// indexes of the starling and octopus profiles.
    #[serde(default)]
    #[arg(long, action = clap::ArgAction::Set)]
    pub page_search: bool,
    /// Block search's pruning ratio σ in [0, 1]: the neighbours of the
    /// closest ⌈(ε−1)·σ⌉ other records of a page are explored (Starling
    /// §4.2). Default: 0.3.
    #[serde(default = "default_prune_ratio")]
    #[arg(long)]
    pub prune_ratio: f32,
    /// The I/O–computation pipeline (Starling §4.2, Algorithm 2): issue a
    /// query's next reads before the work that does not route the search
    /// (exact distances; block search's other records). Default: on for
    /// indexes of the starling profile.
    #[serde(default)]
    #[arg(long, action = clap::ArgAction::Set)]
    pub pipeline: bool,
    /// Search list size of the in-memory navigation graph's search (Starling
    /// §4.3), for indexes that have one; its best 4 nodes start the disk
    /// search. Default: 10.
    // Every query pays for that search in CPU, and only its best 4 nodes
    // are used. Measured at recall 0.95 (starling profile, blocks read per
    // query at 64 / 24 / 16 / 12): 13.91 / 13.90 / 13.94 / 14.06 on
    // wordnet-minilm-pca96, 30.61 / 30.84 / 30.97 / 31.03 on the 384-d
    // set; 16 instead of 64 cuts a 96-d query's CPU by 13%.
    #[serde(default = "default_nav_complexity")]
    #[arg(long)]
    pub nav_complexity: usize,
    /// Gorgeous's two-stage search (§4.2): search on PQ estimates, reading
    /// only blocks whose adjacency list is not cached, then read the exact
    /// vectors of the top ⌈σ·L⌉ candidates (σ: --refine-ratio). k-NN only
    /// (a range search runs the beam). Default: on for indexes of the
    /// gorgeous profile.
    #[serde(default)]
    #[arg(long, action = clap::ArgAction::Set)]
    pub two_stage: bool,
    /// The two-stage search's refinement ratio σ, in (0, 1] (Gorgeous §4.2).
    /// Default: 0.5.
    #[serde(default = "default_refine_ratio")]
    #[arg(long)]
    pub refine_ratio: f32,
    /// Range search: every vector within this distance (in the reported
    /// unit: squared L2, -dot, or 1 - cos) instead of the top k.
    #[serde(default)]
    #[arg(long)]
    pub radius: Option<f32>,
    /// Range search: the candidate window doubles while the share of it
    /// within the radius is at least φ. Default: 0.5.
    #[serde(default = "default_range_phi")]
    #[arg(long)]
    pub range_phi: f32,
    /// Range search: the largest candidate window. Default: 4096.
    #[serde(default = "default_range_max")]
    #[arg(long)]
    pub range_max_complexity: usize,
    /// PipeANN's pipelined search (OctopusANN §4.3.2): up to W reads
    /// outstanding, each node expanded as its read arrives, no hop barrier;
    /// best for one query at a time. On a gorgeous index it pipelines the
    /// two-stage search's refinement. k-NN only (a range search runs the
    /// beam). Default: on for indexes of the pipeann profile.
    #[serde(default)]
    #[arg(long, action = clap::ArgAction::Set)]
    pub pipelined: bool,
    /// Two-stage search over codes whose estimates have error bounds
    /// (`--exrabitq-bits`): read only the candidates the bounds leave open
    /// (`search::settle`); false reads every one of the top ⌈σ·L⌉, as with
    /// PQ. Default: true.
    #[serde(default = "default_true")]
    #[arg(long, action = clap::ArgAction::Set, default_value_t = true)]
    pub settle: bool,
    /// Settled refinement: reads a wave at most. One reads the fewest
    /// (each read may settle the next candidates) but waits the most
    /// round trips. Default: 4 (wordnet-mpnet, 20% budget, L 22, 32
    /// queries a thread in flight: 5.7 reads a query at 2, 4 and 8, and
    /// 8-20% more QPS at 4 or 8 than at 2; wordnet-minilm, bound by the
    /// device: 10.7, 10.8 and 10.9 reads at L 25, QPS within the noise).
    #[serde(default = "default_settle_wave")]
    #[arg(long, default_value_t = default_settle_wave())]
    pub settle_wave: usize,
    /// Two-stage search over codes with error bounds: of the top ⌈σ·L⌉
    /// candidates, the refinement scores only those its bounds, shrunk to
    /// ρ·L/k of their width (at most all of it), leave possibly in the top
    /// k (`search::settle::Settle::admit`). Each one admitted past the k-th costs
    /// reads, while recall bought with L costs estimates in RAM; the shrunk
    /// bounds keep the pool wide where codes rank loosely and near k where
    /// they rank well, and growing with L they let a longer list reach any
    /// recall. Default: 0.03 (R@10 0.95 at 20% memory, 2 threads:
    /// wordnet-minilm at L 32 and 3.5 reads a query against 7.1 at L 26
    /// scoring all ⌈σ·L⌉, and 0.994 at L 100 with 6.9; wordnet-mpnet at
    /// L 24 and ~2.3 against 4.8 at L 22).
    #[serde(default = "default_settle_reach")]
    #[arg(long, default_value_t = default_settle_reach())]
    pub settle_reach: f32,
    /// How a query's reads grow to W (OctopusANN §4.3.1): fixed, schedule
    /// (by settled candidates), double (1, 2, 4, ...) or adaptive (grow
    /// while few reads are wasted). Beam search reads this many a hop; the
    /// pipelined search keeps this many outstanding. Default: the index
    /// profile's (fixed; double for octopus, adaptive for pipeann).
    #[serde(default)]
    #[arg(long)]
    pub width: WidthPolicy,
    /// ivf indexes built with --ivf-codes: vectors read for exact
    /// distances, as a multiple of k (the best by PQ estimate among the
    /// probed clusters' members; faiss's k_factor, LanceDB's
    /// refine_factor); 0 reads every probed member. Default: 4.
    #[serde(default = "default_rerank_factor")]
    #[arg(long)]
    pub rerank_factor: f32,
    /// Laser indexes: rounds read 1, 2, 4, ... nodes up to W (AlayaLaser
    /// §4.2); false reads W from the first round. Default: true.
    #[serde(default = "default_true")]
    #[arg(long, action = clap::ArgAction::Set)]
    pub adaptive_beam: bool,
    /// Laser indexes: the share of a round's reads that must arrive before
    /// the next round goes out (AlayaLaser §4.3, early dispatch), in (0, 1];
    /// 1 waits for all of them, as DiskANN's hop does. Default: 1 (see
    /// `DEFAULT_DISPATCH_RATIO`).
    #[serde(default = "default_dispatch_ratio")]
    #[arg(long)]
    pub dispatch_ratio: f32,
    /// Microseconds a worker polls for a read's completion before it sleeps
    /// in the kernel (io_uring; at most 10,000); 0 sleeps at once. Polling
    /// saves the wake-up a lone query pays on every read (1 thread x 1
    /// query) and spends the otherwise idle core. Default: 1000 for the
    /// pipelined search (PipeANN's loop never sleeps), else 0.
    // `PIPELINED_POLL_US`.
    #[serde(default)]
    #[arg(long)]
    pub poll_us: u32,
}

/// The longest completion poll a search may ask for: a read takes ~100 µs
/// on an NVMe disk, so a longer poll only burns a core when one is lost.
pub const MAX_POLL_US: u32 = 10_000;

fn default_settle_wave() -> usize {
    4
}

fn default_settle_reach() -> f32 {
    0.03
}

fn default_true() -> bool {
    true
}

fn default_rerank_factor() -> f32 {
    4.0
}

/// The laser search's dispatch ratio by default: 1, no early dispatch. The
/// paper's 0.5 never helped here: level with 1 on an Intel NVMe machine
/// and at 384-d, and at 768-d on an AMD EPYC guest with a virtio disk
/// 17% and 28% below it in two runs (recall@10 0.95, the same reads a
/// query) and level in a third (BENCHMARKS.md, Laser section). Deciding
/// rounds from part of the reads makes more, smaller submissions, and
/// each is a VM exit there.
pub const DEFAULT_DISPATCH_RATIO: f32 = 1.0;

fn default_dispatch_ratio() -> f32 {
    DEFAULT_DISPATCH_RATIO
}

fn default_range_phi() -> f32 {
    0.5
}

fn default_range_max() -> usize {
    4096
}

/// The navigation graph's search list size by default: PipeANN's and
/// Starling's evaluation setting (`mem_L` = 10 in PipeANN's
/// `scripts/tests/eval_f.sh`). On wordnet-minilm it finds starts as good
/// as a list of 16 (pipeann, L = 40: R@10 0.953 either way, 36.1 reads
/// against 36.0; octopus and gorgeous within 0.1%) for 31 µs a query
/// instead of 50 over a 1% sample, all of it before the first read.
pub const NAV_COMPLEXITY: usize = 10;

fn default_nav_complexity() -> usize {
    NAV_COMPLEXITY
}

fn default_refine_ratio() -> f32 {
    0.5
}

fn default_prune_ratio() -> f32 {
    0.3
}

impl Default for SearchParams {
    fn default() -> Self {
        SearchParams {
            k: 10,
            complexity: 64,
            beam_width: 4,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            in_flight: in_flight_for(4),
            page_search: false,
            prune_ratio: 0.3,
            nav_complexity: default_nav_complexity(),
            pipeline: false,
            two_stage: false,
            refine_ratio: default_refine_ratio(),
            radius: None,
            range_phi: default_range_phi(),
            range_max_complexity: default_range_max(),
            adaptive_beam: true,
            dispatch_ratio: default_dispatch_ratio(),
            pipelined: false,
            settle: true,
            settle_wave: default_settle_wave(),
            settle_reach: default_settle_reach(),
            width: WidthPolicy::Fixed,
            rerank_factor: default_rerank_factor(),
            poll_us: 0,
        }
    }
}

impl SearchParams {
    /// The checks that need no index: a caller can run them on its
    /// arguments before opening anything ([`crate::Index::check_search`]
    /// adds those that need the index).
    pub fn check(&self) -> crate::Result<()> {
        use crate::Error;
        if self.k == 0 {
            return Err(Error::argument("k", "at least 1", 0));
        }
        if self.complexity < self.k {
            return Err(Error::argument(
                "complexity (L)",
                format!("at least k = {}", self.k),
                self.complexity,
            ));
        }
        if let Some(r) = self.radius {
            if !r.is_finite() {
                return Err(Error::argument("radius", "a finite distance", r));
            }
            if !(self.range_phi > 0.0 && self.range_phi <= 1.0) {
                return Err(Error::argument("range_phi", "in (0, 1]", self.range_phi));
            }
        }
        if self.poll_us > MAX_POLL_US {
            return Err(Error::argument(
                "poll_us",
                format!("0..={MAX_POLL_US} microseconds"),
                self.poll_us,
            ));
        }
        if self.threads == 0 {
            return Err(Error::argument("threads", "at least 1", 0));
        }
        if self.in_flight == 0 {
            return Err(Error::argument("in_flight", "at least 1", 0));
        }
        if self.beam_width == 0 || self.beam_width > 64 {
            return Err(Error::argument("beam width", "1..=64", self.beam_width));
        }
        if !(self.dispatch_ratio > 0.0 && self.dispatch_ratio <= 1.0) {
            return Err(Error::argument(
                "dispatch_ratio",
                "in (0, 1]",
                self.dispatch_ratio,
            ));
        }
        if self.nav_complexity == 0 {
            return Err(Error::argument("nav_complexity", "at least 1", 0));
        }
        if !(self.rerank_factor >= 0.0 && self.rerank_factor <= 1e6) {
            return Err(Error::argument(
                "rerank_factor",
                "a number in [0, 1e6] (0 reads every probed member)",
                self.rerank_factor,
            ));
        }
        if self.settle_wave == 0 {
            return Err(Error::argument(
                "settle_wave",
                "at least 1",
                self.settle_wave,
            ));
        }
        if !(0.0..=1.0).contains(&self.settle_reach) {
            return Err(Error::argument(
                "settle_reach",
                "in [0, 1]",
                self.settle_reach,
            ));
        }
        if !(self.refine_ratio > 0.0 && self.refine_ratio <= 1.0) {
            return Err(Error::argument(
                "refine_ratio (σ)",
                "in (0, 1]",
                self.refine_ratio,
            ));
        }
        if !(0.0..=1.0).contains(&self.prune_ratio) {
            return Err(Error::argument(
                "prune_ratio (σ)",
                "in [0, 1]",
                self.prune_ratio,
            ));
        }
        Ok(())
    }

    /// The search defaults of a profile (`profile::PROFILES`).
    pub fn for_profile(profile: &crate::profile::Profile) -> Self {
        profile.search.defaults()
    }

    /// Reads per hop and queries in flight for this search over blocks of
    /// `records_per_block` records (mean): block search over blocks of
    /// [`NARROW_BEAM_BLOCK`] or more reads 2 blocks per hop, with twice the
    /// queries in flight so as many reads are asked for ([`in_flight_for`]).
    /// Each block read then brings several candidates, so a narrower beam
    /// stays closer to the best of them (Starling's Algorithm 2 reads one
    /// block per hop).
    pub fn with_io_defaults(mut self, records_per_block: f64) -> Self {
        if self.pipelined {
            self.beam_width = PIPELINED_WIDTH;
            self.in_flight = in_flight_for(PIPELINED_WIDTH);
            self.poll_us = PIPELINED_POLL_US;
        } else if self.page_search && records_per_block >= NARROW_BEAM_BLOCK {
            self.beam_width = 2;
            self.in_flight = in_flight_for(2);
        }
        self
    }

    /// These parameters with the caller's beam width and queries in flight
    /// where given; queries in flight otherwise follow the beam width
    /// ([`in_flight_for`]), so a narrower beam keeps the queue as deep.
    pub fn with_io(self, beam_width: Option<usize>, in_flight: Option<usize>) -> Self {
        let beam_width = beam_width.unwrap_or(self.beam_width);
        SearchParams {
            beam_width,
            in_flight: in_flight.unwrap_or_else(|| in_flight_for(beam_width)),
            ..self
        }
    }
}

/// Search-time switches that override an index's profile defaults
/// (`Index::search_defaults`); `None` keeps the profile's.
#[derive(Clone, Copy, Debug, Default)]
pub struct Switches {
    pub page_search: Option<bool>,
    pub pipeline: Option<bool>,
    pub two_stage: Option<bool>,
    pub pipelined: Option<bool>,
    pub width: Option<WidthPolicy>,
}

/// Reads a worker keeps in flight at most: its buffer slots, charged to
/// the memory budget (64 pages of 4 KB a thread). Reads its queries ask for
/// beyond them wait in the worker's queue for a slot.
pub const READ_SLOTS: usize = 64;

/// Queries in flight per worker at beam width W, by default: 2 x
/// [`READ_SLOTS`] / W. A query between hops has nothing in flight, so a
/// worker must admit more reads than it has slots to keep them busy.
/// Measured on wordnet-minilm at recall 0.95 (2 threads, interleaved runs,
/// 25-30 timings each, median QPS): diskann at 16 queries x W4 (the old
/// default) was 13-17% below 32 x W4 on the 96-d set and 16% at 384-d; 48 x
/// W4 gave no more. With 32 queries, 64 slots a thread did as well as 128
/// (5,090 vs 5,181 QPS at 96-d, 2,836 vs 2,713 at 384-d; 48 slots: -10%),
/// and block search (64 queries x W2) did better with 64 (7,699 vs 6,821):
/// fewer buffers leave more of the budget to the node cache.
pub fn in_flight_for(beam_width: usize) -> usize {
    (2 * READ_SLOTS / beam_width.max(1)).max(1)
}

/// Reads the pipelined search keeps outstanding at most, by default. Its
/// width policy decides how many it uses (the adaptive one starts at 4, as
/// PipeANN does). Measured on wordnet-minilm, 1 thread x 1 query, L = 40
/// (recall 0.95), diskann's index: p50 738 µs at 8, 708 µs at 16, with
/// 37.7 and 39.5 reads a query; 16 buys little and reads more, which a
/// loaded device pays for.
pub const PIPELINED_WIDTH: usize = 8;

/// Microseconds a worker of the pipelined search polls for a completion
/// before it sleeps, by default. PipeANN's search loop never sleeps: it
/// peeks at the completion queue between routing steps (`pipe_search`'s
/// `poll_all`), so a read's completion is routed without a wake-up. Measured
/// on wordnet-minilm, pipeann's index, L = 40 (recall 0.95): at 1 thread x
/// 1 query p50 737 → 649 µs (`benchmarks/results/pipeann-latency-384.jsonl`,
/// pipeann-sleep against pipeann); at 2 threads x 16 queries QPS +8% in
/// alternated runs, for twice the CPU time (a worker spins where it slept).
/// `poll_us = 0` sleeps at once.
pub const PIPELINED_POLL_US: u32 = 1000;

/// Buffer slots a worker needs for `in_flight` queries at beam width W: one
/// per read they can have in flight, at most [`READ_SLOTS`].
pub fn read_slots(in_flight: usize, beam_width: usize) -> usize {
    (in_flight.max(1) * beam_width.max(1)).min(READ_SLOTS)
}

/// Mean records per block from which the shuffles place by the undirected
/// graph (`ShuffleParams::undirected`). Reads at recall 0.95, directed →
/// undirected: 2 records (384-d f32) +8%; 4 (384-d f16) 23.38 → 22.93;
/// 7.75 (96-d f32) 13.65 → 13.46.
pub const UNDIRECTED_BLOCK: f64 = 4.0;

/// Mean records per block from which block search reads 2 blocks per hop
/// instead of 4 ([`SearchParams::with_io_defaults`]). Reads at recall 0.95,
/// W = 4 → W = 2: 2 records +3%; 4 records 22.93 → 23.66; 7.75 records
/// 13.5 → 12.9 (W = 1: more); 12.7 (96-d f16) 12.18 → 11.94. Between the
/// last point where 4 won and the first where 2 did.
pub const NARROW_BEAM_BLOCK: f64 = 6.0;

/// One read a query asks for: a span of the pages file, and a key the query
/// chooses to recognise it by when it completes (a node id, or an index into
/// its own table when one node may be read in two ways, e.g. its graph block
/// and its vector). The scheduler reads spans; it never asks what they hold
/// (COMPOSITION.md, example F).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Read {
    pub key: u32,
    pub span: crate::layout::Span,
}

/// One query's state machine. The scheduler calls `step` when the query is
/// new or has received data; `step` returns the reads it wants (processing
/// anything it can without I/O itself), and `on_read` is called once per
/// read, with the whole span read.
pub trait QueryState {
    fn step(&mut self, ctx: &SearchContext, reads: &mut Vec<Read>);
    /// `bytes` is everything read for the read with this `key`.
    fn on_read(&mut self, ctx: &SearchContext, key: u32, bytes: &[u8]);
    /// True when no more reads will be asked for and the result is final.
    fn is_done(&self) -> bool;
    /// Work that need not precede the next reads (the pipeline of Starling
    /// §4.2): the scheduler calls this after submitting them. Returns true
    /// if there was any; `step` does whatever is left before it finishes.
    fn deferred(&mut self, _ctx: &SearchContext) -> bool {
        false
    }
    /// True when the last `step` stopped early with work left that needs
    /// no read (it yielded so its reads could go out first): the worker
    /// steps it again without waiting for a completion.
    fn wants_step(&self) -> bool {
        false
    }
    fn stats(&mut self) -> &mut QueryStats;
    /// Why the query could not finish properly (e.g. a corrupt record), if so.
    fn failure(&self) -> Option<String> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Queries in flight follow the beam width unless given; buffers never
    /// exceed READ_SLOTS a worker, and never exceed what the queries can ask.
    #[test]
    fn queries_follow_the_beam_and_buffers_are_capped() {
        let base = SearchParams::default();
        assert_eq!((base.beam_width, base.in_flight), (4, 32));
        let p = base.clone().with_io(None, None);
        assert_eq!((p.beam_width, p.in_flight), (4, 32));
        let p = base.clone().with_io(Some(1), None);
        assert_eq!((p.beam_width, p.in_flight), (1, 128));
        let p = base.clone().with_io(Some(2), Some(5));
        assert_eq!((p.beam_width, p.in_flight), (2, 5));
        let starling = SearchParams::for_profile(crate::profile::get("starling").unwrap())
            .with_io_defaults(7.75);
        assert_eq!((starling.beam_width, starling.in_flight), (2, 64));
        let pipeann = SearchParams::for_profile(crate::profile::get("pipeann").unwrap())
            .with_io_defaults(1.0);
        assert_eq!((pipeann.beam_width, pipeann.in_flight), (8, 16));
        // The pipelined search polls for completions (PipeANN's loop); the
        // beam searches sleep; a caller's with_io keeps the poll.
        assert_eq!(pipeann.poll_us, PIPELINED_POLL_US);
        assert_eq!(pipeann.with_io(Some(4), Some(1)).poll_us, PIPELINED_POLL_US);
        assert_eq!(
            (starling.poll_us, base.with_io_defaults(1.0).poll_us),
            (0, 0)
        );
        assert_eq!(in_flight_for(0), 128);
        assert_eq!(in_flight_for(1000), 1);
        assert_eq!(read_slots(32, 4), READ_SLOTS);
        assert_eq!(read_slots(8, 4), 32);
        assert_eq!(read_slots(0, 0), 1);
    }
}

/// Small indexes for the search modules' tests.
#[cfg(test)]
pub(crate) mod testing {
    use crate::synthetic::{clustered, SyntheticSpec};
    use crate::{build_index, BuildParams, Index, OpenOptions};

    /// Clustered synthetic vectors built with `params` into a temporary
    /// directory: (the directory, base, queries).
    pub(crate) fn small_index(
        spec: &SyntheticSpec,
        params: &BuildParams,
    ) -> (tempfile::TempDir, Vec<f32>, Vec<f32>) {
        let (base, queries) = clustered(spec);
        let dir = tempfile::tempdir().unwrap();
        let data = crate::data::Vectors::f32(&base, spec.dim).unwrap();
        build_index(
            data,
            "test",
            dir.path(),
            params,
            2,
            &crate::progress::Silent,
        )
        .unwrap();
        (dir, base, queries)
    }

    /// The index in `dir` read through the RAM backend, within `budget`
    /// bytes when given.
    pub(crate) fn open_in_ram(dir: &std::path::Path, budget: Option<usize>) -> Index {
        let opts = OpenOptions {
            io: stratavec_io::Backend::Ram,
            memory_budget_bytes: budget.map(|b| b as u64),
            ..Default::default()
        };
        Index::open(dir, &opts).unwrap()
    }

    /// The index in `dir` through the RAM backend with every part the
    /// budget plans except the node cache (the budget of everything else),
    /// so every record a search needs is read; and the same index with
    /// everything cached.
    pub(crate) fn open_uncached(dir: &std::path::Path) -> (Index, Index) {
        let all = open_in_ram(dir, Some(1 << 30));
        let uncached = open_in_ram(dir, Some(all.memory().total() - all.memory().get("cache")));
        assert_eq!(uncached.cached_nodes(), 0);
        (uncached, all)
    }
}
