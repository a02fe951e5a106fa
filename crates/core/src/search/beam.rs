//! DiskANN's beam search (Subramanya et al. 2019 §3.3; restated as
//! Algorithm 1 of Gorgeous §2): neighbours are ranked by estimated (PQ)
//! distance in a list of size L; each hop takes the W closest unexpanded
//! candidates, serves the cached ones from RAM and reads the rest in one batch
//! of W reads, and waits for the whole batch before the next hop. Every read
//! node's full vector gives an exact distance; the final top-k is ranked by
//! those exact distances.
//!
//! A hop's reads are processed when the last of them arrives, in beam order,
//! so the result does not depend on completion order (the query waits for
//! the whole beam anyway). Two beam candidates stored in the same page share
//! one read. With the pipeline on (Starling §4.2, Algorithm 2), only what
//! routes the search is done before the next reads go out: the targets'
//! neighbour lists; exact distances and the other records of each page
//! ([`QueryState::deferred`]) are processed while those reads are in flight.

use super::context::SearchContext;
use super::query::PreparedQuery;
use super::strategy::Strategy;
use super::width::{Width, WidthPolicy};
use super::{QueryState, QueryStats, Read};
use crate::quant::QueryTable;
use crate::util::candidates::CandidateList;
use crate::util::visited::VisitedSet;

pub struct BeamSearch {
    query: PreparedQuery,
    table: QueryTable,
    list: CandidateList,
    visited: VisitedSet,
    /// Exact distance and id of every expanded node.
    exact: Vec<(f32, u32)>,
    beam_width: usize,
    /// Reads a hop under the width policy, at most `beam_width`.
    width: Width,
    pending: usize,
    done: bool,
    stats: QueryStats,
    beam: Vec<u32>,
    /// The hop whose reads are in flight, and the one whose deferred part
    /// (pipeline) is still to do.
    hop: Hop,
    deferred: Hop,
    has_deferred: bool,
    pipeline: bool,
    /// Scratch: the targets of one page.
    targets: Vec<u32>,
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
    /// Scratch: a node's not yet visited neighbours and their estimates.
    fresh: Vec<u32>,
    fresh_est: Vec<f32>,
    /// Scratch: the records a page brings that the search had not seen.
    scratch_ids: Vec<u32>,
    /// Starts waiting for the table (`start_unprepared`): (id, read for
    /// already). Empty once the table is prepared.
    unlisted: Vec<(u32, bool)>,
    table_ready: bool,
}

