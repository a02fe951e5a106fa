//! An index as `search` and `serve` see it: its generation and the
//! updates logged since (`stratavec::update::live`), so what `insert` and
//! `delete` wrote is searched, and `serve` can take writes (issue #55).
//!
//! With nothing pending a search is the generation's own batch, as it was
//! before updates existed (the same work, the same counters); with updates
//! pending it is the live search over the generation and the delta.
//! Either way the answer's ids are the ones a user knows.

use crate::search_target::{blank_failed, Answer, Filters, Target};
use anyhow::Result;
use std::sync::Arc;
use std::time::Instant;
use stratavec::collection::Probe;
use stratavec::data::{DType, Metric};
use stratavec::index::filtered::{Allowed, FilterWay};
use stratavec::labels::Expr;
use stratavec::search::Switches;
use stratavec::update::live::{Applied, LiveIndex};
use stratavec::{BatchResult, Index, SearchParams};

impl Target for LiveIndex {
    fn kind(&self) -> &'static str {
        "index"
    }
    fn metric(&self) -> Metric {
        self.with_base(|b| b.metric())
    }
    fn dtype(&self) -> DType {
        self.with_base(|b| b.manifest.dtype)
    }
    fn segment_count(&self) -> usize {
        1
    }
    fn partition(&self) -> Option<String> {
        None
    }
    fn max_k(&self) -> usize {
        LiveIndex::len(self)
    }
    fn answer(
        &self,
        queries: &[f32],
        dim: usize,
        params: &SearchParams,
        _probe: Option<&Probe>,
    ) -> Result<Answer> {
        let t = Instant::now();
        Ok(answer_of(LiveIndex::search(self, queries, dim, params)?, t))
    }
    fn dim(&self) -> usize {
        LiveIndex::dim(self)
    }
    fn len(&self) -> usize {
        LiveIndex::len(self)
    }
    fn profile(&self) -> String {
        let profile = self.with_base(|b| b.manifest.profile.clone());
        match self.pending() {
            (0, 0) => profile,
            (added, deleted) => {
                format!("{profile}, {added} inserted and {deleted} deleted since its build")
            }
        }
    }
    fn memory(&self) -> String {
        let base = self.with_base(|b| b.memory().to_string());
        match self.update_bytes() {
            0 => base,
            u => format!("{base}; updates {:.1} MB", u as f64 / 1e6),
        }
    }
    fn memory_bytes(&self) -> usize {
        self.with_base(|b| b.memory().total()) + self.update_bytes()
    }
    fn cached_nodes(&self) -> usize {
        self.with_base(|b| b.cached_nodes())
    }
    fn is_clusters(&self) -> bool {
        self.with_base(|b| !b.plan.graph())
    }
    fn search_defaults(&self, switches: &Switches) -> SearchParams {
        self.with_base(|b| b.search_defaults(switches))
    }
    fn check_search(&self, params: &SearchParams, nq: usize) -> Result<()> {
        Ok(LiveIndex::check_search(self, params, nq)?)
    }
    /// Ids as u32 "rows" (what ground truth over the data file's rows
    /// compares with: an index built without ids, and inserts given the
    /// next ids, answer with row numbers of the file they came from).
    fn search(
        &self,
        queries: &[f32],
        dim: usize,
        params: &SearchParams,
        _probe: Option<&Probe>,
    ) -> Result<(BatchResult, Option<f64>)> {
        if self.pending() == (0, 0) {
            let mapped = self.with_base(|b| -> Result<BatchResult> {
                let mut r = b.search_batch(queries, dim, params)?;
                if b.ids().is_some() {
                    r.ids = measurable(&b.result_ids(&r.ids))?;
                }
                Ok(r)
            })?;
            return Ok((mapped, None));
        }
        let t = Instant::now();
        let live = LiveIndex::search(self, queries, dim, params)?;
        let mut r = live.base;
        r.k = live.k;
        r.ids = measurable(&live.ids)?;
        r.dists = live.dists;
        r.wall_s = t.elapsed().as_secs_f64();
        Ok((r, None))
    }
    fn result_ids(&self, rows: &[u32]) -> Vec<i64> {
        rows.iter()
            .map(|&r| if r == u32::MAX { -1 } else { r as i64 })
            .collect()
    }
    fn with_single(&self, f: &mut dyn FnMut(&Index) -> Result<()>) -> Result<()> {
        match self.pending() {
            (0, 0) => self.with_base(f),
            (added, deleted) => anyhow::bail!(
                "range search measures the index's generation, and {added} inserts and \
                 {deleted} deletes are pending (stratavec merge DIR first)"
            ),
        }
    }
    fn insert(
        &self,
        vectors: &[f32],
        ids: Option<&[i64]>,
        labels: &[Vec<u32>],
        batch: u64,
    ) -> Result<Applied> {
        Ok(self.add_labelled(vectors, ids, labels, batch)?)
    }
    fn delete(&self, ids: &[i64], batch: u64) -> Result<Applied> {
        Ok(self.remove(ids, batch)?)
    }
    fn pending(&self) -> (usize, usize) {
        LiveIndex::pending(self)
    }
    fn parse_filters(&self, texts: &[Option<String>]) -> Result<Vec<Option<Expr>>> {
        if !self.with_base(|b| b.labels().is_some()) {
            anyhow::bail!(
                "filter: expected an index built with labels (build --labels), found one without"
            );
        }
        texts
            .iter()
            .map(|t| t.as_deref().map(|t| self.parse_filter(t)).transpose())
            .collect::<stratavec::Result<_>>()
            .map_err(Into::into)
    }
    fn answer_filtered(
        &self,
        queries: &[f32],
        dim: usize,
        params: &SearchParams,
        _probe: Option<&Probe>,
        filters: &[Option<Expr>],
        way: FilterWay,
    ) -> Result<Answer> {
        let t = Instant::now();
        let r = LiveIndex::search_filtered(self, queries, dim, params, filters, way)?;
        Ok(answer_of(r, t))
    }
    /// As [`Target::search`]: rows of the generation when nothing is
    /// pending (its batch's own counters), else the live search's ids.
    fn search_filtered(
        &self,
        queries: &[f32],
        dim: usize,
        params: &SearchParams,
        _probe: Option<&Probe>,
        filters: &Filters,
        way: FilterWay,
    ) -> Result<BatchResult> {
        let nq = queries.len() / dim.max(1);
        let exprs = filters.parse(nq, |t| self.parse_filter(t), |r| self.filters_of(r))?;
        if self.pending() == (0, 0) {
            return self.with_base(|b| -> Result<BatchResult> {
                let labels = b.labels().expect("parsed against the labels");
                let allowed: Vec<Allowed> = exprs
                    .iter()
                    .map(|e| e.as_ref().map(|e| Arc::new(e.rows(labels))))
                    .collect();
                let mut r = b.search_filtered(queries, dim, params, &allowed, way)?;
                if b.ids().is_some() {
                    r.ids = measurable(&b.result_ids(&r.ids))?;
                }
                Ok(r)
            });
        }
        let t = Instant::now();
        let live = LiveIndex::search_filtered(self, queries, dim, params, &exprs, way)?;
        let mut r = live.base;
        r.k = live.k;
        r.ids = measurable(&live.ids)?;
        r.dists = live.dists;
        r.wall_s = t.elapsed().as_secs_f64();
        Ok(r)
    }
}

/// A live search's result as a server answers it (a failed query's row
/// blanked), timed from `t`.
fn answer_of(r: stratavec::update::live::LiveResult, t: Instant) -> Answer {
    let (mut ids, mut dists) = (r.ids, r.dists);
    blank_failed(&r.base.errors, r.k, &mut ids, &mut dists);
    Answer {
        k: r.k,
        ids,
        dists,
        totals: r.base.total(),
        errors: r.base.errors,
        wall_s: t.elapsed().as_secs_f64(),
        merge_s: 0.0,
        segment_queries: Vec::new(),
        io_wait_s: r.base.io_wait_s,
        io_backend: r.base.io_backend,
    }
}

/// Ids as the measured batch's u32 rows (-1 as the empty slot).
fn measurable(ids: &[i64]) -> Result<Vec<u32>> {
    ids.iter()
        .map(|&id| match id {
            -1 => Ok(u32::MAX),
            id if (0..u32::MAX as i64).contains(&id) => Ok(id as u32),
            id => anyhow::bail!(
                "id {id}: results are measured as row numbers in 0..{}, and this id is not one",
                u32::MAX
            ),
        })
        .collect()
}
