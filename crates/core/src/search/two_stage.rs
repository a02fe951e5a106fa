//! Gorgeous's two-stage search (§4.2, Algorithm 2).
//!
//! **Search stage**: a greedy search on PQ estimates alone. The closest
//! unexpanded candidate is expanded from the graph cache when its list is
//! held there (no I/O), else its block is read: the block's vector gives an
//! exact distance, its list is expanded, and so is every list the block
//! replicates (§3.4) whose node waits in the candidate list (line 19-20).
//! Up to W blocks are in flight at once and each is processed as it
//! arrives, so there is no hop barrier (§4.3's asynchronous prefetch,
//! within one query; across queries the scheduler already overlaps).
//!
//! **Refinement stage**: the top ⌈σ·L⌉ candidates by estimate that have no
//! exact distance yet get one, from the node cache or from a read of their
//! vector, all submitted at once and each processed as it completes (§4.3,
//! "other optimizations"). The result is the top k by exact distance.
//!
//! **Pipelined refinement** (issue #22's composition of PipeANN with the
//! two stages): with `pipelined`, a refinement read does not wait for the
//! search stage to end. Once the top of the candidate list has settled —
//! every candidate ranked above position p is expanded (PipeANN's marker,
//! [`CandidateList::first_unexpanded`]) — the settled candidates among the
//! top ⌈σ·L⌉ get their vector read at once, while the search stage goes on
//! in RAM. At one query a thread the reads then overlap the search's CPU
//! instead of following it; a candidate read early that is pushed out of
//! the top ⌈σ·L⌉ later is counted in [`QueryStats::wasted`] (its exact
//! distance still joins the result's pool, so recall can only rise).
//!
//! **Settled refinement** (issue #57 item 2): when the codes' estimates
//! come with error bounds (extended RaBitQ), the refinement scores only
//! those of the top ⌈σ·L⌉ that the bounds, shrunk to the reach ρ·L/k,
//! leave possibly in the top k (`Settle::admit`: 3.5 reads a query at 20% of
//! wordnet-minilm for R@10 0.954 at L 32, against 7.1 for 0.957 at L 26
//! scoring all ⌈σ·L⌉), and reads only those the bounds leave open,
//! W at a time, best estimate
//! first, until the top k is settled (`search::settle`); a candidate
//! certainly in the top k is returned at its estimate, unread. Pipelined,
//! a settled candidate is read early only while the bounds leave it open
//! (`keep_open`), and the waves that end the search read what is still
//! open then: on wordnet-minilm at 20% memory, 1×1, L 26, 10.0 reads a
//! query at 220 µs against 14.4 at 261 reading every target early.

use super::context::SearchContext;
use super::expansion::visited_capacity;
use super::query::PreparedQuery;
use super::settle::{Bounded, Settle, Verdict};
use super::strategy::Strategy;
use super::{QueryState, QueryStats, Read};
use crate::layout::NodeView;
use crate::quant::QueryTable;
use crate::util::candidates::CandidateList;
use crate::util::visited::VisitedSet;

/// The two-stage search as a [`Strategy`].
pub struct TwoStage {
    /// Candidate list size D (L).
    pub complexity: usize,
    /// Blocks in flight per query in the search stage (W).
    pub beam_width: usize,
    /// Refinement ratio σ: the top ⌈σ·L⌉ candidates are re-ranked
    /// (Gorgeous's default 0.5).
    pub refine_ratio: f32,
    /// Pipelined refinement: settled candidates' vectors are read during
    /// the search stage (module docs).
    pub pipelined: bool,
    /// Results asked for: what a settled refinement settles.
    pub k: usize,
    /// Settle the refinement where the codes bound their estimates
    /// (module docs), reading this many open candidates a wave; `None`
    /// reads every target.
    pub settle: Option<usize>,
    /// Where the codes bound their estimates, the refinement scores only
    /// the top ⌈σ·L⌉ candidates the bounds shrunk to ρ·L/k of their width
    /// (at most all of it) leave possibly in the top k (`Settle::admit`),
    /// read or settled: ρ.
    pub settle_reach: f32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Search,
    Refine,
    Done,
}

