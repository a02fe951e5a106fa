"""stratavec: disk-resident approximate nearest neighbor search.

A graph index (Vamana, as in DiskANN) lives on disk; only compressed codes
(PQ) and an optional cache of nodes near the entry point are held in RAM, so
an index far larger than memory can be searched with a few reads per query.

Quick start::

    import numpy as np
    import stratavec

    xb = np.random.rand(100_000, 128).astype(np.float32)   # base vectors
    xq = np.random.rand(1_000, 128).astype(np.float32)     # queries

    stratavec.build_index(xb, "my_index", metric="l2")
    index = stratavec.Index.open("my_index", memory_budget_mb=64)
    D, I = index.search(xq, k=10)       # like faiss: distances, ids (nq, k)

``D`` holds squared L2 distances for ``metric="l2"``, the *negated* inner
product for ``"ip"`` and ``1 - cos`` for ``"cosine"``: smaller is always
closer. ``I`` holds int64 row numbers of the base vectors (or the ids given
with them: ``ids=``, a table's ``id_column=``), ``-1`` where fewer than ``k``
results were found.

Builds and searches release the GIL, so one ``Index`` can be searched from
several Python threads at once.

Errors: ``ValueError`` for bad arguments, bad data and corrupt indexes,
``TypeError`` for unsupported dtypes, ``FileNotFoundError`` when an index or
data file is not there, ``FileExistsError`` when ``build_index`` would
overwrite something that is not an index, and ``OSError`` for I/O failures.
"""

from __future__ import annotations

import os
import textwrap
from typing import TYPE_CHECKING, List, Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from . import _stratavec
from ._stratavec import __version__

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ._stratavec import BuildParams, SearchParams

__all__ = [
    "build_index",
    "Index",
    "__version__",
    "Collection",
    "build_collection",
    "collection_info",
    "commit_collection",
    "merge_results",
    "partition_collection",
    "plan_visits",
    "route_queries",
    "segment_budgets",
]

PathLike = Union[str, "os.PathLike[str]"]


def _is_arrow_table(data: Any) -> bool:
    """A pyarrow Table or RecordBatch, without importing pyarrow."""
    t = type(data)
    return t.__module__.startswith("pyarrow") and t.__name__ in ("Table", "RecordBatch")


def _vector_column_of(table: Any, column: Optional[str]) -> str:
    """``column``, or the table's only list-of-floats column."""
    import pyarrow as pa

    def is_vectors(t: Any) -> bool:
        lists = pa.types.is_fixed_size_list(t) or pa.types.is_list(t) or pa.types.is_large_list(t)
        return lists and pa.types.is_floating(t.value_type)

    if column is not None:
        if column not in table.schema.names:
            raise ValueError(
                f"column: expected a column of the table, found {column!r} "
                f"(the table has {', '.join(table.schema.names)})"
            )
        return column
    found = [f.name for f in table.schema if is_vectors(f.type)]
    if len(found) != 1:
        raise ValueError(
            "column: expected the table's one column of vectors (a list of floats) or the "
            f"one to use named, found {len(found)}: {', '.join(found) or 'none'}"
        )
    return found[0]


