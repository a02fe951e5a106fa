//! The plan of an index built before the manifest recorded one (format
//! version 1 without `plan`, issue #52): what its profile and build
//! parameters plan, as the files it holds show it was carried out. The
//! one place that reads which optional files an index has, and only for
//! such indexes.

use super::Plan;
use crate::error::Result;
use crate::index::manifest::{Manifest, MANIFEST};
use crate::memory::adjacency_cache::GRAPH_FILE;
use crate::memory::cache_order::ORDER_FILE;
use crate::memory::cache_rank::CacheRank;
use crate::memory::planner::Part;
use std::path::Path;

/// The plan `manifest` (of the index in `dir`) records, or for an older
/// index the one its build carried out.
pub fn plan_of(dir: &Path, manifest: &Manifest) -> Result<Plan> {
    if let Some(plan) = &manifest.plan {
        check(plan, &dir.join(MANIFEST), manifest)?;
        return Ok(plan.clone());
    }
    let has = |name: &str| manifest.files.contains_key(name);
    let mut plan = crate::profile::plan(&manifest.build)?.as_built(has(super::entry::NAV_FILE));
    if plan.ranks_node_cache() && !has(ORDER_FILE) {
        plan.node_cache = CacheRank::Bfs;
    }
    plan.ids = has(crate::index::ids::IDS_FILE);
    if !has(GRAPH_FILE) {
        plan.resident.retain(|&p| p != Part::Adjacency);
    }
    Ok(plan)
}

/// A recorded plan names parts that fit together and the layout the
/// manifest (and the pages header, checked against it) names: a damaged or
/// hostile manifest must not pair, say, a cluster search with a graph.
fn check(plan: &Plan, path: &Path, manifest: &Manifest) -> Result<()> {
    use super::{CodesPart, SearchPart};
    use crate::layout::LayoutKind;
    let bad = |field: &str, expected: String, found: String| {
        Err(crate::error::Error::index(path, field, expected, found))
    };
    if plan.layout.name() != manifest.layout {
        return bad(
            "plan.layout",
            format!("{} (the manifest's layout)", manifest.layout),
            plan.layout.name().into(),
        );
    }
    let laser = plan.layout == LayoutKind::Laser;
    let ivf = plan.layout == LayoutKind::Ivf;
    let codes_fit = match plan.codes {
        CodesPart::Records => laser,
        CodesPart::IvfPq | CodesPart::None => ivf,
        CodesPart::Pq | CodesPart::ExRabitq => !laser && !ivf,
    };
    if !codes_fit {
        return bad(
            "plan.codes",
            format!("codes a {} layout can carry", plan.layout),
            format!("{:?}", plan.codes),
        );
    }
    let search_fits = match plan.search {
        SearchPart::Laser => laser,
        SearchPart::Clusters => ivf,
        _ => !laser && !ivf,
    };
    if !search_fits {
        return bad(
            "plan.search",
            format!("a search of a {} layout", plan.layout),
            format!("{:?}", plan.search),
        );
    }
    Ok(())
}
