"""Collections: a vector set split into segments, each a stratavec index.

A collection directory holds ``collection.json``, one index a segment
(``seg-0000``, ...) whose ids are the collection's global ids, and, for a
k-means partition, ``centroids.fbin`` (one centroid a segment) so a query
can search only its ``probe`` nearest segments. Search fans out to the
segments and merges their answers exactly (ties by id, as one index does).

The build is three steps, each usable alone so another driver (the Ray
backend, :mod:`stratavec.ray_collection`) can run the middle one its own
way: :func:`partition_collection`, one :func:`stratavec.build_index` a
segment into a staging directory (:func:`segment_plan` says what each gets),
and :func:`commit_collection`, which publishes the staging directory
atomically -- a failed build leaves the previous collection as it was.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from . import _stratavec
from ._stratavec import (
    collection_info,
    commit_collection,
    merge_results,
    partition_collection,
    plan_visits,
    route_queries,
    segment_budgets,
)

PathLike = Union[str, "os.PathLike[str]"]

__all__ = [
    "Collection",
    "SegmentJob",
    "build_collection",
    "collection_info",
    "commit_collection",
    "load_vectors",
    "merge_results",
    "partition_collection",
    "plan_visits",
    "route_queries",
    "segment_budgets",
    "segment_plan",
    "staging_dir",
]


def load_vectors(data: Union[np.ndarray, PathLike]) -> np.ndarray:
    """``data`` as a 2-D array: an array as it is; a ``.fbin``/``.u8bin``/
    ``.i8bin`` file (int32 n, int32 dim, then rows) or a ``.npy`` mapped."""
    if isinstance(data, np.ndarray):
        return data
    path = Path(os.fspath(data))
    if path.suffix == ".npy":
        return np.load(path, mmap_mode="r")
    dtypes = {".fbin": np.float32, ".u8bin": np.uint8, ".i8bin": np.int8}
    if path.suffix not in dtypes:
        raise ValueError(
            f"{path}: expected an array or a .fbin, .u8bin, .i8bin or .npy file, "
            f"found suffix {path.suffix!r}"
        )
    header = np.fromfile(path, dtype=np.int32, count=2)
    if header.size != 2:
        raise ValueError(f"{path}: header: expected n and dim (8 bytes), found {header.size * 4} bytes")
    n, dim = int(header[0]), int(header[1])
    dtype = np.dtype(dtypes[path.suffix])
    want = 8 + n * dim * dtype.itemsize
    if path.stat().st_size != want:
        raise ValueError(
            f"{path}: size: expected {want} bytes for {n} x {dim}, found {path.stat().st_size}"
        )
    return np.memmap(path, dtype=dtype, mode="r", offset=8, shape=(n, dim))


def staging_dir(collection_dir: PathLike) -> Path:
    """A new staging directory beside ``collection_dir``, named as the
    engine's own (``.NAME.building-PID-SEQ``), so a later build of the same
    collection removes it if this process dies before cleaning up."""
    target = Path(os.fspath(collection_dir)).absolute()
    target.parent.mkdir(parents=True, exist_ok=True)
    path = target.with_name(f".{target.name}.building-{os.getpid()}-{time.time_ns()}")
    path.mkdir()
    return path


@dataclass
class SegmentJob:
    """What one segment build gets: its directory name, its rows of the
    data, their global ids, and its share of the memory budget."""

    index: int
    dir_name: str
    rows: np.ndarray
    ids: np.ndarray
    memory_budget_mb: Optional[float]


def segment_plan(
    assignment: np.ndarray,
    segments: int,
    *,
    ids: Optional[np.ndarray] = None,
    memory_budget_mb: Optional[float] = None,
) -> List[SegmentJob]:
    """One :class:`SegmentJob` a segment from ``partition_collection``'s
    assignment; budget shares follow the segments' sizes (as the engine
    splits them at open)."""
    assignment = np.asarray(assignment)
    n = assignment.shape[0]
    if ids is not None and len(ids) != n:
        raise ValueError(f"ids: expected one id a vector ({n}), found {len(ids)}")
    jobs = []
    for s in range(segments):
        rows = np.flatnonzero(assignment == s).astype(np.int64)
        gids = rows if ids is None else np.asarray(ids, dtype=np.int64)[rows]
        share = None if memory_budget_mb is None else memory_budget_mb * len(rows) / n
        jobs.append(SegmentJob(s, f"seg-{s:04d}", rows, np.ascontiguousarray(gids), share))
    return jobs


def build_collection(
    data: Union[np.ndarray, PathLike],
    collection_dir: PathLike,
    *,
    segments: int,
    partition: str = "range",
    metric: str = "l2",
    memory_budget_mb: Optional[float] = None,
    ids: Optional[Any] = None,
    labels: Optional[Any] = None,
    label_names: Optional[Any] = None,
    seed: int = 42,
    **build_kwargs: Any,
) -> Dict[str, Any]:
    """Build a collection of ``data`` at ``collection_dir``: ``segments``
    indexes, built one after another in this process with the keyword
    arguments of :func:`stratavec.build_index` (``profile=``, ...), each
    with its share of ``memory_budget_mb``. ``partition="kmeans"`` lets
    searches skip far segments (``probe=``). ``labels=`` (a list of label
    id lists, one a vector, or a scipy CSR matrix) and ``label_names=``
    go to each segment for its rows, so :meth:`Collection.search` filters
    (``filter=``) as an index does. Returns the collection's description
    (:func:`collection_info`) with ``"build_s"``."""
    from . import build_index

    t0 = time.perf_counter()
    xb = load_vectors(data)
    assignment, centroids = partition_collection(xb, segments, partition, metric, seed)
    jobs = segment_plan(
        assignment,
        segments,
        ids=None if ids is None else np.asarray(ids),
        memory_budget_mb=memory_budget_mb,
    )
    rows_of = _label_lists(labels, len(xb))
    staged = staging_dir(collection_dir)
    try:
        for job in jobs:
            seg_labels = None if rows_of is None else [rows_of[r] for r in job.rows]
            build_index(
                np.ascontiguousarray(xb[job.rows]),
                staged / job.dir_name,
                ids=job.ids,
                labels=seg_labels,
                label_names=label_names if rows_of is not None else None,
                metric=metric,
                seed=seed,
                memory_budget_mb=job.memory_budget_mb,
                **build_kwargs,
            )
        info = commit_collection(
            str(staged),
            collection_dir,
            partition=partition,
            centroids=centroids,
            memory_budget_mb=memory_budget_mb,
        )
    finally:
        if staged.exists():
            shutil.rmtree(staged, ignore_errors=True)
    info["build_s"] = time.perf_counter() - t0
    return info


def _label_lists(labels: Any, n: int) -> Optional[list]:
    """``labels=`` of a collection build as one list of ids a row (a
    segment takes its rows'), or None."""
    if labels is None:
        return None
    if hasattr(labels, "tocsr"):
        m = labels.tocsr()
        rows = [m.indices[m.indptr[r]:m.indptr[r + 1]].tolist() for r in range(m.shape[0])]
    elif isinstance(labels, (str, os.PathLike)):
        raise TypeError("labels: a collection build takes lists of label ids or a scipy CSR matrix, not a path")
    else:
        rows = [np.asarray(r).reshape(-1).tolist() for r in labels]
    if len(rows) != n:
        raise ValueError(f"labels: expected one row a vector ({n}), found {len(rows)}")
    return rows


class Collection:
    """A collection opened for search and updates: every segment open with
    its share of ``memory_budget_mb`` (in proportion to its vectors).

    >>> c = stratavec.Collection.open("my_collection", memory_budget_mb=64)
    >>> D, I = c.search(xq, k=10, complexity=64)            # every segment
    >>> D, I = c.search(xq, k=10, complexity=64, probe=2)   # k-means: nearest 2
    >>> c.add(xb_new, ids=new_ids); c.remove(old_ids); c.merge()
    """

    __slots__ = ("_c",)

    def __init__(
        self,
        collection_dir: PathLike,
        memory_budget_mb: Optional[float] = None,
        io: str = "auto",
        delta_share: float = 0.1,
        auto_merge: bool = True,
    ) -> None:
        self._c = _stratavec.Collection.open(collection_dir, memory_budget_mb, io, delta_share, auto_merge)

    @classmethod
    def open(
        cls,
        collection_dir: PathLike,
        memory_budget_mb: Optional[float] = None,
        io: str = "auto",
        delta_share: float = 0.1,
        auto_merge: bool = True,
    ) -> "Collection":
        """Open the collection in ``collection_dir`` (see :class:`stratavec.Index`
        for ``memory_budget_mb``, ``io``, ``delta_share`` and ``auto_merge``;
        the budget is the total, each segment keeps its delta share of its
        part)."""
        return cls(collection_dir, memory_budget_mb, io, delta_share, auto_merge)

    def add(self, vectors: Any, ids: Any = None, *, labels: Any = None, batch: int = 0) -> Dict[str, Any]:
        """Insert vectors under global ``ids`` (default: the next unused),
        as :meth:`stratavec.Index.add`: each vector goes to one segment (a
        k-means collection's nearest centroid, a range collection's id
        modulo the segment count) and is logged and fsynced there before
        this returns. An id live in any segment is refused. ``labels=``
        (one list of label ids a vector, or a scipy CSR matrix) go with
        the vectors into their segments: filters match them at once. With
        a ``batch`` id a retry applies each segment's part once, so a
        batch that failed half-way is completed by its retry."""
        if labels is not None:
            from . import _as_label_rows

            labels = _as_label_rows(labels)
        return self._c.add(vectors, ids, labels=labels, batch=batch)

    def remove(self, ids: Any, *, batch: int = 0) -> Dict[str, Any]:
        """Delete global ids from the segments holding them; ids no
        segment holds are counted in ``missing``."""
        return self._c.remove(ids, batch=batch)

    def merge(self, threads: Optional[int] = None) -> int:
        """Merge every segment's inserts and deletes into its next
        generation; returns how many segments merged."""
        return self._c.merge(threads)

    @property
    def pending(self) -> Tuple[int, int]:
        """(vectors inserted, rows deleted) not yet merged, over the segments."""
        return self._c.pending

    @property
    def n(self) -> int:
        return self._c.n

    @property
    def dim(self) -> int:
        return self._c.dim

    @property
    def metric(self) -> str:
        return self._c.metric

    @property
    def partition(self) -> str:
        return self._c.partition

    @property
    def profile(self) -> str:
        return self._c.profile

    @property
    def segments(self) -> List[Dict[str, Any]]:
        """Each segment: ``dir``, ``n`` (live now), ``built_n`` (its count in
        collection.json), ``memory_bytes``, ``cached_nodes``."""
        return self._c.segments

    def memory_bytes(self) -> int:
        return self._c.memory_bytes()

    def __len__(self) -> int:
        return self._c.n

    def search(
        self,
        queries: Any,
        k: int = 10,
        *,
        probe: Optional[int] = None,
        probe_shrink: Optional[float] = None,
        return_stats: bool = False,
        on_error: str = "raise",
        filter: Any = None,
        filter_way: str = "auto",
        **params: Any,
    ) -> Tuple[Any, ...]:
        """Search like :meth:`stratavec.Index.search` in every segment a
        query visits: all of them, or for a k-means partition the ``probe``
        whose centroids are nearest. A range partition searches each at list
        size ``complexity``; a k-means partition its nearest segment at
        ``complexity`` and each further one at ``probe_shrink`` (default
        0.5) of the one before, never below ``k`` — far segments hold few
        of a query's neighbours (1.0 searches all at ``complexity``). ``I``
        holds global ids. ``return_stats`` adds per-query counters summed
        over the segments, ``merge_s`` and ``segment_queries``. The other
        keywords are :meth:`stratavec.Index.search`'s (``complexity``,
        ``beam_width``, ``threads``, ...), applied in every segment, and
        ``filter=`` / ``filter_way=`` for a collection built with labels:
        each segment filters its own rows (the statistics count every
        segment's search)."""
        return self._c.search(
            queries,
            k,
            probe=probe,
            probe_shrink=probe_shrink,
            return_stats=return_stats,
            on_error=on_error,
            filter=filter,
            filter_way=filter_way,
            **params,
        )

    def __repr__(self) -> str:
        return repr(self._c)