def _arrow_vectors(table: Any, name: str) -> np.ndarray:
    """A table's column of vectors as a 2-D float array, checked row by row
    as the Rust table reader checks files (no nulls, one dimension)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = table.column(name)
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    t = col.type
    lists = pa.types.is_fixed_size_list(t) or pa.types.is_list(t) or pa.types.is_large_list(t)
    if not lists or not pa.types.is_floating(t.value_type):
        raise ValueError(
            f"column {name!r}: expected a fixed-size list or list of float32, float16 or "
            f"float64, found {t}"
        )
    if col.null_count:
        row = next(i for i, v in enumerate(col.is_null().to_pylist()) if v)
        raise ValueError(f"column {name!r}, row {row}: expected a vector, found null")
    if len(col) == 0:
        raise ValueError(f"column {name!r}: expected at least 1 row, found an empty table")
    lengths = pc.list_value_length(col).to_numpy()
    if (lengths != lengths[0]).any():
        row = int(np.argmax(lengths != lengths[0]))
        raise ValueError(
            f"column {name!r}, row {row}: expected {lengths[0]} components (the first "
            f"row's), found {lengths[row]}"
        )
    flat = col.flatten()
    if flat.null_count:
        raise ValueError(f"column {name!r}: expected numbers, found a null inside a vector")
    values = flat.to_numpy(zero_copy_only=False)
    if values.dtype != np.float32:
        values = values.astype(np.float32)
    return values.reshape(len(col), int(lengths[0]))


def _arrow_ids(table: Any, name: str) -> np.ndarray:
    import pyarrow as pa

    if name not in table.schema.names:
        raise ValueError(
            f"id_column: expected a column of the table, found {name!r} "
            f"(the table has {', '.join(table.schema.names)})"
        )
    col = table.column(name)
    if not pa.types.is_integer(col.type):
        raise ValueError(f"column {name!r}: expected an integer column, found {col.type}")
    if col.null_count:
        raise ValueError(f"column {name!r}: expected an id in every row, found nulls")
    return _as_ids(col.to_numpy(), f"column {name!r}")


def _as_ids(ids: Any, what: str = "ids") -> np.ndarray:
    """One int64 id a vector; unsigned ids above 2**63 - 1 are refused."""
    a = np.asarray(ids)
    if a.ndim != 1:
        raise ValueError(f"{what}: expected a 1-D array of ids, found shape {a.shape}")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"{what}: expected integers, found dtype {a.dtype}")
    if a.dtype == np.uint64 and a.size and a.max() > np.iinfo(np.int64).max:
        raise ValueError(f"{what}: expected ids of at most 2**63 - 1, found {a.max()}")
    return np.ascontiguousarray(a, dtype=np.int64)


def build_index(
    data: Union[np.ndarray, PathLike, Any],
    index_dir: PathLike,
    *,
    ids: Optional[Any] = None,
    column: Optional[str] = None,
    id_column: Optional[str] = None,
    threads: Optional[int] = None,
    labels: Optional[Any] = None,
    label_names: Optional[Sequence[str]] = None,
    label_column: Optional[str] = None,
    **params: Unpack[BuildParams],
) -> Dict[str, Any]:
    """Build a disk index of ``data`` in the directory ``index_dir``.

    Parameters
    ----------
    data : numpy.ndarray or str or os.PathLike
        Either a 2-D array of shape ``(n, dim)`` -- ``float32``, ``uint8`` or
        ``int8`` are used as they are, ``float64`` is converted to
        ``float32`` (a copy) -- or the path of a vector file (``.fbin``,
        ``.u8bin``, ``.i8bin``, ``.fvecs``, ``.bvecs``, ``.npy``), which is
        memory-mapped rather than loaded, or of a Parquet or Arrow IPC table
        (``.parquet``, ``.arrow``, ``.feather``, ``.arrows``), streamed in
        batches. Also a ``pyarrow.Table`` or ``RecordBatch``, or a list of
        1-D arrays of one length. Row ``i`` gets id ``i`` unless ``ids`` or
        ``id_column`` say otherwise. Do not modify the array while the build
        runs (the GIL is released and the array is read in place).
    index_dir : str or os.PathLike
        Where to write the index. Must not exist, be an empty directory, or
        hold an earlier stratavec index (which is replaced atomically once
        the new one is complete).
    ids : array-like of int, optional
        One unique integer id a vector (int64, like faiss's
        ``add_with_ids``), kept in the index: :meth:`Index.search` returns
        these instead of row numbers.
    column : str, optional
        Table input: the column of vectors (a fixed-size list or list of
        float32, float16 or float64). Default: the table's only such column.
    id_column : str, optional
        Table input: an integer column of unique ids, kept in the index and
        returned by search instead of row numbers.
    threads : int, optional
        Build threads (default: all cores). The index is the same for any
        value.
    labels : list of lists of int, scipy.sparse CSR matrix, or path, optional
        Labels of the vectors, for filtered search (``Index.search(...,
        filter=...)``): row ``i`` lists vector ``i``'s label ids (a CSR
        matrix's nonzero columns, as big-ann-benchmarks' filter track
        writes them in a ``.spmat`` file, whose path may be given).
    label_names : list of str, optional
        A name for each label id, in order, so filters may name them
        (``"lex:noun.animal AND pos:n"``).
    label_column : str, optional
        Table input: a column of labels instead of ``labels=`` — integer
        label ids, or strings (each distinct string a named label), one a
        row or a list a row; a null row has none.
    **params
        The build's parameters, by the names of ``stratavec build``'s flags
        (``graph_degree=48`` is ``--graph-degree 48``); what is not given
        is the profile's, or fitted to the data. An unknown keyword or a
        value the parameter does not take is a ``ValueError`` naming it:

