//! PipeANN's pipelined best-first search (Guo & Lu, OSDI '25; OctopusANN
//! §4.3.2, Figure 9b): a query keeps up to W reads outstanding and never
//! waits on a hop barrier. When any read completes, its node is routed at
//! once (its neighbours enter the candidate list) and the best candidates not
//! yet read are issued until W are outstanding again; exact distances, and
//! with block search a page's other records, wait until the worker has no
//! completion to route (the scheduler's `deferred`).
//!
//! W follows a [`WidthPolicy`] (OctopusANN §4.3.1). A read whose node no
//! longer ranks within the list when it arrives was speculative and lost:
//! it is counted in [`QueryStats::wasted`] and only its exact distance is
//! kept (PipeANN does not expand it either; beam search would never have
//! read it).
//!
//! The list, visited set, tables and exact distances are those of
//! [`BeamSearch`], whose parts this search drives in another order; block
//! search over shuffled pages works as in the beam (Starling §4.2).

use super::beam::BeamSearch;
use super::block;
use super::context::SearchContext;
use super::query::PreparedQuery;
use super::strategy::Strategy;
use super::width::{Width, WidthPolicy};
use super::{QueryState, QueryStats, Read};
use crate::layout::Span;

/// A read in flight: the node it was issued for, the candidates stored in
/// the same page that ride on it, and the node's estimate when issued.
struct Flight {
    id: u32,
    span: Span,
    est: f32,
    riders: Vec<u32>,
}

/// A page that has arrived: copied out of the reader's slot, since the slot
/// goes back to the worker as soon as `on_read` returns.
#[derive(Default)]
struct Page {
    targets: Vec<u32>,
    bytes: Vec<u8>,
    /// The read node's estimate when it was issued (the best of its riders').
    est: f32,
    /// Block search: the page's other records claimed (id, was listed).
    claimed: Vec<(u32, bool)>,
    /// Whether the page was routed (its targets still ranked on arrival).
    routed: bool,
}

pub struct PipeSearch {
    core: BeamSearch,
    width: Width,
    flights: Vec<Flight>,
    /// Arrived, not routed yet (`step` routes them).
    arrived: Vec<Page>,
    /// Routed; exact distances and the block's others still to do.
    deferred: Vec<Page>,
    /// Spent pages, whose buffers are reused.
    spare: Vec<Page>,
    prune_ratio: Option<f32>,
    done: bool,
}

impl PipeSearch {
    fn take_page(&mut self) -> Page {
        let mut p = self.spare.pop().unwrap_or_default();
        p.targets.clear();
        p.bytes.clear();
        p.claimed.clear();
        p.routed = false;
        p
    }

    /// Routes every arrived page: its targets' neighbours into the list
    /// (and block search's claims), unless the read was wasted.
    fn route(&mut self, ctx: &SearchContext) {
        let mut pages = std::mem::take(&mut self.arrived);
        for page in &mut pages {
            let useful = self.core.ranks(page.est);
            self.width.on_arrival(useful, || self.core.progress());
            if !useful {
                self.core.stats().wasted += 1;
                continue;
            }
            page.routed = true;
            match self.prune_ratio {
                Some(_) => {
                    block::claim_and_route(
                        &mut self.core,
                        ctx,
                        &page.bytes,
                        &page.targets,
                        &mut page.claimed,
                    );
                }
                None => {
                    for &t in &page.targets {
                        let rec = ctx.layout.record_slice(t, &page.bytes);
                        self.core.collect_neighbors(ctx, t, rec);
                    }
                }
            }
        }
        // Every arrived page's neighbours estimated in one batch.
        self.core.list_collected(ctx);
        self.deferred.append(&mut pages);
        self.arrived = pages;
    }

    /// The part of each routed page that does not steer the search.
    fn run_deferred(&mut self, ctx: &SearchContext) -> bool {
        if self.deferred.is_empty() {
            return false;
        }
        let mut pages = std::mem::take(&mut self.deferred);
        for page in pages.drain(..) {
            for &t in &page.targets {
                let rec = ctx.layout.record_slice(t, &page.bytes);
                self.core.add_exact(ctx, t, rec);
            }
            if let (Some(sigma), true) = (self.prune_ratio, page.routed) {
                block::explore_others(&mut self.core, ctx, &page.bytes, &page.claimed, sigma);
            }
            self.spare.push(page);
        }
        self.core.list_collected(ctx);
        self.deferred = pages;
        true
    }

