//! `stratavec._stratavec`: the Python binding of the stratavec engine.
//!
//! Thin on purpose: arguments are checked and converted here (numpy dtypes,
//! shapes, Python exceptions), everything else is the engine's. The GIL is
//! released for the whole of every build and search, so Python threads can
//! search one `Index` concurrently.

use numpy::ndarray::Array2;
use numpy::prelude::*;
use numpy::{PyArray2, PyArrayDescr, PyArrayDyn, PyUntypedArray};
use pyo3::exceptions::{
    PyFileExistsError, PyFileNotFoundError, PyKeyboardInterrupt, PyOSError, PyTypeError,
    PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::path::PathBuf;
use stratavec::data::{DataError, Vectors};
mod collection;
mod interrupt;
mod keywords;
use stratavec::args::Params;
use stratavec::update::live::{Applied, LiveIndex, UpdateOptions};
use stratavec::{BatchResult, Error, ErrorKind, OpenOptions, SearchParams};

// ---------------------------------------------------------------------------
// Errors

/// `OSError(errno, message)` when the OS gave an error number (so `e.errno`
/// works), `OSError(message)` otherwise; `FileNotFoundError` for ENOENT.
fn os_error(errno: Option<i32>, not_found: bool, msg: String) -> PyErr {
    match (errno, not_found) {
        (Some(n), true) => PyFileNotFoundError::new_err((n, msg)),
        (None, true) => PyFileNotFoundError::new_err(msg),
        (Some(n), false) => PyOSError::new_err((n, msg)),
        (None, false) => PyOSError::new_err(msg),
    }
}

/// Maps an engine error to the Python exception a user expects, keeping the
/// engine's message (it names the file or argument, the field, and the
/// expected and found values).
fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    let errno = match &e {
        Error::File { cause, .. } | Error::Data(DataError::Io { cause, .. }) => {
            cause.raw_os_error()
        }
        Error::Io(io) => io.raw_os_error(),
        _ => None,
    };
    match e.kind() {
        ErrorKind::InvalidArgument | ErrorKind::Corrupt => PyValueError::new_err(msg),
        ErrorKind::AlreadyExists => PyFileExistsError::new_err(msg),
        ErrorKind::NotFound => os_error(errno, true, msg),
        ErrorKind::Io => os_error(errno, false, msg),
        ErrorKind::Cancelled => PyKeyboardInterrupt::new_err(msg),
    }
}

fn data_err(e: DataError) -> PyErr {
    to_py(Error::Data(e))
}

/// A non-negative integer argument as `usize` (a negative one is a
/// `ValueError` naming the argument, not pyo3's `OverflowError`).
fn count(name: &str, v: i64, min: i64) -> PyResult<usize> {
    if v < min {
        return Err(PyValueError::new_err(format!(
            "{name}: expected at least {min}, found {v}"
        )));
    }
    usize::try_from(v).map_err(|_| PyValueError::new_err(format!("{name}: {v} is too large")))
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

pub(crate) fn threads_arg(threads: Option<i64>) -> PyResult<usize> {
    match threads {
        None => Ok(default_threads()),
        Some(t) => count("threads", t, 1),
    }
}

// ---------------------------------------------------------------------------
// numpy input

/// What a numpy dtype becomes on the Rust side.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Elem {
    F32,
    U8,
    I8,
}

fn shape_str(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn dtype_name(d: &Bound<'_, PyArrayDescr>) -> String {
    d.str()
        .map(|s| s.to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// `obj` as a numpy array (anything else goes through `numpy.asarray`, so
/// lists work too).
fn as_ndarray<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    what: &str,
) -> PyResult<Bound<'py, PyUntypedArray>> {
    let arr = if obj.is_instance_of::<PyUntypedArray>() {
        obj.clone()
    } else {
        let np = py.import("numpy")?;
        np.call_method1("asarray", (obj,)).map_err(|e| {
            PyTypeError::new_err(format!(
                "{what}: expected a numpy array, got {} ({e})",
                obj.get_type().name().map_or("?".into(), |n| n.to_string())
            ))
        })?
    };
    Ok(arr.cast_into::<PyUntypedArray>()?)
}

/// A C-contiguous native-endian array of `target` built from `arr`, copying
/// only when the dtype or the memory order requires it.
fn contiguous<'py>(
    py: Python<'py>,
    arr: &Bound<'py, PyUntypedArray>,
    target: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let np = py.import("numpy")?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("dtype", np.getattr(target)?)?;
    np.call_method("ascontiguousarray", (arr,), Some(&kwargs))
}