pub struct TwoStageSearch {
    query: PreparedQuery,
    table: QueryTable,
    list: CandidateList,
    visited: VisitedSet,
    /// Exact distance and id of every node whose vector the search saw.
    exact: Vec<(f32, u32)>,
    exact_seen: VisitedSet,
    beam_width: usize,
    refine: usize,
    /// Block reads of the search stage in flight.
    pending: usize,
    pipelined: bool,
    /// The last step yielded with search work left (pipelined refinement).
    more: bool,
    /// Vector reads (refinement) in flight, by node id: few (≤ ⌈σ·L⌉ plus
    /// the early ones that lost), so a vector beats a set.
    vectors_pending: Vec<u32>,
    /// The page offset each of `vectors_pending` reads: a candidate whose
    /// page is one of them comes with that read (`block_mates`).
    pages_pending: Vec<u64>,
    /// Nodes whose vector the pipelined refinement read early.
    early: Vec<u32>,
    /// What the pipelined refinement last decided its early reads on
    /// (`early_state`).
    early_seen: u64,
    stage: Stage,
    stats: QueryStats,
    corrupt: Option<String>,
    fresh: Vec<u32>,
    fresh_est: Vec<f32>,
    /// Scratch of the in-graph filter (`search::acorn`).
    bridges: Vec<u32>,
    /// Scratch: the candidates the refinement scores (`refine_targets`).
    targets: Vec<u32>,
    /// Scratch: the whole top ⌈σ·L⌉ while a pipelined refinement settles
    /// (`keep_open`).
    current: Vec<u32>,
    /// A filtered query's best matches by estimate, every one it
    /// estimated, in or out of the list (`refine_targets`).
    matches: CandidateList,
    /// The neighbours of the candidate expected next, whose codes are
    /// prefetched while this one is expanded (`prefetch_next`).
    ahead: Vec<u32>,
    /// Settled refinement (module docs): the pool, its verdicts, the wave
    /// to read, the k to settle, and whether a wave came back.
    pool: Vec<Bounded>,
    /// Scratch: the targets' estimates and bounds (`admit`).
    bounds: (Vec<f32>, Vec<f32>),
    /// Scratch: which targets the reach admits (`admit`).
    admitted: Vec<bool>,
    /// The share of the bounds admission shrinks them to (`reach`).
    reach: f32,
    settle: Settle,
    wave: Vec<usize>,
    k: usize,
    /// Reads a settled refinement's wave holds (`TwoStage::settle`).
    may_settle: Option<usize>,
    settling: bool,
    resettle: bool,
}

impl TwoStageSearch {
    fn new(ctx: &SearchContext, query: PreparedQuery, p: &TwoStage) -> Self {
        let mut s = TwoStageSearch {
            query,
            table: QueryTable::default(),
            list: CandidateList::new(p.complexity),
            visited: VisitedSet::for_ids_below(ctx.n, visited_capacity(p.complexity)),
            exact: Vec::with_capacity(p.complexity),
            exact_seen: VisitedSet::with_capacity((p.complexity * 2).max(256)),
            beam_width: 1,
            refine: 0,
            pending: 0,
            pipelined: p.pipelined,
            more: false,
            vectors_pending: Vec::new(),
            pages_pending: Vec::new(),
            early: Vec::new(),
            early_seen: 0,
            stage: Stage::Search,
            stats: QueryStats::default(),
            corrupt: None,
            fresh: Vec::new(),
            fresh_est: Vec::new(),
            bridges: Vec::new(),
            targets: Vec::new(),
            current: Vec::new(),
            matches: CandidateList::new(p.complexity),
            ahead: Vec::new(),
            pool: Vec::new(),
            bounds: (Vec::new(), Vec::new()),
            admitted: Vec::new(),
            reach: reach(p),
            settle: Settle::default(),
            wave: Vec::new(),
            k: p.k,
            may_settle: p.settle,
            settling: false,
            resettle: false,
        };
        s.start(ctx, p);
        s
    }

    /// Resets a finished search for a new query, keeping its buffers.
    fn recycle(mut self, ctx: &SearchContext, query: PreparedQuery, p: &TwoStage) -> Self {
        self.query = query;
        self.list.reset(p.complexity);
        self.matches.reset(p.complexity);
        self.visited.clear();
        self.visited.reserve(visited_capacity(p.complexity));
        self.exact.clear();
        self.exact_seen.clear();
        self.pending = 0;
        self.pipelined = p.pipelined;
        self.more = false;
        self.vectors_pending.clear();
        self.pages_pending.clear();
        self.early.clear();
        self.early_seen = 0;
        self.stage = Stage::Search;
        self.stats = QueryStats::default();
        self.corrupt = None;
        self.k = p.k;
        self.may_settle = p.settle;
        self.settling = false;
        self.resettle = false;
        self.start(ctx, p);
        self
    }

