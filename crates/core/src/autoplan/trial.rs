//! One composition tried on the sample (issue #57): built over the sample
//! rows at the sample's budget, opened, and searched over a sweep of list
//! sizes until the held-out queries reach the target recall. What it
//! measures there — reads and CPU a query, and one query's latency when
//! the objective asks for it — is what the planner predicts from.

use super::sample::{Sample, K};
use super::variants::Layout;
use super::Objective;
use crate::data::{DType, Vectors};
use crate::error::Result;
use crate::graph::{BuildStats, Graph};
use crate::index::build::{build_over_graph, BuildParams};
use crate::index::{Index, OpenOptions};
use crate::progress::Progress;
use crate::quant::pq::{PqCodebook, PqTrainParams};
use crate::search::Switches;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

/// List sizes tried, in order; the sweep stops at the first that reaches
/// the target.
const LISTS: &[usize] = &[10, 12, 16, 20, 25, 30, 40, 50, 60, 80, 100, 150, 200];

/// A point is searched until this much CPU was spent or this much time
/// passed, at least once: a pass of 200 queries spends a few milliseconds
/// of CPU, and one bound by the device waits most of its time, so counting
/// CPU alone searched a device-bound point three times as long as its
/// figures needed (the searches were half the plan).
const MIN_PASS_CPU_S: f64 = 0.05;
const MIN_PASS_WALL_S: f64 = 0.05;
const MAX_PASSES: usize = 20;

/// One list size's measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub complexity: usize,
    pub recall: f64,
    pub reads: f64,
    pub cpu_us: f64,
    /// Median latency at one query a thread (latency objective only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_us: Option<f64>,
}

/// A composition's figures at the target recall, interpolated between the
/// two list sizes around it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// The PQ bytes tried, where the planner chose them (`None`: the
    /// profile plans its own, or keeps no PQ codes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pq_bytes: Option<usize>,
    /// The extended-RaBitQ bits tried, where the search estimated from
    /// them instead of PQ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exrabitq_bits: Option<usize>,
    /// Searched with the pipelined refinement (a two-stage profile tried
    /// for the latency objective, `super::refinements`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pipelined: bool,
    /// Its layout where not the profile's default (`super::variants`).
    #[serde(default, skip_serializing_if = "Layout::is_default")]
    pub layout: Layout,
    /// The page size its index read in (what the device's rate is taken
    /// at, `predict::Device::rate`).
    #[serde(default = "default_page_size")]
    pub page_size: usize,
    /// The share of adjacency lists its index held in the sample's budget
    /// (`variants::blocks_when_cached`); `None` in reports written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lists_cached: Option<f64>,
    /// The list size where the recall crosses the target (interpolated).
    pub complexity: f64,
    pub reads: f64,
    pub cpu_us: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_us: Option<f64>,
    /// Seconds its sample build took.
    pub build_s: f64,
    /// Seconds its searches took (every list size tried), so a report
    /// shows where the plan's time went.
    #[serde(default)]
    pub search_s: f64,
    pub points: Vec<Point>,
}

/// Reports written before trials kept their page size read 4 KB pages
/// but laser's.
fn default_page_size() -> usize {
    4096
}

impl Trial {
    /// Its codes, refinement and layout in a few characters (`pq96`,
    /// `exrq4+pipe`, `pq48 f16 8K`), for a report's table.
    pub fn label(&self) -> String {
        let mut out = match (self.pq_bytes, self.exrabitq_bits) {
            (_, Some(b)) => format!("exrq{b}"),
            (Some(m), None) => format!("pq{m}"),
            (None, None) => String::new(),
        };
        if self.pipelined {
            out.push_str("+pipe");
        }
        if !self.layout.is_default() {
            out = format!("{out} {}", self.layout.label()).trim().to_string();
        }
        out
    }
}

/// What every trial shares.
pub struct TrialSetup<'a> {
    pub sample: &'a Sample,
    /// The caller's build parameters (the profile's own parts are set per
    /// trial).
    pub base: &'a BuildParams,
    pub threads: usize,
    pub objective: Objective,
    pub target: f64,
    pub progress: &'a dyn Progress,
    /// PQ codebooks trained on the sample, by PQ bytes: every profile
    /// tried at a size shares one (four profiles are tried at each of
    /// [`super::PQ_SIZES`], and training took most of a trial's build).
    pub codebooks: RefCell<HashMap<usize, PqCodebook>>,
    /// The trials' build stages summed by name (the codebooks' training
    /// as "pq codebooks"), so a plan's report shows what its builds spent.
    pub build_stages: RefCell<Vec<(String, f64)>>,
}

