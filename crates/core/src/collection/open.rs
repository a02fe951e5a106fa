//! An open collection: every segment's index open with its share of the
//! budget, with its updates (`update::live`: a segment takes inserts and
//! deletes as an index does, `collection/update.rs`); a batch of queries
//! fans out to the segments each query is routed to, and their answers
//! are merged exactly (`merge`).
//!
//! Segments are searched one after another, each on all of the batch's
//! worker threads with its queries in flight: the same device depth and
//! the same cores as one index's batch, so a collection's QPS is the
//! single index's over the extra reads of searching several graphs (the
//! cost Starling §2 pays for segments), not over an idle pool.

use super::manifest::{budget_shares, CollectionManifest, Partition, CENTROIDS_FILE};
use super::merge::{merge, Part};
use super::route::{route, visits, Probe, Routed};
use crate::data::{DType, Metric};
use crate::error::{Error, Result};
use crate::index::filtered::FilterWay;
use crate::index::{BatchResult, Index, OpenOptions};
use crate::labels::Expr;
use crate::search::{QueryStats, SearchParams, Switches};
use crate::update::live::{LiveIndex, UpdateOptions};
use std::path::{Path, PathBuf};
use std::time::Instant;

pub struct Collection {
    pub dir: PathBuf,
    pub manifest: CollectionManifest,
    pub(super) segments: Vec<LiveIndex>,
    /// k-means partitions: `segments x dim`, row-major.
    centroids: Option<Vec<f32>>,
}

/// A collection batch's answer: global ids (`i64`, -1 for an empty slot),
/// `k` a query.
#[derive(Clone, Debug, Default)]
pub struct CollectionResult {
    pub k: usize,
    pub ids: Vec<i64>,
    pub dists: Vec<f32>,
    /// Per query, summed over the segments it searched (its latency is the
    /// sum of its segment searches' latencies).
    pub stats: Vec<QueryStats>,
    /// Per query: the first segment error that failed it. A failed query's
    /// ids are all -1: never a silently shorter answer.
    pub errors: Vec<Option<String>>,
    pub wall_s: f64,
    /// Of `wall_s`, the merge's share.
    pub merge_s: f64,
    /// Queries each segment searched.
    pub segment_queries: Vec<usize>,
    pub proc_read_bytes: Option<u64>,
    pub io_backend: String,
    pub io_wait_s: f64,
}

impl CollectionResult {
    pub fn failed(&self) -> usize {
        self.errors.iter().filter(|e| e.is_some()).count()
    }

    /// The answer as an index batch's, for the measures that compare ids
    /// with ground truth rows: global ids must then be row numbers (< 2^32).
    pub fn to_batch(&self) -> Result<BatchResult> {
        let ids = self
            .ids
            .iter()
            .map(|&id| match id {
                -1 => Ok(u32::MAX),
                id if (0..u32::MAX as i64).contains(&id) => Ok(id as u32),
                id => Err(Error::argument(
                    "collection ids",
                    "row numbers (a collection built without ids) to compare with ground truth",
                    id,
                )),
            })
            .collect::<Result<Vec<u32>>>()?;
        Ok(BatchResult {
            k: self.k,
            ids,
            dists: self.dists.clone(),
            stats: self.stats.clone(),
            ranges: Vec::new(),
            errors: self.errors.clone(),
            wall_s: self.wall_s,
            proc_read_bytes: self.proc_read_bytes,
            io_backend: self.io_backend.clone(),
            io_wait_s: self.io_wait_s,
        })
    }
}

impl Collection {
    /// Opens every segment of the collection at `dir`. A budget in `opts`
    /// is split over the segments by their vectors (the shares add up to
    /// it); without one each segment holds its codes only, as an index.
    /// All segments come from one build of the collection, even when a
    /// rebuild switches the directory meanwhile (`open_consistent`).
    /// Opened so, the segments take no share of the budget for updates:
    /// their logged updates are searched, and an insert that does not fit
    /// is refused ([`Collection::open_with`] opens one that takes them).
    pub fn open(dir: impl AsRef<Path>, opts: &OpenOptions) -> Result<Collection> {
        let read_only = UpdateOptions {
            delta_share: 0.0,
            auto_merge: false,
            ..UpdateOptions::default()
        };
        Collection::open_with(dir, opts, &read_only)
    }

