//! The planner over compositions (issue #57): `build --profile auto`.
//!
//! Every profile is best somewhere and poor elsewhere (BENCHMARKS.md):
//! gorgeous leads at 20% of wordnet-minilm and trails at 5%, where only
//! 48-byte codes and a sixth of its lists fit; laser leads at 768-d, where
//! the search is bound by the CPU, and trails at 384-d. So the planner
//! does not rank profiles by rule: it builds each candidate over a sample
//! of the data (`sample`) at the budget's share, searches it with queries
//! held out of the sample until they reach the target recall (`trial`),
//! and turns the reads and CPU a query it measured into a prediction with
//! the device's measured read rate (`predict`): throughput is bound by
//! whichever of the device and the threads runs out first; latency is one
//! query's, measured.
//!
//! The figures are the sample's: its graph is smaller, so every profile's
//! reads and CPU are lower than at full size. They scale alike, so the
//! choice holds where the predicted figures do not; the build report keeps
//! them beside the choice so a bench can set them against the measured.

pub mod predict;
pub mod sample;
pub mod trial;
pub mod variants;

use crate::data::{DType, Metric};
use crate::error::{FileContext, Result};
use crate::graph::{BuildSpace, BuildStats, Graph};
use crate::index::build::BuildParams;
use crate::memory::planner::Part;
use crate::progress::Progress;
use predict::Device;
use sample::Sample;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use trial::{Trial, TrialSetup, Try};
use variants::Layout;

/// The profile name that asks for the planner.
pub const AUTO: &str = "auto";

/// What the planner maximises.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    /// Queries a second at the target recall, the caller's threads busy.
    #[default]
    Throughput,
    /// One query's median latency at the target recall, one a thread.
    Latency,
}

/// What the build knows when it asks the planner.
pub struct AutoInput<'a> {
    /// The f32 view the build works on (normalised for cosine).
    pub data: &'a [f32],
    pub dim: usize,
    pub metric: Metric,
    /// The caller's parameters; their memory budget is the one planned for.
    pub base: &'a BuildParams,
    pub threads: usize,
    /// Where the trials' indexes are built (removed afterwards).
    pub work: &'a Path,
    pub progress: &'a dyn Progress,
}

/// One candidate's trial and prediction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub profile: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<Trial>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted: Option<predict::Prediction>,
    /// Why it has no prediction (its trial failed, or never reached the
    /// target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Why it was not chosen, against the chosen one's figures
    /// (`predict::why_not`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
}

/// The planner's choice and what it rests on (the build report's
/// `auto_plan`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AutoPlan {
    pub objective: Objective,
    pub target_recall: f64,
    pub sample: usize,
    pub queries: usize,
    pub sample_budget: usize,
    pub device: Device,
    pub candidates: Vec<Candidate>,
    pub chosen: String,
    /// The PQ bytes its best trial had, where the planner chose them
    /// (`pq_sizes`); the build takes them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pq_bytes: Option<usize>,
    /// The extended-RaBitQ bits its best trial had, where it estimated
    /// from them (`code_choices`); the build takes them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exrabitq_bits: Option<usize>,
    /// Its best trial searched with the pipelined refinement
    /// ([`refinements`]); the build makes it the index's default.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pipelined: bool,
    /// Its best trial's layout where not the profile's default
    /// (`variants`); the build takes it.
    #[serde(default, skip_serializing_if = "Layout::is_default")]
    pub layout: Layout,
    /// Why `layout` where a rule chose it, not a trial
    /// (`variants::blocks_when_cached`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub layout_why: String,
    pub why: String,
    /// Seconds the whole plan took (trials, probe).
    pub seconds: f64,
    /// Where they went: the sample and its graph, the trials' builds and
    /// searches (every composition tried), the device probe.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<(String, f64)>,
}