/// Ids a search with list size `complexity` expects to visit: ~R new ids
/// for each of ~L hops.
pub(super) fn visited_capacity(complexity: usize) -> usize {
    (complexity * 48).max(2048)
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
        let mut s = Self::bare(ctx, query, complexity, beam_width);
        s.start(ctx);
        s
    }

    /// A search with nothing in its list and no table yet.
    fn bare(
        ctx: &SearchContext,
        query: PreparedQuery,
        complexity: usize,
        beam_width: usize,
    ) -> Self {
        BeamSearch {
            query,
            table: QueryTable::default(),
            list: CandidateList::new(complexity),
            // Sized for the ~R new ids each of ~L hops adds, so it rarely
            // grows (or a bitmap of all ids, when that is no larger).
            visited: VisitedSet::for_ids_below(ctx.n, visited_capacity(complexity)),
            exact: Vec::with_capacity(complexity * 2),
            beam_width: beam_width.max(1),
            width: Width::new(WidthPolicy::Fixed, beam_width),
            pending: 0,
            done: false,
            stats: QueryStats::default(),
            beam: Vec::with_capacity(beam_width),
            hop: Hop::default(),
            deferred: Hop::default(),
            has_deferred: false,
            pipeline: false,
            targets: Vec::new(),
            corrupt: None,
            exact_seen: VisitedSet::with_capacity((complexity * 8).max(256)),
            prune_ratio: None,
            window: complexity,
            range: None,
            fresh: Vec::new(),
            fresh_est: Vec::new(),
            scratch_ids: Vec::new(),
            unlisted: Vec::new(),
            table_ready: false,
        }
    }

    /// A k-NN search for `query` in the buffers of a finished one (same
    /// index): a worker runs thousands of queries, and allocating and zeroing
    /// each one's table, visited set and page buffers afresh cost a 96-d
    /// block search ~4% of its CPU. Not for range searches (`new_range`).
    pub fn recycle(
        self,
        ctx: &SearchContext,
        query: PreparedQuery,
        complexity: usize,
        beam_width: usize,
    ) -> Self {
        let mut s = self.recycle_bare(query, complexity, beam_width);
        s.start(ctx);
        s
    }

    /// [`Self::recycle`] without the start.
    fn recycle_bare(mut self, query: PreparedQuery, complexity: usize, beam_width: usize) -> Self {
        debug_assert!(self.range.is_none(), "range searches are not recycled");
        self.query = query;
        self.list.reset(complexity);
        self.visited.clear();
        self.visited.reserve(visited_capacity(complexity));
        self.exact.clear();
        self.exact_seen.clear();
        self.beam_width = beam_width.max(1);
        self.width = Width::new(WidthPolicy::Fixed, beam_width);
        self.pending = 0;
        self.done = false;
        self.stats = QueryStats::default();
        self.beam.clear();
        self.hop.clear();
        self.deferred.clear();
        self.has_deferred = false;
        self.pipeline = false;
        self.targets.clear();
        self.corrupt = None;
        self.prune_ratio = None;
        self.window = complexity;
        self
    }

    /// [`Self::recycle`] or [`Self::new`] with the start of
    /// [`Self::start_unprepared`].
    pub(super) fn unprepared(
        old: Option<Self>,
        ctx: &SearchContext,
        query: PreparedQuery,
        complexity: usize,
        beam_width: usize,
    ) -> Self {
        // Seeding twice would cost the table this is to defer: start from a
        // search whose seed is cheap to undo (an empty list, a cleared
        // visited set).
        let mut s = match old {
            Some(old) => old.recycle_bare(query, complexity, beam_width),
            None => Self::bare(ctx, query, complexity, beam_width),
        };
        s.start_unprepared(ctx);
        s
    }

    /// Whether this is a range search (`new_range`).
    pub fn is_range(&self) -> bool {
        self.range.is_some()
    }

    /// The query's table and its entry points in the list.
    fn start(&mut self, ctx: &SearchContext) {
        self.start_unprepared(ctx);
        self.prepare_table(ctx, |_, _| {});
    }

    /// A start that leaves the table for later: the entry points are found
    /// (and marked visited) but wait outside the list, nearest first, so
    /// their reads can go out before the table they are estimated with is
    /// prepared (`pending_start`, `prepare_table`). The table's float
    /// distances to every centroid are work the first reads need not wait
    /// for: 20-30 µs a query at 384-d, ~4% of a lone pipelined query.
    pub(super) fn start_unprepared(&mut self, ctx: &SearchContext) {
        self.table_ready = false;
        self.unlisted.clear();
        let mut starts = std::mem::take(&mut self.scratch_ids);
        starts.clear();
        ctx.entry
            .starts(&self.query.f32, ctx.entry_complexity, &mut starts);
        for &id in &starts {
            if self.visited.insert(id) {
                self.unlisted.push((id, false));
            }
        }
        self.scratch_ids = starts;
    }

    /// The nearest start not read for yet; `None` once they all are, or
    /// once the table is prepared (they are then in the list like any
    /// candidate).
    pub(super) fn pending_start(&self) -> Option<u32> {
        self.unlisted.iter().find(|s| !s.1).map(|s| s.0)
    }

    /// Whether the estimator's table is prepared.
    #[cfg(test)]
    pub(super) fn table_ready(&self) -> bool {
        self.table_ready
    }

    /// Marks an unlisted start as read for (`prepare_table` lists it
    /// expanded).
    pub(super) fn start_read(&mut self, id: u32) {
        if let Some(s) = self.unlisted.iter_mut().find(|s| s.0 == id) {
            s.1 = true;
        }
    }

    /// Prepares the table if `start_unprepared` left it, and lists the
    /// starts at their estimates: those already read for as expanded.
    /// `issued` hears each of those with its estimate. True if it did work.
    pub(super) fn prepare_table(
        &mut self,
        ctx: &SearchContext,
        mut issued: impl FnMut(u32, f32),
    ) -> bool {
        if self.table_ready {
            return false;
        }
        self.table_ready = true;
        ctx.quantizer.prepare(&self.query.f32, &mut self.table);
        for (id, read) in std::mem::take(&mut self.unlisted) {
            let est = ctx.quantizer.estimate(&self.table, id);
            self.stats.estimated += 1;
            if read {
                self.list.insert_expanded(id, est);
                issued(id, est);
            } else {
                self.list.insert(id, est);
            }
        }
        true
    }

    /// A range search: starts as a k-NN search with list size `complexity`
    /// and widens as `rule` says; candidates the list pushes out are kept
    /// (Starling's kicked set) and come back when it grows, so widening
    /// resumes rather than restarts.
    pub fn new_range(
        ctx: &SearchContext,
        query: PreparedQuery,
        complexity: usize,
        beam_width: usize,
        rule: RangeRule,
    ) -> Self {
        let max_window = rule.max_window.max(complexity);
        let mut s = Self::new(ctx, query, complexity, beam_width);
        s.list.keep_kicked();
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
        self.list.grow(self.window);
        self.stats.widenings += 1;
        true
    }

    /// Turns on block search (Starling §4.2) with pruning ratio σ.
    pub fn with_page_search(mut self, prune_ratio: f32) -> Self {
        self.prune_ratio = Some(prune_ratio.clamp(0.0, 1.0));
        // Each read expands the target and a few records of its page; a
        // table that stays within L1 (32 KB at 2,048 x 1.5 ids) is worth
        // the rare grow.
        self.visited.reserve(visited_capacity(self.window) * 3 / 2);
        self
    }

    /// Reads a hop follow `policy` up to the beam width (OctopusANN
    /// §4.3.1). Every node a hop reads was in the list when chosen, so each
    /// arrival counts as useful for the waste-driven policy.
    pub fn with_width(mut self, policy: WidthPolicy) -> Self {
        self.width = Width::new(policy, self.beam_width);
        self
    }

    /// Turns on the I/O–computation pipeline (Starling §4.2, Algorithm 2).
    pub fn with_pipeline(mut self, on: bool) -> Self {
        self.pipeline = on;
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
    pub(super) fn expand(&mut self, ctx: &SearchContext, id: u32, record: &[u8]) {
        self.add_exact(ctx, id, record);
        self.add_neighbors(ctx, id, record);
    }

    /// Puts a node's unvisited neighbours in the candidate list, ranked by
    /// estimated distance.
    pub(super) fn add_neighbors(&mut self, ctx: &SearchContext, id: u32, record: &[u8]) {
        self.collect_neighbors(ctx, id, record);
        self.list_collected(ctx);
    }

    /// Expands a node, first part: its unvisited neighbours are marked
    /// visited and kept for [`Self::list_collected`]. Several nodes may be
    /// collected before they are listed (block search expands a few records
    /// of a page), so their scattered codes are fetched from memory together;
    /// the list ends the same whatever the grouping.
    pub(super) fn collect_neighbors(&mut self, ctx: &SearchContext, id: u32, record: &[u8]) {
        let node = ctx.layout.parse(record);
        self.stats.hops += 1;
        if let Some(e) = ctx.collect_new(id, &node, &mut self.visited, &mut self.fresh) {
            self.corrupt.get_or_insert(e);
            self.done = true;
        }
    }

    /// Expands the collected nodes, second part: their new neighbours are
    /// estimated and listed.
    pub(super) fn list_collected(&mut self, ctx: &SearchContext) {
        debug_assert!(
            self.table_ready || self.fresh.is_empty(),
            "estimates before the table"
        );
        // Every new neighbour's row is asked for before any is summed; the
        // kernel also asks for each row a few rows ahead of its sum
        // (`stratavec_simd`'s ROWS_AHEAD). With both, diskann through RAM
        // measured no slower than with the kernel's alone (p50 225 against
        // 243 µs, 3 runs each, within this host's noise).
        ctx.quantizer.prefetch(&self.fresh);
        self.fresh_est.resize(self.fresh.len(), 0.0);
        ctx.quantizer
            .estimate_many(&self.table, &self.fresh, &mut self.fresh_est);
        for (&nb, &est) in self.fresh.iter().zip(&self.fresh_est) {
            self.list.insert(nb, est);
        }
        self.stats.estimated += self.fresh.len() as u64;
        self.fresh.clear();
    }

    /// The closest candidate within the window not yet expanded (or read),
    /// marked expanded: the next node to read.
    pub(super) fn next_candidate(&mut self) -> Option<crate::util::candidates::Candidate> {
        self.list.pop_closest_unexpanded_within(self.window)
    }

    /// Whether a node whose estimate is `est` still ranks within the list.
    pub(super) fn ranks(&self, est: f32) -> bool {
        self.list.admits(est)
    }

    /// How many of the list's closest entries are settled (expanded or read).
    pub(super) fn progress(&self) -> usize {
        self.list.first_unexpanded()
    }

    /// Whether the query has stopped on a corrupt record.
    pub(super) fn stopped(&self) -> bool {
        self.corrupt.is_some()
    }

    /// Whether `id` may still enter the candidate list (and so be read).
    pub(super) fn mark_visited(&mut self, id: u32) -> bool {
        self.visited.insert(id)
    }

    /// Block search: records claimed from a page (never to be read for
    /// themselves) stand in the candidate list as expanded entries, ranked
    /// by their PQ estimate like every other entry. They push out the
    /// candidates they beat, which would otherwise be read before the list
    /// converged (Starling §5.2: both sets are updated with the block search
    /// outcome). Estimates, not exact distances: PQ estimates run low by the
    /// quantisation error (a centroid is its cell's mean), so an exact
    /// distance ranks behind estimates it should beat; at 384-d with 8
    /// dimensions per sub-space that kept the list from converging.
    /// `claimed`: (id, was listed); the listed ones are in the list already.
    pub(super) fn list_claimed(&mut self, ctx: &SearchContext, claimed: &[(u32, bool)]) {
        debug_assert!(self.table_ready, "estimates before the table");
        self.scratch_ids.clear();
        self.scratch_ids
            .extend(claimed.iter().filter(|c| !c.1).map(|c| c.0));
        self.fresh_est.resize(self.scratch_ids.len(), 0.0);
        ctx.quantizer
            .estimate_many(&self.table, &self.scratch_ids, &mut self.fresh_est);
        self.stats.estimated += self.scratch_ids.len() as u64;
        for (&id, &est) in self.scratch_ids.iter().zip(&self.fresh_est) {
            self.list.insert_expanded(id, est);
        }
    }

    /// Marks `id` expanded if it waits in the list; true if it did.
    pub(super) fn take_from_list(&mut self, id: u32) -> bool {
        self.list.mark_expanded(id)
    }

    /// The k nearest expanded nodes by exact distance (ties by id).
    pub fn results(&mut self, k: usize) -> &[(f32, u32)] {
        debug_assert!(!self.has_deferred || self.corrupt.is_some());
        self.exact
            .sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        &self.exact[..k.min(self.exact.len())]
    }
}

