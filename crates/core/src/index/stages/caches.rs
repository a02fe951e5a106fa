//! The caches' orders, ranked at build where the plan holds them: the node
//! cache's (`order.bin`: by visits, OctopusANN §4.1's visit-frequency cache;
//! by in-degree, AlayaLaser §3.3; nearest the navigation graph) and the
//! graph cache's adjacency lists (`graph.bin`, Gorgeous §4.1). A
//! breadth-first node cache is left to the open (DiskANN).

use super::Build;
use crate::entry::{ClusterEntries, EntryPoints, NavGraph};
use crate::error::Result;
use crate::graph::Graph;
use crate::memory::adjacency_cache::{self, GRAPH_FILE};
use crate::memory::cache_order::{self, ORDER_FILE};
use crate::memory::cache_rank::{self, CacheRank};
use crate::memory::planner::Part;
use crate::quant::pq::PqQuantizer;
use crate::quant::Quantizer;
use std::time::Instant;

/// What the ranks read.
pub(super) struct Ranks<'a> {
    pub graph: &'a Graph,
    /// The navigation graph, kept or not.
    pub nav: Option<&'a NavGraph>,
    pub nav_kept: bool,
    pub entries: Option<&'a ClusterEntries>,
    pub pq: Option<&'a PqQuantizer>,
}

/// Every node, best first by `rank` (`memory::cache_rank`).
fn rank(b: &Build, r: &Ranks, by: CacheRank, nav: Option<&NavGraph>) -> Vec<u32> {
    let input = cache_rank::RankInput {
        lists: &r.graph.lists,
        medoid: r.graph.medoid,
        data: b.data,
        dim: b.dim,
        nav,
        entry: r.entries.map(|e| e as &dyn EntryPoints),
        pq: r.pq.map(|p| p as &dyn Quantizer),
        metric: b.params.metric,
        seed: b.params.seed,
        visits_sample: b.params.visits_sample,
    };
    b.pool.install(|| cache_rank::rank(by, &input))
}

/// `order.bin`, where the plan ranks the node cache at build (the plan as
/// built: a rank by the navigation graph needs it kept).
pub(super) fn write_node_order(b: &mut Build, r: &Ranks) -> Result<()> {
    if !b.plan.ranks_node_cache() {
        return Ok(());
    }
    b.checkpoint("rank")?;
    let t = Instant::now();
    b.progress.stage("rank node cache", 0);
    let nav = r.nav.filter(|_| r.nav_kept);
    let order = rank(b, r, b.plan.node_cache, nav);
    b.write_file(ORDER_FILE, |w| cache_order::write(w, &order))?;
    b.progress.finish();
    b.nested += b.stage("rank", t, 0.0);
    Ok(())
}

/// `graph.bin`: the adjacency lists apart, in the order the graph cache
/// takes them, where the plan holds them.
pub(super) fn write_graph_cache(b: &mut Build, r: &Ranks) -> Result<()> {
    if !b.plan.holds(Part::Adjacency) {
        return Ok(());
    }
    b.checkpoint("rank")?;
    let t = Instant::now();
    b.progress.stage("rank graph cache", 0);
    let order = rank(b, r, b.plan.graph_cache, r.nav);
    let lists = &r.graph.lists;
    b.write_file(GRAPH_FILE, |w| adjacency_cache::write(w, &order, lists))?;
    b.progress.finish();
    b.nested += b.stage("rank", t, 0.0);
    Ok(())
}
