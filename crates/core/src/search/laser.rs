//! AlayaLaser's search (§4) over laser records (§3.2): no codes in RAM —
//! expanding a node scores all its neighbours from the codes its record
//! carries, in one fast-scan pass, and its own vector gives its exact
//! distance; the result is the top k by exact distance.
//!
//! Two departures from DiskANN's beam search, each switchable:
//!
//! - **Adaptive beam** (§4.2): the i-th round reads at most
//!   `min(W, 2^i)` nodes — narrow while the search is far from the query,
//!   where wide rounds read nodes that never reach the result, and wide
//!   once it converges (the paper's W is 2–4× DiskANN's).
//! - **Early dispatch** (§4.3): a round does not wait for its slowest read.
//!   Once `dispatch_ratio` of its reads have arrived (0.5 in the paper) the
//!   next round is chosen and issued; the late reads are expanded when they
//!   arrive and their neighbours merge into the list. 1.0 is DiskANN's hop
//!   barrier.
//!
//! Nodes the in-degree cache holds (§3.3) are expanded from RAM as soon as
//! they are chosen and do not count against the round's reads.
//!
//! A query started alone reads its entry before it maps itself: the map
//! through the codes' matrix is only needed to estimate neighbours, once a
//! record is in, so it runs in the worker's idle hook while the first read
//! flies (as the pipelined search prepares its PQ table). Alone, the map
//! costs 37–96 µs (in cache or not) and a read at depth 1 ~35 µs here. A
//! group's map is one pass already done for all of it.

use std::time::Instant;

use super::context::SearchContext;
use super::expansion::visited_capacity;
use super::query::PreparedQuery;
use super::strategy::Strategy;
use super::{QueryState, QueryStats, Read};
use crate::quant::record_scorer::RecordTable;
use crate::util::candidates::CandidateList;
use crate::util::visited::VisitedSet;

/// The laser search as a [`Strategy`].
pub struct Laser {
    /// Candidate list size L.
    pub complexity: usize,
    /// The widest round W.
    pub beam_width: usize,
    /// Rounds widen 1, 2, 4, ... up to W (§4.2); false: every round W.
    pub adaptive_beam: bool,
    /// Share of a round's reads that must arrive before the next round is
    /// issued (§4.3), in (0, 1].
    pub dispatch_ratio: f32,
}

pub struct LaserSearch {
    query: PreparedQuery,
    table: RecordTable,
    list: CandidateList,
    visited: VisitedSet,
    /// Exact distance and id of every expanded node.
    exact: Vec<(f32, u32)>,
    stats: QueryStats,
    corrupt: Option<String>,
    /// Rounds issued so far; the reads of the last one, and how many of
    /// them have arrived.
    rounds: u32,
    issued: usize,
    arrived: usize,
    /// Reads in flight: (node, round).
    in_flight: Vec<(u32, u32)>,
    /// Nothing was left to read and nothing was in flight: the end.
    exhausted: bool,
    /// Scratch: one record's neighbour estimates.
    estimates: Vec<f32>,
    starts: Vec<(u32, f32)>,
    /// Whether `table` is this query's (a lone start maps the query in
    /// `deferred`, or before its first expansion).
    table_ready: bool,
}

/// What a query's group computed for all its queries at once
/// ([`Strategy::start_group`]): this query's row of the codes' map
/// (`RecordScorer::map_many`) and its entry starts
/// (`EntryPoints::starts_near_many`).
#[derive(Clone, Copy)]
struct Grouped<'a> {
    image: &'a [f32],
    starts: &'a [(u32, f32)],
}

impl LaserSearch {
    /// `group`: what the query's group computed for it, or `None` to map
    /// it and find its starts alone.
    fn new(ctx: &SearchContext, query: PreparedQuery, p: &Laser, group: Option<Grouped>) -> Self {
        let mut s = LaserSearch {
            query,
            table: RecordTable::default(),
            list: CandidateList::new(p.complexity),
            visited: VisitedSet::for_ids_below(ctx.n, visited_capacity(p.complexity)),
            exact: Vec::with_capacity(p.complexity * 2),
            stats: QueryStats::default(),
            corrupt: None,
            rounds: 0,
            issued: 0,
            arrived: 0,
            in_flight: Vec::new(),
            exhausted: false,
            estimates: Vec::new(),
            starts: Vec::new(),
            table_ready: false,
        };
        s.start(ctx, group);
        s
    }