    fn start(&mut self, ctx: &SearchContext, p: &TwoStage) {
        self.beam_width = p.beam_width.max(1);
        self.refine = ((p.refine_ratio.clamp(0.0, 1.0) * p.complexity as f32).ceil() as usize)
            .clamp(1, p.complexity.max(1));
        self.reach = reach(p);
        self.stats.estimated += ctx.seed(
            &self.query.f32,
            &mut self.table,
            &mut self.visited,
            &mut self.list,
        );
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
        }
        if let Some(allowed) = self.query.allowed.as_deref() {
            for c in self.list.as_slice() {
                if allowed.contains(c.id) {
                    self.matches.insert(c.id, c.dist);
                }
            }
        }
    }

    /// Records node `id`'s exact distance, once; a record without its
    /// vector (a separated layout's graph block) gives none.
    fn add_exact(&mut self, id: u32, vector: &[u8]) {
        if !vector.is_empty() && self.exact_seen.insert(id) {
            let d = self.query.distance(vector);
            self.stats.exact += 1;
            self.exact.push((d, id));
        }
    }

    /// Lists `node`'s unvisited neighbours at their estimates (Algorithm 2,
    /// `Expand`).
    fn expand(&mut self, ctx: &SearchContext, id: u32, node: NodeView<'_>) {
        self.stats.hops += 1;
        self.fresh.clear();
        if let Some(e) = ctx.collect_new(id, &node, &mut self.visited, &mut self.fresh) {
            self.corrupt.get_or_insert(e);
            self.stage = Stage::Done;
        }
        // A filtered query searched in the graph lists matches (ACORN-1).
        if let Some(allowed) = self.query.narrows() {
            super::acorn::admit_matches(
                ctx,
                allowed,
                node.degree(),
                &mut self.fresh,
                &mut self.visited,
                &mut self.bridges,
            );
        }
        self.fresh_est.resize(self.fresh.len(), 0.0);
        ctx.quantizer
            .estimate_many(&self.table, &self.fresh, &mut self.fresh_est);
        self.stats.estimated += self.fresh.len() as u64;
        for (&nb, &est) in self.fresh.iter().zip(&self.fresh_est) {
            self.list.insert(nb, est);
        }
        if let Some(allowed) = self.query.allowed.as_deref() {
            for (&nb, &est) in self.fresh.iter().zip(&self.fresh_est) {
                if allowed.contains(nb) {
                    self.matches.insert(nb, est);
                }
            }
        }
    }

    /// Prefetches the codes of the neighbours of the candidate that will be
    /// expanded next unless this expansion finds a closer one. With every
    /// adjacency list in RAM the search stage is a chain of expansions
    /// whose code rows are scattered over the codes (15 MB at 384-d), and
    /// each expansion waited on its own rows' misses; fetched one
    /// expansion ahead, they overlap the estimates of this one. A wrong
    /// guess costs only the lines fetched.
    fn prefetch_next(&mut self, ctx: &SearchContext) {
        let next = self.list.first_unexpanded();
        let Some(c) = self.list.as_slice().get(next) else {
            return;
        };
        if let Some(list) = ctx.adjacency.get(c.id) {
            self.ahead.clear();
            list.append_neighbors(&mut self.ahead);
            ctx.quantizer.prefetch(&self.ahead);
        }
    }

    /// The search stage: expands from RAM while it can and keeps up to W
    /// blocks in flight. True when the stage is over.
    fn search_step(&mut self, ctx: &SearchContext, reads: &mut Vec<Read>) -> bool {
        self.more = false;
        while self.pending < self.beam_width && self.stage == Stage::Search {
            // Pipelined refinement: reads of newly settled candidates go
            // out before the next expansion (the step yields, the worker
            // submits them and steps this query again without waiting).
            if self.pipelined && self.refine_settled(ctx, reads) {
                self.more = true;
                return false;
            }
            let Some(c) = self.list.pop_closest_unexpanded() else {
                break;
            };
            if let Some(list) = ctx.adjacency.get(c.id) {
                self.stats.cache_hits += 1;
                self.prefetch_next(ctx);
                self.expand(ctx, c.id, list);
            } else if let Some(record) = ctx.cache.get(c.id) {
                self.stats.cache_hits += 1;
                let node = ctx.layout.parse(record);
                self.add_exact(c.id, node.vector);
                self.expand(ctx, c.id, node);
            } else {
                reads.push(Read {
                    key: c.id,
                    span: ctx.layout.span_of(c.id),
                });
                self.pending += 1;
            }
        }
        self.pending == 0
    }

    /// Pipelined refinement: reads the vectors of the settled candidates
    /// (ranked above the first unexpanded one) within the top ⌈σ·L⌉.
    /// True when a read went out.
    fn refine_settled(&mut self, ctx: &SearchContext, reads: &mut Vec<Read>) -> bool {
        // A filtered query's matches settle only when the search ends.
        if self.query.allowed.is_some() {
            return false;
        }
        // Nothing it decides on changed since the last step: it would
        // issue nothing new. Redone at every expansion, the bounds,
        // admission and verdicts were ~14% of a 1×1 search's samples
        // (wordnet-minilm, 20% memory, L 32).
        let seen = self.early_state();
        if seen == self.early_seen {
            return false;
        }
        self.early_seen = seen;
        let mut targets = std::mem::take(&mut self.targets);
        self.refine_targets(self.list.first_unexpanded(), &mut targets);
        self.keep_open(ctx, &mut targets);
        let mut issued = false;
        for &id in &targets {
            if self.refine_one(ctx, id, reads) {
                self.early.push(id);
                issued = true;
            }
        }
        self.targets = targets;
        issued
    }

    /// A digest of what the pipelined refinement decides its early reads
    /// on: the top ⌈σ·L⌉ ids in order (their estimates and bounds follow
    /// from the ids), how many of them are settled (above the first
    /// unexpanded), and how many exact distances the search has. A read
    /// that lands adds one, or its node was already seen and is read
    /// again by no one. Two states that collide only postpone an early
    /// read: the waves that end the search read what is open then.
    fn early_state(&self) -> u64 {
        let top = &self.list.as_slice()[..self.refine.min(self.list.len())];
        let settled = self.list.first_unexpanded().min(self.refine) as u64;
        let mix = |h: u64, v: u64| (h ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let h = top.iter().fold(mix(1, settled), |h, c| mix(h, c.id as u64));
        mix(h, self.exact.len() as u64 + 1)
    }

    /// Pipelined and settled refinement: keeps of the settled `targets`
    /// only those the bounds leave open now, among the current top
    /// ⌈σ·L⌉ and every exact distance so far. A candidate in or out now
    /// may turn open as the list changes; the settle waves that end the
    /// search read it then, so this only decides what is read early.
    /// Without bounds, or with nothing unread, `targets` stays as it is.
    fn keep_open(&mut self, ctx: &SearchContext, targets: &mut Vec<u32>) {
        let unread =
            |id: &u32| !self.exact_seen.contains(*id) && !self.vectors_pending.contains(id);
        if self.may_settle.is_none() || !targets.iter().any(unread) {
            return;
        }
        let mut current = std::mem::take(&mut self.current);
        self.refine_targets(self.list.len(), &mut current);
        let bounded = self.admit(ctx, &mut current);
        if bounded {
            self.settle_pool(&current);
        }
        self.current = current;
        if !bounded {
            return;
        }
        self.settle.classify(&self.pool, self.k);
        let (pool, verdicts) = (&self.pool, &self.settle.verdicts);
        // A target the reach did not admit is in no pool: not read early.
        targets.retain(|&id| {
            pool.iter()
                .zip(verdicts)
                .find(|(c, _)| c.id == id)
                .is_some_and(|(c, v)| *v == Verdict::Open && c.exact.is_none())
        });
    }

    /// The candidates the refinement scores, among the list's first
    /// `within`: the top ⌈σ·L⌉. A filtered query (issue #56) scores the
    /// best ⌈σ·L⌉ matches it estimated instead, wherever they stand in the
    /// list now ([`Self::matches`]): a failing candidate is no answer, and
    /// the in-graph filter's routes through failing nodes gather near the
    /// query, above the matches (`search::acorn`), and push them out of
    /// the list.
    fn refine_targets(&self, within: usize, out: &mut Vec<u32>) {
        out.clear();
        let ranked = match self.query.allowed.is_some() {
            true => self.matches.as_slice(),
            false => &self.list.as_slice()[..within.min(self.list.len())],
        };
        out.extend(ranked.iter().take(self.refine).map(|c| c.id));
    }

    /// Gives candidate `id` its exact distance: at once from the node
    /// cache, else by a read of its vector. True when a read went out.
    fn refine_one(&mut self, ctx: &SearchContext, id: u32, reads: &mut Vec<Read>) -> bool {
        if self.exact_seen.contains(id) || self.vectors_pending.contains(&id) {
            return false;
        }
        match ctx
            .cache
            .get(id)
            .filter(|_| ctx.layout.records_hold_vectors())
        {
            Some(record) => {
                let v = ctx.layout.parse(record).vector;
                self.add_exact(id, v);
                false
            }
            None => {
                let span = ctx.layout.vector_span_of(id);
                // Its page is on its way for another candidate, and brings
                // its vector too (`block_mates`).
                if shares_blocks(ctx) && self.pages_pending.contains(&span.offset) {
                    return false;
                }
                reads.push(Read { key: id, span });
                self.vectors_pending.push(id);
                self.pages_pending.push(span.offset);
                true
            }
        }
    }

    /// Whether `id`'s vector comes with a read already in flight for
    /// another candidate on its page.
    fn page_pending(&self, ctx: &SearchContext, id: u32) -> bool {
        shares_blocks(ctx)
            && !self.pages_pending.is_empty()
            && ctx.cache.get(id).is_none()
            && self
                .pages_pending
                .contains(&ctx.layout.vector_span_of(id).offset)
    }

    /// The other records' vectors a read of `id`'s block brought: where
    /// records are shuffled into blocks with their graph neighbours
    /// (Starling §4.1), the candidates a refinement reads sit in few
    /// blocks, and every vector of a block read gets its exact distance
    /// free, as block search scores a whole page (Starling §4.2). A
    /// candidate among them needs no read of its own (`refine_one`).
    fn block_mates(&mut self, ctx: &SearchContext, id: u32, bytes: &[u8]) {
        if !shares_blocks(ctx) {
            return;
        }
        let mut mates = Vec::new();
        ctx.layout.block_records(id, bytes, &mut mates);
        for (other, record) in mates {
            if other != id {
                self.add_exact(other, ctx.layout.parse(record).vector);
            }
        }
    }

    /// Starts the refinement stage: the top ⌈σ·L⌉ candidates without an
    /// exact distance get one, from the node cache or a read of the vector
    /// — or, where the codes bound their estimates, only those the reach
    /// admits (`admit`), and of them, settled, only those the bounds leave
    /// open (`settle_pool`).
    fn refine_step(&mut self, ctx: &SearchContext, reads: &mut Vec<Read>) {
        self.stage = Stage::Refine;
        let mut targets = std::mem::take(&mut self.targets);
        self.refine_targets(self.list.len(), &mut targets);
        let bounded = self.admit(ctx, &mut targets);
        // Early reads of candidates that ended outside the targets.
        self.stats.wasted += self
            .early
            .iter()
            .filter(|&id| !targets.contains(id))
            .count() as u64;
        if bounded && self.may_settle.is_some() {
            self.settle_pool(&targets);
            self.targets = targets;
            self.settle_wave(ctx, reads);
            return;
        }
        for &id in &targets {
            self.refine_one(ctx, id, reads);
        }
        self.targets = targets;
        if self.vectors_pending.is_empty() {
            self.stage = Stage::Done;
        }
    }

    /// The settled refinement's pool: the admitted targets at their
    /// estimates and bounds (`admit` left them in `self.bounds`), and
    /// every node whose exact distance the search has.
    fn settle_pool(&mut self, targets: &[u32]) {
        let (est, err) = std::mem::take(&mut self.bounds);
        self.settling = true;
        self.pool.clear();
        for ((&id, &e), &b) in targets.iter().zip(&est).zip(&err) {
            if !self.exact_seen.contains(id) {
                self.pool.push(Bounded {
                    id,
                    est: e,
                    err: b,
                    exact: None,
                });
            }
        }
        for &(d, id) in &self.exact {
            self.pool.push(Bounded {
                id,
                est: d,
                err: 0.0,
                exact: Some(d),
            });
        }
        self.bounds = (est, err);
    }

    /// Keeps of `targets` those the bounds shrunk to the reach leave
    /// possibly in the top k (`Settle::admit`), with their estimates and
    /// bounds in `self.bounds`. False, and `targets` untouched, when the
    /// codes give no bounds.
    fn admit(&mut self, ctx: &SearchContext, targets: &mut Vec<u32>) -> bool {
        // Buffers kept across queries: a PQ index (no bounds) asks this of
        // every query and must not pay an allocation for the answer.
        let (mut est, mut err) = std::mem::take(&mut self.bounds);
        est.resize(targets.len(), 0.0);
        err.resize(targets.len(), 0.0);
        let bounded = ctx
            .quantizer
            .bounds_many(&self.table, targets, &mut est, &mut err);
        if bounded {
            let mut keep = std::mem::take(&mut self.admitted);
            self.settle.admit(&est, &err, self.k, self.reach, &mut keep);
            let mut at = 0;
            for (i, _) in keep.iter().enumerate().filter(|(_, k)| **k) {
                (targets[at], est[at], err[at]) = (targets[i], est[i], err[i]);
                at += 1;
            }
            targets.truncate(at);
            est.truncate(at);
            err.truncate(at);
            self.admitted = keep;
        }
        self.bounds = (est, err);
        bounded
    }

    /// One wave of the settled refinement: reads the best open candidates
    /// (W of them), or ends the stage when none is open; a candidate in
    /// the node cache is scored at once, and the wave goes on.
    fn settle_wave(&mut self, ctx: &SearchContext, reads: &mut Vec<Read>) {
        loop {
            if self.settle.classify(&self.pool, self.k) {
                self.settle_end();
                return;
            }
            let wave = self.may_settle.unwrap_or(1);
            self.settle.next_reads(&self.pool, wave, &mut self.wave);
            // A candidate read early and still in flight counts as issued:
            // the wave waits for it (`on_read`).
            let mut issued = false;
            for w in 0..self.wave.len() {
                let id = self.pool[self.wave[w]].id;
                issued |= self.vectors_pending.contains(&id)
                    || self.page_pending(ctx, id)
                    || self.refine_one(ctx, id, reads);
            }
            self.sync_pool();
            if issued {
                return;
            }
        }
    }

    /// Copies the exact distances the pool's open candidates got.
    fn sync_pool(&mut self) {
        for &(d, id) in &self.exact {
            if let Some(c) = self.pool.iter_mut().find(|c| c.id == id) {
                c.exact = Some(d);
            }
        }
    }

    /// Ends a settled refinement: the candidates certainly in the top k
    /// that were not read join the results at their estimates (each ranks
    /// above every candidate certainly out: `search::settle`).
    fn settle_end(&mut self) {
        for (c, v) in self.pool.iter().zip(&self.settle.verdicts) {
            // Marked seen: a read of it still in flight (an early one, or
            // its page's) must not list it twice when it lands.
            if *v == Verdict::In && c.exact.is_none() && self.exact_seen.insert(c.id) {
                self.exact.push((c.est, c.id));
                self.stats.settled += 1;
            }
        }
        self.stage = Stage::Done;
    }

    /// The k nearest nodes by exact distance (ties by id).
    pub fn results(&mut self, k: usize) -> &[(f32, u32)] {
        self.exact
            .sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        &self.exact[..k.min(self.exact.len())]
    }

    /// The candidate list as it ended (ids, best estimate first).
    pub fn candidates(&self) -> Vec<u32> {
        self.list.as_slice().iter().map(|c| c.id).collect()
    }
}