/// The codes a candidate is tried with: PQ of the bytes [`pq_sizes`]
/// gives, and for a two-stage search (whose refinement settles from
/// bounds, `search::settle`) extended RaBitQ at each of [`EXRABITQ_BITS`]
/// whose codes take at most [`EXRABITQ_SHARE`] of a vector's share of the
/// budget (the graph must fit beside them).
fn code_choices(
    profile: &str,
    base: &BuildParams,
    dim: usize,
    budget: usize,
    n: usize,
) -> Vec<Codes> {
    let mut out: Vec<Codes> = pq_sizes(profile, base, dim, budget / n.max(1))
        .into_iter()
        .map(|pq| Codes { pq, exrabitq: None })
        .collect();
    let two_stage = crate::profile::two_stage(&base.with_profile(profile));
    if !two_stage || base.exrabitq_bits.is_some() || dim < EXRABITQ_MIN_DIM {
        return out;
    }
    let share = (EXRABITQ_SHARE * budget as f64 / n.max(1) as f64) as usize;
    let widest = crate::quant::exrabitq::bits_within(dim, share);
    let mut widths: Vec<usize> = EXRABITQ_BITS.iter().copied().chain(widest).collect();
    widths.sort_unstable();
    widths.dedup();
    for bits in widths {
        if crate::quant::exrabitq::bytes_per_vector(dim, bits) <= share {
            out.push(Codes {
                pq: None,
                exrabitq: Some(bits),
            });
        }
    }
    out
}

/// The refinements a candidate's build is searched with (`pipelined`
/// or not): its own, and for the latency objective on a two-stage
/// profile the pipelined one too. At one query a thread the pipelined
/// refinement overlaps its reads with the search stage's CPU: on
/// wordnet-minilm at 20% gorgeous answered at R@10 0.95 in ~280 µs
/// (mean) with it against ~415 without, and on 4-bit extended RaBitQ in
/// ~276 against ~310, reading 14.4 a query against 8.7; with many
/// queries in flight the reads it adds cost throughput, so the throughput
/// objective does not try it.
fn refinements(profile: &str, base: &BuildParams, objective: Objective) -> Vec<bool> {
    let two_stage = crate::profile::two_stage(&base.with_profile(profile));
    match objective == Objective::Latency && two_stage && !base.pipelined_refinement {
        true => vec![false, true],
        false => vec![two_stage && base.pipelined_refinement],
    }
}

/// Extended-RaBitQ widths the planner tries, with the widest whose codes
/// fit the share: two bits (104 bytes a vector at 384-d, where a 10%
/// budget has no room for four), four (the 99.9% bound settles most of the top 10 of
/// wordnet-minilm unread), eight (tighter still where the budget holds
/// them).
pub const EXRABITQ_BITS: &[usize] = &[2, 4, 8];

/// Dimensions below which extended RaBitQ is not tried: its bound scales
/// as 1/√(D − 1) and its codes at four bits are half PQ's one byte a
/// dimension, so at 16-d it estimated worse than PQ; a 16-d planner test
/// that chose it by a timing's noise then searched to 0.885 recall where
/// PQ gives ≥ 0.9.
pub const EXRABITQ_MIN_DIM: usize = 64;

/// The share of a vector's budget extended-RaBitQ codes may take.
pub const EXRABITQ_SHARE: f64 = 0.75;

/// One candidate's codes (`code_choices`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Codes {
    pub pq: Option<usize>,
    pub exrabitq: Option<usize>,
}

impl Codes {
    fn name(&self, profile: &str) -> String {
        match (self.pq, self.exrabitq) {
            (_, Some(b)) => format!("{profile}-exrabitq{b}"),
            (Some(m), None) => format!("{profile}-pq{m}"),
            (None, None) => profile.to_string(),
        }
    }
}

