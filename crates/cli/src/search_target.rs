//! What `search` and `serve` can search: an index with its pending updates
//! (`search_target_live.rs`), or a collection of segment indexes
//! (`stratavec build-collection`), behind one small surface, so a
//! collection is accepted wherever an index is.

use anyhow::Result;
use std::path::Path;
use stratavec::collection::{is_collection, Collection, Probe};
use stratavec::data::{DType, Metric};
use stratavec::index::filtered::FilterWay;
use stratavec::labels::Expr;
use stratavec::search::{QueryStats, Switches};
use stratavec::update::live::{Applied, LiveIndex, UpdateOptions};
use stratavec::{BatchResult, Index, OpenOptions, SearchParams};

/// One batch's answer as a server reports it: the ids a user knows (those
/// the index was built with, a collection's global ids; -1 for an empty
/// slot), `k` a query. A failed query's row is all -1 and infinity, never a
/// silently shorter answer.
#[derive(Clone, Debug, Default)]
pub struct Answer {
    pub k: usize,
    pub ids: Vec<i64>,
    pub dists: Vec<f32>,
    /// Per query: the error that failed it, if any.
    pub errors: Vec<Option<String>>,
    /// The queries' counters, summed.
    pub totals: QueryStats,
    pub wall_s: f64,
    /// Collections: the merge's part of `wall_s` and the queries each
    /// segment searched (empty for an index).
    pub merge_s: f64,
    pub segment_queries: Vec<usize>,
    pub io_wait_s: f64,
    pub io_backend: String,
}

/// An index or a collection, as `search` and `serve` see it: one trait
/// object, so the commands never ask which it holds. `Send + Sync`: the
/// server searches it from several threads at once.
pub trait Target: Send + Sync {
    /// "index" or "collection", as messages and `/health` name it.
    fn kind(&self) -> &'static str;
    fn metric(&self) -> Metric;
    /// The element type of the vectors: a u8 or i8 index takes integer
    /// query components in its range only.
    fn dtype(&self) -> DType;
    /// Segments a query can probe: 1 for an index.
    fn segment_count(&self) -> usize;
    /// A collection's partition ("range", "kmeans"); `None` for an index.
    fn partition(&self) -> Option<String>;
    /// The largest k a search can ask: the vectors held, and for a
    /// collection those of its smallest segment (each segment it searches
    /// is asked for k of its own).
    fn max_k(&self) -> usize;
    /// `queries` searched with the ids a user knows (unlike [`Target::search`],
    /// whose collection answer must be row numbers to be measured).
    fn answer(
        &self,
        queries: &[f32],
        dim: usize,
        params: &SearchParams,
        probe: Option<&Probe>,
    ) -> Result<Answer>;
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
    /// Runs `f` on the index, for the searches only an index serves (range
    /// search; a collection refuses a radius in `check_search` first).
    fn with_single(&self, f: &mut dyn FnMut(&Index) -> Result<()>) -> Result<()>;
    /// Inserts `vectors` (row-major) with `ids`, or the next unused ones;
    /// returns once the batch is logged and fsynced. A non-zero `batch`
    /// makes a retried call a no-op.
    /// Inserts `vectors` with `ids` (or the next unused) and one label set
    /// a vector (empty: none; only an index built with labels takes them).
    fn insert(
        &self,
        vectors: &[f32],
        ids: Option<&[i64]>,
        labels: &[Vec<u32>],
        batch: u64,
    ) -> Result<Applied>;
    /// Deletes `ids` (those not there are counted in `missing`).
    fn delete(&self, ids: &[i64], batch: u64) -> Result<Applied>;
    /// Vectors inserted and rows deleted since the last build or merge.
    fn pending(&self) -> (usize, usize);
    /// [`Target::search`] with each query's filter (issue #56), searched
    /// the way `way` asks. Only an index built with labels filters.
    #[allow(clippy::too_many_arguments)]
    fn search_filtered(
        &self,
        _queries: &[f32],
        _dim: usize,
        _params: &SearchParams,
        _probe: Option<&Probe>,
        _filters: &Filters,
        _way: FilterWay,
    ) -> Result<BatchResult> {
        anyhow::bail!(
            "--filter: expected an index or collection built with labels, found a {}",
            self.kind()
        )
    }
    /// Each query's filter text parsed against the labels (`None` stays
    /// unfiltered); the error names the token and its position, and no
    /// path (a server quotes it to its client).
    fn parse_filters(&self, _texts: &[Option<String>]) -> Result<Vec<Option<Expr>>> {
        anyhow::bail!(
            "filter: expected an index or collection built with labels, found a {}",
            self.kind()
        )
    }
    /// [`Target::answer`] of filtered queries (`filters`: one a query).
    #[allow(clippy::too_many_arguments)]
    fn answer_filtered(
        &self,
        _queries: &[f32],
        _dim: usize,
        _params: &SearchParams,
        _probe: Option<&Probe>,
        _filters: &[Option<Expr>],
        _way: FilterWay,
    ) -> Result<Answer> {
        anyhow::bail!("filter: a {} does not filter", self.kind())
    }
}

