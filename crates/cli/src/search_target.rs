//! What `search` (and the bench) can search: an index, or a collection of
//! segment indexes (`stratavec build-collection`), behind one small
//! surface, so a collection is accepted wherever an index is.

use anyhow::Result;
use std::path::Path;
use stratavec::collection::{is_collection, Collection, Probe};
use stratavec::search::Switches;
use stratavec::{BatchResult, Index, OpenOptions, SearchParams};

/// An index or a collection, as `search` sees it: one trait object, so the
/// command never asks which it holds.
pub trait Target {
    fn dim(&self) -> usize;
    fn len(&self) -> usize;
    /// The profile, as a line for the header.
    fn profile(&self) -> String;
    /// RAM held, as a line for the header.
    fn memory(&self) -> String;
    fn memory_bytes(&self) -> usize;
    fn cached_nodes(&self) -> usize;
    /// A cluster index (reads whole clusters, not about L blocks).
    fn is_clusters(&self) -> bool;
    fn search_defaults(&self, switches: &Switches) -> SearchParams;
    fn check_search(&self, params: &SearchParams, nq: usize) -> Result<()>;
    /// The batch's answer (a collection's global ids must be row numbers to
    /// be measured) and, for a collection, the merge's share of the time.
    fn search(
        &self,
        queries: &[f32],
        dim: usize,
        params: &SearchParams,
        probe: Option<&Probe>,
    ) -> Result<(BatchResult, Option<f64>)>;
    /// What results report for `rows` (ids the index was built with; a
    /// collection's are global ids already).
    fn result_ids(&self, rows: &[u32]) -> Vec<i64>;
    /// The index, for the searches only an index serves (range search; a
    /// collection refuses a radius in `check_search` first).
    fn single(&self) -> Result<&Index>;
}

/// Opens the index or collection at `dir`; a `probe` (`--probe`,
/// `--probe-shrink`) is refused for an index: it has no segments.
pub fn open(dir: &Path, opts: &OpenOptions, probe: Option<&Probe>) -> Result<Box<dyn Target>> {
    if is_collection(dir) {
        return Ok(Box::new(Collection::open(dir, opts)?));
    }
    if probe.is_some() {
        anyhow::bail!(
            "--probe / --probe-shrink: expected a collection directory (collection.json), \
             found the index {}",
            dir.display()
        );
    }
    Ok(Box::new(Index::open(dir, opts)?))
}

impl Target for Index {
    fn dim(&self) -> usize {
        Index::dim(self)
    }
    fn len(&self) -> usize {
        Index::len(self)
    }
    fn profile(&self) -> String {
        self.manifest.profile.clone()
    }
    fn memory(&self) -> String {
        Index::memory(self).to_string()
    }
    fn memory_bytes(&self) -> usize {
        Index::memory(self).total()
    }
    fn cached_nodes(&self) -> usize {
        Index::cached_nodes(self)
    }
    fn is_clusters(&self) -> bool {
        !self.plan.graph()
    }
    fn search_defaults(&self, switches: &Switches) -> SearchParams {
        Index::search_defaults(self, switches)
    }
    fn check_search(&self, params: &SearchParams, nq: usize) -> Result<()> {
        Ok(Index::check_search(self, params, nq)?)
    }
    fn search(
        &self,
        queries: &[f32],
        dim: usize,
        params: &SearchParams,
        _probe: Option<&Probe>,
    ) -> Result<(BatchResult, Option<f64>)> {
        Ok((self.search_batch(queries, dim, params)?, None))
    }
    fn result_ids(&self, rows: &[u32]) -> Vec<i64> {
        Index::result_ids(self, rows)
    }
    fn single(&self) -> Result<&Index> {
        Ok(self)
    }
}

impl Target for Collection {
    fn dim(&self) -> usize {
        Collection::dim(self)
    }
    fn len(&self) -> usize {
        Collection::len(self)
    }
    fn profile(&self) -> String {
        format!(
            "{}, {} segments by {}",
            self.manifest.profile,
            self.segments().len(),
            self.manifest.partition
        )
    }
    fn memory(&self) -> String {
        format!(
            "{:.1} MB over its segments",
            self.memory_bytes() as f64 / 1e6
        )
    }
    fn memory_bytes(&self) -> usize {
        Collection::memory_bytes(self)
    }
    fn cached_nodes(&self) -> usize {
        Collection::cached_nodes(self)
    }
    fn is_clusters(&self) -> bool {
        self.segments().iter().any(|i| !i.plan.graph())
    }
    fn search_defaults(&self, switches: &Switches) -> SearchParams {
        Collection::search_defaults(self, switches)
    }
    fn check_search(&self, params: &SearchParams, nq: usize) -> Result<()> {
        Ok(Collection::check_search(self, params, nq)?)
    }
    fn search(
        &self,
        queries: &[f32],
        dim: usize,
        params: &SearchParams,
        probe: Option<&Probe>,
    ) -> Result<(BatchResult, Option<f64>)> {
        let r = self.search_batch(queries, dim, params, &probe.copied().unwrap_or_default())?;
        let share = r.merge_s / r.wall_s.max(1e-12);
        Ok((r.to_batch()?, Some(share)))
    }
    fn result_ids(&self, rows: &[u32]) -> Vec<i64> {
        rows.iter()
            .map(|&r| if r == u32::MAX { -1 } else { r as i64 })
            .collect()
    }
    fn single(&self) -> Result<&Index> {
        anyhow::bail!(
            "{}: expected an index, found a collection (range search is for indexes)",
            self.dir.display()
        )
    }
}