/// PQ bytes a candidate is tried at: where the caller left them unset and
/// the profile estimates from PQ codes without sizing them itself (only
/// the profiles that cache the graph run `memory::pq_plan`), each of
/// [`PQ_SIZES`] up to the dimension whose codes fit in a vector's share of
/// the budget (`per_vector` bytes: codes that do not fit leave the search
/// nothing in RAM to estimate from); else its own (`None`). At 5% of
/// wordnet-minilm starling with the default 32 bytes read 61.5 a query
/// at R@10 0.95 where 48 bytes read 36.6 (BENCHMARKS.md, the planner).
fn pq_sizes(
    profile: &str,
    base: &BuildParams,
    dim: usize,
    per_vector: usize,
) -> Vec<Option<usize>> {
    let params = base.with_profile(profile);
    let own = match crate::profile::plan(&params) {
        Ok(plan) => plan.codes != crate::plan::CodesPart::Pq || plan.holds(Part::Adjacency),
        Err(_) => true,
    };
    if own || !base.unset.pq_bytes {
        return vec![None];
    }
    let sizes: Vec<Option<usize>> = PQ_SIZES
        .iter()
        .filter(|&&m| m <= dim && m <= per_vector)
        .map(|&m| Some(m))
        .collect();
    match sizes.is_empty() {
        true => vec![None],
        false => sizes,
    }
}

/// The PQ sizes the planner tries ([`pq_sizes`]).
pub const PQ_SIZES: &[usize] = &[32, 48, 64, 96];

/// The sample's graph, built once with the caller's graph parameters: every
/// candidate lays its parts over it (their graphs would be the same).
fn sample_graph(sample: &Sample, input: &AutoInput) -> Result<(Graph, BuildStats)> {
    let (p, _) = crate::index::fit::fit(input.base, sample.len(), input.dim, DType::F32)?;
    let vp = p.vamana();
    input.progress.stage("plan: sample graph", 0);
    let space = BuildSpace::new(&sample.rows, input.dim, input.metric);
    let pool = crate::index::build::thread_pool(input.threads, "plan")?;
    let stop = || input.progress.cancelled();
    let built = pool.install(|| crate::graph::build_until(&space, &vp, &|_, _| {}, &stop));
    input.progress.finish();
    built.ok_or_else(|| crate::index::interrupt::cancelled(input.work))
}

/// The caller's queries to plan with (`params.plan_queries`), as f32 rows
/// of `dim` normalised as the data is (`params.metric`); `None` when none
/// were given. The planner's trials and the build's refinement
/// measurement (`index::stages::refinement`) both search with them.
pub(crate) fn plan_queries(params: &BuildParams, dim: usize) -> Result<Option<Vec<f32>>> {
    let Some(path) = &params.plan_queries else {
        return Ok(None);
    };
    let file = crate::data::open(path)?;
    file.check_dim(dim, "data (plan_queries)")?;
    let mut q = file.to_f32_vec();
    if q.is_empty() {
        return Err(crate::error::Error::argument(
            format!("plan_queries {}", path.display()),
            "one query or more",
            "none",
        ));
    }
    if params.metric == Metric::Cosine {
        q.chunks_mut(dim).for_each(crate::data::normalize_f32);
    }
    Ok(Some(q))
}

/// One trial as the plan keeps it: the profile, where its index was
/// built, its figures (`None`: it did not reach the target), and why not.
type Tried<'a> = (&'a str, PathBuf, Option<Trial>, Option<String>);

/// Each profile's best trial over the PQ sizes it was tried at, by the
/// objective's figure, with its prediction.
fn best_sizes(
    tried: &[Tried],
    device: &Device,
    threads: usize,
    objective: Objective,
) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    for (profile, _, trial, skipped) in tried {
        let predicted = trial.as_ref().map(|t| predict::predict(t, device, threads));
        let c = Candidate {
            profile: profile.to_string(),
            trial: trial.clone(),
            predicted,
            skipped: skipped.clone(),
            why_not: None,
        };
        match out.iter_mut().find(|o| o.profile == *profile) {
            Some(o) if predict::better(&c, o, objective) => *o = c,
            Some(_) => {}
            None => out.push(c),
        }
    }
    out
}

