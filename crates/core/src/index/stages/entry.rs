//! The entry stage (the plan's entry part): the cluster entries
//! (AlayaLaser §4.1), and the navigation graph over a sample (Starling
//! §4.3), which a planned build keeps only if sample queries gain from it
//! (Gorgeous §4.1 ②, `memory::nav_plan`). The graph is built whenever the
//! parameters sample one: the graph cache is ranked by distance to it even
//! where it is not kept.

use super::codes::Codes;
use super::Build;
use crate::entry::clusters::{self, ClusterEntries, ENTRY_FILE};
use crate::entry::NavGraph;
use crate::error::Result;
use crate::graph::Graph;
use crate::memory::nav_plan;
use crate::plan::entry::NAV_FILE;
use crate::plan::EntryPart;
use std::time::Instant;

/// The cluster entries, where the plan starts queries at them.
pub(super) fn write_clusters(b: &mut Build) -> Result<Option<ClusterEntries>> {
    if b.plan.entry != EntryPart::Clusters {
        return Ok(None);
    }
    b.checkpoint("entry")?;
    let t = Instant::now();
    b.progress.stage("entry clusters", 0);
    let p = &b.params;
    let k = p
        .entry_clusters
        .unwrap_or_else(|| clusters::default_clusters(b.n));
    let (data, dim, metric, seed) = (b.data, b.dim, p.metric, p.seed);
    let built = b
        .pool
        .install(|| ClusterEntries::build(data, dim, metric, k, seed));
    b.write_file(ENTRY_FILE, |w| built.write(w))?;
    b.progress.finish();
    b.nested += b.stage("entry", t, 0.0);
    Ok(Some(built))
}

/// The navigation graph, if the parameters sample one, and whether the
/// index keeps it.
pub(super) struct Nav {
    pub graph: Option<NavGraph>,
    pub kept: bool,
}

pub(super) fn write_nav(b: &mut Build, graph: &Graph, codes: &Codes) -> Result<Nav> {
    let p = &b.params;
    if p.nav_sample <= 0.0 {
        return Ok(Nav {
            graph: None,
            kept: false,
        });
    }
    b.checkpoint("nav")?;
    let t = Instant::now();
    b.progress.stage("navigation graph", 0);
    let (data, dim, metric) = (b.data, b.dim, p.metric);
    let (sample, degree, seed) = (p.nav_sample, p.nav_degree, p.seed);
    let nav = b
        .pool
        .install(|| NavGraph::build(data, dim, metric, sample, degree, seed));
    let kept = match &b.report.pq_plan {
        Some(_) => keeps(b, graph, codes, &nav),
        None => true,
    };
    if kept {
        b.write_file(NAV_FILE, |w| nav.write(w))?;
    }
    b.progress.finish();
    b.nested += b.stage("nav", t, 0.0);
    Ok(Nav {
        graph: Some(nav),
        kept,
    })
}

/// Whether a build whose PQ bytes the planner chose keeps the navigation
/// graph: only if sample queries gain from it, and why not if they do not.
fn keeps(b: &mut Build, graph: &Graph, codes: &Codes, nav: &NavGraph) -> bool {
    let chosen_size = b
        .report
        .pq_plan
        .as_ref()
        .and_then(|p| p.candidates.iter().find(|c| c.pq_bytes == p.pq_bytes));
    let depth = chosen_size.and_then(|c| c.depth).unwrap_or(32);
    let graph_share = chosen_size.map_or(0.0, |c| c.graph_share);
    // The list size the two-stage search needs at σ = 0.5.
    let l = (2 * depth).max(16);
    let Some(pq) = codes.pq() else {
        return true;
    };
    let g = nav_plan::InRam {
        lists: &graph.lists,
        medoid: graph.medoid,
        pq,
        data: b.data,
        dim: b.dim,
        graph_share,
    };
    let nav_l = crate::SearchParams::default().nav_complexity;
    let seed = b.params.seed;
    let plan = b.pool.install(|| nav_plan::decide(&g, nav, l, nav_l, seed));
    let kept = plan.kept;
    if !kept {
        let why = format!(
            "none kept: the navigation graph saved too little on {} sample queries \
             (search-stage cost {:.0} PQ estimates a query from it, {:.0} from the medoid, \
             with {:.1} expansions against {:.1}, {:.0} f32 distances of its own and {:.0}% \
             of the lists cached; needs {:.0}% less)",
            plan.queries,
            plan.cost_from_nav,
            plan.cost_from_medoid,
            plan.expansions_from_nav,
            plan.expansions_from_medoid,
            plan.nav_distances,
            plan.graph_share * 100.0,
            nav_plan::MIN_GAIN * 100.0
        );
        b.progress.note(&format!("navigation graph: {why}"));
        b.choose("nav_sample", why);
    }
    b.report.nav_plan = Some(plan);
    kept
}