impl BeamSearch {
    /// All of a hop's pages have arrived: the part that routes the search
    /// now, the rest now or (pipeline) after the next reads are issued.
    fn finish_hop(&mut self, ctx: &SearchContext) {
        // The hop before must be complete before this one is taken apart.
        self.run_deferred(ctx);
        std::mem::swap(&mut self.hop, &mut self.deferred);
        let mut hop = std::mem::take(&mut self.deferred);
        let mut targets = std::mem::take(&mut self.targets);
        for page in 0..hop.reads.len() {
            hop.targets_of(page, &mut targets);
            let span = &hop.bufs[page];
            match self.prune_ratio {
                Some(_) => {
                    super::block::claim_and_route(self, ctx, span, &targets, &mut hop.claimed[page])
                }
                None => {
                    for &t in &targets {
                        self.collect_neighbors(ctx, t, ctx.layout.record_slice(t, span));
                    }
                }
            }
        }
        // The whole hop's neighbours in one batch (the list ends the same
        // whatever the grouping; larger batches estimate faster).
        self.list_collected(ctx);
        self.targets = targets;
        self.deferred = hop;
        self.has_deferred = true;
        if !self.pipeline {
            self.run_deferred(ctx);
        }
    }

    /// The part of the last hop that does not route the search: exact
    /// distances, and block search over each page's other records.
    fn run_deferred(&mut self, ctx: &SearchContext) {
        if !std::mem::take(&mut self.has_deferred) {
            return;
        }
        let mut hop = std::mem::take(&mut self.deferred);
        let mut targets = std::mem::take(&mut self.targets);
        for page in 0..hop.reads.len() {
            hop.targets_of(page, &mut targets);
            let span = &hop.bufs[page];
            for &t in &targets {
                self.add_exact(ctx, t, ctx.layout.record_slice(t, span));
            }
            if let Some(sigma) = self.prune_ratio {
                super::block::explore_others(self, ctx, span, &hop.claimed[page], sigma);
            }
        }
        // Every page's explored neighbours in one batch, as in `finish_hop`.
        self.list_collected(ctx);
        hop.clear();
        self.targets = targets;
        self.deferred = hop;
    }
}