/// Tries every candidate on a sample of `input.data` and chooses one.
/// `None` when the data is too small to sample ([`sample::MIN_ROWS`]) or
/// the build has no budget to plan for: the caller keeps the default
/// profile.
pub fn choose(input: &AutoInput) -> Result<Option<AutoPlan>> {
    let t = std::time::Instant::now();
    let n = input.data.len() / input.dim.max(1);
    let Some(budget) = input.base.memory_budget else {
        return Ok(None);
    };
    if n < sample::MIN_ROWS {
        return Ok(None);
    }
    let mut stages = Stages::default();
    let given = plan_queries(input.base, input.dim)?;
    let sample = Sample::draw(
        input.data,
        input.dim,
        input.metric,
        budget as usize,
        input.threads,
        input.base.seed,
        given.as_deref(),
    );
    let setup = TrialSetup {
        sample: &sample,
        base: input.base,
        threads: input.threads,
        objective: input.base.objective,
        target: input.base.target_recall,
        progress: input.progress,
        codebooks: Default::default(),
        build_stages: Default::default(),
    };
    std::fs::create_dir_all(input.work).at("create", input.work)?;
    let graph = sample_graph(&sample, input)?;
    stages.lap("sample and its graph");
    let mut tried: Vec<Tried> = Vec::new();
    let mut crossed: std::collections::HashMap<&str, f64> = Default::default();
    let mut last: Option<f64> = None;
    for profile in crate::profile::planned() {
        for codes in code_choices(profile, input.base, input.dim, budget as usize, n) {
            let dir = input.work.join(codes.name(profile));
            // Where this profile last crossed the target, else any trial.
            let hint = crossed.get(profile).copied().or(last);
            let pipes = refinements(profile, input.base, setup.objective);
            let try_ = Try {
                profile,
                codes,
                layout: Layout::default(),
                pipes: &pipes,
                hint,
            };
            for t in run_trial(&try_, &dir, &setup, &graph, &mut stages)? {
                if let (Some(t), _) = &t {
                    crossed.insert(profile, t.complexity);
                    last = Some(t.complexity);
                }
                tried.push((profile, dir.clone(), t.0, t.1));
            }
        }
    }
    let probe = std::time::Instant::now();
    let pages = tried
        .iter()
        .find(|c| c.2.as_ref().is_some_and(|t| t.page_size == 4096))
        .map(|c| c.1.join(crate::layout::PAGES_FILE));
    let mut device = Device::probe(pages, input.threads, input.base.device_reads_per_s);
    let mut probe_s = probe.elapsed().as_secs_f64();
    let leaders = best_sizes(&tried, &device, input.threads, setup.objective);
    try_layouts(&leaders, input, &setup, &graph, &mut stages, &mut tried)?;
    let probe = std::time::Instant::now();
    let larger: Vec<(usize, PathBuf)> = tried
        .iter()
        .filter_map(|c| {
            c.2.as_ref()
                .map(|t| (t.page_size, c.1.join(crate::layout::PAGES_FILE)))
        })
        .filter(|(p, _)| *p > 4096)
        .collect();
    device.probe_pages(&larger, input.threads);
    probe_s += probe.elapsed().as_secs_f64();
    stages.trials_done(&setup.build_stages.borrow(), probe_s);
    stages.out.push(("device probe".into(), probe_s));
    let mut candidates = best_sizes(&tried, &device, input.threads, setup.objective);
    let _ = std::fs::remove_dir_all(input.work);
    let (chosen, why) = predict::pick(&candidates, setup.objective, setup.target);
    predict::why_not(&mut candidates, &chosen, setup.objective);
    let best = candidates
        .iter()
        .find(|c| c.profile == chosen)
        .and_then(|c| c.trial.as_ref());
    let blocks =
        best.and_then(|t| variants::blocks_when_cached(&chosen, input.base, t, n, input.dim));
    Ok(Some(AutoPlan {
        pq_bytes: best.and_then(|t| t.pq_bytes),
        exrabitq_bits: best.and_then(|t| t.exrabitq_bits),
        pipelined: best.is_some_and(|t| t.pipelined),
        layout: blocks
            .as_ref()
            .map(|b| b.0)
            .or(best.map(|t| t.layout))
            .unwrap_or_default(),
        layout_why: blocks.map(|b| b.1).unwrap_or_default(),
        objective: setup.objective,
        target_recall: setup.target,
        sample: sample.len(),
        queries: sample.queries.len() / input.dim,
        sample_budget: sample.budget,
        device,
        candidates,
        chosen,
        why,
        seconds: t.elapsed().as_secs_f64(),
        stages: stages.done(),
    }))
}

