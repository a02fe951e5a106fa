//! Collections in Python: the pieces a driver composes (partition, commit,
//! route, merge — the Ray backend builds segments in parallel and fans
//! queries out with them) and `Collection`, the in-process collection.

use super::{
    add_with, as_ndarray, check_failures, contiguous, count, data_err, interrupt, on_error_mask,
    query_rows, remove_with, shape_str, stats_dict, threads_arg, to_py,
};
use numpy::ndarray::Array2;
use numpy::prelude::*;
use numpy::{PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::path::{Path, PathBuf};
use stratavec::args::Params;
use stratavec::collection::{
    merge::{merge, Part},
    route::{route, visits},
    CollectionManifest, CollectionResult, Partition, Probe,
};
use stratavec::data::{Elems, Metric};
use stratavec::{BatchResult, OpenOptions};

fn partition_arg(p: &str) -> PyResult<Partition> {
    p.parse()
        .map_err(|e: String| PyValueError::new_err(format!("partition: {e}")))
}

/// A budget in MB as bytes; `None` stays `None`.
pub(crate) fn budget_arg(mb: Option<f64>) -> PyResult<Option<u64>> {
    match mb {
        None => Ok(None),
        Some(mb) if mb.is_finite() && mb > 0.0 => Ok(Some((mb * 1e6) as u64)),
        Some(mb) => Err(PyValueError::new_err(format!(
            "memory_budget_mb: expected a positive number of MB, found {mb}"
        ))),
    }
}

/// A 2-D float array's rows (converted to float32), n and dim.
fn rows_f32(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    what: &str,
) -> PyResult<(Vec<f32>, usize, usize)> {
    let arr = as_ndarray(py, data, what)?;
    let shape = arr.shape().to_vec();
    if shape.len() != 2 || shape[0] == 0 || shape[1] == 0 {
        return Err(PyValueError::new_err(format!(
            "{what}: expected a 2-D array (n, dim) of at least one row, got shape {}",
            shape_str(&shape)
        )));
    }
    let a = contiguous(py, &arr, "float32")?.cast_into::<PyArray2<f32>>()?;
    let v = a.readonly().as_slice()?.to_vec();
    Ok((v, shape[0], shape[1]))
}

/// `partition_collection(data, segments, partition="range", metric="l2",
/// seed=42)`: the segment of every row (int32) and, for k-means, the
/// centroids (float32, segments x dim; None for range).
#[pyfunction]
#[pyo3(signature = (data, segments, partition = "range", metric = "l2", seed = 42))]
pub fn partition_collection<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    segments: i64,
    partition: &str,
    metric: &str,
    seed: u64,
) -> PyResult<Bound<'py, PyTuple>> {
    let partition = partition_arg(partition)?;
    let metric: Metric = metric.parse().map_err(data_err)?;
    let segments = count("segments", segments, 1)?;
    let (v, _n, dim) = rows_f32(py, data, "data")?;
    let plan = py
        .detach(|| {
            stratavec::collection::partition::plan(
                Elems::F32(&v),
                dim,
                segments,
                partition,
                metric,
                seed,
            )
        })
        .map_err(to_py)?;
    let assign: Vec<i32> = plan.segment_of.iter().map(|&s| s as i32).collect();
    let centroids: Bound<'py, PyAny> = match plan.centroids {
        Some(c) => Array2::from_shape_vec((segments, dim), c)
            .map_err(|e| PyValueError::new_err(e.to_string()))?
            .into_pyarray(py)
            .into_any(),
        None => py.None().into_bound(py),
    };
    PyTuple::new(py, [assign.into_pyarray(py).into_any(), centroids])
}

/// `commit_collection(staging, collection_dir, *, partition, centroids=None,
/// memory_budget_mb=None)`: publishes segments built under `staging`
/// (`seg-0000`, ... each an index built with `ids=` its rows' global ids)
/// as the collection at `collection_dir`, atomically.
#[pyfunction]
#[pyo3(signature = (staging, collection_dir, *, partition, centroids = None, memory_budget_mb = None))]
pub fn commit_collection<'py>(
    py: Python<'py>,
    staging: PathBuf,
    collection_dir: PathBuf,
    partition: &str,
    centroids: Option<PyReadonlyArray2<'py, f32>>,
    memory_budget_mb: Option<f64>,
) -> PyResult<Bound<'py, PyDict>> {
    let partition = partition_arg(partition)?;
    let budget = budget_arg(memory_budget_mb)?;
    let c: Option<Vec<f32>> = centroids.map(|c| c.as_array().iter().copied().collect());
    let m = py
        .detach(|| {
            stratavec::collection::commit_collection(
                &staging,
                &collection_dir,
                partition,
                c.as_deref(),
                budget,
            )
        })
        .map_err(to_py)?;
    info_dict(py, &collection_dir, &m, c)
}

