//! DiskANN's beam search (Subramanya et al. 2019 §3.3; restated as
//! Algorithm 1 of Gorgeous §2): neighbours are ranked by estimated (PQ)
//! distance in a list of size L; each hop takes the W closest unexpanded
//! candidates, serves the cached ones from RAM and reads the rest in one batch
//! of W reads, and waits for the whole batch before the next hop. Every read
//! node's full vector gives an exact distance; the final top-k is ranked by
//! those exact distances.

use super::context::SearchContext;
use super::query::PreparedQuery;
use super::{QueryState, QueryStats};
use crate::util::candidates::CandidateList;
use crate::util::visited::VisitedSet;

pub struct BeamSearch {
    query: PreparedQuery,
    table: Vec<f32>,
    list: CandidateList,
    visited: VisitedSet,
    /// Exact distance and id of every expanded node.
    exact: Vec<(f32, u32)>,
    beam_width: usize,
    pending: usize,
    done: bool,
    stats: QueryStats,
    beam: Vec<u32>,
    /// Set when a record names a neighbour that cannot exist.
    corrupt: Option<String>,
    /// Nodes whose exact distance is in `exact` (block search meets nodes
    /// more than once).
    exact_seen: VisitedSet,
    /// Block search's pruning ratio σ; `None`: DiskANN's one record per read.
    prune_ratio: Option<f32>,
    /// Only the first `window` list entries are expanded (= L for k-NN).
    window: usize,
    /// Range search: widen the window while the results within the radius
    /// fill the share φ of it.
    range: Option<RangeRule>,
}

/// Range search's stopping rule (Starling, range search): with window size
/// |C| and |R| results within `radius`, the window doubles while
/// |R| / |C| >= `phi`, up to `max_window`.
#[derive(Clone, Copy, Debug)]
pub struct RangeRule {
    pub radius: f32,
    pub phi: f32,
    pub max_window: usize,
}

impl BeamSearch {
    pub fn new(
        ctx: &SearchContext,
        query: PreparedQuery,
        complexity: usize,
        beam_width: usize,
    ) -> Self {
        let mut s = BeamSearch {
            query,
            table: Vec::new(),
            list: CandidateList::new(complexity),
            // Sized for the ~R new ids each of ~L hops adds, so it rarely grows.
            visited: VisitedSet::with_capacity(complexity * 48),
            exact: Vec::with_capacity(complexity * 2),
            beam_width: beam_width.max(1),
            pending: 0,
            done: false,
            stats: QueryStats::default(),
            beam: Vec::with_capacity(beam_width),
            corrupt: None,
            exact_seen: VisitedSet::with_capacity(complexity * 4),
            prune_ratio: None,
            window: complexity,
            range: None,
        };
        ctx.quantizer.prepare(&s.query.f32, &mut s.table);
        let mut starts = Vec::new();
        ctx.entry.starts(&s.query.f32, &mut starts);
        for id in starts {
            if s.visited.insert(id) {
                let d = ctx.quantizer.estimate(&s.table, id);
                s.stats.estimated += 1;
                s.list.insert(id, d);
            }
        }
        s
    }

    /// A range search: starts as a k-NN search with list size `complexity`
    /// and widens as `rule` says; the list keeps every candidate up to
    /// `rule.max_window`, so widening resumes rather than restarts.
    pub fn new_range(
        ctx: &SearchContext,
        query: PreparedQuery,
        complexity: usize,
        beam_width: usize,
        rule: RangeRule,
    ) -> Self {
        let max_window = rule.max_window.max(complexity);
        let mut s = Self::new(ctx, query, max_window, beam_width);
        s.window = complexity;
        s.range = Some(RangeRule { max_window, ..rule });
        s
    }

    /// Every node found within the radius (internal distance), nearest first.
    pub fn range_results(&mut self) -> Vec<(f32, u32)> {
        let r = self.range.map_or(f32::INFINITY, |r| r.radius);
        self.results(usize::MAX)
            .iter()
            .copied()
            .filter(|e| e.0 <= r)
            .collect()
    }

    /// Range search: widen the window if the rule says so; true if widened.
    fn widen(&mut self) -> bool {
        let Some(rule) = self.range else { return false };
        if self.window >= rule.max_window {
            return false;
        }
        let hits = self.exact.iter().filter(|e| e.0 <= rule.radius).count();
        if (hits as f32) < rule.phi * self.window as f32 {
            return false;
        }
        self.window = (self.window * 2).min(rule.max_window);
        self.stats.widenings += 1;
        true
    }

