//! The expansion core every graph search over codes in RAM shares: a
//! query's estimator table, its candidate list of size L, its visited set,
//! and the exact distances of the nodes whose vectors it has seen. It seeds
//! the list from the entry points, lists a node's unvisited neighbours at
//! their estimates, and ranks the result by exact distance.
//!
//! It issues no read and keeps no hop: the searches that drive it decide
//! what to read and when ([`super::beam::BeamSearch`]'s hops,
//! [`super::pipe::PipeSearch`]'s one read per arrival), and the rules that
//! plug into them decide what a page gives ([`super::block::PageRule`]) and
//! when a range search widens ([`super::range::RangeRule`]).

use super::context::SearchContext;
use super::query::PreparedQuery;
use super::QueryStats;
use crate::quant::QueryTable;
use crate::util::candidates::{Candidate, CandidateList};
use crate::util::visited::VisitedSet;

pub struct Expansion {
    query: PreparedQuery,
    table: QueryTable,
    /// The candidate list; its size is the window of candidates a search
    /// expands (L for k-NN; range search grows it).
    list: CandidateList,
    visited: VisitedSet,
    /// Exact distance and id of every expanded node.
    exact: Vec<(f32, u32)>,
    /// Nodes whose exact distance is in `exact` (block search meets nodes
    /// more than once).
    exact_seen: VisitedSet,
    stats: QueryStats,
    /// Set when a record names a neighbour that cannot exist.
    corrupt: Option<String>,
    /// Scratch: a node's not yet visited neighbours and their estimates.
    fresh: Vec<u32>,
    fresh_est: Vec<f32>,
    /// The ids the collected nodes' lists held (the in-graph filter's
    /// two-hop cap, `search::acorn`), and its scratch.
    fresh_degree: usize,
    bridges: Vec<u32>,
    /// Scratch: the starts; the records a page brings that the search had
    /// not seen.
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

impl Expansion {
    /// A query's core with list size `complexity`, nothing in its list and
    /// no table yet (`start` or `start_unprepared` seeds it).
    pub fn new(ctx: &SearchContext, query: PreparedQuery, complexity: usize) -> Self {
        Expansion {
            query,
            table: QueryTable::default(),
            list: CandidateList::new(complexity),
            // Sized for the ~R new ids each of ~L hops adds, so it rarely
            // grows (or a bitmap of all ids, when that is no larger).
            visited: VisitedSet::for_ids_below(ctx.n, visited_capacity(complexity)),
            exact: Vec::with_capacity(complexity * 2),
            stats: QueryStats::default(),
            corrupt: None,
            exact_seen: VisitedSet::with_capacity((complexity * 8).max(256)),
            fresh: Vec::new(),
            fresh_est: Vec::new(),
            fresh_degree: 0,
            bridges: Vec::new(),
            scratch_ids: Vec::new(),
            unlisted: Vec::new(),
            table_ready: false,
        }
    }

    /// A finished query's core emptied for `query` (same index), keeping
    /// its buffers: a worker runs thousands of queries, and allocating and
    /// zeroing each one's table, visited set and page buffers afresh cost a
    /// 96-d block search ~4% of its CPU. Unseeded, as `new`.
    pub fn reset(&mut self, query: PreparedQuery, complexity: usize) {
        self.query = query;
        self.list.reset(complexity);
        self.visited.clear();
        self.visited.reserve(visited_capacity(complexity));
        self.exact.clear();
        self.exact_seen.clear();
        self.stats = QueryStats::default();
        self.corrupt = None;
    }

    /// Makes room in the visited set for `ids` without growing.
    pub fn reserve_visited(&mut self, ids: usize) {
        self.visited.reserve(ids);
    }

    /// The query's table and its entry points in the list.
    pub fn start(&mut self, ctx: &SearchContext) {
        self.start_unprepared(ctx);
        self.prepare_table(ctx, |_, _| {});
    }