/// The Rust element type for a data array: float32, uint8 and int8 as they
/// are; float64 converted to float32; anything else refused.
fn data_elem(arr: &Bound<'_, PyUntypedArray>) -> PyResult<Elem> {
    let d = arr.dtype();
    match (d.kind(), d.itemsize()) {
        (b'f', 4) | (b'f', 8) => Ok(Elem::F32),
        (b'u', 1) => Ok(Elem::U8),
        (b'i', 1) => Ok(Elem::I8),
        _ => Err(PyTypeError::new_err(format!(
            "data: unsupported dtype {}; expected float32, uint8 or int8 \
             (float64 is converted to float32), or a path to a vector file",
            dtype_name(&d)
        ))),
    }
}

// ---------------------------------------------------------------------------
// build_index

fn report_dict<'py>(py: Python<'py>, r: &stratavec::BuildReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("n", r.n)?;
    d.set_item("dim", r.dim)?;
    d.set_item("threads", r.threads)?;
    let stages = PyDict::new(py);
    for (name, s) in &r.stages {
        stages.set_item(name, s)?;
    }
    d.set_item("stages", stages)?;
    d.set_item("total_s", r.total_s)?;
    d.set_item("peak_rss_bytes", r.peak_rss_bytes)?;
    d.set_item("index_bytes", r.index_bytes)?;
    d.set_item("graph_mean_degree", r.graph_mean_degree)?;
    // Parameters fitted to the data because they were None: name -> why.
    let chosen = PyDict::new(py);
    for (name, why) in &r.chosen {
        chosen.set_item(name, why)?;
    }
    d.set_item("chosen", chosen)?;
    if let Some(sh) = &r.shuffle {
        // OR(G) of id order and after each stage: {"id_order": x, "stages": [(name, OR, s)]}.
        let s = PyDict::new(py);
        s.set_item("id_order", sh.id_order)?;
        s.set_item("stages", sh.stages.clone())?;
        d.set_item("shuffle", s)?;
    }
    // The replicated layouts' packing and blow-up, the planner's PQ sizes
    // tried: as build_report.json has them.
    let json = py.import("json")?;
    let as_py = |v: String| json.call_method1("loads", (v,));
    if let Some(rep) = &r.replication {
        d.set_item(
            "replication",
            as_py(serde_json::to_string(rep).map_err(to_py_json)?)?,
        )?;
    }
    if let Some(plan) = &r.pq_plan {
        d.set_item(
            "pq_plan",
            as_py(serde_json::to_string(plan).map_err(to_py_json)?)?,
        )?;
    }
    // profile="auto": every candidate's trial and prediction, the choice.
    if let Some(plan) = &r.auto_plan {
        d.set_item(
            "auto_plan",
            as_py(serde_json::to_string(plan).map_err(to_py_json)?)?,
        )?;
    }
    Ok(d)
}

/// `labels=`: a path of a `.spmat` file, or `(indptr, indices)` (the
/// CSR arrays `stratavec.build_index` makes of lists and scipy matrices).
fn label_sets(obj: &Bound<'_, PyAny>) -> PyResult<stratavec::labels::LabelSets> {
    if let Ok(path) = obj.extract::<PathBuf>() {
        return stratavec::labels::spmat::read(&path).map_err(to_py);
    }
    let (indptr, indices): (Vec<i64>, Vec<i64>) = obj.extract().map_err(|_| {
        PyTypeError::new_err(
            "labels: expected a .spmat path, a list of lists of label ids, or a scipy CSR matrix",
        )
    })?;
    let mut sets = stratavec::labels::LabelSets::default();
    sets.indptr.push(0);
    for (r, w) in indptr.windows(2).enumerate() {
        let (a, b) = (w[0], w[1]);
        if a < 0 || b < a || b as usize > indices.len() {
            return Err(PyValueError::new_err(format!(
                "labels: row {r}: expected its labels at indices[{a}..{b}] within the {} given",
                indices.len()
            )));
        }
        let mut row = Vec::with_capacity((b - a) as usize);
        for &l in &indices[a as usize..b as usize] {
            if !(0..=u32::MAX as i64 - 1).contains(&l) {
                return Err(PyValueError::new_err(format!(
                    "labels: row {r}: expected label ids in 0..{}, found {l}",
                    u32::MAX
                )));
            }
            row.push(l as u32);
        }
        sets.push(&row);
    }
    Ok(sets)
}

