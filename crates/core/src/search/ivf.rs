//! The cluster search of paper 002 §6 over the decoupled layout
//! (`layout/ivf.rs`): the `nprobe` clusters whose centroids are nearest the
//! query are read — each as one large read of its group (split at
//! `ivf::MAX_READ`) and its address list, then one small read per listed
//! vector not already covered — and every vector read gets its exact
//! distance; the result is the top k.
//!
//! A vector is stored once but may be listed by several clusters
//! (replication): a position is read and scored at most once a query, and
//! a listed position inside a probed group is left to that group's read.

use super::context::SearchContext;
use super::query::PreparedQuery;
use super::strategy::Strategy;
use super::{QueryState, QueryStats, Read};
use crate::layout::IvfLayout;
use crate::util::visited::VisitedSet;

/// The cluster search as a [`Strategy`]; `nprobe` is the search's
/// `complexity` (L): the clusters a query reads.
pub struct Ivf {
    pub nprobe: usize,
}

#[derive(Clone, Copy, Debug)]
enum Pending {
    /// Records of the positions from `start` on.
    Group { start: u32 },
    /// A cluster's list of positions stored outside its group.
    List,
    /// One record.
    Vector { position: u32 },
}

pub struct IvfState {
    query: PreparedQuery,
    dists: Vec<f32>,
    /// Probed clusters' groups (start, len), to skip listed positions a
    /// group read covers.
    groups: Vec<(u32, u32)>,
    /// What each read (its key) was for.
    pending: Vec<Pending>,
    outstanding: usize,
    started: bool,
    next: Vec<Read>,
    seen: VisitedSet,
    found: Vec<(f32, u32)>,
    stats: QueryStats,
    corrupt: Option<String>,
}

impl IvfState {
    fn new(ctx: &SearchContext, query: PreparedQuery) -> Self {
        IvfState {
            query,
            dists: Vec::new(),
            groups: Vec::new(),
            pending: Vec::new(),
            outstanding: 0,
            started: false,
            next: Vec::new(),
            seen: VisitedSet::for_ids_below(ctx.n, 4096),
            found: Vec::new(),
            stats: QueryStats::default(),
            corrupt: None,
        }
    }

    fn recycle(mut self, query: PreparedQuery) -> Self {
        self.query = query;
        self.groups.clear();
        self.pending.clear();
        self.outstanding = 0;
        self.started = false;
        self.next.clear();
        self.seen.clear();
        self.found.clear();
        self.stats = QueryStats::default();
        self.corrupt = None;
        self
    }

    fn ask(&mut self, what: Pending, span: crate::layout::Span) {
        self.next.push(Read {
            key: self.pending.len() as u32,
            span,
        });
        self.pending.push(what);
    }

    /// The probes' reads: each cluster's group and its list.
    fn start(&mut self, ivf: &IvfLayout, nprobe: usize) {
        ivf.centroid_distances(&self.query.f32, &mut self.dists);
        self.stats.estimated += self.dists.len() as u64;
        let mut order: Vec<u32> = (0..self.dists.len() as u32).collect();
        let nprobe = nprobe.clamp(1, order.len());
        let d = &self.dists;
        let by = |a: &u32, b: &u32| d[*a as usize].total_cmp(&d[*b as usize]).then(a.cmp(b));
        order.select_nth_unstable_by(nprobe - 1, by);
        order.truncate(nprobe);
        order.sort_by(by);
        for &j in &order {
            let e = ivf.clusters[j as usize];
            self.groups.push((e.group_start, e.group_len));
            for (start, len) in ivf.group_reads(j as usize) {
                self.ask(Pending::Group { start }, ivf.positions_span(start, len));
            }
            if let Some(span) = ivf.list_span(j as usize) {
                self.ask(Pending::List, span);
            }
        }
    }

    /// Scores a record read. Each position comes once: probed groups are
    /// disjoint, and a listed position is read only outside them, once.
    fn score(&mut self, ivf: &IvfLayout, position: u32, record: &[u8], n: usize) {
        let (id, vector) = ivf.record_at(record);
        if id as usize >= n {
            self.corrupt.get_or_insert_with(|| {
                format!(
                    "position {position}: vector id: expected < {n}, found {id} (corrupt index)"
                )
            });
            return;
        }
        self.found.push((self.query.distance(vector), id));
        self.stats.exact += 1;
    }
}

impl QueryState for IvfState {
    /// The reads asked so far: the probes' (from `start`), then the small
    /// reads each arriving list adds.
    fn step(&mut self, _ctx: &SearchContext, reads: &mut Vec<Read>) {
        self.outstanding += self.next.len();
        reads.append(&mut self.next);
    }

    fn on_read(&mut self, ctx: &SearchContext, key: u32, bytes: &[u8]) {
        self.outstanding -= 1;
        let Some(ivf) = ctx.layout.clusters() else {
            return;
        };
        match self.pending[key as usize] {
            Pending::Group { start } => {
                for (i, rec) in bytes.chunks_exact(ivf.record_len()).enumerate() {
                    self.score(ivf, start + i as u32, rec, ctx.n);
                }
            }
            Pending::Vector { position } => self.score(ivf, position, bytes, ctx.n),
            Pending::List => {
                for p in bytes.chunks_exact(4) {
                    let p = u32::from_le_bytes([p[0], p[1], p[2], p[3]]);
                    if p as usize >= ctx.n {
                        self.corrupt.get_or_insert_with(|| {
                            format!(
                                "cluster list: position: expected < {}, found {p} (corrupt index)",
                                ctx.n
                            )
                        });
                        continue;
                    }
                    let covered = self.groups.iter().any(|&(s, l)| (s..s + l).contains(&p));
                    // `insert` is false for a position another list named.
                    if covered || !self.seen.insert(p) {
                        continue;
                    }
                    self.stats.small_reads += 1;
                    self.ask(Pending::Vector { position: p }, ivf.positions_span(p, 1));
                }
            }
        }
    }

    fn is_done(&self) -> bool {
        self.started && self.outstanding == 0 && self.next.is_empty()
    }

    fn stats(&mut self) -> &mut QueryStats {
        &mut self.stats
    }

    fn failure(&self) -> Option<String> {
        self.corrupt.clone()
    }
}

impl Strategy for Ivf {
    type State = IvfState;

    fn start(
        &self,
        ctx: &SearchContext,
        query: PreparedQuery,
        reuse: Option<IvfState>,
    ) -> IvfState {
        let mut s = match reuse {
            Some(old) => old.recycle(query),
            None => IvfState::new(ctx, query),
        };
        match ctx.layout.clusters() {
            Some(ivf) => s.start(ivf, self.nprobe),
            None => s.corrupt = Some("the ivf search needs an ivf layout".into()),
        }
        s.started = true;
        s
    }

    fn finish(&self, state: &mut IvfState, k: usize, out: &mut Vec<(f32, u32)>) {
        nearest_k(&mut state.found, k, out);
    }
}

/// The `k` nearest of `found` (exact distances, each id once) into `out`,
/// ties by id: how a cluster search ends.
pub(super) fn nearest_k(found: &mut [(f32, u32)], k: usize, out: &mut Vec<(f32, u32)>) {
    found.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    out.clear();
    out.extend_from_slice(&found[..k.min(found.len())]);
}