    /// A start that leaves the table for later: the entry points are found
    /// (and marked visited) but wait outside the list, nearest first, so
    /// their reads can go out before the table they are estimated with is
    /// prepared (`pending_start`, `prepare_table`). The table's float
    /// distances to every centroid are work the first reads need not wait
    /// for: 20-30 µs a query at 384-d, ~4% of a lone pipelined query.
    pub fn start_unprepared(&mut self, ctx: &SearchContext) {
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
    pub fn pending_start(&self) -> Option<u32> {
        self.unlisted.iter().find(|s| !s.1).map(|s| s.0)
    }

    /// Whether the estimator's table is prepared.
    #[cfg(test)]
    pub fn table_ready(&self) -> bool {
        self.table_ready
    }

    /// Marks an unlisted start as read for (`prepare_table` lists it
    /// expanded).
    pub fn start_read(&mut self, id: u32) {
        if let Some(s) = self.unlisted.iter_mut().find(|s| s.0 == id) {
            s.1 = true;
        }
    }

    /// Prepares the table if `start_unprepared` left it, and lists the
    /// starts at their estimates: those already read for as expanded.
    /// `issued` hears each of those with its estimate. True if it did work.
    pub fn prepare_table(&mut self, ctx: &SearchContext, mut issued: impl FnMut(u32, f32)) -> bool {
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
        // A filtered query searched in the graph starts among its matches
        // too (`search::acorn`).
        if let Some(allowed) = self.query.narrows() {
            self.stats.estimated += super::acorn::sample_starts(
                ctx,
                &self.table,
                allowed,
                &mut self.visited,
                &mut self.list,
                &mut self.fresh,
                &mut self.fresh_est,
            );
            self.fresh.clear();
        }
        true
    }

    /// Records the exact distance of a node's stored vector (once per node).
    pub fn add_exact(&mut self, ctx: &SearchContext, id: u32, record: &[u8]) -> f32 {
        let node = ctx.layout.parse(record);
        let d = self.query.distance(node.vector);
        self.stats.exact += 1;
        if self.exact_seen.insert(id) {
            self.exact.push((d, id));
        }
        d
    }

    /// Expands a node: exact distance, then its neighbours into the list.
    pub fn expand(&mut self, ctx: &SearchContext, id: u32, record: &[u8]) {
        self.add_exact(ctx, id, record);
        self.collect_neighbors(ctx, id, record);
        self.list_collected(ctx);
    }

    /// Expands a node, first part: its unvisited neighbours are marked
    /// visited and kept for [`Self::list_collected`]. Several nodes may be
    /// collected before they are listed (block search expands a few records
    /// of a page), so their scattered codes are fetched from memory together;
    /// the list ends the same whatever the grouping. A corrupt record stops
    /// the query ([`Self::stopped`]).
    pub fn collect_neighbors(&mut self, ctx: &SearchContext, id: u32, record: &[u8]) {
        let node = ctx.layout.parse(record);
        self.stats.hops += 1;
        self.fresh_degree += node.degree();
        if let Some(e) = ctx.collect_new(id, &node, &mut self.visited, &mut self.fresh) {
            self.corrupt.get_or_insert(e);
        }
    }

    /// Expands the collected nodes, second part: their new neighbours are
    /// estimated and listed.
    pub fn list_collected(&mut self, ctx: &SearchContext) {
        debug_assert!(
            self.table_ready || self.fresh.is_empty(),
            "estimates before the table"
        );
        // A filtered query searched in the graph lists matches (ACORN-1).
        if let Some(allowed) = self.query.narrows() {
            super::acorn::admit_matches(
                ctx,
                allowed,
                self.fresh_degree,
                &mut self.fresh,
                &mut self.visited,
                &mut self.bridges,
            );
        }
        self.fresh_degree = 0;
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

    /// Records a search holds without having read them for themselves (a
    /// page's other records, block search) stand in the candidate list as
    /// expanded entries, ranked by their estimate like every other entry:
    /// they push out the candidates they beat. `held`: (id, was listed);
    /// the listed ones are in the list already.
    pub fn list_held(&mut self, ctx: &SearchContext, held: &[(u32, bool)]) {
        debug_assert!(self.table_ready, "estimates before the table");
        self.scratch_ids.clear();
        self.scratch_ids
            .extend(held.iter().filter(|c| !c.1).map(|c| c.0));
        self.fresh_est.resize(self.scratch_ids.len(), 0.0);
        ctx.quantizer
            .estimate_many(&self.table, &self.scratch_ids, &mut self.fresh_est);
        self.stats.estimated += self.scratch_ids.len() as u64;
        for (&id, &est) in self.scratch_ids.iter().zip(&self.fresh_est) {
            self.list.insert_expanded(id, est);
        }
    }

    /// The closest candidate in the list not yet expanded (or read), marked
    /// expanded: the next node to read.
    #[inline]
    pub fn next_candidate(&mut self) -> Option<Candidate> {
        // Nothing lies beyond the list's size: every entry is within it.
        self.list
            .pop_closest_unexpanded_within(self.list.capacity())
    }

    /// Whether a node whose estimate is `est` still ranks within the list.
    #[inline]
    pub fn ranks(&self, est: f32) -> bool {
        self.list.admits(est)
    }

    /// How many of the list's closest entries are settled (expanded or read).
    #[inline]
    pub fn progress(&self) -> usize {
        self.list.first_unexpanded()
    }

    /// Whether the query has stopped on a corrupt record.
    #[inline]
    pub fn stopped(&self) -> bool {
        self.corrupt.is_some()
    }

    /// Whether `id` may still enter the candidate list (and so be read);
    /// marks it visited.
    pub fn mark_visited(&mut self, id: u32) -> bool {
        self.visited.insert(id)
    }

    /// Marks `id` expanded if it waits in the list; true if it did.
    pub fn take_from_list(&mut self, id: u32) -> bool {
        self.list.mark_expanded(id)
    }

    /// The list's size: the window of candidates the search expands.
    pub fn list_size(&self) -> usize {
        self.list.capacity()
    }

    /// Keeps the candidates the full list pushes out, to take them back
    /// when it grows (range search: widening resumes, not restarts).
    pub fn keep_kicked(&mut self) {
        self.list.keep_kicked();
    }

    /// Grows the list to `size`, taking back the candidates it kicked.
    pub fn grow_list(&mut self, size: usize) {
        self.list.grow(size);
    }

    /// How many nodes with an exact distance lie within `radius`.
    pub fn exact_within(&self, radius: f32) -> usize {
        self.exact.iter().filter(|e| e.0 <= radius).count()
    }

    /// The k nearest expanded nodes by exact distance (ties by id).
    pub fn results(&mut self, k: usize) -> &[(f32, u32)] {
        self.exact
            .sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        &self.exact[..k.min(self.exact.len())]
    }

    pub fn stats(&mut self) -> &mut QueryStats {
        &mut self.stats
    }

    /// Why the query stopped (a corrupt record), if it did.
    pub fn failure(&self) -> Option<String> {
        self.corrupt.clone()
    }
}
