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

use crate::data::Metric;
use crate::error::{FileContext, Result};
use crate::index::build::BuildParams;
use crate::progress::Progress;
use predict::Device;
use sample::Sample;
use serde::{Deserialize, Serialize};
use std::path::Path;
use trial::{Trial, TrialSetup};

/// The profile name that asks for the planner.
pub const AUTO: &str = "auto";

/// The compositions tried, in the order their trials run. The cluster
/// (ivf) and memory-tier (tiered) profiles serve other needs (a tier
/// slower than RAM, an index with almost nothing in RAM) and are not
/// candidates.
pub const CANDIDATES: &[&str] = &[
    "diskann", "starling", "gorgeous", "laser", "pipeann", "octopus",
];

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
    pub why: String,
    /// Seconds the whole plan took (trials, probe).
    pub seconds: f64,
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
    let sample = Sample::draw(
        input.data,
        input.dim,
        input.metric,
        budget as usize,
        input.threads,
        input.base.seed,
    );
    let setup = TrialSetup {
        sample: &sample,
        base: input.base,
        threads: input.threads,
        objective: input.base.objective,
        target: input.base.target_recall,
        progress: input.progress,
    };
    std::fs::create_dir_all(input.work).at("create", input.work)?;
    let mut candidates = Vec::new();
    for (i, &profile) in CANDIDATES.iter().enumerate() {
        input.progress.stage(&format!("plan: try {profile}"), 0);
        let dir = input.work.join(profile);
        let tried = trial::run(profile, &dir, &setup);
        input.progress.finish();
        let (trial, skipped) = match tried {
            Err(e) if e.kind() == crate::ErrorKind::Cancelled => return Err(e),
            Ok(Some(t)) => (Some(t), None),
            Ok(None) => (
                None,
                Some(format!(
                    "no list size up to 200 reached R@10 {}",
                    setup.target
                )),
            ),
            Err(e) => (None, Some(format!("its trial failed: {e}"))),
        };
        candidates.push((i, profile, dir, trial, skipped));
    }
    let device = Device::probe(
        candidates
            .iter()
            .find(|c| c.3.is_some())
            .map(|c| c.2.join(crate::layout::PAGES_FILE)),
        input.threads,
        input.base.device_reads_per_s,
    );
    let candidates: Vec<Candidate> = candidates
        .into_iter()
        .map(|(_, profile, _, trial, skipped)| Candidate {
            profile: profile.to_string(),
            predicted: trial
                .as_ref()
                .map(|t| predict::predict(t, &device, input.threads)),
            trial,
            skipped,
        })
        .collect();
    let _ = std::fs::remove_dir_all(input.work);
    let (chosen, why) = predict::pick(&candidates, setup.objective, setup.target);
    Ok(Some(AutoPlan {
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
    }))
}