fn info_dict<'py>(
    py: Python<'py>,
    dir: &Path,
    m: &CollectionManifest,
    centroids: Option<Vec<f32>>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("n", m.n)?;
    d.set_item("dim", m.dim)?;
    d.set_item("metric", m.metric.as_str())?;
    d.set_item("dtype", m.dtype.as_str())?;
    d.set_item("profile", &m.profile)?;
    d.set_item("partition", m.partition.to_string())?;
    d.set_item("memory_budget", m.memory_budget)?;
    let segs = PyList::empty(py);
    let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    for s in &m.segments {
        let e = PyDict::new(py);
        e.set_item("dir", abs.join(&s.dir).display().to_string())?;
        e.set_item("n", s.n)?;
        e.set_item("memory_budget", s.memory_budget)?;
        segs.append(e)?;
    }
    d.set_item("segments", segs)?;
    match centroids {
        Some(c) => d.set_item(
            "centroids",
            Array2::from_shape_vec((m.segments.len(), m.dim), c)
                .map_err(|e| PyValueError::new_err(e.to_string()))?
                .into_pyarray(py),
        )?,
        None => d.set_item("centroids", py.None())?,
    }
    Ok(d)
}

fn read_centroids(dir: &Path, m: &CollectionManifest) -> PyResult<Option<Vec<f32>>> {
    if m.partition != Partition::Kmeans {
        return Ok(None);
    }
    let path = dir.join(stratavec::collection::manifest::CENTROIDS_FILE);
    let file = stratavec::data::open(&path).map_err(data_err)?;
    Ok(Some(file.to_f32_vec()))
}

/// `collection_info(collection_dir)`: the manifest as a dict (segment dirs
/// absolute, centroids as an array).
#[pyfunction]
pub fn collection_info<'py>(
    py: Python<'py>,
    collection_dir: PathBuf,
) -> PyResult<Bound<'py, PyDict>> {
    let m = CollectionManifest::read(&collection_dir).map_err(to_py)?;
    let c = read_centroids(&collection_dir, &m)?;
    info_dict(py, &collection_dir, &m, c)
}

/// A probe from Python's `probe` (segments) and `probe_shrink` arguments.
fn probe_arg(probe: Option<i64>, shrink: Option<f64>) -> PyResult<Probe> {
    let mut p = Probe::nearest(probe.map(|p| count("probe", p, 1)).transpose()?);
    if let Some(s) = shrink {
        p.shrink = s as f32;
    }
    p.check().map_err(to_py)?;
    Ok(p)
}

/// The collection at `dir`'s routes for `queries`: per segment, the rows
/// it searches and its rank for each.
fn routes_of<'py>(
    py: Python<'py>,
    collection_dir: &Path,
    queries: &Bound<'py, PyAny>,
    probe: &Probe,
) -> PyResult<Vec<Vec<stratavec::collection::route::Routed>>> {
    let m = CollectionManifest::read(collection_dir).map_err(to_py)?;
    let c = read_centroids(collection_dir, &m)?;
    let (q, _nq) = query_rows(py, queries, m.dim, "collection")?;
    route(
        m.partition,
        c.as_deref(),
        m.segments.len(),
        m.metric,
        &q,
        m.dim,
        probe,
    )
    .map_err(to_py)
}

/// `route_queries(collection_dir, queries, probe=None)`: for each segment,
/// the query rows (int64) it searches.
#[pyfunction]
#[pyo3(signature = (collection_dir, queries, probe = None))]
pub fn route_queries<'py>(
    py: Python<'py>,
    collection_dir: PathBuf,
    queries: &Bound<'py, PyAny>,
    probe: Option<i64>,
) -> PyResult<Bound<'py, PyList>> {
    let routes = routes_of(py, &collection_dir, queries, &probe_arg(probe, None)?)?;
    let out = PyList::empty(py);
    for r in routes {
        let rows: Vec<i64> = r.into_iter().map(|r| i64::from(r.row)).collect();
        out.append(rows.into_pyarray(py))?;
    }
    Ok(out)
}

