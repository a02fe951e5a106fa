//! IVF-PQ with refinement over the decoupled cluster layout: the cluster
//! search for an index built with codes (`ivf_codes`; `layout/ivf_members.rs`
//! says why).
//!
//! The `nprobe` clusters whose centroids are nearest the query are chosen
//! as the plain cluster search chooses them (`search/ivf.rs`); their
//! members, from RAM, are scored on their PQ codes, each once however many
//! probed clusters list it (replication); the best `rerank` by estimate are
//! read, one vector each, all at once, and ranked by exact distance. A
//! query reads `rerank` records where the plain search reads every probed
//! member: what makes a cluster index usable on an SSD (faiss's
//! `IndexRefine`, LanceDB's `refine_factor`).

use super::context::SearchContext;
use super::query::PreparedQuery;
use super::strategy::Strategy;
use super::{QueryState, QueryStats, Read};
use crate::layout::ivf_members::ClusterMembers;
use crate::layout::IvfLayout;
use crate::quant::QueryTable;
use crate::util::candidates::CandidateList;
use crate::util::visited::VisitedSet;

/// The IVF-PQ search as a [`Strategy`]: `nprobe` is the search's
/// `complexity` (L), `rerank` the vectors read for exact distances.
pub struct IvfPq {
    pub nprobe: usize,
    pub rerank: usize,
}

pub struct IvfPqState {
    query: PreparedQuery,
    table: QueryTable,
    dists: Vec<f32>,
    seen: VisitedSet,
    fresh: Vec<u32>,
    estimates: Vec<f32>,
    best: CandidateList,
    outstanding: usize,
    next: Vec<Read>,
    found: Vec<(f32, u32)>,
    stats: QueryStats,
    corrupt: Option<String>,
}

impl IvfPqState {
    fn new(ctx: &SearchContext, query: PreparedQuery, rerank: usize) -> Self {
        IvfPqState {
            query,
            table: QueryTable::default(),
            dists: Vec::new(),
            seen: VisitedSet::for_ids_below(ctx.n, 4096),
            fresh: Vec::new(),
            estimates: Vec::new(),
            best: CandidateList::new(rerank),
            outstanding: 0,
            next: Vec::new(),
            found: Vec::new(),
            stats: QueryStats::default(),
            corrupt: None,
        }
    }

    fn recycle(mut self, query: PreparedQuery, rerank: usize) -> Self {
        self.query = query;
        self.seen.clear();
        self.best.reset(rerank);
        self.outstanding = 0;
        self.next.clear();
        self.found.clear();
        self.stats = QueryStats::default();
        self.corrupt = None;
        self
    }

    /// Scores the probed clusters' members on their codes and asks for the
    /// vectors of the best `rerank`.
    fn start(&mut self, ctx: &SearchContext, ivf: &IvfLayout, members: &ClusterMembers, p: &IvfPq) {
        ivf.centroid_distances(&self.query.f32, &mut self.dists);
        let k = self.dists.len();
        if members.clusters() != k {
            self.corrupt = Some(format!(
                "{}: members.bin lists {} clusters, clusters.bin {k}",
                ctx.pages_path.display(),
                members.clusters()
            ));
            return;
        }
        let nprobe = p.nprobe.clamp(1, k);
        let d = &self.dists;
        let by = |a: &u32, b: &u32| d[*a as usize].total_cmp(&d[*b as usize]).then(a.cmp(b));
        let mut order: Vec<u32> = (0..k as u32).collect();
        order.select_nth_unstable_by(nprobe - 1, by);
        order.truncate(nprobe);
        ctx.quantizer.prepare(&self.query.f32, &mut self.table);
        // A filtered query (issue #56) scores and reads only its matches.
        let allowed = self.query.allowed.clone();
        for &j in &order {
            self.fresh.clear();
            for &id in members.of(j as usize) {
                if allowed.as_ref().is_none_or(|a| a.contains(id)) && self.seen.insert(id) {
                    self.fresh.push(id);
                }
            }
            self.estimates.resize(self.fresh.len(), 0.0);
            ctx.quantizer
                .estimate_many(&self.table, &self.fresh, &mut self.estimates);
            self.stats.estimated += self.fresh.len() as u64;
            for (&id, &e) in self.fresh.iter().zip(&self.estimates) {
                if self.best.admits(e) {
                    self.best.insert(id, e);
                }
            }
        }
        self.stats.estimated += k as u64;
        for c in self.best.as_slice() {
            self.next.push(Read {
                key: c.id,
                span: ctx.layout.span_of(c.id),
            });
        }
    }
}

impl QueryState for IvfPqState {
    fn step(&mut self, _ctx: &SearchContext, reads: &mut Vec<Read>) {
        self.outstanding += self.next.len();
        reads.append(&mut self.next);
    }

    fn on_read(&mut self, ctx: &SearchContext, id: u32, bytes: &[u8]) {
        self.outstanding -= 1;
        let Some(ivf) = ctx.layout.clusters() else {
            return;
        };
        let (stored, vector) = ivf.record_at(bytes);
        if stored != id {
            self.corrupt.get_or_insert_with(|| {
                format!(
                    "{}: the record read for vector {id} holds vector {stored} (corrupt index)",
                    ctx.pages_path.display()
                )
            });
            return;
        }
        self.found.push((self.query.distance(vector), id));
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

impl Strategy for IvfPq {
    type State = IvfPqState;

    fn start(
        &self,
        ctx: &SearchContext,
        query: PreparedQuery,
        reuse: Option<IvfPqState>,
    ) -> IvfPqState {
        let rerank = self.rerank.max(1);
        let mut s = match reuse {
            Some(old) => old.recycle(query, rerank),
            None => IvfPqState::new(ctx, query, rerank),
        };
        match (ctx.layout.clusters(), ctx.members) {
            (Some(ivf), Some(members)) => s.start(ctx, ivf, members, self),
            _ => s.corrupt = Some("the IVF-PQ search needs an ivf index built with codes".into()),
        }
        s
    }

    fn finish(&self, state: &mut IvfPqState, k: usize, out: &mut Vec<(f32, u32)>) {
        super::ivf::nearest_k(&mut state.found, k, out);
    }
}
