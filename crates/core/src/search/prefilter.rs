//! Pre-filtering (issue #56, strategy (a)): for a selective filter, rank
//! the rows that match on their codes in RAM and read only the best few
//! exactly — the filtered search's brute force, which no graph walk beats
//! once the matches are few (DiskANN Rust's 2026 design sends very
//! selective queries to brute force; the filter track's IVF² scans
//! posting lists the same way).
//!
//! The query's matching rows come with it (`PreparedQuery::allowed`). With
//! codes of every vector in RAM (PQ, IVF-PQ) each match is estimated and
//! the `rerank` nearest estimates are read; without (laser's codes live in
//! the records, a plain cluster index has none) every match is read, so
//! the planner sends only small match sets here. Each read is the row's
//! vector (`Layout::vector_span_of`), scored exactly; the result is the top
//! k of those.

use super::context::SearchContext;
use super::ivf::nearest_k;
use super::query::PreparedQuery;
use super::strategy::Strategy;
use super::{QueryState, QueryStats, Read};
use crate::quant::QueryTable;

/// The pre-filter as a [`Strategy`].
pub struct PreFilter {
    /// Matches read exactly, the nearest by estimate (at least k).
    pub rerank: usize,
    /// Whether the codes of every vector are in RAM to rank matches by.
    pub ranks: bool,
}

/// Matches estimated a call (the estimate buffers stay this small).
const CHUNK: usize = 4096;

pub struct PreFilterState {
    query: PreparedQuery,
    table: QueryTable,
    /// The row each read (its key) is for.
    rows: Vec<u32>,
    next: Vec<Read>,
    outstanding: usize,
    found: Vec<(f32, u32)>,
    stats: QueryStats,
    corrupt: Option<String>,
    ids: Vec<u32>,
    est: Vec<f32>,
    best: Vec<(f32, u32)>,
}

impl PreFilterState {
    fn new(query: PreparedQuery) -> Self {
        PreFilterState {
            query,
            table: QueryTable::default(),
            rows: Vec::new(),
            next: Vec::new(),
            outstanding: 0,
            found: Vec::new(),
            stats: QueryStats::default(),
            corrupt: None,
            ids: Vec::with_capacity(CHUNK),
            est: Vec::with_capacity(CHUNK),
            best: Vec::new(),
        }
    }

    fn recycle(mut self, query: PreparedQuery) -> Self {
        self.query = query;
        self.rows.clear();
        self.next.clear();
        self.outstanding = 0;
        self.found.clear();
        self.stats = QueryStats::default();
        self.corrupt = None;
        self.best.clear();
        self
    }

    /// The matches to read: the `keep` nearest by estimate, or all.
    fn choose(&mut self, ctx: &SearchContext, ranks: bool, keep: usize) -> Vec<u32> {
        let Some(allowed) = self.query.allowed.clone() else {
            self.corrupt = Some("a pre-filtered query without its matching rows".into());
            return Vec::new();
        };
        let n = ctx.n as u32;
        if !ranks || allowed.len() as usize <= keep {
            return allowed.iter().take_while(|&r| r < n).collect();
        }
        ctx.quantizer.prepare(&self.query.f32, &mut self.table);
        let mut rows = allowed.iter().take_while(|&r| r < n).peekable();
        while rows.peek().is_some() {
            self.ids.clear();
            self.ids.extend(rows.by_ref().take(CHUNK));
            self.est.resize(self.ids.len(), 0.0);
            ctx.quantizer.prefetch(&self.ids);
            ctx.quantizer
                .estimate_many(&self.table, &self.ids, &mut self.est);
            self.stats.estimated += self.ids.len() as u64;
            self.best
                .extend(self.est.iter().copied().zip(self.ids.iter().copied()));
            // Bounded: keep the nearest `keep` of what was seen so far.
            if self.best.len() > 2 * keep.max(CHUNK) {
                truncate_nearest(&mut self.best, keep);
            }
        }
        truncate_nearest(&mut self.best, keep);
        self.best.iter().map(|e| e.1).collect()
    }
}

/// Keeps the `keep` nearest of `v` (unordered), ties by id.
fn truncate_nearest(v: &mut Vec<(f32, u32)>, keep: usize) {
    if v.len() > keep && keep > 0 {
        v.select_nth_unstable_by(keep - 1, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    }
    v.truncate(keep);
}

impl QueryState for PreFilterState {
    fn step(&mut self, _ctx: &SearchContext, reads: &mut Vec<Read>) {
        self.outstanding += self.next.len();
        reads.append(&mut self.next);
    }

    fn on_read(&mut self, ctx: &SearchContext, key: u32, bytes: &[u8]) {
        self.outstanding -= 1;
        let row = self.rows[key as usize];
        let vector = ctx.layout.vector_slice(row, bytes);
        self.found.push((self.query.distance(vector), row));
        self.stats.exact += 1;
    }

    fn is_done(&self) -> bool {
        self.outstanding == 0 && self.next.is_empty()
    }

    fn stats(&mut self) -> &mut QueryStats {
        &mut self.stats
    }

    fn failure(&self) -> Option<String> {
        self.corrupt.clone()
    }
}

impl Strategy for PreFilter {
    type State = PreFilterState;

    fn start(
        &self,
        ctx: &SearchContext,
        query: PreparedQuery,
        reuse: Option<PreFilterState>,
    ) -> PreFilterState {
        let mut s = match reuse {
            Some(old) => old.recycle(query),
            None => PreFilterState::new(query),
        };
        if ctx.layout.clusters().is_some() {
            s.corrupt = Some("pre-filtering reads rows of a graph layout, not clusters".into());
            return s;
        }
        let rows = s.choose(ctx, self.ranks, self.rerank);
        for (key, &row) in rows.iter().enumerate() {
            s.next.push(Read {
                key: key as u32,
                span: ctx.layout.vector_span_of(row),
            });
        }
        s.rows = rows;
        s
    }

    fn finish(&self, state: &mut PreFilterState, k: usize, out: &mut Vec<(f32, u32)>) {
        nearest_k(&mut state.found, k, out);
    }
}
