//! PipeANN's pipelined best-first search (Guo & Lu, OSDI '25; OctopusANN
//! §4.3.2, Figure 9b): a query keeps up to W reads outstanding and never
//! waits on a hop barrier. When any read completes, its node is routed at
//! once (its neighbours enter the candidate list) and the best candidate not
//! yet read is issued, one arrival at a time, so W stay outstanding and
//! reads that arrive together go back out staggered; exact distances, and
//! with block search a page's other records, wait until the worker has no
//! completion to route (the scheduler's `deferred`).
//!
//! W follows a [`WidthPolicy`] (OctopusANN §4.3.1). A read whose node no
//! longer ranks within the list when it arrives was speculative and lost:
//! it is counted in [`QueryStats::wasted`] and only its exact distance is
//! kept (PipeANN does not expand it either; beam search would never have
//! read it).
//!
//! The list, visited set, tables and exact distances are an [`Expansion`],
//! the core the beam search drives too, here in another order; block search
//! over shuffled pages is the same [`PageRule`] as the beam's (Starling
//! §4.2). The entry points' reads go out before the estimator's table is
//! prepared ([`Expansion::start_unprepared`]): nothing steers them but the
//! entry search, and the table is ready before they arrive.

use super::block::PageRule;
use super::context::SearchContext;
use super::expansion::Expansion;
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
    core: Expansion,
    width: Width,
    flights: Vec<Flight>,
    /// Arrived, not routed yet (`step` routes them).
    arrived: Vec<Page>,
    /// Routed; exact distances and the block's others still to do.
    deferred: Vec<Page>,
    /// Spent pages, whose buffers are reused.
    spare: Vec<Page>,
    page_rule: PageRule,
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

    /// Prepares the estimator's table if the start left it: the starts
    /// enter the list, and the reads and pages of those already read for
    /// take their estimates. True if it did work.
    fn prepare(&mut self, ctx: &SearchContext) -> bool {
        let (flights, arrived) = (&mut self.flights, &mut self.arrived);
        self.core.prepare_table(ctx, |id, est| {
            for f in flights.iter_mut() {
                if f.id == id || f.riders.contains(&id) {
                    f.est = f.est.min(est);
                }
            }
            for p in arrived.iter_mut() {
                if p.targets.contains(&id) {
                    p.est = p.est.min(est);
                }
            }
        })
    }

    /// Routes the oldest arrived page: its targets' neighbours into the list
    /// (and block search's claims), unless the read was wasted. False if
    /// none had arrived.
    ///
    /// One page a step, so each arrival's replacement read goes out as soon
    /// as that page is routed. Routing every arrived page first would send
    /// their replacements together: reads that leave together come back
    /// together, and the query would settle into rounds with a barrier,
    /// its CPU no longer overlapping its reads (PipeANN's loop handles one
    /// completion at a time, `pipe_search`).
    fn route(&mut self, ctx: &SearchContext) -> bool {
        if self.arrived.is_empty() {
            return false;
        }
        self.prepare(ctx);
        let mut page = self.arrived.remove(0);
        let useful = self.core.ranks(page.est);
        self.width.on_arrival(useful, || self.core.progress());
        if useful {
            page.routed = true;
            self.page_rule.route(
                &mut self.core,
                ctx,
                &page.bytes,
                &page.targets,
                &mut page.claimed,
            );
            self.core.list_collected(ctx);
        } else {
            self.core.stats().wasted += 1;
        }
        self.deferred.push(page);
        true
    }

    /// The part of each routed page that does not steer the search.
    fn run_deferred(&mut self, ctx: &SearchContext) -> bool {
        if self.prepare(ctx) {
            return true;
        }
        if self.deferred.is_empty() {
            return false;
        }
        let mut pages = std::mem::take(&mut self.deferred);
        for page in pages.drain(..) {
            self.page_rule.settle(
                &mut self.core,
                ctx,
                &page.bytes,
                &page.targets,
                &page.claimed,
                page.routed,
            );
            self.spare.push(page);
        }
        self.core.list_collected(ctx);
        self.deferred = pages;
        true
    }

    /// Issues the best unread candidates until W reads are outstanding
    /// (an arrived page not yet routed still holds its place); cached
    /// candidates are expanded on the spot.
    fn issue(&mut self, ctx: &SearchContext, reads: &mut Vec<Read>) {
        while self.flights.len() + self.arrived.len() < self.width.current() && !self.core.stopped()
        {
            if let Some(id) = self.core.pending_start() {
                if ctx.cache.get(id).is_some() {
                    // Expanding it needs the table: the starts join the
                    // list and go as any candidate.
                    self.prepare(ctx);
                } else {
                    self.core.start_read(id);
                    self.send(ctx, id, f32::INFINITY, reads);
                }
                continue;
            }
            let Some(c) = self.core.next_candidate() else {
                return;
            };
            if let Some(record) = ctx.cache.get(c.id) {
                self.core.expand(ctx, c.id, record);
                self.core.stats().cache_hits += 1;
                continue;
            }
            self.send(ctx, c.id, c.dist, reads);
        }
    }

    /// Reads `id`'s page, or rides on a read in flight for the same page.
    /// `est`: its estimate (infinite for a start read before the table).
    fn send(&mut self, ctx: &SearchContext, id: u32, est: f32, reads: &mut Vec<Read>) {
        let span = ctx.layout.span_of(id);
        if let Some(f) = self.flights.iter_mut().find(|f| f.span == span) {
            f.riders.push(id);
            f.est = f.est.min(est);
            self.core.stats().shared_reads += 1;
            return;
        }
        reads.push(Read { key: id, span });
        self.flights.push(Flight {
            id,
            span,
            est,
            riders: Vec::new(),
        });
    }
}