    /// [`Collection::open`] with how each segment takes updates (its
    /// delta's share of its budget, merging when it fills).
    pub fn open_with(
        dir: impl AsRef<Path>,
        opts: &OpenOptions,
        updates: &UpdateOptions,
    ) -> Result<Collection> {
        crate::index::commit::open_consistent(dir.as_ref(), |dir| {
            Collection::open_once(dir, opts, updates)
        })
    }

    fn open_once(dir: &Path, opts: &OpenOptions, updates: &UpdateOptions) -> Result<Collection> {
        let dir = dir.to_path_buf();
        let manifest = CollectionManifest::read(&dir)?;
        let sizes: Vec<usize> = manifest.segments.iter().map(|s| s.n).collect();
        let budgets = segment_budgets(&dir, &manifest, opts)?;
        let mut segments = Vec::with_capacity(sizes.len());
        for i in 0..sizes.len() {
            let path = manifest.segment_path(&dir, i);
            let seg = LiveIndex::open_with(
                &path,
                &OpenOptions {
                    memory_budget_bytes: budgets.as_ref().map(|b| b[i]),
                    ..opts.clone()
                },
                updates,
            )?;
            // A segment merged since the build holds another count than
            // collection.json's (the build's): only an unmerged one must
            // agree with it.
            let (n, merged, metric) =
                seg.with_base(|b| (b.len(), b.manifest.update_seq > 0, b.metric()));
            let mut agree = vec![
                ("dim", seg.dim().to_string(), manifest.dim.to_string()),
                ("metric", metric.to_string(), manifest.metric.to_string()),
            ];
            if !merged {
                agree.push(("n", n.to_string(), sizes[i].to_string()));
            }
            for (field, found, want) in agree {
                if found != want {
                    return Err(Error::index(
                        &path,
                        field,
                        format!("{want} (collection.json)"),
                        found,
                    ));
                }
            }
            segments.push(seg);
        }
        let centroids = match manifest.partition {
            Partition::Range => None,
            Partition::Kmeans => Some(read_centroids(&dir, &manifest)?),
        };
        Ok(Collection {
            dir,
            manifest,
            segments,
            centroids,
        })
    }

    /// The segments, each an index with its updates.
    pub fn segments(&self) -> &[LiveIndex] {
        &self.segments
    }

    pub fn centroids(&self) -> Option<&[f32]> {
        self.centroids.as_deref()
    }

    pub fn dim(&self) -> usize {
        self.manifest.dim
    }

