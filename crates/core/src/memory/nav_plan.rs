//! The memory planner's second decision, made at build (Gorgeous §4.1 ②):
//! whether the navigation graph earns its bytes. "We profile whether the
//! navigation index improves performance by running the sampled query set
//! Q'. If it does not improve performance, the navigation index is
//! disabled." Here performance is the search stage's expansions: each is a
//! read when its list is not cached, and CPU when it is. Sample queries run
//! the two-stage search's first stage in RAM (the build holds every list
//! and the PQ codes) from the medoid and from the navigation graph's
//! starts; the graph is kept if it saves at least [`MIN_GAIN`] of them.

use crate::entry::{EntryPoints, NavGraph};
use crate::quant::{Quantizer, QueryTable};
use crate::util::candidates::CandidateList;
use crate::util::rng::Rng;
use crate::util::visited::VisitedSet;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// The share of expansions the navigation graph must save to be kept.
pub const MIN_GAIN: f64 = 0.05;
/// Sample queries (rows of the data).
const QUERIES: usize = 200;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NavPlan {
    pub queries: usize,
    /// Candidate list size of the simulated search stage.
    pub complexity: usize,
    /// Mean expansions a query, starting at the medoid / at the graph's
    /// starts.
    pub expansions_from_medoid: f64,
    pub expansions_from_nav: f64,
    pub kept: bool,
}

/// What the build holds that the simulated search stage runs on.
pub struct InRam<'a> {
    pub lists: &'a [Vec<u32>],
    pub medoid: u32,
    pub pq: &'a dyn Quantizer,
    /// The f32 view of the data (normalised for cosine), `dim` wide.
    pub data: &'a [f32],
    pub dim: usize,
}

/// Runs the sample queries both ways with list size `complexity` and
/// decides.
pub fn decide(g: &InRam, nav: &NavGraph, complexity: usize, seed: u64) -> NavPlan {
    let n = g.lists.len();
    let dim = g.dim;
    let ids = Rng::new(seed ^ 0x4E41_5650).sample(n, QUERIES.min(n));
    let mean = |from_nav: bool| -> f64 {
        let total: usize = ids
            .par_iter()
            .map(|&i| {
                let q = &g.data[i * dim..(i + 1) * dim];
                let mut starts = Vec::new();
                if from_nav {
                    nav.starts(q, 16, &mut starts);
                } else {
                    starts.push(g.medoid);
                }
                let mut count = 0;
                search_stage(g.lists, g.pq, q, &starts, complexity, |_| count += 1);
                count
            })
            .sum();
        total as f64 / ids.len().max(1) as f64
    };
    let (from_medoid, from_nav) = (mean(false), mean(true));
    NavPlan {
        queries: ids.len(),
        complexity,
        expansions_from_medoid: from_medoid,
        expansions_from_nav: from_nav,
        kept: from_nav <= (1.0 - MIN_GAIN) * from_medoid,
    }
}

/// A greedy search on estimates with list size `complexity` from `starts`
/// until every listed candidate is expanded (the two-stage search's first
/// stage with every list in RAM), calling `expanded` for each node expanded.
pub fn search_stage(
    lists: &[Vec<u32>],
    pq: &dyn Quantizer,
    query: &[f32],
    starts: &[u32],
    complexity: usize,
    expanded: impl FnMut(u32),
) {
    let mut table = QueryTable::default();
    pq.prepare(query, &mut table);
    search_stage_by(
        lists,
        |ids, out| pq.estimate_many(&table, ids, out),
        starts,
        complexity,
        expanded,
    );
}

/// [`search_stage`] ranking by `distances` (ids in, one distance each out):
/// PQ estimates, or exact distances where the build has no codes (laser).
pub fn search_stage_by(
    lists: &[Vec<u32>],
    mut distances: impl FnMut(&[u32], &mut [f32]),
    starts: &[u32],
    complexity: usize,
    mut expanded: impl FnMut(u32),
) {
    let mut list = CandidateList::new(complexity);
    let mut visited = VisitedSet::with_capacity(complexity * 64);
    let (mut fresh, mut est) = (Vec::new(), Vec::new());
    fresh.extend(starts.iter().copied().filter(|&s| visited.insert(s)));
    loop {
        est.resize(fresh.len(), 0.0);
        distances(&fresh, &mut est);
        for (&v, &d) in fresh.iter().zip(&est) {
            list.insert(v, d);
        }
        let Some(c) = list.pop_closest_unexpanded() else {
            return;
        };
        expanded(c.id);
        fresh.clear();
        fresh.extend(
            lists[c.id as usize]
                .iter()
                .copied()
                .filter(|&v| visited.insert(v)),
        );
    }
}