/// `filter_way=`: "auto", "pre", "in-search" or "post".
pub(crate) fn filter_way_arg(way: &str) -> PyResult<stratavec::index::filtered::FilterWay> {
    use stratavec::index::filtered::FilterWay;
    Ok(match way {
        "auto" => FilterWay::Auto,
        "pre" => FilterWay::Pre,
        "in-search" => FilterWay::InSearch,
        "post" => FilterWay::Post,
        _ => {
            return Err(PyValueError::new_err(format!(
                "filter_way: expected \"auto\", \"pre\", \"in-search\" or \"post\", found {way:?}"
            )))
        }
    })
}

fn to_py_json(e: serde_json::Error) -> PyErr {
    PyValueError::new_err(format!("build report: {e}"))
}

/// Builds a disk index of `data` in `index_dir`; see `stratavec.build_index`.
/// The build's parameters are keywords (`params`), parsed by the engine's
/// parameter set (`keywords::given`): the CLI's flags, by the same names.
#[pyfunction]
#[pyo3(signature = (data, index_dir, *, threads = None, column = None, id_column = None, ids = None, labels = None, label_names = None, label_column = None, **params))]
#[allow(clippy::too_many_arguments)]
fn build_index<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    index_dir: PathBuf,
    threads: Option<i64>,
    column: Option<String>,
    id_column: Option<String>,
    ids: Option<numpy::PyReadonlyArray1<'py, i64>>,
    labels: Option<&Bound<'py, PyAny>>,
    label_names: Option<Vec<String>>,
    label_column: Option<String>,
    params: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let ids: Option<Vec<i64>> = ids.map(|a| a.as_array().to_vec());
    let label_sets = labels.map(label_sets).transpose()?;
    let labels = label_sets
        .as_ref()
        .map(|sets| stratavec::labels::LabelInput {
            sets,
            names: label_names.as_deref(),
        });
    let params = keywords::given(Params::Build, params, &[])?
        .build_params()
        .map_err(to_py)?;
    let threads = threads_arg(threads)?;

    // A path: the engine maps and validates the file itself.
    if !data.is_instance_of::<PyUntypedArray>() {
        if let Ok(path) = data.extract::<PathBuf>() {
            let table = stratavec::data::is_table(&path);
            if !table && (column.is_some() || id_column.is_some() || label_column.is_some()) {
                return Err(PyValueError::new_err(format!(
                    "column, id_column, label_column: expected data to be a Parquet (.parquet) \
                     or Arrow (.arrow, .feather, .arrows) table, found {}",
                    path.display()
                )));
            }
            if ids.is_some() {
                return Err(PyValueError::new_err(
                    "ids: give ids with an array of vectors; for a table, name its id column \
                     (id_column=)",
                ));
            }
            let columns = stratavec::data::TableColumns {
                vectors: column,
                ids: id_column,
                labels: label_column,
            };
            let report = interrupt::run(
                py,
                |stop| {
                    stratavec::build_from_input(
                        &path, &columns, labels, &index_dir, &params, threads, stop,
                    )
                },
                to_py,
            )?;
            return report_dict(py, &report);
        }
        if data.is_instance_of::<pyo3::types::PyBytes>() {
            return Err(PyTypeError::new_err(
                "data: expected a 2-D numpy array or a path (str or os.PathLike), got bytes",
            ));
        }
    }

    if column.is_some() || id_column.is_some() {
        return Err(PyValueError::new_err(
            "column, id_column: expected data to be a table (a path, or a pyarrow Table), \
             found an array",
        ));
    }
    let ids = ids.as_deref();
    let arr = as_ndarray(py, data, "data")?;
    let elem = data_elem(&arr)?;
    let shape = arr.shape().to_vec();
    if shape.len() != 2 {
        return Err(PyValueError::new_err(format!(
            "data: expected a 2-D array (n, dim), got a {}-D array of shape {}",
            shape.len(),
            shape_str(&shape)
        )));
    }
    let (n, dim) = (shape[0], shape[1]);
    if n == 0 || dim == 0 {
        return Err(PyValueError::new_err(format!(
            "data: expected at least one vector of at least one dimension, got shape {}",
            shape_str(&shape)
        )));
    }
    let source = format!("data {}", shape_str(&shape));
    let report = match elem {
        Elem::F32 => {
            let a = contiguous(py, &arr, "float32")?.cast_into::<PyArray2<f32>>()?;
            let ro = a.readonly();
            let slice = ro.as_slice()?;
            // The array stays borrowed (not copied) while the GIL is released;
            // like every numpy-consuming extension, this relies on Python code
            // not writing to it meanwhile.
            interrupt::run(
                py,
                |stop| {
                    let v = Vectors::f32(slice, dim)?;
                    let attached = stratavec::Attached { ids, labels };
                    stratavec::build_index_with(
                        v, attached, &source, &index_dir, &params, threads, stop,
                    )
                },
                to_py,
            )
        }
        Elem::U8 => {
            let a = contiguous(py, &arr, "uint8")?.cast_into::<PyArray2<u8>>()?;
            let ro = a.readonly();
            let slice = ro.as_slice()?;
            interrupt::run(
                py,
                |stop| {
                    let v = Vectors::u8(slice, dim)?;
                    let attached = stratavec::Attached { ids, labels };
                    stratavec::build_index_with(
                        v, attached, &source, &index_dir, &params, threads, stop,
                    )
                },
                to_py,
            )
        }
        Elem::I8 => {
            let a = contiguous(py, &arr, "int8")?.cast_into::<PyArray2<i8>>()?;
            let ro = a.readonly();
            let slice = ro.as_slice()?;
            interrupt::run(
                py,
                |stop| {
                    let v = Vectors::i8(slice, dim)?;
                    let attached = stratavec::Attached { ids, labels };
                    stratavec::build_index_with(
                        v, attached, &source, &index_dir, &params, threads, stop,
                    )
                },
                to_py,
            )
        }
    }?;
    report_dict(py, &report)
}