{build_params}

    Returns
    -------
    dict
        The build report: ``n``, ``dim``, ``threads``, ``stages`` (stage name
        -> seconds), ``total_s``, ``peak_rss_bytes``, ``index_bytes`` and
        ``graph_mean_degree``; ``chosen``: the parameters left as ``None``
        that were fitted to the data rather than given their usual default
        (name -> why; also in the index's manifest.json); for a shuffled
        layout also ``shuffle``: the overlap ratio OR(G) of id order and
        after each stage.

    Raises
    ------
    ValueError
        Bad parameters, an array that is not 2-D or is empty, NaN/inf values.
    TypeError
        An unsupported dtype.
    FileNotFoundError
        ``data`` is a path that does not exist.
    FileExistsError
        ``index_dir`` holds something other than a stratavec index.
    KeyboardInterrupt
        Ctrl-C (or whatever a signal handler raises) stops the build within
        a fraction of a second; the partial build is removed and a previous
        index at ``index_dir`` is left as it was.
    """
    if _is_arrow_table(data):
        name = _vector_column_of(data, column)
        if id_column is not None:
            if ids is not None:
                raise ValueError("ids, id_column: expected one of them, found both")
            ids = _arrow_ids(data, id_column)
        data, column, id_column = _arrow_vectors(data, name), None, None
    elif isinstance(data, (list, tuple)):
        if not data:
            raise ValueError("data: expected at least one vector, found an empty list")
        rows = [np.asarray(r) for r in data]
        bad = next((i for i, r in enumerate(rows) if r.shape != rows[0].shape), None)
        if bad is not None or rows[0].ndim != 1:
            i = bad if bad is not None else 0
            want = rows[0].shape if bad is not None else "(dim,)"
            raise ValueError(
                f"data[{i}]: expected a 1-D array of shape {want}, found shape {rows[i].shape}"
            )
        data = np.stack(rows)
    if ids is not None:
        ids = _as_ids(ids)
    if labels is not None:
        labels = _as_label_rows(labels)
    if label_names is not None:
        label_names = [str(x) for x in label_names]
    return _stratavec.build_index(
        data, index_dir, threads=threads, column=column, id_column=id_column, ids=ids,
        labels=labels, label_names=label_names, label_column=label_column, **params
    )


def _as_label_rows(labels: Any) -> Any:
    """``labels=`` as the engine takes it: a path as it is, else the CSR
    arrays (indptr, indices) of a scipy sparse matrix or of lists of ids."""
    if isinstance(labels, (str, os.PathLike)):
        return os.fspath(labels)
    if hasattr(labels, "tocsr"):  # a scipy.sparse matrix or array
        m = labels.tocsr()
        return m.indptr.astype(np.int64).tolist(), m.indices.astype(np.int64).tolist()
    indptr, indices = [0], []
    for i, row in enumerate(labels):
        row = np.asarray(row).reshape(-1)
        if row.size and row.dtype.kind not in "iu":
            raise TypeError(f"labels[{i}]: expected integer label ids, found {row.dtype}")
        indices.extend(int(x) for x in row)
        indptr.append(len(indices))
    return indptr, indices

class Index:
    """A stratavec index opened for search.

    Open with :meth:`Index.open` (or ``Index(index_dir, ...)``, which is the
    same). What stays in RAM is the PQ codes, the I/O buffers and, given a
    ``memory_budget_mb``, a cache of the graph nodes nearest the entry point
    (filled breadth-first until the budget is spent); everything else is read
    from disk per query.

    Examples
    --------
    >>> index = stratavec.Index.open("my_index", memory_budget_mb=64)
    >>> D, I = index.search(xq, k=10, complexity=100)
    >>> D, I, stats = index.search(xq, k=10, return_stats=True)
    >>> stats["reads"].mean(), stats["qps"]
    """

    __slots__ = ("_index",)

    def __init__(
        self,
        index_dir: PathLike,
        memory_budget_mb: Optional[float] = None,
        io: str = "auto",
        navigation_graph: bool = True,
        sqpoll: bool = False,
        delta_share: float = 0.1,
        auto_merge: bool = True,
    ) -> None:
        self._index = _stratavec.Index.open(
            index_dir, memory_budget_mb, io, navigation_graph, sqpoll, delta_share, auto_merge
        )

    @classmethod
    def open(
        cls,
        index_dir: PathLike,
        memory_budget_mb: Optional[float] = None,
        io: str = "auto",
        navigation_graph: bool = True,
        sqpoll: bool = False,
        delta_share: float = 0.1,
        auto_merge: bool = True,
    ) -> "Index":
        """Open the index in ``index_dir``.

        Parameters
        ----------
        index_dir : str or os.PathLike
            A directory written by :func:`build_index`.
        memory_budget_mb : float, optional
            RAM the index may hold, in MB (10**6 bytes): PQ codes + I/O
            buffers + node cache. The budget is enforced: one too small for
            the codes and buffers raises ``ValueError`` saying how much is
            needed. ``None`` keeps codes and buffers only (no cache).
        io : {"auto", "io_uring", "pread", "buffered", "ram", "mmap", "simulated:LAT_NS[,GBPS]"}
            I/O backend. ``"auto"`` picks io_uring with O_DIRECT when the
            machine allows it and falls back otherwise; ``"ram"`` reads the
            whole index into memory (for tests and small indexes). The
            memory tiers (for the ``tiered`` profile): ``"mmap"`` maps the
            index file and reads it in place (on a DAX/CXL mapping, the
            tier itself); ``"simulated:1000,10"`` does the same with each
            read held to 1 µs and the reads to 10 GB/s together.
        navigation_graph : bool
            Start searches from the index's navigation graph, if it has one
            (Starling §4.3). ``False`` starts from the medoid and gives the
            graph's memory to the node cache instead.
        sqpoll : bool
            io_uring only: reads are submitted, and their completions'
            kernel work done, by a kernel thread (SQPOLL) instead of the
            searching thread. For one query at a time with a spare core
            (``search(..., threads=1, in_flight=1)``): it shortens a query
            whose own CPU is its latency, and keeps a core busy while
            queries come.
        delta_share : float
            The share of ``memory_budget_mb`` kept for vectors inserted with
            :meth:`add` (searched from memory until :meth:`merge`) and for
            deleted rows; the index's own parts get the rest, so the budget
            holds. Without a budget the delta may hold 256 MB.
        auto_merge : bool
            When an :meth:`add` fills the delta's share, merge (``True``)
            or raise ``ValueError`` saying so (``False``).

        Raises
        ------
        FileNotFoundError
            ``index_dir`` does not exist or holds no ``manifest.json``.
        ValueError
            The index is corrupt, truncated, from a newer stratavec, or the
            budget is too small.
        """
        return cls(index_dir, memory_budget_mb, io, navigation_graph, sqpoll, delta_share, auto_merge)

    def add(self, vectors: Any, ids: Any = None, *, labels: Any = None, batch: int = 0) -> Dict[str, Any]:
        """Insert vectors, as faiss's ``add`` / ``add_with_ids``.

        The batch is appended to the index's write-ahead log and fsynced
        before this returns: once it returns, the vectors survive a crash.
        They are searched at once (from an in-memory graph beside the disk
        index) and written into the index by :meth:`merge`.

        Parameters
        ----------
        vectors : array_like, shape (n, dim) or (dim,)
        ids : array_like of int64, optional
            One id a vector, unique and not in the index (delete an id
            first to replace it). Default: the next unused ids.
        labels : list of lists of int, scipy.sparse CSR matrix, or path, optional
            One label set a vector (as ``build_index``'s ``labels=``), for
            an index built with labels: filtered searches match them at
            once, and :meth:`merge` writes them into the index. Label ids
            only; in an index with label names, ids it names.
        batch : int
            A non-zero id for this call: a retry with the same id (after a
            timeout, say) is applied once.

        Returns
        -------
        dict
            ``seq`` (the log record), ``count`` (vectors inserted),
            ``missing`` (0), ``repeated`` (a retried batch), ``first_id``
            (the first vector's id; without ``ids`` the others follow it).
        """
        if labels is not None:
            labels = _as_label_rows(labels)
        return self._index.add(vectors, ids, labels=labels, batch=batch)

    def remove(self, ids: Any, *, batch: int = 0) -> Dict[str, Any]:
        """Delete ids, as faiss's ``remove_ids``: they are never returned
        again. Ids that are not in the index are counted in ``missing``,
        not an error. Logged and fsynced before it returns, like :meth:`add`."""
        return self._index.remove(ids, batch=batch)

    def merge(self, threads: Optional[int] = None) -> Dict[str, Any]:
        """Write the inserted vectors and the deletes into the index's next
        generation (FreshDiskANN's merge) and switch to it; searches go on
        meanwhile. Returns ``inserted``, ``deleted``, ``n_before``,
        ``n_after``, ``seconds`` and ``index_bytes``."""
        return self._index.merge(threads)

    @property
    def pending(self) -> Tuple[int, int]:
        """(vectors inserted, rows deleted) not yet merged."""
        return self._index.pending

    @property
    def next_id(self) -> int:
        """The id :meth:`add` without ids gives its first vector: one past
        the largest id the index has held."""
        return self._index.next_id

    def __contains__(self, id: int) -> bool:
        return id in self._index

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return self._index.dim

    @property
    def n(self) -> int:
        """Number of indexed vectors (also ``len(index)``)."""
        return self._index.n

    def __len__(self) -> int:
        return self._index.n

    @property
    def metric(self) -> str:
        """``"l2"``, ``"ip"`` or ``"cosine"``."""
        return self._index.metric

    @property
    def profile(self) -> str:
        """The profile the index was built with (e.g. ``"diskann"``)."""
        return self._index.profile

    @property
    def dtype(self) -> str:
        """numpy name of the stored vectors: ``"float32"``, ``"uint8"`` or ``"int8"``."""
        return self._index.dtype

    @property
    def cached_nodes(self) -> int:
        """Graph nodes held in the RAM cache."""
        return self._index.cached_nodes

    @property
    def index_dir(self) -> str:
        """The index directory."""
        return os.fspath(self._index.index_dir)

    @property
    def io_backend(self) -> str:
        """The I/O backend in use (e.g. ``"io_uring+direct"``)."""
        return self._index.io_backend

    def memory(self) -> Dict[str, int]:
        """RAM held by the index, in bytes, by part (``codes``, ``cache``,
        ``buffers``, and ``map``, ``nav``, ``adjacency`` where held) plus
        ``total``."""
        return self._index.memory()

    def memory_plan(self) -> List[Dict[str, Any]]:
        """The memory planner's grants, in its order: one dict per part
        (``part``, ``asked`` and ``granted`` bytes, ``note`` saying why a
        part got less than it asked for, or ``None``). The build's choice
        of PQ bytes for a budget is in ``build_report.json`` (``pq_plan``)."""
        return self._index.memory_plan()

    def range_search(
        self,
        queries: np.ndarray,
        radius: float,
        *,
        on_error: str = "raise",
        **params: Unpack[SearchParams],
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every indexed vector within ``radius`` of each query, like faiss.

        The distance is the index's reported distance (squared L2, negated
        inner product, or 1 - cosine). The search starts with a candidate
        list of ``complexity`` (default 32) and doubles it while at least
        the share ``range_phi`` of it lies within the radius, up to
        ``range_max_complexity`` (Starling's range search; candidates are
        resumed, never re-searched). ``on_error`` and the other keywords
        are as in :meth:`search` (a masked query has an empty slice).

        Returns
        -------
        lims : numpy.ndarray of int64, shape (nq + 1,)
        D : numpy.ndarray of float32
        I : numpy.ndarray of int64
            Query ``i``'s results are ``I[lims[i]:lims[i + 1]]`` with
            distances ``D[lims[i]:lims[i + 1]]``, nearest first.
        """
        return self._index.range_search(queries, float(radius), on_error=on_error, **params)

    def search(
        self,
        queries: np.ndarray,
        k: int = 10,
        *,
        return_stats: bool = False,
        on_error: str = "raise",
        filter: Optional[Union[str, Sequence[Optional[str]]]] = None,
        filter_way: str = "auto",
        **params: Unpack[SearchParams],
    ) -> Union[Tuple[np.ndarray, np.ndarray], Tuple[np.ndarray, np.ndarray, Dict[str, Any]]]:
        """Find the ``k`` nearest neighbours of each query.

        Parameters
        ----------
        queries : numpy.ndarray
            Shape ``(nq, dim)``, or ``(dim,)`` for one query. ``float32``;
            ``float64``, ``uint8`` and ``int8`` are converted. For a
            ``uint8``/``int8`` index the values must be integers in that
            type's range.
        k : int
            Neighbours per query; 1 to ``len(index)``.
        return_stats : bool
            Also return a dict of statistics: per-query numpy arrays
            ``reads``, ``bytes``, ``hops``, ``cache_hits``, ``exact``,
            ``estimated``, ``wasted``, ``latency_us``, and ``nq``, ``wall_s``, ``qps``,
            ``io_wait_s``, ``io_backend``, ``proc_read_bytes``, ``failed``,
            and ``errors`` (query index -> message, for failed queries);
            filtered searches: ``filter_way`` (each query's way) and
            ``filter_matches`` (the rows its filter matched).
        on_error : {"raise", "mask"}
            What a query whose read failed (or whose record is corrupt)
            does to the batch. ``"raise"``: ``OSError`` for the batch.
            ``"mask"``: the other queries' results are returned, the failed
            rows hold ``-1``/``inf``, and a ``RuntimeWarning`` gives the
            count and the first error (``stats["errors"]`` has them all).
            Either way no other query is affected.
        filter : str or list of str, optional
            Return only vectors whose labels match (an index built with
            ``labels=``): label names or ids joined by ``AND``, ``OR``,
            ``NOT`` and parentheses, e.g. ``"lex:noun.animal AND NOT
            pos:v"``; one expression for every query, or a list with one a
            query (``None``: unfiltered). An unknown label or a malformed
            expression is a ``ValueError`` naming the token and its
            position. Fewer than ``k`` matches leave ``-1``/``inf`` slots.
        filter_way : {"auto", "pre", "in-search", "post"}
            How filtered queries are searched: ``"auto"`` chooses per query
            from its filter's selectivity (``stats["filter_way"]`` says
            which); the others force one way on every filtered query.
        **params
            The search's parameters, by the names of ``stratavec search``'s
            flags (``beam_width=2`` is ``-W 2``); what is not given is the
            index profile's. An unknown keyword or a value the parameter does
            not take is a ``ValueError`` naming it:

{search_params}

        Returns
        -------
        D : numpy.ndarray of float32, shape (nq, k)
            Distances, closest first (see the module docs for each metric);
            ``inf`` where there is no result.
        I : numpy.ndarray of int64, shape (nq, k)
            Ids (row numbers of the build data); ``-1`` where there is no
            result. A 1-D query gives shape ``(1, k)``, as in faiss.
        stats : dict
            Only with ``return_stats=True``.

        Raises
        ------
        ValueError
            Wrong dimension, NaN/inf in the queries, ``k`` out of range, an
            empty or 3-D array, and so on.
        TypeError
            An unsupported dtype.
        OSError
            Reads failed for some queries and ``on_error="raise"`` (the
            message says how many and gives the first error).
        """
        return self._index.search(
            queries, k, return_stats=return_stats, on_error=on_error, filter=filter,
            filter_way=filter_way, **params
        )

    def __repr__(self) -> str:
        return repr(self._index)


def _parameter_docs(which: str, indent: str) -> str:
    """The numpydoc entries of a parameter set, from the engine's own
    statement of it (``_stratavec.parameters``: the CLI's help lines)."""
    out = []
    for p in _stratavec.parameters(which):
        kind = p["kind"]
        if p["values"]:
            kind = "{" + ", ".join(f'"{v}"' for v in p["values"]) + "}"
        out.append(f"{indent}{p['keyword']} : {kind}, optional")
        out.extend(
            textwrap.wrap(
                p["help"], 76, initial_indent=indent + "    ", subsequent_indent=indent + "    "
            )
        )
    return "\n".join(out)


build_index.__doc__ = (build_index.__doc__ or "").replace(
    "{build_params}", _parameter_docs("build", "    ")
)
Index.search.__doc__ = (Index.search.__doc__ or "").replace(
    "{search_params}", _parameter_docs("search", "        ")
)


# Collections of segments (stratavec.collection); imported last, as it
# uses build_index.
from .collection import (  # noqa: E402
    Collection,
    build_collection,
    collection_info,
    commit_collection,
    merge_results,
    partition_collection,
    plan_visits,
    route_queries,
    segment_budgets,
)