    fn recycle(
        mut self,
        ctx: &SearchContext,
        query: PreparedQuery,
        p: &Laser,
        group: Option<Grouped>,
    ) -> Self {
        self.query = query;
        self.list.reset(p.complexity);
        self.visited.clear();
        self.visited.reserve(visited_capacity(p.complexity));
        self.exact.clear();
        self.stats = QueryStats::default();
        self.corrupt = None;
        self.rounds = 0;
        self.issued = 0;
        self.arrived = 0;
        self.in_flight.clear();
        self.exhausted = false;
        self.start(ctx, group);
        self
    }

    /// The query's entry points in the list at the distances the entry
    /// part knows (exact for cluster entries), and its tables when its
    /// group mapped it (a lone query maps itself later: `prepare_table`).
    fn start(&mut self, ctx: &SearchContext, group: Option<Grouped>) {
        let codes = ctx.record_codes.expect("a laser index has record codes");
        let t = Instant::now();
        self.starts.clear();
        match group {
            Some(g) => {
                codes.prepare_mapped(&self.query.f32, g.image, &mut self.table);
                self.table_ready = true;
                self.starts.extend_from_slice(g.starts);
            }
            None => {
                self.table_ready = false;
                ctx.entry
                    .starts_near(&self.query.f32, ctx.entry_complexity, &mut self.starts);
            }
        }
        for &(id, d) in &self.starts {
            if self.visited.insert(id) {
                self.list.insert(id, d);
            }
        }
        self.stats.estimate_ns += t.elapsed().as_nanos() as u64;
    }

    /// Maps a lone query through the codes' matrix into its tables, once;
    /// true if it did.
    fn prepare_table(&mut self, ctx: &SearchContext) -> bool {
        if self.table_ready {
            return false;
        }
        let codes = ctx.record_codes.expect("a laser index has record codes");
        let t = Instant::now();
        codes.prepare(&self.query.f32, &mut self.table);
        self.table_ready = true;
        self.stats.estimate_ns += t.elapsed().as_nanos() as u64;
        true
    }

    /// Expands a node: its exact distance, then its unvisited neighbours
    /// into the list at the estimates its record's codes give.
    fn expand(&mut self, ctx: &SearchContext, id: u32, record: &[u8]) {
        self.prepare_table(ctx);
        let node = ctx.layout.parse(record);
        let t = Instant::now();
        let d = self.query.distance(node.vector);
        let t2 = Instant::now();
        self.stats.exact_ns += (t2 - t).as_nanos() as u64;
        self.stats.exact += 1;
        self.stats.hops += 1;
        self.exact.push((d, id));
        let (Some(codes), Some(table)) = (ctx.layout.neighbour_codes(record), ctx.record_codes)
        else {
            self.corrupt.get_or_insert_with(|| {
                format!(
                    "{}: node {id}: a record without neighbour codes",
                    ctx.pages_path.display()
                )
            });
            return;
        };
        table.estimate(&mut self.table, &codes, node.degree(), &mut self.estimates);
        self.stats.estimated += node.degree() as u64;
        // A filtered query searched in the graph lists only matches where
        // at least half the neighbours match, and routes through the
        // others where fewer do (`search::acorn`'s rule without its
        // two-hop look: a laser record's neighbours' codes are in the
        // record, their own neighbours' only in theirs).
        let narrows = self.query.narrows();
        let routes = narrows.is_some_and(|a| {
            2 * node.neighbors().filter(|&nb| a.contains(nb)).count() < node.degree()
        });
        for (nb, &est) in node.neighbors().zip(&self.estimates) {
            if !routes && narrows.is_some_and(|a| !a.contains(nb)) {
                continue;
            }
            if nb as usize >= ctx.n {
                self.corrupt.get_or_insert_with(|| {
                    format!(
                        "{}: node {id}: neighbour id: expected < {}, found {nb} (corrupt index)",
                        ctx.pages_path.display(),
                        ctx.n
                    )
                });
                continue;
            }
            // A neighbour's estimate is the same from every record that
            // lists it (its code is its own), and a full list's worst
            // entry only improves: one the list does not admit now never
            // will, so it is skipped without touching the visited set.
            if self.list.admits(est) && self.visited.insert(nb) {
                self.list.insert(nb, est);
            }
        }
        self.stats.estimate_ns += t2.elapsed().as_nanos() as u64;
    }

    /// Issues the next round: the closest unexpanded candidates, up to the
    /// round's width in reads (cached ones are expanded on the spot).
    /// Returns the reads issued; a round that issues none is not counted.
    fn dispatch(&mut self, ctx: &SearchContext, p: &Laser, reads: &mut Vec<Read>) -> usize {
        let width = match p.adaptive_beam {
            true => (1usize << self.rounds.min(16)).min(p.beam_width.max(1)),
            false => p.beam_width.max(1),
        };
        let mut issued = 0;
        while issued < width {
            let Some(c) = self.list.pop_closest_unexpanded() else {
                break;
            };
            if let Some(record) = ctx.cache.get(c.id) {
                self.stats.cache_hits += 1;
                self.expand(ctx, c.id, record);
                continue;
            }
            reads.push(Read {
                key: c.id,
                span: ctx.layout.span_of(c.id),
            });
            self.in_flight.push((c.id, self.rounds + 1));
            issued += 1;
        }
        if issued > 0 {
            self.rounds += 1;
            self.issued = issued;
            self.arrived = 0;
        }
        issued
    }