/// Tries each contender (`contenders`) again in the layouts
/// `variants::variants` gives it, with the codes and refinement of its
/// best trial, adding those trials to `tried`.
fn try_layouts<'a>(
    leaders: &[Candidate],
    input: &AutoInput,
    setup: &TrialSetup,
    graph: &(Graph, BuildStats),
    stages: &mut Stages,
    tried: &mut Vec<Tried<'a>>,
) -> Result<()> {
    for c in contenders(leaders, setup.objective) {
        let t = c.trial.as_ref().expect("a contender has a trial");
        let codes = Codes {
            pq: t.pq_bytes,
            exrabitq: t.exrabitq_bits,
        };
        let Some(profile) = crate::profile::planned()
            .into_iter()
            .find(|p| *p == c.profile)
        else {
            continue;
        };
        // A layout the fit refuses is not tried (`variants` keeps only
        // those it takes); one it cannot judge leaves the defaults.
        let layouts = variants::variants(profile, input.base, setup.sample.len(), input.dim)
            .unwrap_or_default();
        for layout in layouts {
            let label = layout.label().replace(' ', "-");
            let dir = input.work.join(format!("{}-{label}", codes.name(profile)));
            let pipes = [t.pipelined];
            let try_ = Try {
                profile,
                codes,
                layout,
                pipes: &pipes,
                hint: Some(t.complexity),
            };
            for t in run_trial(&try_, &dir, setup, graph, stages)? {
                tried.push((profile, dir.clone(), t.0, t.1));
            }
        }
    }
    Ok(())
}

/// Runs `t` into `dir`: each refinement's trial, or why it has none. Only
/// a cancel is an error; a failed trial is a candidate skipped, and says
/// why.
fn run_trial(
    t: &Try,
    dir: &Path,
    setup: &TrialSetup,
    graph: &(Graph, BuildStats),
    stages: &mut Stages,
) -> Result<Vec<(Option<Trial>, Option<String>)>> {
    let mut name = t.codes.name(t.profile);
    if !t.layout.is_default() {
        name = format!("{name} {}", t.layout.label());
    }
    setup.progress.stage(&format!("plan: try {name}"), 0);
    let ts = trial::run(t, dir, setup, graph);
    setup.progress.finish();
    let ts = match ts {
        Err(e) if e.kind() == crate::ErrorKind::Cancelled => return Err(e),
        Err(e) => vec![Err(e.to_string()); t.pipes.len()],
        Ok(ts) => ts.into_iter().map(Ok).collect(),
    };
    let mut out = Vec::new();
    for r in ts {
        stages.trial(r.as_ref().ok().and_then(|t| t.as_ref()));
        out.push(match r {
            Ok(Some(t)) => (Some(t), None),
            Ok(None) => (
                None,
                Some(format!(
                    "no list size up to 200 reached R@10 {}",
                    setup.target
                )),
            ),
            Err(e) => (None, Some(format!("its trial failed: {e}"))),
        });
    }
    Ok(out)
}

/// The candidates tried again in other layouts (`variants`): those whose
/// predicted figure is within [`variants::CONTENDER_SHARE`] of the best.
fn contenders(candidates: &[Candidate], objective: Objective) -> Vec<&Candidate> {
    let share = |c: &Candidate| predict::share_of_best(c, candidates, objective);
    candidates
        .iter()
        .filter(|c| c.trial.is_some() && share(c).is_some_and(|s| s >= variants::CONTENDER_SHARE))
        .collect()
}

/// The plan's time by stage ([`AutoPlan::stages`]).
struct Stages {
    lap: std::time::Instant,
    out: Vec<(String, f64)>,
    /// The trials' builds and searches so far (those that reached the
    /// target; a trial that did not is counted in "trials otherwise").
    builds: f64,
    searches: f64,
}

impl Default for Stages {
    fn default() -> Self {
        Stages {
            lap: std::time::Instant::now(),
            out: Vec::new(),
            builds: 0.0,
            searches: 0.0,
        }
    }
}

impl Stages {
    /// Seconds since the last lap, starting the next.
    fn take_lap(&mut self) -> f64 {
        let now = std::time::Instant::now();
        let secs = (now - self.lap).as_secs_f64();
        self.lap = now;
        secs
    }

