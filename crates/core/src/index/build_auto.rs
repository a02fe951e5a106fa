//! `build --profile auto` (issue #57): the planner (`autoplan`) chooses the
//! profile before the build proper starts, on the data the build was given.

use super::build::BuildParams;
use crate::autoplan::{self, AutoInput, AutoPlan};
use crate::data::{Metric, VectorRows, Vectors};
use crate::error::Result;
use crate::progress::Progress;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The parameters of the profile the planner chose for `params` (whose
/// profile is `auto`), the plan, and the build's `chosen` entry saying
/// why (the build notes it with its other choices). Data too small to sample, or a build without a budget, keeps the
/// default profile, and says so.
pub(super) fn resolve(
    data: &Vectors<'_>,
    params: &BuildParams,
    dir: &Path,
    threads: usize,
    progress: &dyn Progress,
) -> Result<(BuildParams, Option<AutoPlan>, BTreeMap<String, String>)> {
    let dim = data.dim();
    let mut f32_data = data.elems().to_f32();
    if params.metric == Metric::Cosine {
        f32_data
            .to_mut()
            .chunks_mut(dim)
            .for_each(crate::data::normalize_f32);
    }
    let work = work_dir(dir);
    let input = AutoInput {
        data: &f32_data,
        dim,
        metric: params.metric,
        base: params,
        threads,
        work: &work,
        progress,
    };
    let plan = autoplan::choose(&input);
    // A failed or cancelled plan leaves nothing behind.
    let _ = std::fs::remove_dir_all(&work);
    let plan = plan?;
    let (profile, why) = match &plan {
        Some(p) => (p.chosen.clone(), p.why.clone()),
        None => (
            crate::profile::DEFAULT.to_string(),
            match params.memory_budget {
                None => "the default: auto plans for a memory budget (--memory-budget-mb)".into(),
                Some(_) => format!(
                    "the default: auto samples {} rows or more",
                    autoplan::sample::MIN_ROWS
                ),
            },
        ),
    };
    let mut chosen = BTreeMap::from([("profile".to_string(), format!("{profile}: {why}"))]);
    let mut out = params.with_profile(&profile);
    if let Some(m) = plan.as_ref().and_then(|p| p.pq_bytes) {
        out.pq_bytes = m;
        out.unset.pq_bytes = false;
        chosen.insert(
            "pq_bytes".into(),
            format!(
                "{m}: {profile}'s best on the planner's sample of the sizes {:?} (auto_plan)",
                autoplan::PQ_SIZES
            ),
        );
    }
    if let Some(b) = plan.as_ref().and_then(|p| p.exrabitq_bits) {
        out.exrabitq_bits = Some(b);
        chosen.insert(
            "exrabitq_bits".into(),
            format!("{b}: {profile}'s best on the planner's sample estimated from {b}-bit extended RaBitQ (auto_plan)"),
        );
    }
    // The pipelined refinement where the plan chose it; a caller's ask for
    // it holds only where the chosen profile has a refinement to pipeline.
    let two_stage = crate::profile::two_stage(&out);
    let planned = plan.as_ref().is_some_and(|p| p.pipelined);
    out.pipelined_refinement = two_stage && (planned || params.pipelined_refinement);
    if planned {
        chosen.insert(
            "pipelined_refinement".into(),
            format!("true: {profile}'s best on the planner's sample at one query a thread searched with it (auto_plan)"),
        );
    }
    // The layout its best trial had, where it was not the profile's own
    // (`autoplan::variants`).
    // A rule's layout says its own why.
    if let Some(p) = plan.as_ref().filter(|p| !p.layout.is_default()) {
        p.layout.apply(&mut out);
        let why = match p.layout_why.is_empty() {
            true => format!(
                "{}: {profile}'s best on the planner's sample among the stored types and page sizes it was tried in (auto_plan)",
                p.layout.label()
            ),
            false => p.layout_why.clone(),
        };
        chosen.insert("layout".into(), why);
    }
    Ok((out, plan, chosen))
}

/// Where the trials are built: beside the index, hidden, so they share its
/// device (the probe measures the disk the index will live on).
fn work_dir(dir: &Path) -> PathBuf {
    let name = dir
        .file_name()
        .map_or("index".into(), |n| n.to_string_lossy().into_owned());
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
    parent
        .unwrap_or(Path::new("."))
        .join(format!(".{name}.autoplan"))
}