/// `plan_visits(collection_dir, queries, complexity, k, probe=None,
/// probe_shrink=None)`: the fan-out's search calls, each a tuple
/// `(segment, complexity, rows)` — a segment's routed rows grouped by the
/// list size their rank gives (`Collection.search` makes the same calls).
#[pyfunction]
#[pyo3(signature = (collection_dir, queries, complexity, k, probe = None, probe_shrink = None))]
pub fn plan_visits<'py>(
    py: Python<'py>,
    collection_dir: PathBuf,
    queries: &Bound<'py, PyAny>,
    complexity: i64,
    k: i64,
    probe: Option<i64>,
    probe_shrink: Option<f64>,
) -> PyResult<Bound<'py, PyList>> {
    let probe = probe_arg(probe, probe_shrink)?;
    let k = count("k", k, 1)?;
    let complexity = count("complexity", complexity, 1)?.max(k);
    let routes = routes_of(py, &collection_dir, queries, &probe)?;
    let out = PyList::empty(py);
    for v in visits(&routes, &probe, complexity, k) {
        let rows: Vec<i64> = v.rows.into_iter().map(i64::from).collect();
        out.append((v.segment, v.complexity, rows.into_pyarray(py)))?;
    }
    Ok(out)
}

/// `merge_results(nq, k, parts)`: each part `(rows, D, I)` one segment's
/// answer for query rows `rows`; returns the exact top-k `(D, I)`.
#[pyfunction]
pub fn merge_results<'py>(
    py: Python<'py>,
    nq: i64,
    k: i64,
    parts: Vec<(
        PyReadonlyArray1<'py, i64>,
        PyReadonlyArray2<'py, f32>,
        PyReadonlyArray2<'py, i64>,
    )>,
) -> PyResult<Bound<'py, PyTuple>> {
    let nq = count("nq", nq, 0)?;
    let k = count("k", k, 1)?;
    let mut owned: Vec<(Vec<u32>, Vec<f32>, Vec<i64>)> = Vec::with_capacity(parts.len());
    for (i, (rows, d, ids)) in parts.iter().enumerate() {
        let rows: Vec<u32> = rows
            .as_array()
            .iter()
            .map(|&r| {
                u32::try_from(r)
                    .ok()
                    .filter(|&r| (r as usize) < nq)
                    .ok_or_else(|| {
                        PyValueError::new_err(format!(
                            "parts[{i}] rows: expected query rows in 0..{nq}, found {r}"
                        ))
                    })
            })
            .collect::<PyResult<_>>()?;
        let want = [rows.len(), k];
        for (what, shape) in [("D", d.shape()), ("I", ids.shape())] {
            if shape != want {
                return Err(PyValueError::new_err(format!(
                    "parts[{i}] {what}: expected shape {}, found {}",
                    shape_str(&want),
                    shape_str(shape)
                )));
            }
        }
        owned.push((
            rows,
            d.as_array().iter().copied().collect(),
            ids.as_array().iter().copied().collect(),
        ));
    }
    let views: Vec<Part> = owned
        .iter()
        .map(|(r, d, i)| Part {
            rows: r,
            dists: d,
            ids: i,
        })
        .collect();
    let (d, i) = merge(nq, k, &views);
    let d = Array2::from_shape_vec((nq, k), d).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let i = Array2::from_shape_vec((nq, k), i).map_err(|e| PyValueError::new_err(e.to_string()))?;
    PyTuple::new(
        py,
        [d.into_pyarray(py).into_any(), i.into_pyarray(py).into_any()],
    )
}

/// `segment_budgets(collection_dir, memory_budget_mb, io="auto")`: each
/// segment's share of the budget in bytes, as `Collection.open` splits it
/// (what the segment cannot open without, then the rest by vectors).
#[pyfunction]
#[pyo3(signature = (collection_dir, memory_budget_mb, io = "auto"))]
pub fn segment_budgets(
    py: Python<'_>,
    collection_dir: PathBuf,
    memory_budget_mb: f64,
    io: &str,
) -> PyResult<Vec<u64>> {
    let opts = open_options(Some(memory_budget_mb), io)?;
    let m = CollectionManifest::read(&collection_dir).map_err(to_py)?;
    py.detach(|| stratavec::collection::open::segment_budgets(&collection_dir, &m, &opts))
        .map(|b| b.unwrap_or_default())
        .map_err(to_py)
}