    /// Ends a stage named `name` now.
    fn lap(&mut self, name: &str) {
        let secs = self.take_lap();
        self.out.push((name.into(), secs));
    }

    /// Ends the trials: their builds (and the builds' `stages` summed over
    /// every trial), their searches, and the rest (the trials that failed
    /// or never reached the target).
    fn trials_done(&mut self, stages: &[(String, f64)], probe_s: f64) {
        let secs = self.take_lap() - probe_s;
        self.out.push(("trial builds".into(), self.builds));
        for (name, s) in stages {
            self.out.push((format!("trial builds: {name}"), *s));
        }
        self.out.push(("trial searches".into(), self.searches));
        let rest = (secs - self.builds - self.searches).max(0.0);
        self.out.push(("trials otherwise".into(), rest));
    }

    fn trial(&mut self, t: Option<&Trial>) {
        if let Some(t) = t {
            self.builds += t.build_s;
            self.searches += t.search_s;
        }
    }

    fn done(self) -> Vec<(String, f64)> {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Unset;

    /// The pipelined refinement is tried for one query a thread on the
    /// profiles that refine, and only there; a caller's ask for it keeps
    /// it.
    #[test]
    fn the_pipelined_refinement_is_tried_for_latency_on_two_stage_profiles() {
        let base = BuildParams::for_profile(AUTO);
        for profile in crate::profile::planned() {
            let two_stage = crate::profile::two_stage(&base.with_profile(profile));
            let want = match two_stage {
                true => vec![false, true],
                false => vec![false],
            };
            assert_eq!(refinements(profile, &base, Objective::Latency), want);
            assert_eq!(
                refinements(profile, &base, Objective::Throughput),
                vec![false]
            );
        }
        assert!(crate::profile::two_stage(&base.with_profile("gorgeous")));
        let asked = BuildParams {
            pipelined_refinement: true,
            ..base
        };
        assert_eq!(
            refinements("gorgeous", &asked, Objective::Latency),
            vec![true]
        );
        assert_eq!(
            refinements("diskann", &asked, Objective::Latency),
            vec![false]
        );
    }

    /// Every code a candidate is tried with fits a vector's share of the
    /// budget: PQ bytes within it, extended-RaBitQ codes within
    /// [`EXRABITQ_SHARE`] of it, the widest such width among them.
    #[test]
    fn every_code_tried_fits_the_budget() {
        let base = BuildParams {
            unset: Unset::all(),
            ..BuildParams::for_profile(AUTO)
        };
        let n = 100_000;
        for dim in [16, 96, 384, 768] {
            for share in [0.02, 0.05, 0.1, 0.2, 0.4, 1.0] {
                let budget = (share * (n * dim * 4) as f64) as usize;
                let per_vector = budget / n;
                for profile in crate::profile::planned() {
                    let codes = code_choices(profile, &base, dim, budget, n);
                    assert!(!codes.is_empty(), "{profile} at {dim}-d, {share}");
                    let mut bits: Vec<usize> = Vec::new();
                    for c in &codes {
                        if let Some(m) = c.pq {
                            assert!(
                                m <= per_vector && m <= dim,
                                "{profile} pq{m}, {per_vector} B"
                            );
                        }
                        if let Some(b) = c.exrabitq {
                            let bytes = crate::quant::exrabitq::bytes_per_vector(dim, b);
                            let room = (EXRABITQ_SHARE * per_vector as f64) as usize;
                            assert!(bytes <= room, "{profile} ex{b}: {bytes} B of {room}");
                            assert!(dim >= EXRABITQ_MIN_DIM);
                            bits.push(b);
                        }
                    }
                    let room = (EXRABITQ_SHARE * per_vector as f64) as usize;
                    let widest = crate::quant::exrabitq::bits_within(dim, room);
                    if !bits.is_empty() {
                        assert_eq!(bits.iter().max().copied(), widest, "{dim}-d at {share}");
                        assert!(bits.windows(2).all(|w| w[0] < w[1]));
                    }
                }
            }
        }
    }
}