    /// The k nearest expanded nodes by exact distance (ties by id).
    pub fn results(&mut self, k: usize) -> &[(f32, u32)] {
        self.exact
            .sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        &self.exact[..k.min(self.exact.len())]
    }
}

/// The strategy's parameters travel with each query's state, so
/// `QueryState::step` can read them.
pub struct LaserState {
    search: LaserSearch,
    params: LaserParams,
}

#[derive(Clone, Copy)]
struct LaserParams {
    complexity: usize,
    beam_width: usize,
    adaptive_beam: bool,
    dispatch_ratio: f32,
}

impl LaserParams {
    fn of(p: &Laser) -> Self {
        LaserParams {
            complexity: p.complexity,
            beam_width: p.beam_width,
            adaptive_beam: p.adaptive_beam,
            dispatch_ratio: p.dispatch_ratio.clamp(f32::MIN_POSITIVE, 1.0),
        }
    }

    fn laser(&self) -> Laser {
        Laser {
            complexity: self.complexity,
            beam_width: self.beam_width,
            adaptive_beam: self.adaptive_beam,
            dispatch_ratio: self.dispatch_ratio,
        }
    }
}

impl QueryState for LaserState {
    fn step(&mut self, ctx: &SearchContext, reads: &mut Vec<Read>) {
        let s = &mut self.search;
        if s.corrupt.is_some() {
            return;
        }
        let p = self.params.laser();
        // Wait until the round's share has arrived (all of it at ratio 1).
        if !s.in_flight.is_empty() {
            let due = ((p.dispatch_ratio * s.issued as f32).ceil() as usize).max(1);
            if s.arrived < due {
                return;
            }
        }
        if s.dispatch(ctx, &p, reads) == 0 && s.in_flight.is_empty() {
            // Nothing left to read and nothing to wait for.
            s.exhausted = true;
        }
    }

    fn on_read(&mut self, ctx: &SearchContext, id: u32, bytes: &[u8]) {
        let s = &mut self.search;
        if let Some(at) = s.in_flight.iter().position(|r| r.0 == id) {
            let (_, round) = s.in_flight.swap_remove(at);
            if round == s.rounds {
                s.arrived += 1;
            }
        }
        let record = ctx.layout.record_slice(id, bytes);
        s.expand(ctx, id, record);
    }

    fn is_done(&self) -> bool {
        let s = &self.search;
        s.in_flight.is_empty() && (s.exhausted || s.corrupt.is_some())
    }

    /// A lone query's map, while its first reads fly.
    fn deferred(&mut self, ctx: &SearchContext) -> bool {
        self.search.prepare_table(ctx)
    }

    fn stats(&mut self) -> &mut QueryStats {
        &mut self.search.stats
    }

    fn failure(&self) -> Option<String> {
        self.search.corrupt.clone()
    }
}

/// Queries a worker maps through the codes' matrix together: measured on
/// wordnet-mpnet (696 × 768 f16, 1.07 MB), mapping one query at a time
/// cost ~32 µs of a ~108 µs search through RAM, most of it streaming and
/// converting the matrix; 8 share one pass and fit L1 beside a row.
const QUERY_GROUP: usize = 8;

impl Laser {
    fn start_mapped(
        &self,
        ctx: &SearchContext,
        query: PreparedQuery,
        reuse: Option<LaserState>,
        group: Option<Grouped>,
    ) -> LaserState {
        let search = match reuse {
            Some(old) => old.search.recycle(ctx, query, self, group),
            None => LaserSearch::new(ctx, query, self, group),
        };
        LaserState {
            search,
            params: LaserParams::of(self),
        }
    }
}

impl Strategy for Laser {
    type State = LaserState;

    fn start(
        &self,
        ctx: &SearchContext,
        query: PreparedQuery,
        reuse: Option<LaserState>,
    ) -> LaserState {
        self.start_mapped(ctx, query, reuse, None)
    }

    fn group(&self) -> usize {
        QUERY_GROUP
    }

