//! The graph stage: the Vamana graph over the vectors, then, where the
//! memory planner sizes the PQ codes, their size for the graph just built
//! (Gorgeous §4.1 ①).

use super::{stopped_at, Build};
use crate::error::{Error, Result};
use crate::graph::{self, BuildStats, Graph};
use crate::memory::adjacency_cache;
use crate::memory::planner::Part;
use crate::memory::pq_plan::{self, PqPlan, PqPlanInput};
use std::time::Instant;

pub(super) fn build(b: &mut Build) -> Result<(Graph, BuildStats)> {
    b.checkpoint("graph")?;
    let t = Instant::now();
    let p = &b.params;
    let vparams = p.vamana();
    let progress = b.progress;
    progress.stage("build graph", (b.n * p.passes) as u64);
    let stop = || progress.cancelled();
    let built = b
        .pool
        .install(|| graph::build_until(&b.space, &vparams, &|d, _| progress.set(d as u64), &stop));
    let built = built.ok_or_else(|| stopped_at(b.dir))?;
    progress.finish();
    b.stage("graph", t, 0.0);
    Ok(built)
}

/// PQ bytes left unset with a budget given: the memory planner sizes them
/// for plans that cache the graph, on data large enough to sample.
pub(super) fn plan_pq(b: &mut Build, graph: &Graph, pq_unset: bool) -> Result<()> {
    if !(pq_unset
        && b.params.memory_budget.is_some()
        && b.plan.holds(Part::Adjacency)
        && b.n >= pq_plan::MIN_ROWS)
    {
        return Ok(());
    }
    let t = Instant::now();
    b.progress.stage("plan memory", 0);
    let budget = b.params.memory_budget.unwrap_or(0) as usize;
    let plan = b.pool.install(|| plan_pq_bytes(b, budget, &graph.lists));
    b.progress.finish();
    let Some(plan) = plan else {
        return Err(Error::argument(
            "memory budget",
            format!(
                "room for the PQ codes of {} vectors at {} bytes or more besides the \
                 I/O buffers and navigation graph (or give --pq-bytes)",
                b.n,
                pq_plan::candidate_sizes(b.dim)[0]
            ),
            format!("{:.2} MB", budget as f64 / 1e6),
        ));
    };
    let at = plan.candidates.iter().find(|c| c.pq_bytes == plan.pq_bytes);
    let why = format!(
        "{}: the fewest predicted reads within the {:.1} MB memory budget \
         (re-rank depth {} for R@10 {} on a {}-vector sample; build_report.json \
         has every size tried)",
        plan.pq_bytes,
        budget as f64 / 1e6,
        at.and_then(|c| c.depth)
            .map_or("> 200".into(), |d| d.to_string()),
        pq_plan::TARGET_RECALL,
        plan.sample
    );
    b.params.pq_bytes = plan.pq_bytes;
    b.progress.note(&format!("pq_bytes = {why}"));
    b.choose("pq_bytes", why);
    b.report.pq_plan = Some(plan);
    b.stage("plan", t, 0.0);
    Ok(())
}

/// The PQ bytes the memory planner chooses for `budget` (`memory::pq_plan`):
/// what the rest of the plan holds is estimated from the graph just built.
fn plan_pq_bytes(b: &Build, budget: usize, lists: &[Vec<u32>]) -> Option<PqPlan> {
    let (params, dim) = (&b.params, b.dim);
    let n = lists.len();
    let bits = crate::layout::record::id_bits(n);
    let list_bytes: usize = lists
        .iter()
        .map(|l| crate::util::elias_fano::len(l.len(), n))
        .sum();
    let graph_bytes = adjacency_cache::resident_bytes_for(n, n, list_bytes);
    // What the open will hold besides: I/O buffers at the default reserve
    // (2 threads x 64 pages) and the navigation graph (ids, vectors and
    // lists of its share of the vectors).
    let buffers = 2 * crate::search::READ_SLOTS * params.page_size;
    let nav_nodes = (n as f64 * params.nav_sample as f64).round() as usize;
    let nav = nav_nodes * (4 + 4 * dim + 24 + 4 * params.nav_degree);
    let node_bytes = crate::memory::node_cache::bytes_per_node(crate::layout::record::packed_len(
        dim * b.dtype.size(),
        params.graph_degree,
        bits,
    ));
    pq_plan::choose(&PqPlanInput {
        data: b.data,
        dim,
        metric: params.metric,
        budget,
        fixed: buffers + nav,
        graph_bytes,
        node_bytes,
        seed: params.seed,
    })
}