impl TrialSetup<'_> {
    /// The sample's codebook at `params`' PQ bytes, trained the first time
    /// one is asked for (as the build's codes stage would train it).
    fn codebook(&self, params: &BuildParams, dir: &Path) -> Result<PqCodebook> {
        let m = params.pq_bytes;
        if let Some(cb) = self.codebooks.borrow().get(&m) {
            return Ok(cb.clone());
        }
        let tp = PqTrainParams {
            m,
            sample: params.pq_sample,
            iters: params.pq_iters,
            seed: params.seed,
        };
        let pool = crate::index::build::thread_pool(self.threads, "plan")?;
        let (rows, dim) = (&self.sample.rows, self.sample.dim);
        let stop = || self.progress.cancelled();
        let t = Instant::now();
        let cb = pool.install(|| PqCodebook::train_until(rows, dim, &tp, &stop));
        let cb = cb.ok_or_else(|| crate::index::interrupt::cancelled(dir))?;
        self.add_stage("pq codebooks", t.elapsed().as_secs_f64());
        self.codebooks.borrow_mut().insert(m, cb.clone());
        Ok(cb)
    }

    fn add_stage(&self, name: &str, secs: f64) {
        let mut stages = self.build_stages.borrow_mut();
        match stages.iter_mut().find(|(n, _)| n == name) {
            Some((_, s)) => *s += secs,
            None => stages.push((name.to_string(), secs)),
        }
    }
}

/// Forwards only the caller's request to stop: a trial's stages are not
/// the user's.
struct Quiet<'a>(&'a dyn Progress);

impl Progress for Quiet<'_> {
    fn cancelled(&self) -> bool {
        self.0.cancelled()
    }
}

/// Where a sweep over `lists` starts: the largest list size below `hint`
/// (where a like trial crossed the target), else the first. The sweep
/// then walks up until the target is reached or down until it is missed,
/// so a trial measures two or three sizes instead of every size from the
/// first (the plan's searches were about half its time).
fn start(lists: &[usize], hint: Option<f64>) -> usize {
    let Some(h) = hint else { return 0 };
    lists.iter().rposition(|&l| (l as f64) < h).unwrap_or(0)
}

/// The points measured (by `measure`, at list sizes of `lists`, a trial's
/// [`LISTS`]) from where `hint` says ([`start`]): up while they miss
/// `target`, down while they reach it, so the result holds the first size
/// that reaches it and the one below; in order of size.
pub(crate) fn sweep(
    lists: &[usize],
    hint: Option<f64>,
    target: f64,
    mut measure: impl FnMut(usize) -> Result<Point>,
) -> Result<Vec<Point>> {
    let mut points: Vec<Point> = Vec::new();
    let mut i = start(lists, hint);
    loop {
        let p = measure(lists[i])?;
        let reached = p.recall >= target;
        points.push(p);
        let seen = |j: usize| points.iter().any(|p| p.complexity == lists[j]);
        i = match reached {
            true if i > 0 && !seen(i - 1) => i - 1,
            false if i + 1 < lists.len() && !seen(i + 1) => i + 1,
            _ => break,
        };
    }
    points.sort_by_key(|p| p.complexity);
    Ok(points)
}

/// One trial to run: a profile with its codes and layout, the
/// refinements it is searched with, and where its sweep starts
/// ([`start`]).
pub struct Try<'a> {
    pub profile: &'a str,
    pub codes: super::Codes,
    pub layout: Layout,
    pub pipes: &'a [bool],
    pub hint: Option<f64>,
}