// ---------------------------------------------------------------------------
// Index

/// A range search's first candidate window when not given: it doubles
/// while the results fill it (`SearchParams::range_phi`).
const RANGE_WINDOW: usize = 32;

/// An open disk index that takes inserts and deletes (`update::live`); see
/// `stratavec.Index`.
#[pyclass(frozen, module = "stratavec._stratavec", name = "Index")]
struct Index {
    inner: LiveIndex,
}

/// `filter=`: one expression (str) for every query, or a list with one a
/// query (str or None), each parsed by `parse` (an index's or a
/// collection's labels).
pub(crate) fn filters_arg(
    f: &Bound<'_, PyAny>,
    nq: usize,
    parse: impl Fn(&str) -> stratavec::Result<stratavec::labels::Expr>,
) -> PyResult<Vec<Option<stratavec::labels::Expr>>> {
    if let Ok(text) = f.extract::<String>() {
        let e = parse(&text).map_err(to_py)?;
        return Ok(vec![Some(e); nq]);
    }
    let list: Vec<Option<String>> = f.extract().map_err(|_| {
        PyTypeError::new_err("filter: expected an expression (str) or a list of them, one a query")
    })?;
    if list.len() != nq {
        return Err(PyValueError::new_err(format!(
            "filter: expected one a query ({nq}), found {}",
            list.len()
        )));
    }
    list.iter()
        .map(|t| t.as_deref().map(&parse).transpose())
        .collect::<stratavec::Result<_>>()
        .map_err(to_py)
}

impl Index {
    /// The search parameters `kwargs` ask for, over the index's defaults
    /// (`Index::search_defaults`), with `extra` where not given.
    fn params(
        &self,
        kwargs: Option<&Bound<'_, PyDict>>,
        extra: &[(&str, String)],
    ) -> PyResult<SearchParams> {
        keywords::given(Params::Search, kwargs, extra)?
            .search_params(|s| self.inner.with_base(|b| b.search_defaults(s)))
            .map_err(to_py)
    }

    /// Queries as one row-major f32 buffer and their count (`query_rows`).
    fn queries(&self, py: Python<'_>, queries: &Bound<'_, PyAny>) -> PyResult<(Vec<f32>, usize)> {
        query_rows(py, queries, self.inner.dim(), "index")
    }
}

/// Queries as one row-major f32 buffer (always an owned copy, so nothing
/// Python can touch is borrowed while the GIL is released) and their count.
pub(crate) fn query_rows(
    py: Python<'_>,
    queries: &Bound<'_, PyAny>,
    dim: usize,
    of: &str,
) -> PyResult<(Vec<f32>, usize)> {
    rows(py, queries, dim, of, "queries")
}

/// An insert's `labels=` (lists, a scipy CSR matrix or a `.spmat` path)
/// as one list a vector; none: empty.
pub(crate) fn label_lists(labels: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<Vec<u32>>> {
    Ok(match labels {
        Some(obj) => {
            let sets = label_sets(obj)?;
            (0..sets.len()).map(|r| sets.row(r).to_vec()).collect()
        }
        None => Vec::new(),
    })
}

/// An `add` of Python vectors (`dim` wide; `of` names the target in
/// messages) and optional ids through `apply` (an index's or a
/// collection's), the GIL released while it logs and applies.
pub(crate) fn add_with<'py>(
    py: Python<'py>,
    vectors: &Bound<'py, PyAny>,
    ids: Option<&Bound<'py, PyAny>>,
    (dim, of): (usize, &str),
    apply: impl FnOnce(&[f32], Option<&[i64]>) -> stratavec::Result<Applied> + Send,
) -> PyResult<Bound<'py, PyDict>> {
    let (v, _) = rows(py, vectors, dim, of, "vectors")?;
    let ids: Option<Vec<i64>> = ids.map(|i| i.extract()).transpose()?;
    let applied = py.detach(|| apply(&v, ids.as_deref())).map_err(to_py)?;
    applied_dict(py, &applied)
}