    /// Issues the best unread candidates until W reads are outstanding;
    /// cached candidates are expanded on the spot.
    fn issue(&mut self, ctx: &SearchContext, reads: &mut Vec<Read>) {
        while self.flights.len() < self.width.current() && !self.core.stopped() {
            let Some(c) = self.core.next_candidate() else {
                return;
            };
            if let Some(record) = ctx.cache.get(c.id) {
                self.core.expand(ctx, c.id, record);
                self.core.stats().cache_hits += 1;
                continue;
            }
            let span = ctx.layout.span_of(c.id);
            if let Some(f) = self.flights.iter_mut().find(|f| f.span == span) {
                f.riders.push(c.id);
                f.est = f.est.min(c.dist);
                self.core.stats().shared_reads += 1;
                continue;
            }
            reads.push(Read { key: c.id, span });
            self.flights.push(Flight {
                id: c.id,
                span,
                est: c.dist,
                riders: Vec::new(),
            });
        }
    }
}

impl QueryState for PipeSearch {
    fn step(&mut self, ctx: &SearchContext, reads: &mut Vec<Read>) {
        if self.done {
            return;
        }
        loop {
            self.route(ctx);
            self.issue(ctx, reads);
            if self.core.stopped() {
                // A corrupt record: nothing more is issued; the reads in
                // flight still come back before the query retires.
                self.done = self.flights.is_empty();
                return;
            }
            if !self.flights.is_empty() {
                return;
            }
            // Nothing to read: what is deferred may still add candidates.
            if !self.run_deferred(ctx) {
                self.done = true;
                return;
            }
        }
    }

    fn on_read(&mut self, _ctx: &SearchContext, key: u32, bytes: &[u8]) {
        let Some(i) = self.flights.iter().position(|f| f.id == key) else {
            debug_assert!(false, "a read this query did not issue: {key}");
            return;
        };
        let f = self.flights.swap_remove(i);
        let mut page = self.take_page();
        page.targets.push(f.id);
        page.targets.extend_from_slice(&f.riders);
        page.bytes.extend_from_slice(bytes);
        page.est = f.est;
        self.arrived.push(page);
    }

    fn deferred(&mut self, ctx: &SearchContext) -> bool {
        self.run_deferred(ctx)
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

/// The pipelined search as a [`Strategy`]: list size L, at most
/// `beam_width` reads outstanding under `width`, block search when
/// `page_search` gives its pruning ratio.
pub struct Pipe {
    pub complexity: usize,
    pub beam_width: usize,
    pub width: WidthPolicy,
    pub page_search: Option<f32>,
}

impl Strategy for Pipe {
    type State = PipeSearch;

    fn start(
        &self,
        ctx: &SearchContext,
        query: PreparedQuery,
        reuse: Option<PipeSearch>,
    ) -> PipeSearch {
        let (core, mut parts) = match reuse {
            Some(mut old) => {
                let core = old
                    .core
                    .recycle(ctx, query, self.complexity, self.beam_width);
                old.spare.append(&mut old.arrived);
                old.spare.append(&mut old.deferred);
                (core, old.spare)
            }
            None => (
                BeamSearch::new(ctx, query, self.complexity, self.beam_width),
                Vec::new(),
            ),
        };
        parts.truncate(self.beam_width.max(1));
        // Block search's visited set is sized as the beam's (`with_page_search`).
        let core = match self.page_search {
            Some(sigma) => core.with_page_search(sigma),
            None => core,
        };
        PipeSearch {
            core,
            width: Width::new(self.width, self.beam_width),
            flights: Vec::with_capacity(self.beam_width),
            arrived: Vec::new(),
            deferred: Vec::new(),
            spare: parts,
            prune_ratio: self.page_search.map(|r| r.clamp(0.0, 1.0)),
            done: false,
        }
    }

    fn finish(&self, state: &mut PipeSearch, k: usize, out: &mut Vec<(f32, u32)>) {
        out.clear();
        out.extend_from_slice(state.core.results(k));
    }

    fn reusable(&self, state: &PipeSearch) -> bool {
        state.flights.is_empty()
    }
}