/// Lays `t.profile`'s parts (with the `codes` and `layout` given) over the sample's
/// `graph` into `dir` and searches it once a refinement of `t.pipes`
/// (the profile's own search, or with the pipelined refinement), each from
/// the list size `hint` suggests ([`start`]): a trial each, `None` where
/// no list size tried reaches the target. One build serves every search.
pub fn run(
    t: &Try,
    dir: &Path,
    s: &TrialSetup,
    graph: &(Graph, BuildStats),
) -> Result<Vec<Option<Trial>>> {
    let Try {
        profile,
        codes,
        layout,
        pipes: pipelined,
        hint,
    } = *t;
    let sample = s.sample;
    let mut params = BuildParams {
        memory_budget: Some(sample.budget as u64),
        ..s.base.with_profile(profile)
    };
    params.exrabitq_bits = codes.exrabitq.or(params.exrabitq_bits);
    layout.apply(&mut params);
    let page_size = crate::index::fit::fit(&params, sample.len(), sample.dim, DType::F32)?
        .0
        .page_size;
    // Each search asks for its refinement itself (`measure`); the build
    // does not measure it (`index::stages::refinement`).
    params.pipelined_refinement = false;
    params.unset.pipelined_refinement = false;
    let t = Instant::now();
    // A search on extended-RaBitQ codes keeps no PQ codes in RAM; the
    // build still trains PQ (its placement estimates by it), so give it
    // the smallest shared codebook instead of running the memory
    // planner's PQ sizing (2.6 s of a 13 s plan at 10% of wordnet-minilm).
    let pq = match (codes.pq, codes.exrabitq) {
        (None, Some(_)) if params.unset.pq_bytes => Some(super::PQ_SIZES[0].min(sample.dim)),
        (pq, _) => pq,
    };
    let codebook = match pq {
        Some(m) => {
            params.pq_bytes = m;
            params.unset.pq_bytes = false;
            Some(s.codebook(&params, dir)?)
        }
        None => None,
    };
    let rows = Vectors::f32(&sample.rows, sample.dim).expect("sample rows are whole vectors");
    let quiet = Quiet(s.progress);
    let report = build_over_graph(
        rows,
        dir,
        &params,
        s.threads,
        &quiet,
        graph.clone(),
        codebook,
    )?;
    for (name, secs) in &report.stages {
        s.add_stage(name, *secs);
    }
    let build_s = t.elapsed().as_secs_f64();
    let opts = OpenOptions {
        memory_budget_bytes: Some(sample.budget as u64),
        reserve_threads: s.threads,
        ..Default::default()
    };
    let index = Index::open(dir, &opts)?;
    let lists_cached = index.adjacency.len() as f64 / sample.len().max(1) as f64;
    let mut out = Vec::new();
    for &pipe in pipelined {
        let t = Instant::now();
        let points = sweep(LISTS, hint, s.target, |l| {
            if s.progress.cancelled() {
                return Err(crate::index::interrupt::cancelled(dir));
            }
            measure(&index, sample, l, pipe, s)
        })?;
        let search_s = t.elapsed().as_secs_f64();
        out.push(at_target(&points, s.target).map(|mut t| {
            t.pq_bytes = codes.pq;
            t.exrabitq_bits = codes.exrabitq;
            t.pipelined = pipe;
            t.layout = layout;
            t.page_size = page_size;
            t.lists_cached = Some(lists_cached);
            t.build_s = build_s;
            t.search_s = search_s;
            t.points = points;
            t
        }));
    }
    Ok(out)
}

/// Searches the sample's queries at list size `l` (with the pipelined
/// refinement when `pipelined`): at the caller's threads for the
/// throughput objective, one query at a time for the latency objective.
fn measure(
    index: &Index,
    sample: &Sample,
    l: usize,
    pipelined: bool,
    s: &TrialSetup,
) -> Result<Point> {
    let switches = Switches {
        pipelined: pipelined.then_some(true),
        ..Default::default()
    };
    let mut params = index.search_defaults(&switches);
    params.k = K;
    params.complexity = l.max(K);
    params.threads = s.threads;
    if s.objective == Objective::Latency {
        return measure_latency(index, sample, l, params);
    }
    let nq = sample.queries.len() / sample.dim;
    let (cpu0, wall0) = (cpu_seconds(), Instant::now());
    let (mut passes, mut recall, mut reads) = (0usize, 0.0, 0.0);
    while passes < MAX_PASSES {
        let r = index.search_batch(&sample.queries, sample.dim, &params)?;
        recall = sample.recall(&r.ids, K);
        reads = r.stats.iter().map(|q| q.reads as f64).sum::<f64>() / nq as f64;
        passes += 1;
        let wall = wall0.elapsed().as_secs_f64();
        if cpu_seconds() - cpu0 >= MIN_PASS_CPU_S || wall >= MIN_PASS_WALL_S {
            break;
        }
    }
    let cpu_us = (cpu_seconds() - cpu0) / (passes * nq) as f64 * 1e6;
    Ok(Point {
        complexity: l,
        recall,
        reads,
        cpu_us,
        p50_us: None,
    })
}