/// The options a collection (and each segment, in a Ray actor) opens with.
fn open_options(memory_budget_mb: Option<f64>, io: &str) -> PyResult<OpenOptions> {
    Ok(OpenOptions {
        memory_budget_bytes: budget_arg(memory_budget_mb)?,
        io: io.parse().map_err(|e: String| PyValueError::new_err(e))?,
        reserve_threads: super::default_threads(),
        ..OpenOptions::default()
    })
}

/// An open collection; see `stratavec.Collection`.
#[pyclass(frozen, module = "stratavec._stratavec", name = "Collection")]
pub struct Collection {
    inner: stratavec::collection::Collection,
}

/// A collection batch as an index batch for the stats and failure helpers
/// (which read neither ids nor distances).
fn as_batch(r: &CollectionResult) -> BatchResult {
    BatchResult {
        k: r.k,
        stats: r.stats.clone(),
        errors: r.errors.clone(),
        wall_s: r.wall_s,
        proc_read_bytes: r.proc_read_bytes,
        io_backend: r.io_backend.clone(),
        io_wait_s: r.io_wait_s,
        ..Default::default()
    }
}

#[pymethods]
impl Collection {
    #[staticmethod]
    #[pyo3(signature = (collection_dir, memory_budget_mb = None, io = "auto", delta_share = 0.1, auto_merge = true))]
    fn open(
        py: Python<'_>,
        collection_dir: PathBuf,
        memory_budget_mb: Option<f64>,
        io: &str,
        delta_share: f64,
        auto_merge: bool,
    ) -> PyResult<Collection> {
        let opts = open_options(memory_budget_mb, io)?;
        let updates = stratavec::update::live::UpdateOptions {
            delta_share,
            auto_merge,
            merge_threads: super::default_threads(),
        };
        py.detach(|| stratavec::collection::Collection::open_with(&collection_dir, &opts, &updates))
            .map(|inner| Collection { inner })
            .map_err(to_py)
    }