/// A `remove` of Python ids through `apply`, as [`add_with`].
pub(crate) fn remove_with<'py>(
    py: Python<'py>,
    ids: &Bound<'py, PyAny>,
    apply: impl FnOnce(&[i64]) -> stratavec::Result<Applied> + Send,
) -> PyResult<Bound<'py, PyDict>> {
    let ids: Vec<i64> = ids.extract()?;
    let applied = py.detach(|| apply(&ids)).map_err(to_py)?;
    applied_dict(py, &applied)
}

/// What a write did, as a dict.
fn applied_dict<'py>(py: Python<'py>, a: &Applied) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("seq", a.seq)?;
    d.set_item("count", a.count)?;
    d.set_item("missing", a.missing)?;
    d.set_item("repeated", a.repeated)?;
    // An insert's ids run on from its first (-1 for a delete).
    d.set_item("first_id", a.first_id)?;
    Ok(d)
}

/// Rows of `dim` floats (queries, or vectors to insert: `name` says which
/// in messages) as one row-major f32 buffer and their count.
fn rows(
    py: Python<'_>,
    queries: &Bound<'_, PyAny>,
    dim: usize,
    of: &str,
    name: &str,
) -> PyResult<(Vec<f32>, usize)> {
    let one = if name == "queries" { "query" } else { "row" };
    let arr = as_ndarray(py, queries, name)?;
    let dt = arr.dtype();
    match (dt.kind(), dt.itemsize()) {
        (b'f', 4) | (b'f', 8) | (b'u', 1) | (b'i', 1) => {}
        _ => {
            return Err(PyTypeError::new_err(format!(
                "{name}: unsupported dtype {}; expected float32 \
                 (float64, uint8 and int8 are converted to float32)",
                dtype_name(&dt)
            )))
        }
    }
    let shape = arr.shape().to_vec();
    let (nq, d) = match shape.as_slice() {
        [d] => (1, *d),
        [nq, d] => (*nq, *d),
        _ => {
            return Err(PyValueError::new_err(format!(
                "{name}: expected a 1-D array (one {one}) or a 2-D array (n, {dim}), \
                 got a {}-D array of shape {}",
                shape.len(),
                shape_str(&shape)
            )))
        }
    };
    if d != dim {
        return Err(PyValueError::new_err(format!(
            "{name}: expected dimension {dim} (the {of} dimension), found {d} \
             (shape {})",
            shape_str(&shape)
        )));
    }
    if nq == 0 {
        return Err(PyValueError::new_err(format!(
            "{name}: expected at least one {one}, got shape {}",
            shape_str(&shape)
        )));
    }
    // 1-D or 2-D: either way a C-contiguous buffer of nq * dim floats.
    let a = contiguous(py, &arr, "float32")?.cast_into::<PyArrayDyn<f32>>()?;
    let v = a.readonly().as_slice()?.to_vec();
    Ok((v, nq))
}