/// The share of their width the bounds are shrunk to for admission
/// (`Settle::admit`): ρ·L/k, at most 1. It grows with L so that one knob
/// trades recall for work, as ⌈σ·L⌉ does for a refinement that reads all:
/// on wordnet-minilm at 20% memory R@10 0.954 at L 32 (a tenth of the
/// bounds, 3.5 reads a query), 0.982 at L 64, 0.994 at L 100 (6.9 reads),
/// where a fixed tenth tops out at 0.978.
fn reach(p: &TwoStage) -> f32 {
    (p.settle_reach.max(0.0) * p.complexity as f32 / p.k.max(1) as f32).min(1.0)
}

/// Whether a read of one record's block brings other records' vectors
/// (`block_mates`). A separated layout's vector page holds several
/// vectors too, but reads only as its target's (`Layout::vector_slice`),
/// so a candidate sharing it is read on its own.
fn shares_blocks(ctx: &SearchContext) -> bool {
    ctx.layout.records_hold_vectors() && ctx.layout.records_per_block() > 1.0
}

impl QueryState for TwoStageSearch {
    fn step(&mut self, ctx: &SearchContext, reads: &mut Vec<Read>) {
        if self.stage == Stage::Search && self.search_step(ctx, reads) {
            self.refine_step(ctx, reads);
        } else if self.resettle {
            self.resettle = false;
            self.sync_pool();
            self.settle_wave(ctx, reads);
        }
    }