/// The filters of a search: one expression for every query, or one a
/// query from a filter-track matrix (row i: the labels query i ANDs).
pub enum Filters {
    One(String),
    Rows(stratavec::labels::LabelSets),
}

/// A parsed filter, or why not.
type Parsed<T> = stratavec::Result<T>;

impl Filters {
    /// The expressions, one a query: `text` parses one against the
    /// labels, `rows` makes a filter-track matrix's (an index's or a
    /// collection's, whose segments share the build's label ids).
    pub fn parse(
        &self,
        nq: usize,
        text: impl Fn(&str) -> Parsed<Expr>,
        rows: impl Fn(&stratavec::labels::LabelSets) -> Parsed<Vec<Option<Expr>>>,
    ) -> Result<Vec<Option<Expr>>> {
        let (parse_one, of_rows) = (text, rows);
        Ok(match self {
            Filters::One(text) => vec![Some(parse_one(text)?); nq],
            Filters::Rows(rows) => {
                if rows.len() != nq {
                    anyhow::bail!(
                        "--filter-file: expected one row a query ({nq}), found {} rows",
                        rows.len()
                    );
                }
                of_rows(rows)?
            }
        })
    }
}

/// How `search` opens an index: it never writes, so the whole memory
/// budget goes to the generation (the delta of a replayed log still
/// holds what it must, uncharged by a share).
pub fn read_only() -> UpdateOptions {
    UpdateOptions {
        delta_share: 0.0,
        auto_merge: false,
        ..UpdateOptions::default()
    }
}

/// Opens the index or collection at `dir`, an index with its update log
/// replayed and taking writes as `updates` says; a `probe` (`--probe`,
/// `--probe-shrink`) is refused for an index: it has no segments.
pub fn open(
    dir: &Path,
    opts: &OpenOptions,
    probe: Option<&Probe>,
    updates: &UpdateOptions,
) -> Result<Box<dyn Target>> {
    if is_collection(dir) {
        return Ok(Box::new(Collection::open_with(dir, opts, updates)?));
    }
    if probe.is_some() {
        anyhow::bail!(
            "--probe / --probe-shrink: expected a collection directory (collection.json), \
             found the index {}",
            dir.display()
        );
    }
    Ok(Box::new(LiveIndex::open_with(dir, opts, updates)?))
}

impl Target for Collection {
    fn kind(&self) -> &'static str {
        "collection"
    }
    fn metric(&self) -> Metric {
        Collection::metric(self)
    }
    fn dtype(&self) -> DType {
        Collection::dtype(self)
    }
    fn segment_count(&self) -> usize {
        self.segments().len()
    }
    fn partition(&self) -> Option<String> {
        Some(self.manifest.partition.to_string())
    }
    fn max_k(&self) -> usize {
        self.segments().iter().map(|s| s.len()).min().unwrap_or(0)
    }
    fn answer(
        &self,
        queries: &[f32],
        dim: usize,
        params: &SearchParams,
        probe: Option<&Probe>,
    ) -> Result<Answer> {
        let r = self.search_batch(queries, dim, params, &probe.copied().unwrap_or_default())?;
        Ok(collection_answer(r))
    }
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
        Collection::is_clusters(self)
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
    fn with_single(&self, _f: &mut dyn FnMut(&Index) -> Result<()>) -> Result<()> {
        anyhow::bail!(
            "{}: expected an index, found a collection (range search is for indexes)",
            self.dir.display()
        )
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
        Collection::pending(self)
    }
}

/// A collection's result as an answer: failed queries blanked, counters
/// summed.
fn collection_answer(r: stratavec::collection::CollectionResult) -> Answer {
    let (mut ids, mut dists) = (r.ids, r.dists);
    blank_failed(&r.errors, r.k, &mut ids, &mut dists);
    let mut totals = QueryStats::default();
    for s in &r.stats {
        totals += *s;
    }
    Answer {
        k: r.k,
        ids,
        dists,
        errors: r.errors,
        totals,
        wall_s: r.wall_s,
        merge_s: r.merge_s,
        segment_queries: r.segment_queries,
        io_wait_s: r.io_wait_s,
        io_backend: r.io_backend,
    }
}

/// A failed query's partial list is not a result: its row becomes -1 and
/// infinity (as `stratavec.Index.search` in Python answers it).
pub(crate) fn blank_failed(
    errors: &[Option<String>],
    k: usize,
    ids: &mut [i64],
    dists: &mut [f32],
) {
    for (q, e) in errors.iter().enumerate() {
        if e.is_some() {
            ids[q * k..(q + 1) * k].fill(-1);
            dists[q * k..(q + 1) * k].fill(f32::INFINITY);
        }
    }
}