fn stats_dict<'py>(py: Python<'py>, r: &BatchResult, nq: usize) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let col = |f: &dyn Fn(&stratavec::search::QueryStats) -> u64| -> Vec<u64> {
        r.stats.iter().map(f).collect()
    };
    d.set_item("reads", col(&|s| s.reads).into_pyarray(py))?;
    d.set_item("bytes", col(&|s| s.bytes).into_pyarray(py))?;
    d.set_item("hops", col(&|s| s.hops).into_pyarray(py))?;
    d.set_item("cache_hits", col(&|s| s.cache_hits).into_pyarray(py))?;
    d.set_item("exact", col(&|s| s.exact).into_pyarray(py))?;
    d.set_item("estimated", col(&|s| s.estimated).into_pyarray(py))?;
    d.set_item("wasted", col(&|s| s.wasted).into_pyarray(py))?;
    d.set_item("small_reads", col(&|s| s.small_reads).into_pyarray(py))?;
    // Filtered searches: the way each query went ("" unfiltered) and the
    // rows its filter matched.
    let ways: Vec<&str> = r
        .stats
        .iter()
        .map(|s| match (s.filter_pre, s.filter_graph, s.filter_post) {
            (1, _, _) => "pre",
            (_, 1, _) => "in-search",
            (_, _, 1) => "post",
            _ => "",
        })
        .collect();
    d.set_item("filter_way", ways)?;
    d.set_item(
        "filter_matches",
        col(&|s| s.filter_matches).into_pyarray(py),
    )?;
    let lat: Vec<f64> = r.stats.iter().map(|s| s.latency_us).collect();
    d.set_item("latency_us", lat.into_pyarray(py))?;
    d.set_item("nq", nq)?;
    d.set_item("wall_s", r.wall_s)?;
    d.set_item(
        "qps",
        if r.wall_s > 0.0 {
            nq as f64 / r.wall_s
        } else {
            f64::INFINITY
        },
    )?;
    d.set_item("io_wait_s", r.io_wait_s)?;
    d.set_item("io_backend", &r.io_backend)?;
    d.set_item("proc_read_bytes", r.proc_read_bytes)?;
    d.set_item("failed", r.failed())?;
    let errors = PyDict::new(py);
    for (qi, e) in r.errors.iter().enumerate() {
        if let Some(e) = e {
            errors.set_item(qi, e)?;
        }
    }
    d.set_item("errors", errors)?;
    Ok(d)
}

/// What a batch does about queries that failed (a read error, a corrupt
/// record): `"raise"` raises `OSError` for the batch; `"mask"` returns the
/// others, leaves the failed ones empty and warns (`RuntimeWarning`) with the
/// count and the first error. Either way only those queries are lost.
fn check_failures(py: Python<'_>, res: &BatchResult, nq: usize, mask: bool) -> PyResult<()> {
    let failed = res.failed();
    if failed == 0 {
        return Ok(());
    }
    let first = res
        .errors
        .iter()
        .flatten()
        .next()
        .cloned()
        .unwrap_or_default();
    if !mask {
        return Err(PyOSError::new_err(format!(
            "{failed} of {nq} queries failed; first error: {first}"
        )));
    }
    let msg = std::ffi::CString::new(format!(
        "{failed} of {nq} queries failed and have no results; first error: {first}"
    ))
    .unwrap_or_default();
    PyErr::warn(
        py,
        &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(),
        &msg,
        1,
    )
}

/// `on_error`: true for "mask", false for "raise".
fn on_error_mask(on_error: &str) -> PyResult<bool> {
    match on_error {
        "raise" => Ok(false),
        "mask" => Ok(true),
        other => Err(PyValueError::new_err(format!(
            "on_error: expected \"raise\" or \"mask\", found {other:?}"
        ))),
    }
}

#[pymethods]
impl Index {
    /// Opens the index in `index_dir`; see `stratavec.Index.open`.
    #[staticmethod]
    #[pyo3(signature = (index_dir, memory_budget_mb = None, io = "auto", navigation_graph = true, sqpoll = false, delta_share = 0.1, auto_merge = true))]
    #[allow(clippy::too_many_arguments)]
    fn open(
        py: Python<'_>,
        index_dir: PathBuf,
        memory_budget_mb: Option<f64>,
        io: &str,
        navigation_graph: bool,
        sqpoll: bool,
        delta_share: f64,
        auto_merge: bool,
    ) -> PyResult<Index> {
        let budget = collection::budget_arg(memory_budget_mb)?;
        let opts = OpenOptions {
            memory_budget_bytes: budget,
            // Inferred, so this crate needs no direct stratavec-io dependency.
            io: io.parse().map_err(|e: String| PyValueError::new_err(e))?,
            // Reserve I/O buffers for the default search (all cores).
            reserve_threads: default_threads(),
            navigation_graph,
            sqpoll,
            ..OpenOptions::default()
        };
        let updates = UpdateOptions {
            delta_share,
            auto_merge,
            merge_threads: default_threads(),
        };
        let dir = index_dir.clone();
        py.detach(|| LiveIndex::open_with(&dir, &opts, &updates))
            .map(|inner| Index { inner })
            .map_err(to_py)
    }