    fn on_read(&mut self, ctx: &SearchContext, id: u32, bytes: &[u8]) {
        // A vector read (refinement, early or not) or a block read of the
        // search stage: a node is never both (an early read is only for an
        // expanded node, and a block read gives its node's exact distance).
        if let Some(at) = self.vectors_pending.iter().position(|&v| v == id) {
            self.vectors_pending.swap_remove(at);
            self.pages_pending.swap_remove(at);
            self.add_exact(id, ctx.layout.vector_slice(id, bytes));
            self.block_mates(ctx, id, bytes);
            if self.stage == Stage::Refine && self.vectors_pending.is_empty() {
                match self.settling {
                    // The wave is back: the next one goes out at the next
                    // step (`wants_step`).
                    true => self.resettle = true,
                    false => self.stage = Stage::Done,
                }
            }
            return;
        }
        self.pending -= 1;
        if self.stage == Stage::Search {
            let node = ctx.layout.record(id, bytes);
            self.add_exact(id, node.vector);
            self.block_mates(ctx, id, bytes);
            self.expand(ctx, id, node);
            // Lists the block replicates, of nodes waiting in the list:
            // expanded now, since they came free with this read.
            let mut replicas = Vec::new();
            ctx.layout.replicated_lists(id, bytes, &mut replicas);
            for (v, list) in replicas {
                if self.list.mark_expanded(v) {
                    self.expand(ctx, v, list);
                }
            }
        }
    }