    /// Vectors searchable now, over every segment (collection.json's `n`
    /// is the build's).
    pub fn len(&self) -> usize {
        self.segments.iter().map(LiveIndex::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn metric(&self) -> Metric {
        self.manifest.metric
    }

    pub fn dtype(&self) -> DType {
        self.manifest.dtype
    }

    /// RAM held by every segment (each within its share of the budget),
    /// its updates included.
    pub fn memory_bytes(&self) -> usize {
        self.segments
            .iter()
            .map(|s| s.with_base(|b| b.memory().total()) + s.update_bytes())
            .sum()
    }

    pub fn cached_nodes(&self) -> usize {
        self.segments
            .iter()
            .map(|s| s.with_base(Index::cached_nodes))
            .sum()
    }

    /// The first segment's search defaults (all segments share a profile).
    pub fn search_defaults(&self, switches: &Switches) -> SearchParams {
        self.segments[0].with_base(|b| b.search_defaults(switches))
    }

    /// Whether the segments are cluster indexes (the ivf profile).
    pub fn is_clusters(&self) -> bool {
        self.segments
            .iter()
            .any(|s| s.with_base(|b| !b.plan.graph()))
    }

    /// Every check the segments make of `params` for `nq` queries.
    pub fn check_search(&self, params: &SearchParams, nq: usize) -> Result<()> {
        if params.radius.is_some() {
            return Err(Error::argument(
                format!("search of collection {}", self.dir.display()),
                "a k-NN search (range search over segments is not built)",
                "a radius",
            ));
        }
        self.segments
            .iter()
            .try_for_each(|s| s.check_search(params, nq))
    }

    /// For each segment, the rows of `queries` it searches and its rank
    /// for each (`route`).
    pub fn route(&self, queries: &[f32], probe: &Probe) -> Result<Vec<Vec<Routed>>> {
        route(
            self.manifest.partition,
            self.centroids.as_deref(),
            self.segments.len(),
            self.manifest.metric,
            queries,
            self.dim(),
            probe,
        )
    }

    /// Searches every query (row-major, `dim` wide) in the segments it is
    /// routed to (`probe`: the nearest segments of a k-means partition,
    /// searched at list sizes shrinking by rank from `params.complexity`;
    /// a range partition searches all at `params.complexity`), and merges
    /// the answers exactly.
    pub fn search_batch(
        &self,
        queries: &[f32],
        dim: usize,
        params: &SearchParams,
        probe: &Probe,
    ) -> Result<CollectionResult> {
        self.search_with(queries, dim, params, probe, None)
    }

    /// [`Collection::search_batch`] with a filter a query (`None`: any
    /// vector; issue #56), parsed by [`Collection::parse_filter`]: each
    /// segment searches its routed queries filtered, each query by the way
    /// `way` asks (its statistics count every segment's search).
    pub fn search_filtered(
        &self,
        queries: &[f32],
        dim: usize,
        params: &SearchParams,
        probe: &Probe,
        filters: &[Option<Expr>],
        way: FilterWay,
    ) -> Result<CollectionResult> {
        let nq = queries.len() / dim.max(1);
        if filters.len() != nq {
            return Err(Error::argument(
                "filters",
                format!("one a query ({nq})"),
                filters.len(),
            ));
        }
        self.search_with(queries, dim, params, probe, Some((filters, way)))
    }

    /// `text` as a filter over the collection's labels: its segments share
    /// the label ids and names of the build (each keeps its rows' labels).
    pub fn parse_filter(&self, text: &str) -> Result<Expr> {
        self.segments[0].parse_filter(text)
    }

    /// Filters that AND the labels of each row of a filter-track matrix.
    pub fn filters_of(&self, rows: &crate::labels::LabelSets) -> Result<Vec<Option<Expr>>> {
        self.segments[0].filters_of(rows)
    }

    fn search_with(
        &self,
        queries: &[f32],
        dim: usize,
        params: &SearchParams,
        probe: &Probe,
        filters: Option<(&[Option<Expr>], FilterWay)>,
    ) -> Result<CollectionResult> {
        if dim != self.dim() {
            return Err(Error::argument(
                "query dimension",
                format!("{} (the collection dimension)", self.dim()),
                dim,
            ));
        }
        let nq = queries.len() / dim;
        self.check_search(params, nq)?;
        let t0 = Instant::now();
        let routes = self.route(queries, probe)?;
        let k = params.k;
        let mut out = CollectionResult {
            k,
            stats: vec![QueryStats::default(); nq],
            errors: vec![None; nq],
            segment_queries: routes.iter().map(Vec::len).collect(),
            ..Default::default()
        };
        let calls = visits(&routes, probe, params.complexity, k);
        let mut answers: Vec<(Vec<f32>, Vec<i64>)> = Vec::with_capacity(calls.len());
        let mut io_total: Option<u64> = Some(0);
        let mut sub = Vec::new();
        for v in &calls {
            sub.clear();
            for &q in &v.rows {
                sub.extend_from_slice(&queries[q as usize * dim..(q as usize + 1) * dim]);
            }
            let seg = &self.segments[v.segment];
            let p = SearchParams {
                complexity: v.complexity,
                ..params.clone()
            };
            let live = match filters {
                None => seg.search(&sub, dim, &p)?,
                Some((f, way)) => {
                    let mine: Vec<Option<Expr>> =
                        v.rows.iter().map(|&q| f[q as usize].clone()).collect();
                    seg.search_filtered(&sub, dim, &p, &mine, way)?
                }
            };
            let res = &live.base;
            for (j, &q) in v.rows.iter().enumerate() {
                out.stats[q as usize] += res.stats[j];
                if let (Some(e), None) = (&res.errors[j], &out.errors[q as usize]) {
                    out.errors[q as usize] = Some(format!(
                        "segment {}: {e}",
                        self.manifest.segments[v.segment].dir
                    ));
                }
            }
            io_total = io_total.zip(res.proc_read_bytes).map(|(a, b)| a + b);
            out.io_wait_s += res.io_wait_s;
            out.io_backend = res.io_backend.clone();
            answers.push((live.dists, live.ids));
        }
        let t_merge = Instant::now();
        let parts: Vec<Part> = calls
            .iter()
            .zip(&answers)
            .map(|(v, (d, i))| Part {
                rows: &v.rows,
                dists: d,
                ids: i,
            })
            .collect();
        let (dists, mut ids) = merge(nq, k, &parts);
        for (q, e) in out.errors.iter().enumerate() {
            if e.is_some() {
                ids[q * k..(q + 1) * k].fill(-1);
            }
        }
        out.merge_s = t_merge.elapsed().as_secs_f64();
        out.dists = dists;
        out.ids = ids;
        out.proc_read_bytes = io_total;
        out.wall_s = t0.elapsed().as_secs_f64();
        Ok(out)
    }
}

/// Each segment's share of `opts.memory_budget_bytes`: first what it
/// cannot open without (its codes, I/O buffers and maps: what it holds
/// opened with no budget), then the rest in proportion to its vectors — so
/// a small segment is never refused for a share too small for its buffers,
/// and the shares add up to the budget. `None` without a budget.
pub fn segment_budgets(
    dir: &Path,
    manifest: &CollectionManifest,
    opts: &OpenOptions,
) -> Result<Option<Vec<u64>>> {
    let Some(total) = opts.memory_budget_bytes else {
        return Ok(None);
    };
    let mut floors = Vec::with_capacity(manifest.segments.len());
    for i in 0..manifest.segments.len() {
        let bare = OpenOptions {
            memory_budget_bytes: None,
            ..opts.clone()
        };
        floors.push(
            Index::open(manifest.segment_path(dir, i), &bare)?
                .memory()
                .total() as u64,
        );
    }
    let need: u64 = floors.iter().sum();
    if total < need {
        return Err(Error::argument(
            "memory budget",
            format!(
                "at least {:.2} MB (the {} segments' codes, I/O buffers and maps)",
                need as f64 / 1e6,
                floors.len()
            ),
            format!("{:.2} MB ({total} bytes)", total as f64 / 1e6),
        ));
    }
    let sizes: Vec<usize> = manifest.segments.iter().map(|s| s.n).collect();
    let rest = budget_shares(total - need, &sizes);
    Ok(Some(floors.iter().zip(rest).map(|(f, r)| f + r).collect()))
}

fn read_centroids(dir: &Path, manifest: &CollectionManifest) -> Result<Vec<f32>> {
    let path = dir.join(CENTROIDS_FILE);
    let file = crate::data::open(&path)?;
    let want = (manifest.segments.len(), manifest.dim);
    if (file.n(), file.dim()) != want {
        return Err(Error::index(
            &path,
            "shape",
            format!("{} x {} (one centroid a segment)", want.0, want.1),
            format!("{} x {}", file.n(), file.dim()),
        ));
    }
    Ok(file.to_f32_vec())
}