    /// Turns on block search (Starling §4.2) with pruning ratio σ.
    pub fn with_page_search(mut self, prune_ratio: f32) -> Self {
        self.prune_ratio = Some(prune_ratio.clamp(0.0, 1.0));
        self
    }

    /// Records the exact distance of a node's stored vector (once per node).
    pub(super) fn add_exact(&mut self, ctx: &SearchContext, id: u32, record: &[u8]) -> f32 {
        let node = ctx.layout.parse(record);
        let d = self.query.distance(node.vector);
        self.stats.exact += 1;
        if self.exact_seen.insert(id) {
            self.exact.push((d, id));
        }
        d
    }

    /// Expands a node: exact distance, then its neighbours into the list.
    fn expand(&mut self, ctx: &SearchContext, id: u32, record: &[u8]) {
        self.add_exact(ctx, id, record);
        self.add_neighbors(ctx, id, record);
    }

    /// Puts a node's unvisited neighbours in the candidate list, ranked by
    /// estimated distance.
    pub(super) fn add_neighbors(&mut self, ctx: &SearchContext, id: u32, record: &[u8]) {
        let node = ctx.layout.parse(record);
        self.stats.hops += 1;
        let mut added = 0;
        for nb in node.neighbors() {
            if nb as usize >= ctx.n {
                // A corrupt page must fail this query, not index out of bounds.
                self.corrupt.get_or_insert_with(|| {
                    format!(
                        "{}: node {id}: neighbour id: expected < {}, found {nb} (corrupt index)",
                        ctx.pages_path.display(),
                        ctx.n
                    )
                });
                self.done = true;
                continue;
            }
            if self.visited.insert(nb) {
                let est = ctx.quantizer.estimate(&self.table, nb);
                self.list.insert(nb, est);
                added += 1;
            }
        }
        self.stats.estimated += added as u64;
    }

    /// Whether `id` may still enter the candidate list (and so be read).
    pub(super) fn mark_visited(&mut self, id: u32) -> bool {
        self.visited.insert(id)
    }

    /// Marks `id` expanded if it waits in the list; true if it did.
    pub(super) fn take_from_list(&mut self, id: u32) -> bool {
        self.list.mark_expanded(id)
    }

    /// The k nearest expanded nodes by exact distance (ties by id).
    pub fn results(&mut self, k: usize) -> &[(f32, u32)] {
        self.exact
            .sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        &self.exact[..k.min(self.exact.len())]
    }
}

impl QueryState for BeamSearch {
    fn step(&mut self, ctx: &SearchContext, reads: &mut Vec<u32>) {
        if self.pending > 0 || self.done {
            return;
        }
        loop {
            // Choose the whole beam first, as DiskANN does, then serve the
            // cached part; the cached expansions may add better candidates,
            // which the next hop will see.
            self.beam.clear();
            while self.beam.len() < self.beam_width {
                match self.list.pop_closest_unexpanded_within(self.window) {
                    Some(c) => self.beam.push(c.id),
                    None => break,
                }
            }
            if self.beam.is_empty() {
                if self.widen() {
                    continue;
                }
                self.done = true;
                return;
            }
            let beam = std::mem::take(&mut self.beam);
            for &id in &beam {
                match ctx.cache.get(id) {
                    Some(record) => {
                        self.expand(ctx, id, record);
                        self.stats.cache_hits += 1;
                    }
                    None => reads.push(id),
                }
            }
            self.pending = reads.len();
            self.beam = beam;
            if self.done {
                return;
            }
            if self.pending > 0 {
                return;
            }
        }
    }

    fn on_read(&mut self, ctx: &SearchContext, id: u32, span: &[u8]) {
        match self.prune_ratio {
            None => self.expand(ctx, id, ctx.layout.record_slice(id, span)),
            Some(sigma) => super::block::process_block(self, ctx, id, span, sigma),
        }
        self.pending -= 1;
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn stats(&mut self) -> &mut QueryStats {
        &mut self.stats
    }

    fn failure(&self) -> Option<String> {
        self.corrupt.clone()
    }
}