/// One pass of the sample's queries one at a time: its recall, reads, CPU
/// (a pipelined search's polling included) and median latency. A
/// throughput pass beside it measured nothing the objective compares and
/// was half the plan's searches.
fn measure_latency(
    index: &Index,
    sample: &Sample,
    l: usize,
    mut params: crate::search::SearchParams,
) -> Result<Point> {
    params.threads = 1;
    params.in_flight = 1;
    let nq = sample.queries.len() / sample.dim;
    let cpu0 = cpu_seconds();
    let r = index.search_batch(&sample.queries, sample.dim, &params)?;
    let cpu_us = (cpu_seconds() - cpu0) / nq.max(1) as f64 * 1e6;
    let mut lat: Vec<f64> = r.stats.iter().map(|q| q.latency_us).collect();
    lat.sort_by(f64::total_cmp);
    Ok(Point {
        complexity: l,
        recall: sample.recall(&r.ids, K),
        reads: r.stats.iter().map(|q| q.reads as f64).sum::<f64>() / nq.max(1) as f64,
        cpu_us,
        p50_us: lat.get(lat.len() / 2).copied(),
    })
}

/// The figures where the recall crosses `target`, linear between the
/// last point below it and the first at or above it; `None` when no point
/// reaches it.
pub fn at_target(points: &[Point], target: f64) -> Option<Trial> {
    let hit = points.iter().position(|p| p.recall >= target)?;
    let b = &points[hit];
    let (a, f) = match hit {
        0 => (b, 1.0),
        _ => {
            let a = &points[hit - 1];
            let span = b.recall - a.recall;
            let f = match span > 0.0 {
                true => ((target - a.recall) / span).clamp(0.0, 1.0),
                false => 1.0,
            };
            (a, f)
        }
    };
    let lerp = |x: f64, y: f64| x + (y - x) * f;
    Some(Trial {
        pq_bytes: None,
        exrabitq_bits: None,
        pipelined: false,
        layout: Layout::default(),
        page_size: default_page_size(),
        lists_cached: None,
        complexity: lerp(a.complexity as f64, b.complexity as f64),
        reads: lerp(a.reads, b.reads),
        cpu_us: lerp(a.cpu_us, b.cpu_us),
        p50_us: match (a.p50_us, b.p50_us) {
            (Some(x), Some(y)) => Some(lerp(x, y)),
            _ => None,
        },
        build_s: 0.0,
        search_s: 0.0,
        points: Vec::new(),
    })
}

/// CPU seconds the process has used (`getrusage`), 0 where unknown.
fn cpu_seconds() -> f64 {
    stratavec_io::process_cpu_seconds().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(l: usize, recall: f64, reads: f64) -> Point {
        Point {
            complexity: l,
            recall,
            reads,
            cpu_us: reads * 10.0,
            p50_us: None,
        }
    }

    /// A recall curve rising with the list size; the sweep from any hint
    /// measures what a sweep from the first size finds at the target.
    #[test]
    fn a_sweep_from_any_hint_finds_the_same_crossing() {
        let curve = |l: usize| 1.0 - 3.0 / l as f64;
        for target in [0.5, 0.8, 0.9, 0.95, 0.99, 0.999] {
            let full = sweep(LISTS, None, target, |l| Ok(point(l, curve(l), l as f64))).unwrap();
            let want = at_target(&full, target);
            for hint in [
                None,
                Some(5.0),
                Some(11.0),
                Some(30.0),
                Some(75.0),
                Some(500.0),
            ] {
                let mut n = 0;
                let pts = sweep(LISTS, hint, target, |l| {
                    n += 1;
                    Ok(point(l, curve(l), l as f64))
                })
                .unwrap();
                assert!(pts.windows(2).all(|w| w[0].complexity < w[1].complexity));
                assert_eq!(
                    at_target(&pts, target),
                    want,
                    "target {target} hint {hint:?}"
                );
                assert!(n <= LISTS.len());
            }
        }
        // A hint just below the crossing measures two sizes.
        let mut n = 0;
        sweep(LISTS, Some(70.0), 0.95, |l| {
            n += 1;
            Ok(point(l, curve(l), 1.0))
        })
        .unwrap();
        assert_eq!(n, 2);
    }

    #[test]
    fn the_figures_are_read_where_the_recall_crosses_the_target() {
        let pts = [
            point(10, 0.8, 10.0),
            point(20, 0.9, 20.0),
            point(40, 1.0, 40.0),
        ];
        let t = at_target(&pts, 0.95).unwrap();
        assert!((t.complexity - 30.0).abs() < 1e-9);
        assert!((t.reads - 30.0).abs() < 1e-9);
        assert!((t.cpu_us - 300.0).abs() < 1e-9);
        // Reached at the first point: its figures.
        let t = at_target(&pts, 0.5).unwrap();
        assert_eq!((t.complexity, t.reads), (10.0, 10.0));
        assert!(at_target(&pts[..2], 0.95).is_none());
    }
}
