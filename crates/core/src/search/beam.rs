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
//!
//! This file is the hop loop only: the list, visited set, table and exact
//! distances are the [`Expansion`] core's (shared with the pipelined
//! search), what a page read gives is a [`PageRule`] (block search,
//! `block.rs`), and range search's widening is a [`RangeRule`] (`range.rs`).

use super::block::PageRule;
use super::context::SearchContext;
use super::expansion::Expansion;
use super::query::PreparedQuery;
use super::range::RangeRule;
use super::strategy::Strategy;
use super::width::{Width, WidthPolicy};
use super::{QueryState, QueryStats, Read};

/// The beam's hop loop around an [`Expansion`], with the page rule (block
/// search) and the range rule plugged in.
pub struct BeamSearch {
    core: Expansion,
    beam_width: usize,
    /// Reads a hop under the width policy, at most `beam_width`.
    width: Width,
    pending: usize,
    done: bool,
    beam: Vec<u32>,
    /// The hop whose reads are in flight, and the one whose deferred part
    /// (pipeline) is still to do.
    hop: Hop,
    deferred: Hop,
    has_deferred: bool,
    pipeline: bool,
    /// Scratch: the targets of one page.
    targets: Vec<u32>,
    /// What a page read gives: its target's record, or block search's.
    page: PageRule,
    /// Range search: widen the list while the results within the radius
    /// fill the share φ of it.
    range: Option<RangeRule>,
}

impl BeamSearch {
    pub fn new(
        ctx: &SearchContext,
        query: PreparedQuery,
        complexity: usize,
        beam_width: usize,
    ) -> Self {
        let mut core = Expansion::new(ctx, query, complexity);
        core.start(ctx);
        Self::around(core, beam_width)
    }

    /// The hop machinery around a seeded core (k-NN, one record a read).
    fn around(core: Expansion, beam_width: usize) -> Self {
        BeamSearch {
            core,
            beam_width: beam_width.max(1),
            width: Width::new(WidthPolicy::Fixed, beam_width),
            pending: 0,
            done: false,
            beam: Vec::with_capacity(beam_width),
            hop: Hop::default(),
            deferred: Hop::default(),
            has_deferred: false,
            pipeline: false,
            targets: Vec::new(),
            page: PageRule::Record,
            range: None,
        }
    }

    /// A k-NN search for `query` in the buffers of a finished one (same
    /// index; [`Expansion::reset`]). Not for range searches (`new_range`).
    pub fn recycle(
        mut self,
        ctx: &SearchContext,
        query: PreparedQuery,
        complexity: usize,
        beam_width: usize,
    ) -> Self {
        debug_assert!(self.range.is_none(), "range searches are not recycled");
        self.core.reset(query, complexity);
        self.core.start(ctx);
        self.beam_width = beam_width.max(1);
        self.width = Width::new(WidthPolicy::Fixed, beam_width);
        self.pending = 0;
        self.done = false;
        self.beam.clear();
        self.hop.clear();
        self.deferred.clear();
        self.has_deferred = false;
        self.pipeline = false;
        self.targets.clear();
        self.page = PageRule::Record;
        self
    }

    /// Whether this is a range search (`new_range`).
    pub fn is_range(&self) -> bool {
        self.range.is_some()
    }

    /// A range search: starts as a k-NN search with list size `complexity`
    /// and widens as `rule` says ([`RangeRule`]).
    pub fn new_range(
        ctx: &SearchContext,
        query: PreparedQuery,
        complexity: usize,
        beam_width: usize,
        rule: RangeRule,
    ) -> Self {
        let mut s = Self::new(ctx, query, complexity, beam_width);
        s.range = Some(rule.start(&mut s.core, complexity));
        s
    }

    /// Every node found within the radius (internal distance), nearest first.
    pub fn range_results(&mut self) -> Vec<(f32, u32)> {
        match self.range {
            Some(rule) => rule.results(&mut self.core),
            None => self.results(usize::MAX).to_vec(),
        }
    }

    /// Turns on block search (Starling §4.2) with pruning ratio σ.
    pub fn with_page_search(mut self, prune_ratio: f32) -> Self {
        self.page = PageRule::new(Some(prune_ratio));
        let complexity = self.core.list_size();
        self.page.size(&mut self.core, complexity);
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

    /// The k nearest expanded nodes by exact distance (ties by id).
    pub fn results(&mut self, k: usize) -> &[(f32, u32)] {
        debug_assert!(!self.has_deferred || self.core.stopped());
        self.core.results(k)
    }
}

impl BeamSearch {
    /// A corrupt record stops the query: nothing more is chosen or read.
    #[inline]
    fn stop_if_corrupt(&mut self) {
        if self.core.stopped() {
            self.done = true;
        }
    }

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
            let (span, claimed) = (&hop.bufs[page], &mut hop.claimed[page]);
            self.page
                .route(&mut self.core, ctx, span, &targets, claimed);
        }
        // The whole hop's neighbours in one batch (the list ends the same
        // whatever the grouping; larger batches estimate faster).
        self.core.list_collected(ctx);
        self.stop_if_corrupt();
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
            self.page.settle(
                &mut self.core,
                ctx,
                span,
                &targets,
                &hop.claimed[page],
                true,
            );
        }
        // Every page's explored neighbours in one batch, as in `finish_hop`.
        self.core.list_collected(ctx);
        self.stop_if_corrupt();
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
                match self.core.next_candidate() {
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
                if let Some(rule) = self.range {
                    if rule.widen(&mut self.core) {
                        continue;
                    }
                }
                self.done = true;
                return;
            }
            let beam = std::mem::take(&mut self.beam);
            let first = reads.len();
            for &id in &beam {
                match ctx.cache.get(id) {
                    Some(record) => {
                        self.core.expand(ctx, id, record);
                        self.core.stats().cache_hits += 1;
                        self.stop_if_corrupt();
                    }
                    None => {
                        let span = ctx.layout.span_of(id);
                        let shared = reads[first..].iter().position(|r| r.span == span);
                        match shared {
                            Some(page) => {
                                self.hop.riders.push((page, id));
                                self.core.stats().shared_reads += 1;
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
        self.width.on_arrival(true, || self.core.progress());
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
        self.core.stats()
    }

    fn failure(&self) -> Option<String> {
        self.core.failure()
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