/// The pages one hop reads: `reads[i]` was read for its own record and for
/// the beam candidates `riders` assign to page i (stored in the same page).
/// Buffers are kept from hop to hop.
#[derive(Default)]
struct Hop {
    reads: Vec<u32>,
    riders: Vec<(usize, u32)>,
    bufs: Vec<Vec<u8>>,
    /// Per page: other records claimed for block search (id, was listed).
    claimed: Vec<Vec<(u32, bool)>>,
}

impl Hop {
    fn clear(&mut self) {
        self.reads.clear();
        self.riders.clear();
    }

    /// Starts page i = `reads.len()` for a read of node `id`.
    fn add_read(&mut self, id: u32) {
        let i = self.reads.len();
        self.reads.push(id);
        if self.bufs.len() <= i {
            self.bufs.push(Vec::new());
            self.claimed.push(Vec::new());
        }
        self.bufs[i].clear();
        self.claimed[i].clear();
    }

    /// Every node page i was read for, into `out`.
    fn targets_of(&self, i: usize, out: &mut Vec<u32>) {
        out.clear();
        out.push(self.reads[i]);
        out.extend(self.riders.iter().filter(|r| r.0 == i).map(|r| r.1));
    }
}

impl QueryState for BeamSearch {
    fn step(&mut self, ctx: &SearchContext, reads: &mut Vec<Read>) {
        if self.pending > 0 || self.done {
            return;
        }
        loop {
            // Choose the whole beam first, as DiskANN does, then serve the
            // cached part; the cached expansions may add better candidates,
            // which the next hop will see.
            self.beam.clear();
            while self.beam.len() < self.width.current() {
                match self.list.pop_closest_unexpanded_within(self.window) {
                    Some(c) => self.beam.push(c.id),
                    None => break,
                }
            }
            if self.beam.is_empty() {
                // The deferred part of the last hop may add candidates.
                if self.has_deferred {
                    self.run_deferred(ctx);
                    continue;
                }
                if self.widen() {
                    continue;
                }
                self.done = true;
                return;
            }
            let beam = std::mem::take(&mut self.beam);
            let first = reads.len();
            for &id in &beam {
                match ctx.cache.get(id) {
                    Some(record) => {
                        self.expand(ctx, id, record);
                        self.stats.cache_hits += 1;
                    }
                    None => {
                        let span = ctx.layout.span_of(id);
                        let shared = reads[first..].iter().position(|r| r.span == span);
                        match shared {
                            Some(page) => {
                                self.hop.riders.push((page, id));
                                self.stats.shared_reads += 1;
                            }
                            None => {
                                self.hop.add_read(id);
                                reads.push(Read { key: id, span });
                            }
                        }
                    }
                }
            }
            self.pending = reads.len() - first;
            self.beam = beam;
            if self.done || self.pending > 0 {
                return;
            }
        }
    }