    fn is_done(&self) -> bool {
        self.stage == Stage::Done && self.pending == 0 && self.vectors_pending.is_empty()
    }

    fn wants_step(&self) -> bool {
        (self.more && self.stage == Stage::Search) || self.resettle
    }

    fn stats(&mut self) -> &mut QueryStats {
        &mut self.stats
    }

    fn failure(&self) -> Option<String> {
        self.corrupt.clone()
    }
}

impl Strategy for TwoStage {
    type State = TwoStageSearch;

    fn start(
        &self,
        ctx: &SearchContext,
        query: PreparedQuery,
        reuse: Option<TwoStageSearch>,
    ) -> TwoStageSearch {
        match reuse {
            Some(old) => old.recycle(ctx, query, self),
            None => TwoStageSearch::new(ctx, query, self),
        }
    }

    fn finish(&self, state: &mut TwoStageSearch, k: usize, out: &mut Vec<(f32, u32)>) {
        out.clear();
        out.extend_from_slice(state.results(k));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::run_worker;
    use crate::search::testing::{open_uncached, small_index};
    use crate::synthetic::SyntheticSpec;
    use crate::{BuildParams, Index, SearchParams};

    const DIM: usize = 12;

    /// The synthetic set the tests search: 1,500 rows, 40 queries.
    fn small_spec() -> SyntheticSpec {
        SyntheticSpec {
            n: 1500,
            queries: 40,
            dim: DIM,
            clusters: 8,
            seed: 9,
        }
    }

    /// Gorgeous over it, small enough to build in a test.
    fn small_params() -> BuildParams {
        BuildParams {
            graph_degree: 16,
            complexity: 32,
            pq_bytes: 3,
            pq_sample: 1500,
            ..BuildParams::for_profile("gorgeous")
        }
    }

    /// σ = 1 with every adjacency list in RAM: the search stage reads
    /// nothing, and the result is exactly the exact re-rank of the
    /// candidate list it ended with (Gorgeous §4.2, Algorithm 2).
    #[test]
    fn sigma_one_with_the_whole_graph_cached_is_the_exact_rerank_of_its_candidates() {
        let (dim, params) = (DIM, small_params());
        let (dir, base, queries) = small_index(&small_spec(), &params);
        // Every record cached too; then the lists alone (refinement reads).
        let (lists_only, all) = open_uncached(dir.path());
        for index in [all, lists_only] {
            check_rerank(&index, &base, &queries, dim, false);
            check_rerank(&index, &base, &queries, dim, true);
        }
    }

    /// In shuffled blocks a refinement read brings the vectors of the
    /// records beside its target (`block_mates`): a candidate whose block
    /// is on its way is not read again, every vector a read brought gets
    /// its exact distance, and the result is still the exact top k of
    /// every vector seen — with fewer reads than candidates.
    #[test]
    fn in_shuffled_blocks_a_read_scores_its_block_mates() {
        let dim = DIM;
        let params = BuildParams {
            layout: Some(crate::layout::LayoutKind::Blocked),
            shuffle: crate::layout::shuffle::Shuffle::Bnf,
            ..small_params()
        };
        let (dir, base, queries) = small_index(&small_spec(), &params);
        let (lists_only, _) = open_uncached(dir.path());
        assert!(lists_only.layout().records_per_block() > 1.0);
        for pipelined in [false, true] {
            let (reads, unshared) = check_rerank(&lists_only, &base, &queries, dim, pipelined);
            assert!(
                reads < unshared,
                "{reads} reads, {unshared} candidates unread"
            );
        }
    }

    /// With `pipelined`, refinement reads go out during the search stage:
    /// the result is then the exact top k of every vector read (the final
    /// candidates and the early reads that lost), no completed read is
    /// dropped, and the reads are the plain search's plus the waste. In
    /// blocks of several records (`block_mates`) a read may bring other
    /// candidates: at most that many reads, and more vectors seen. Returns
    /// the reads and the candidates' reads without sharing, over all
    /// queries.
    fn check_rerank(
        index: &Index,
        base: &[f32],
        queries: &[f32],
        dim: usize,
        pipelined: bool,
    ) -> (usize, usize) {
        let shared = index.layout().records_per_block() > 1.0;
        assert_eq!(index.adjacency.len(), 1500);
        let (l, k) = (40, 10);
        let sp = SearchParams {
            complexity: l,
            two_stage: true,
            refine_ratio: 1.0,
            ..Default::default()
        };
        let ctx = index.context(&sp);
        let strategy = TwoStage {
            complexity: l,
            beam_width: 4,
            refine_ratio: 1.0,
            pipelined,
            k: 10,
            settle: Some(2),
            settle_reach: 0.03,
        };
        let mut reader = index.take_reader(64).unwrap();
        let mut next = 0;
        let mut finished = Vec::new();
        run_worker(
            &ctx,
            &mut *reader,
            8,
            || {
                let qi = next;
                next += 1;
                let q = queries.get(qi * dim..(qi + 1) * dim)?;
                let pq = PreparedQuery::new(q, ctx.dtype, ctx.metric);
                Some((qi, strategy.start(&ctx, pq, None)))
            },
            |done| finished.push((done.index, done.state, done.error)),
        )
        .unwrap();
        assert_eq!(finished.len(), 40);
        let mut early = 0;
        let (mut reads, mut unshared) = (0, 0);
        for (qi, mut state, error) in finished {
            assert!(error.is_none(), "{error:?}");
            let q = &queries[qi * dim..(qi + 1) * dim];
            let candidates = state.candidates();
            assert_eq!(candidates.len(), l);
            // No block was read for its list (all are in RAM): every read
            // was a refinement read, one per candidate the node cache does
            // not hold, and every candidate got its exact distance once.
            let cached = candidates
                .iter()
                .filter(|&&c| ctx.cache.get(c).is_some())
                .count();
            let wasted = state.stats().wasted as usize;
            let read = state.stats().reads as usize;
            match shared {
                true => assert!(read <= l - cached + wasted),
                false => assert_eq!(read, l - cached + wasted),
            }
            (reads, unshared) = (reads + read, unshared + l - cached + wasted);
            if !pipelined {
                assert_eq!(wasted, 0);
                match shared {
                    true => assert!(state.exact.len() >= l),
                    false => assert_eq!(state.exact.len(), l),
                }
            }
            // Each vector seen once, every final candidate among them.
            assert_eq!(state.stats().exact as usize, state.exact.len());
            assert!(candidates.iter().all(|&c| state.exact_seen.contains(c)));
            early += state.early.len();
            let mut exact: Vec<(f32, u32)> = state
                .exact
                .iter()
                .map(|&(_, id)| {
                    let v = &base[id as usize * dim..(id as usize + 1) * dim];
                    (stratavec_simd::l2_sq_f32(q, v), id)
                })
                .collect();
            exact.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let got: Vec<u32> = state.results(k).iter().map(|r| r.1).collect();
            let want: Vec<u32> = exact[..k].iter().map(|r| r.1).collect();
            assert_eq!(got, want, "query {qi}");
        }
        // Reads went out before the search stage ended, where any were due.
        if !pipelined {
            assert_eq!(early, 0);
        } else if index.cached_nodes() == 0 {
            assert!(early > 0);
        }
        (reads, unshared)
    }
}