impl QueryState for PipeSearch {
    fn step(&mut self, ctx: &SearchContext, reads: &mut Vec<Read>) {
        if self.done {
            return;
        }
        loop {
            self.route(ctx);
            let issued = reads.len();
            self.issue(ctx, reads);
            if self.core.stopped() {
                // A corrupt record: nothing more is issued; the reads in
                // flight still come back before the query retires.
                self.done = self.flights.is_empty();
                return;
            }
            if !self.arrived.is_empty() {
                // More pages to route: after the read this one freed goes
                // out (`wants_step` brings the worker back at once).
                if reads.len() > issued {
                    return;
                }
                continue;
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

    fn wants_step(&self) -> bool {
        !self.done && !self.arrived.is_empty()
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
        let (old, mut parts) = match reuse {
            Some(mut old) => {
                old.spare.append(&mut old.arrived);
                old.spare.append(&mut old.deferred);
                (Some(old.core), old.spare)
            }
            None => (None, Vec::new()),
        };
        // Seeding twice would cost the table this is to defer: start from a
        // core whose seed is cheap to undo (an empty list, a cleared
        // visited set).
        let mut core = match old {
            Some(mut core) => {
                core.reset(query, self.complexity);
                core
            }
            None => Expansion::new(ctx, query, self.complexity),
        };
        core.start_unprepared(ctx);
        parts.truncate(self.beam_width.max(1));
        // Block search's visited set is sized as the beam's.
        let page_rule = PageRule::new(self.page_search);
        page_rule.size(&mut core, self.complexity);
        PipeSearch {
            core,
            width: Width::new(self.width, self.beam_width),
            flights: Vec::with_capacity(self.beam_width),
            arrived: Vec::new(),
            deferred: Vec::new(),
            spare: parts,
            page_rule,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::testing::{open_uncached, small_index};
    use crate::search::WidthPolicy;
    use crate::synthetic::SyntheticSpec;
    use crate::{BuildParams, Index, SearchParams};

    /// A small pipeann index (16-d, 2,000 vectors, a navigation graph) with
    /// no node cache, so every start and candidate is read: (its
    /// directory, the index, 5 queries).
    fn uncached_pipeann(seed: u64) -> (tempfile::TempDir, Index, Vec<f32>) {
        let spec = SyntheticSpec {
            n: 2000,
            queries: 5,
            dim: DIM,
            clusters: 8,
            seed,
        };
        let params = BuildParams {
            graph_degree: 16,
            complexity: 32,
            pq_bytes: 4,
            pq_sample: 2000,
            nav_sample: 0.05,
            ..BuildParams::for_profile("pipeann")
        };
        let (dir, _, queries) = small_index(&spec, &params);
        let (index, all) = open_uncached(dir.path());
        assert!(all.memory().get("nav") > 0, "{}", all.memory());
        (dir, index, queries)
    }

    const DIM: usize = 16;

    /// Pages that arrive together are routed one a step, and each step's
    /// read goes out before the next page is routed: an arrived page holds
    /// its place in W until it is routed, so the reads never exceed W and
    /// the replacements do not leave (and come back) as one round.
    #[test]
    fn arrivals_are_routed_one_a_step_each_freeing_one_read() {
        let dim = DIM;
        let (dir, index, queries) = uncached_pipeann(9);
        let pages = std::fs::read(dir.path().join("pages.bin")).unwrap();
        let page = |r: &Read| {
            let a = r.span.offset as usize;
            pages[a..a + r.span.len as usize].to_vec()
        };
        let sp = SearchParams {
            complexity: 20,
            ..Default::default()
        };
        let ctx = index.context(&sp);
        let w = 3;
        let pipe = Pipe {
            complexity: 20,
            beam_width: w,
            width: WidthPolicy::Fixed,
            page_search: None,
        };
        for q in queries.chunks_exact(dim) {
            let query = PreparedQuery::new(q, ctx.dtype, ctx.metric);
            let mut s = pipe.start(&ctx, query, None);
            let mut out: Vec<Read> = Vec::new();
            s.step(&ctx, &mut out);
            while s.deferred(&ctx) {}
            let mut steps = 0;
            while !s.is_done() {
                let mut reads = Vec::new();
                s.step(&ctx, &mut reads);
                out.extend_from_slice(&reads);
                assert!(
                    s.flights.len() + s.arrived.len() <= w,
                    "more than W reads held"
                );
                if s.wants_step() {
                    // Routed one page of several; at most one read went out.
                    assert!(
                        reads.len() <= 1,
                        "{} reads before the next page",
                        reads.len()
                    );
                    steps += 1;
                    continue;
                }
                // Every read outstanding arrives at once.
                let arrived: Vec<Read> = out
                    .iter()
                    .filter(|r| s.flights.iter().any(|f| f.id == r.key))
                    .copied()
                    .collect();
                if arrived.is_empty() {
                    while s.deferred(&ctx) {}
                    continue;
                }
                for r in &arrived {
                    s.on_read(&ctx, r.key, &page(r));
                }
                assert_eq!(s.arrived.len(), arrived.len());
            }
            assert!(steps > 0, "no step left pages for the next");
            let mut res = Vec::new();
            pipe.finish(&mut s, 10, &mut res);
            assert_eq!(res.len(), 10);
        }
    }

    /// The starts' reads go out before the estimator's table is prepared;
    /// the table is prepared while they are in flight (the scheduler's
    /// `deferred`), and the starts are then in the list, read, at their
    /// estimates, as an eager start would have put them.
    #[test]
    fn starts_are_read_before_the_table_is_prepared() {
        let dim = DIM;
        let (_dir, index, queries) = uncached_pipeann(5);
        let sp = SearchParams {
            complexity: 20,
            ..Default::default()
        };
        let ctx = index.context(&sp);
        let pipe = Pipe {
            complexity: 20,
            beam_width: 8,
            width: WidthPolicy::Fixed,
            page_search: None,
        };
        let mut reuse = None;
        for q in queries.chunks_exact(dim) {
            let mut starts = Vec::new();
            ctx.entry.starts(q, ctx.entry_complexity, &mut starts);
            assert!(!starts.is_empty());
            let query = PreparedQuery::new(q, ctx.dtype, ctx.metric);
            let mut s = pipe.start(&ctx, query, reuse.take());
            assert!(!s.core.table_ready());
            let mut reads = Vec::new();
            s.step(&ctx, &mut reads);
            // The starts, nearest first, and nothing else; two starts in
            // one page share its read.
            let keys: Vec<u32> = reads.iter().map(|r| r.key).collect();
            let mut read_for: Vec<u32> = s
                .flights
                .iter()
                .flat_map(|f| f.riders.iter().copied().chain([f.id]))
                .collect();
            read_for.sort_unstable();
            let mut sorted = starts.clone();
            sorted.sort_unstable();
            assert_eq!(read_for, sorted);
            assert!(keys.iter().all(|k| starts.contains(k)) && keys.len() <= starts.len());
            assert_eq!(keys[0], starts[0]);
            assert!(!s.core.table_ready(), "the first reads wait for no table");
            // Nothing has arrived: the worker's idle hook prepares it.
            assert!(s.deferred(&ctx));
            assert!(s.core.table_ready());
            let mut table = crate::quant::QueryTable::default();
            ctx.quantizer.prepare(
                &PreparedQuery::new(q, ctx.dtype, ctx.metric).f32,
                &mut table,
            );
            for f in &s.flights {
                // A shared read ranks by the best of its starts.
                let best = f
                    .riders
                    .iter()
                    .chain([&f.id])
                    .map(|&id| ctx.quantizer.estimate(&table, id))
                    .fold(f32::INFINITY, f32::min);
                assert_eq!(f.est, best, "start {}", f.id);
            }
            assert_eq!(s.core.progress(), starts.len(), "every start listed, read");
            reuse = Some(s);
        }
    }
}
