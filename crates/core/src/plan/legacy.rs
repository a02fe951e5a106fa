//! The plan of an index built before the manifest recorded one (format
//! version 1 without `plan`, issue #52): what its profile and build
//! parameters plan, as the files it holds show it was carried out. The
//! one place that reads which optional files an index has, and only for
//! such indexes.

use super::Plan;
use crate::error::Result;
use crate::index::manifest::Manifest;
use crate::memory::adjacency_cache::GRAPH_FILE;
use crate::memory::cache_order::ORDER_FILE;
use crate::memory::cache_rank::CacheRank;
use crate::memory::planner::Part;

/// The plan `manifest` records, or for an older index the one its build
/// carried out.
pub fn plan_of(manifest: &Manifest) -> Result<Plan> {
    if let Some(plan) = &manifest.plan {
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