    /// Inserts vectors; see `stratavec.Index.add`.
    #[pyo3(signature = (vectors, ids = None, *, labels = None, batch = 0))]
    fn add<'py>(
        &self,
        py: Python<'py>,
        vectors: &Bound<'py, PyAny>,
        ids: Option<&Bound<'py, PyAny>>,
        labels: Option<&Bound<'py, PyAny>>,
        batch: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let dim = (self.inner.dim(), "index");
        let labels = label_lists(labels)?;
        add_with(py, vectors, ids, dim, |v, ids| {
            self.inner.add_labelled(v, ids, &labels, batch)
        })
    }

    /// Deletes ids; see `stratavec.Index.remove`.
    #[pyo3(signature = (ids, *, batch = 0))]
    fn remove<'py>(
        &self,
        py: Python<'py>,
        ids: &Bound<'py, PyAny>,
        batch: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        remove_with(py, ids, |ids| self.inner.remove(ids, batch))
    }

    /// Writes the inserts and deletes into the next generation; see
    /// `stratavec.Index.merge`. Ctrl-C stops it, leaving the index as it was.
    #[pyo3(signature = (threads = None))]
    fn merge<'py>(&self, py: Python<'py>, threads: Option<i64>) -> PyResult<Bound<'py, PyDict>> {
        let threads = threads_arg(threads)?;
        let t = std::time::Instant::now();
        let m = interrupt::run(py, |flag| self.inner.merge(threads, flag), to_py)?;
        let d = PyDict::new(py);
        d.set_item("inserted", m.inserted)?;
        d.set_item("deleted", m.deleted)?;
        d.set_item("n_before", m.n_before)?;
        d.set_item("n_after", self.inner.len())?;
        d.set_item("seconds", t.elapsed().as_secs_f64())?;
        d.set_item("index_bytes", m.report.index_bytes)?;
        Ok(d)
    }

    /// Vectors inserted and not yet merged, and rows deleted since.
    #[getter]
    fn pending(&self) -> (usize, usize) {
        self.inner.pending()
    }

    /// The id an `add` without ids gives its first vector: one past the
    /// largest id the index has held.
    #[getter]
    fn next_id(&self) -> i64 {
        self.inner.next_id()
    }

    /// Whether `id` is in the index (built or inserted, not deleted).
    fn __contains__(&self, id: i64) -> bool {
        self.inner.contains(id)
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
        self.inner.with_base(|b| b.metric().as_str())
    }

    #[getter]
    fn profile(&self) -> String {
        self.inner.with_base(|b| b.manifest.profile.clone())
    }

    /// numpy name of the stored element type: "float32", "uint8" or "int8".
    #[getter]
    fn dtype(&self) -> &'static str {
        self.inner.with_base(|b| b.manifest.dtype.long_name())
    }

    #[getter]
    fn cached_nodes(&self) -> usize {
        self.inner.with_base(|b| b.cached_nodes())
    }

    #[getter]
    fn index_dir(&self) -> PathBuf {
        self.inner.with_base(|b| b.dir.clone())
    }

    /// Name of the I/O backend in use ("io_uring+direct", "pread", ...).
    #[getter]
    fn io_backend(&self) -> String {
        self.inner.with_base(|b| b.io_backend())
    }

    /// RAM held, by part, plus "updates" (the delta of inserted vectors,
    /// the deleted rows) and "total" (bytes).
    fn memory<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let updates = self.inner.update_bytes();
        self.inner.with_base(|b| {
            let m = b.memory();
            let d = PyDict::new(py);
            for (part, bytes) in &m.parts {
                d.set_item(part, bytes)?;
            }
            d.set_item("updates", updates)?;
            d.set_item("total", m.total() + updates)?;
            Ok(d)
        })
    }

    /// What the memory planner granted each part, in its order.
    fn memory_plan<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyList>> {
        self.inner.with_base(|b| {
            let m = b.memory();
            let plan = pyo3::types::PyList::empty(py);
            for g in &m.plan {
                let row = PyDict::new(py);
                row.set_item("part", g.part.name())?;
                row.set_item("asked", g.asked)?;
                row.set_item("granted", g.bytes)?;
                row.set_item("note", g.note.clone())?;
                plan.append(row)?;
            }
            Ok(plan)
        })
    }

    /// Searches; see `stratavec.Index.search`. The search's parameters are
    /// keywords (`params`), parsed by the engine's parameter set: the CLI's
    /// flags, by the same names.
    #[pyo3(signature = (queries, k = 10, *, return_stats = false, on_error = "raise", filter = None, filter_way = "auto", **params))]
    #[allow(clippy::too_many_arguments)]
    fn search<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        queries: &Bound<'py, PyAny>,
        k: i64,
        return_stats: bool,
        on_error: &str,
        filter: Option<&Bound<'py, PyAny>>,
        filter_way: &str,
        params: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let this = slf.get();
        // k = 0 and k = -1 get the same message; values above n go to the
        // engine, whose message names the number of vectors.
        let k = count("k", k, 1)?;
        let mask = on_error_mask(on_error)?;
        if params.is_some_and(|p| p.contains("radius").unwrap_or(false)) {
            return Err(PyValueError::new_err(
                "radius: expected no radius for a k-NN search; use Index.range_search",
            ));
        }
        let params = this.params(params, &[("k", k.to_string())])?;
        let (q, nq) = this.queries(py, queries)?;
        let way = filter_way_arg(filter_way)?;
        let filters = match filter {
            Some(f) if !f.is_none() => Some(filters_arg(f, nq, |t| this.inner.parse_filter(t))?),
            _ => None,
        };
        let dim = q.len() / nq.max(1);
        let res = py
            .detach(|| match &filters {
                Some(f) => this.inner.search_filtered(&q, dim, &params, f, way),
                None => this.inner.search(&q, dim, &params),
            })
            .map_err(to_py)?;
        check_failures(py, &res.base, nq, mask)?;
        // The ids the index was built with (ids=, id_column=, add), else rows.
        let mut ids = res.ids;
        let mut dists = res.dists;
        // A failed query's partial list is not a result: its row is empty.
        for (qi, e) in res.base.errors.iter().enumerate() {
            if e.is_some() {
                ids[qi * k..(qi + 1) * k].fill(-1);
                dists[qi * k..(qi + 1) * k].fill(f32::INFINITY);
            }
        }
        let shape = (nq, k);
        let ids = Array2::from_shape_vec(shape, ids)
            .map_err(|e| PyValueError::new_err(e.to_string()))?
            .into_pyarray(py);
        let dists = Array2::from_shape_vec(shape, dists)
            .map_err(|e| PyValueError::new_err(e.to_string()))?
            .into_pyarray(py);
        if return_stats {
            let stats = stats_dict(py, &res.base, nq)?;
            PyTuple::new(py, [dists.into_any(), ids.into_any(), stats.into_any()])
        } else {
            PyTuple::new(py, [dists.into_any(), ids.into_any()])
        }
    }

    /// Range search; see `stratavec.Index.range_search`. Returns
    /// `(lims, D, I)` as faiss does: query i's results are
    /// `I[lims[i]:lims[i+1]]`, nearest first. The starting window is 32
    /// unless `complexity` is given.
    #[pyo3(signature = (queries, radius, *, on_error = "raise", **params))]
    fn range_search<'py>(
        slf: &Bound<'py, Self>,
        py: Python<'py>,
        queries: &Bound<'py, PyAny>,
        radius: f32,
        on_error: &str,
        params: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let this = slf.get();
        let mask = on_error_mask(on_error)?;
        let extra = [
            ("radius", format!("{radius}")),
            ("complexity", RANGE_WINDOW.to_string()),
        ];
        let params = this.params(params, &extra)?;
        let (q, nq) = this.queries(py, queries)?;
        let res = py
            .detach(|| this.inner.search(&q, q.len() / nq.max(1), &params))
            .map_err(to_py)?;
        check_failures(py, &res.base, nq, mask)?;
        let mut lims = vec![0i64];
        let (mut ids, mut dists) = (Vec::new(), Vec::new());
        for (r, e) in res.ranges.iter().zip(&res.base.errors) {
            if e.is_none() {
                ids.extend(r.iter().map(|e| e.0));
                dists.extend(r.iter().map(|e| e.1));
            }
            lims.push(ids.len() as i64);
        }
        PyTuple::new(
            py,
            [
                lims.into_pyarray(py).into_any(),
                dists.into_pyarray(py).into_any(),
                ids.into_pyarray(py).into_any(),
            ],
        )
    }

    fn __repr__(&self) -> String {
        let n = self.inner.len();
        self.inner.with_base(|b| {
            format!(
                "stratavec.Index({:?}, n={}, dim={}, dtype={}, metric={}, profile={}, \
                 memory={:.1} MB, cached_nodes={})",
                b.dir.display().to_string(),
                n,
                b.dim(),
                b.manifest.dtype.long_name(),
                b.metric().as_str(),
                b.manifest.profile,
                b.memory().total() as f64 / 1e6,
                b.cached_nodes()
            )
        })
    }
}

/// Compiled core of the `stratavec` package; import `stratavec` instead.
#[pymodule]
mod _stratavec {
    #[pymodule_export]
    use super::build_index;
    #[pymodule_export]
    use super::collection::{
        collection_info, commit_collection, merge_results, partition_collection, plan_visits,
        route_queries, segment_budgets, Collection,
    };
    #[pymodule_export]
    use super::keywords::parameters;
    #[pymodule_export]
    use super::Index;

    use pyo3::prelude::*;

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add("__version__", env!("CARGO_PKG_VERSION"))
    }
}