    /// Maps the group's queries through the codes' matrix and scans the
    /// entry points for all of them at once, then starts each from its
    /// image and starts (tables and starts equal to `start`'s, bit for
    /// bit); each query's stats carry its share of the group's work. A
    /// group of one is `start`: its map waits for its first read.
    fn start_group(
        &self,
        ctx: &SearchContext,
        queries: Vec<PreparedQuery>,
        reuse: &mut Vec<LaserState>,
        out: &mut Vec<LaserState>,
    ) {
        // One query alone (latency mode, a batch's tail) reads its entry
        // before it maps itself.
        if queries.len() == 1 {
            for q in queries {
                out.push(self.start_mapped(ctx, q, reuse.pop(), None));
            }
            return;
        }
        let codes = ctx.record_codes.expect("a laser index has record codes");
        let t = Instant::now();
        let flat: Vec<f32> = queries.iter().flat_map(|q| q.f32.iter().copied()).collect();
        let mut images = Vec::new();
        codes.map_many(&flat, &mut images);
        let mut starts = vec![Vec::new(); queries.len()];
        ctx.entry
            .starts_near_many(&flat, ctx.entry_complexity, &mut starts);
        let share = t.elapsed().as_nanos() as u64 / queries.len().max(1) as u64;
        let cd = codes.code_dim();
        for ((q, image), starts) in queries
            .into_iter()
            .zip(images.chunks_exact(cd))
            .zip(&starts)
        {
            let r = reuse.pop();
            let group = Grouped { image, starts };
            let mut state = self.start_mapped(ctx, q, r, Some(group));
            state.search.stats.estimate_ns += share;
            out.push(state);
        }
    }

    fn finish(&self, state: &mut LaserState, k: usize, out: &mut Vec<(f32, u32)>) {
        out.clear();
        out.extend_from_slice(state.search.results(k));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::testing::{open_uncached, small_index};
    use crate::search::SearchParams;
    use crate::synthetic::SyntheticSpec;
    use crate::BuildParams;

    /// A query started alone asks for its entry's read before it maps
    /// itself; the idle hook then maps it, once, and the search goes on to
    /// the answer a grouped start (mapped before its first read) gives.
    #[test]
    fn a_lone_query_reads_its_entry_before_it_maps_itself() {
        let dim = 32;
        let spec = SyntheticSpec {
            n: 1500,
            queries: 6,
            dim,
            clusters: 6,
            seed: 7,
        };
        let params = BuildParams {
            graph_degree: 32,
            complexity: 48,
            ..BuildParams::for_profile("laser")
        };
        let (dir, _, queries) = small_index(&spec, &params);
        // No node cache: the entry is read, not expanded from RAM.
        let (index, _) = open_uncached(dir.path());
        let sp = SearchParams {
            complexity: 32,
            ..Default::default()
        };
        let ctx = index.context(&sp);
        let pages = std::fs::read(ctx.pages_path).unwrap();
        let laser = Laser {
            complexity: 32,
            beam_width: 4,
            adaptive_beam: true,
            dispatch_ratio: 1.0,
        };
        let run = |mut s: LaserState, alone: bool| {
            let mut reads = Vec::new();
            s.step(&ctx, &mut reads);
            let mut starts = Vec::new();
            ctx.entry
                .starts(&s.search.query.f32, ctx.entry_complexity, &mut starts);
            assert_eq!(reads.iter().map(|r| r.key).collect::<Vec<_>>(), starts);
            assert_eq!(s.search.table_ready, !alone, "mapped before the first read");
            // The worker's idle hook, while the reads fly.
            assert_eq!(s.deferred(&ctx), alone);
            assert!(s.search.table_ready && !s.deferred(&ctx));
            while !reads.is_empty() {
                let batch = std::mem::take(&mut reads);
                for r in &batch {
                    let at = r.span.offset as usize;
                    s.on_read(&ctx, r.key, &pages[at..at + r.span.len as usize]);
                }
                s.step(&ctx, &mut reads);
            }
            assert!(s.is_done());
            let mut out = Vec::new();
            laser.finish(&mut s, 10, &mut out);
            out
        };
        for q in queries.chunks_exact(dim) {
            let prepared = || PreparedQuery::new(q, ctx.dtype, ctx.metric);
            // A group of one starts alone; a group of two maps together.
            let mut one = Vec::new();
            laser.start_group(&ctx, vec![prepared()], &mut Vec::new(), &mut one);
            let alone = run(one.pop().unwrap(), true);
            let mut group = Vec::new();
            laser.start_group(
                &ctx,
                vec![prepared(), prepared()],
                &mut Vec::new(),
                &mut group,
            );
            let grouped = run(group.pop().unwrap(), false);
            let bits =
                |o: &[(f32, u32)]| o.iter().map(|&(d, i)| (d.to_bits(), i)).collect::<Vec<_>>();
            assert!(!alone.is_empty());
            assert_eq!(bits(&alone), bits(&grouped));
        }
    }
}