    /// Inserts vectors under global ids (or the next unused ones), each
    /// into one segment; see `stratavec.Collection.add`.
    #[pyo3(signature = (vectors, ids = None, *, labels = None, batch = 0))]
    fn add<'py>(
        &self,
        py: Python<'py>,
        vectors: &Bound<'py, PyAny>,
        ids: Option<&Bound<'py, PyAny>>,
        labels: Option<&Bound<'py, PyAny>>,
        batch: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let dim = (self.inner.dim(), "collection");
        let labels = super::label_lists(labels)?;
        add_with(py, vectors, ids, dim, |v, ids| {
            self.inner.add_labelled(v, ids, &labels, batch)
        })
    }

    /// Deletes global ids from the segments holding them; see
    /// `stratavec.Collection.remove`.
    #[pyo3(signature = (ids, *, batch = 0))]
    fn remove<'py>(
        &self,
        py: Python<'py>,
        ids: &Bound<'py, PyAny>,
        batch: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        remove_with(py, ids, |ids| self.inner.remove(ids, batch))
    }

    /// Merges every segment with updates into its next generation; the
    /// segments merged. Ctrl-C stops it between and within segments.
    #[pyo3(signature = (threads = None))]
    fn merge(&self, py: Python<'_>, threads: Option<i64>) -> PyResult<usize> {
        let threads = threads_arg(threads)?;
        interrupt::run(py, |flag| self.inner.merge(threads, flag), to_py).map(|m| m.len())
    }

    /// (vectors inserted, rows deleted) not yet merged, over the segments.
    #[getter]
    fn pending(&self) -> (usize, usize) {
        self.inner.pending()
    }

    #[getter]
    fn dim(&self) -> usize {
        self.inner.dim()
    }

    #[getter]
    fn n(&self) -> usize {
        self.inner.len()
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    #[getter]
    fn metric(&self) -> &'static str {
        self.inner.metric().as_str()
    }

    #[getter]
    fn partition(&self) -> String {
        self.inner.manifest.partition.to_string()
    }

    #[getter]
    fn profile(&self) -> String {
        self.inner.manifest.profile.clone()
    }

    /// Each segment: directory, vectors, RAM held and cached nodes.
    #[getter]
    fn segments<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for (s, e) in self
            .inner
            .segments()
            .iter()
            .zip(&self.inner.manifest.segments)
        {
            let d = PyDict::new(py);
            let (dir, memory, cached) = s.with_base(|b| {
                (
                    b.dir.display().to_string(),
                    b.memory().total(),
                    b.cached_nodes(),
                )
            });
            d.set_item("dir", dir)?;
            d.set_item("n", s.len())?;
            d.set_item("built_n", e.n)?;
            d.set_item("memory_bytes", memory + s.update_bytes())?;
            d.set_item("cached_nodes", cached)?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// RAM held by all segments, bytes.
    fn memory_bytes(&self) -> usize {
        self.inner.memory_bytes()
    }

    /// Searches every query in its segments (`probe` nearest of a k-means
    /// partition; all when None) and merges exactly; returns `(D, I)` (and
    /// stats) as `Index.search`. A range partition searches each segment at
    /// `complexity`; a k-means partition its nearest at `complexity` and
    /// each further one at `probe_shrink` (default 0.5) of the one before,
    /// never below k (1.0: all at `complexity`).
    /// The search's parameters are keywords (`params`), as `Index.search`
    /// takes them: the engine's parameter set, each segment's defaults.
    #[pyo3(signature = (
        queries, k = 10, *, probe = None, probe_shrink = None, return_stats = false,
        on_error = "raise", filter = None, filter_way = "auto", **params
    ))]
    #[allow(clippy::too_many_arguments)]
    fn search<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        queries: &Bound<'py, PyAny>,
        k: i64,
        probe: Option<i64>,
        probe_shrink: Option<f64>,
        return_stats: bool,
        on_error: &str,
        filter: Option<&Bound<'py, PyAny>>,
        filter_way: &str,
        params: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let this = slf.get();
        let k = count("k", k, 1)?;
        let mask = on_error_mask(on_error)?;
        let probe = probe_arg(probe, probe_shrink)?;
        if params.is_some_and(|p| p.contains("radius").unwrap_or(false)) {
            return Err(PyValueError::new_err(
                "radius: expected no radius: a collection searches k-NN only",
            ));
        }
        let params = crate::keywords::given(Params::Search, params, &[("k", k.to_string())])?
            .search_params(|s| this.inner.search_defaults(s))
            .map_err(to_py)?;
        let dim = this.inner.dim();
        let (q, nq) = query_rows(py, queries, dim, "collection")?;
        let way = crate::filter_way_arg(filter_way)?;
        let filters = match filter {
            Some(f) if !f.is_none() => {
                Some(crate::filters_arg(f, nq, |t| this.inner.parse_filter(t))?)
            }
            _ => None,
        };
        let res = py
            .detach(|| match &filters {
                Some(f) => this.inner.search_filtered(&q, dim, &params, &probe, f, way),
                None => this.inner.search_batch(&q, dim, &params, &probe),
            })
            .map_err(to_py)?;
        let batch = as_batch(&res);
        check_failures(py, &batch, nq, mask)?;
        let mut dists = res.dists.clone();
        for (qi, e) in res.errors.iter().enumerate() {
            if e.is_some() {
                dists[qi * k..(qi + 1) * k].fill(f32::INFINITY);
            }
        }
        let ids = Array2::from_shape_vec((nq, k), res.ids.clone())
            .map_err(|e| PyValueError::new_err(e.to_string()))?
            .into_pyarray(py);
        let dists = Array2::from_shape_vec((nq, k), dists)
            .map_err(|e| PyValueError::new_err(e.to_string()))?
            .into_pyarray(py);
        if return_stats {
            let stats = stats_dict(py, &batch, nq)?;
            stats.set_item("merge_s", res.merge_s)?;
            stats.set_item("segment_queries", res.segment_queries.clone())?;
            PyTuple::new(py, [dists.into_any(), ids.into_any(), stats.into_any()])
        } else {
            PyTuple::new(py, [dists.into_any(), ids.into_any()])
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "stratavec.Collection({:?}, n={}, dim={}, metric={}, profile={}, segments={}, \
             partition={}, memory={:.1} MB)",
            self.inner.dir.display().to_string(),
            self.inner.len(),
            self.inner.dim(),
            self.inner.metric().as_str(),
            self.inner.manifest.profile,
            self.inner.segments().len(),
            self.inner.manifest.partition,
            self.inner.memory_bytes() as f64 / 1e6
        )
    }
}