    fn on_read(&mut self, ctx: &SearchContext, id: u32, span: &[u8]) {
        // Keys are the node ids the reads were issued for.
        if let Some(i) = self.hop.reads.iter().position(|&r| r == id) {
            self.hop.bufs[i].extend_from_slice(span);
        }
        self.pending -= 1;
        self.width.on_arrival(true, || self.list.first_unexpanded());
        if self.pending == 0 {
            self.finish_hop(ctx);
        }
    }

    fn deferred(&mut self, ctx: &SearchContext) -> bool {
        let had = self.has_deferred;
        self.run_deferred(ctx);
        had
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

/// DiskANN's beam search as a [`Strategy`], with Starling's block search
/// and pipeline as switches, and range search as a widening rule.
pub struct Beam {
    pub complexity: usize,
    pub beam_width: usize,
    pub width: WidthPolicy,
    pub pipeline: bool,
    /// Block search's pruning ratio σ, when on.
    pub page_search: Option<f32>,
    pub range: Option<RangeRule>,
}

impl Strategy for Beam {
    type State = BeamSearch;

    fn start(
        &self,
        ctx: &SearchContext,
        query: PreparedQuery,
        reuse: Option<BeamSearch>,
    ) -> BeamSearch {
        let state = match (self.range, reuse) {
            (Some(rule), _) => {
                BeamSearch::new_range(ctx, query, self.complexity, self.beam_width, rule)
            }
            (None, Some(old)) => old.recycle(ctx, query, self.complexity, self.beam_width),
            (None, None) => BeamSearch::new(ctx, query, self.complexity, self.beam_width),
        };
        let state = state.with_pipeline(self.pipeline).with_width(self.width);
        match self.page_search {
            Some(sigma) => state.with_page_search(sigma),
            None => state,
        }
    }

    fn finish(&self, state: &mut BeamSearch, k: usize, out: &mut Vec<(f32, u32)>) {
        out.clear();
        if state.is_range() {
            out.extend(state.range_results());
        } else {
            out.extend_from_slice(state.results(k));
        }
    }

    fn reusable(&self, state: &BeamSearch) -> bool {
        !state.is_range()
    }
}
