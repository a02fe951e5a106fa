"""A stratavec collection on a Ray cluster (issue #24).

A collection is a directory of segments, each an ordinary stratavec index
whose ids are the collection's global ids (``stratavec.commit_collection``
writes it). Two things here put it on Ray:

- :func:`build_collection_ray` builds the segments as parallel Ray tasks
  (the driver only partitions and commits), so a collection builds in the
  time of its largest segment on enough machines, not of all of them.
- :class:`RayCollection` keeps every segment open in a Ray actor, so the
  codes and caches stay warm across requests, and searches a query batch by
  fanning it out to the segments it routes to and merging the answers
  exactly. An actor that dies is restarted by Ray (``max_restarts=-1``) and
  its share of the batch is sent again: a search either returns every
  query's answer or raises, never a shorter result.

Ray is an optional dependency (``pip install 'stratavec[ray]'``); it is
imported only when one of these is used, so ``import stratavec`` never needs
it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
import time
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, Union

import numpy as np

import stratavec
from stratavec.collection import load_vectors, segment_plan, staging_dir

__all__ = [
    "build_collection_ray",
    "RayCollection",
    "SearchCancelled",
    "SegmentBuildError",
    "SegmentUnavailableError",
    "init_local_ray",
    "require_ray",
    "shutdown_ray",
    "signals_kept",
]

PathLike = Union[str, "os.PathLike[str]"]

# Queries a segment actor searches between two looks at its deadline and
# its cancellation flag (at least; more with many threads, so each chunk
# still keeps every thread busy).
CHUNK_ROWS = 64
# How often a search waiting on its actors looks at its cancel event.
CANCEL_POLL_S = 0.1

RAY_MISSING = (
    "stratavec's Ray backend needs Ray: pip install 'stratavec[ray]' "
    "(installs ray[serve] at the tested version)"
)


class _Call(NamedTuple):
    """One actor call of a fan-out: ``rows`` of the batch (``queries``,
    or a Ray reference to the whole batch) searched in ``segment`` at list
    size ``complexity``."""

    segment: int
    complexity: int
    queries: Any
    rows: np.ndarray
    #: The rows' filters when the search has one a query (issue #56), else
    #: None (a single expression stays in the search keywords).
    filters: Optional[list] = None


class SegmentBuildError(RuntimeError):
    """A segment's build task failed; nothing was committed.

    ``segment`` is its number, ``cause`` the task's exception."""

    def __init__(self, segment: int, message: str, cause: BaseException):
        super().__init__(message)
        self.segment = segment
        self.cause = cause


class SegmentUnavailableError(RuntimeError):
    """A segment's actor kept failing after ``max_retries`` retries.

    Raised rather than returning the other segments' answers alone, which
    would be a silently worse result."""

    def __init__(self, segment: int, message: str):
        super().__init__(message)
        self.segment = segment


def require_ray() -> Any:
    """The ``ray`` module, or ImportError saying how to install it."""
    try:
        import ray
    except ImportError as e:
        raise ImportError(RAY_MISSING) from e
    if not hasattr(ray, "remote"):
        # A directory named ray (Ray's own /tmp/ray, in the working
        # directory) imports as an empty namespace package.
        raise ImportError(f"{RAY_MISSING}; found a 'ray' that is not Ray: {getattr(ray, '__path__', ray)}")
    return ray


class SearchCancelled(RuntimeError):
    """A segment search stopped part-way because its caller gave up on it
    (its deadline passed, or the call was cancelled)."""


@contextlib.contextmanager
def signals_kept(signums: Tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)) -> Any:
    """Puts back the Python handlers of ``signums`` on exit.

    ``ray.init`` installs its own SIGTERM handler and Ray's native code may
    take over signals: a library or test that starts Ray must not change
    how the process answers Ctrl-C (``KeyboardInterrupt``) afterwards.
    Re-installing the saved handler also re-arms Python's native one."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal.signal works only on the main thread
        return
    saved = {s: signal.getsignal(s) for s in signums}
    try:
        yield
    finally:
        for s, handler in saved.items():
            if handler is not None:  # None: not installed from Python, nothing to restore
                signal.signal(s, handler)


def init_local_ray(**kwargs: Any) -> Any:
    """Start a Ray cluster on this machine only: every Ray process listens
    on 127.0.0.1, token authentication stays as Ray sets it, and the
    process's SIGINT/SIGTERM handlers are left as they were.

    ``kwargs`` go to ``ray.init`` (``num_cpus``, ``object_store_memory``,
    ...); ``include_dashboard`` defaults to False.

    Why the environment variable: ``ray.init(_node_ip_address="127.0.0.1")``
    alone is not enough on Linux, where Ray replaces a loopback address by
    the machine's routable one (``services.resolve_ip_for_localhost``) and
    its servers then listen on every interface. With
    ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` (Ray's switch for single-machine
    clusters) the node address stays 127.0.0.1, and Ray's servers bind the
    node address when it is loopback. Set only while the cluster starts, so
    a later ``ray.init(address=...)`` of this process can join a real
    cluster. (Ray Serve replicas also open a gRPC port on every interface;
    :mod:`stratavec.serve` binds that one to loopback itself.)"""
    ray = require_ray()
    from ray._private import ray_constants

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    kwargs.setdefault("include_dashboard", False)
    kwargs.setdefault("_node_ip_address", "127.0.0.1")
    var = ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR
    old_env, old_flag = os.environ.get(var), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[var] = "0"  # the processes ray.init starts (raylet, GCS, agents) read it
    ray_constants.ENABLE_RAY_CLUSTER = False  # this one read it when ray was imported
    try:
        with signals_kept():
            return ray.init(**kwargs)
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = old_flag
        if old_env is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = old_env


def shutdown_ray() -> None:
    """``ray.shutdown()``, leaving SIGINT/SIGTERM handling as it was."""
    ray = require_ray()
    with signals_kept():
        ray.shutdown()


def _one_line(e: BaseException) -> str:
    """``Type: first line of the message``, for errors that name a cause."""
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"


def _actor_errors(ray: Any) -> Tuple[type, ...]:
    """The exceptions that mean "the actor died or is restarting", as
    opposed to an error the search itself raised (bad k, I/O): only these
    are retried."""
    ex = ray.exceptions
    names = ("RayActorError", "ActorDiedError", "ActorUnavailableError")
    return tuple(getattr(ex, n) for n in names if hasattr(ex, n))


# ---------------------------------------------------------------- build


def _check_ids(ids: Any, n: int) -> np.ndarray:
    """Global ids: one int64 a row, unique and not negative (-1 marks an
    empty result slot). ``commit_collection`` also refuses duplicates
    across segments, but only once every segment is built: checking here
    fails before a long distributed build rather than after it."""
    a = np.asarray(ids)
    if a.ndim != 1 or a.shape[0] != n:
        raise ValueError(f"ids: expected {n} ids (one a row), found shape {a.shape}")
    if not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"ids: expected integers, found dtype {a.dtype}")
    if a.dtype == np.uint64 and a.max() > np.iinfo(np.int64).max:
        raise ValueError(f"ids: expected ids of at most 2**63 - 1, found {a.max()}")
    a = np.ascontiguousarray(a, dtype=np.int64)
    if (a < 0).any():
        raise ValueError(f"ids: expected ids >= 0 (-1 marks an empty result), found {a.min()}")
    uniq, counts = np.unique(a, return_counts=True)
    if uniq.size != n:
        raise ValueError(f"ids: expected unique ids, found {int(uniq[counts > 1][0])} more than once")
    return a


def _build_segment(
    out_dir: str,
    source: Any,
    rows: np.ndarray,
    ids: np.ndarray,
    metric: str,
    memory_budget_mb: Optional[float],
    threads: int,
    build_kwargs: Dict[str, Any],
) -> Dict[str, Any]:
    """Ray task: build one segment from its rows of ``source`` (an array
    shipped through the object store, or a file path read here)."""
    xb = load_vectors(source) if isinstance(source, (str, os.PathLike)) else source
    seg = np.ascontiguousarray(xb[rows])
    report = stratavec.build_index(
        seg,
        out_dir,
        ids=ids,
        metric=metric,
        memory_budget_mb=memory_budget_mb,
        threads=threads,
        **build_kwargs,
    )
    return {"dir": out_dir, "n": int(seg.shape[0]), "total_s": report.get("total_s"),
            "node": os.uname().nodename, "pid": os.getpid()}


def _gather_builds(ray: Any, refs: List[Any], dirs: List[str], timeout_s: Optional[float]) -> List[Any]:
    """Every build's report, in segment order; on the first failure the
    other builds are cancelled and waited for (so none still writes into
    the staging directory when it is removed), then SegmentBuildError."""
    index_of = {r: i for i, r in enumerate(refs)}
    results: List[Any] = [None] * len(refs)
    pending = list(refs)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    try:
        while pending:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            done, pending = ray.wait(pending, num_returns=1, timeout=left)
            if not done:
                raise TimeoutError(
                    f"build_collection_ray: segments {sorted(index_of[r] for r in pending)} "
                    f"not built within timeout_s = {timeout_s}"
                )
            for r in done:
                i = index_of[r]
                try:
                    results[i] = ray.get(r)
                except Exception as e:  # the task's own exception, or a lost worker
                    cause = getattr(e, "cause", None) or e  # RayTaskError wraps the task's
                    raise SegmentBuildError(
                        i, f"segment {i} ({dirs[i]}): build failed: {_one_line(cause)}", cause
                    ) from e
    except BaseException:
        for r in pending:
            ray.cancel(r)  # a build stops within a fraction of a second on KeyboardInterrupt
        if pending:
            ray.wait(pending, num_returns=len(pending), timeout=120)
        raise
    return results


def build_collection_ray(
    data: Union[np.ndarray, PathLike],
    dir: PathLike,
    *,
    segments: int,
    partition: str = "range",
    metric: str = "l2",
    memory_budget_mb: Optional[float] = None,
    ids: Optional[Any] = None,
    threads: Optional[int] = None,
    seed: int = 42,
    timeout_s: Optional[float] = None,
    **build_kwargs: Any,
) -> Dict[str, Any]:
    """Build a collection of ``segments`` segments, each as a Ray task.

    The driver partitions the rows (``stratavec.partition_collection``),
    each task builds ``stratavec.build_index(rows, staging/seg-NNNN,
    ids=global ids, ...)`` and the driver commits the staging directory
    (``stratavec.commit_collection``), which replaces a previous
    collection at ``dir`` atomically. If any segment fails, the others are
    cancelled, the staging directory (a hidden sibling of ``dir``) is
    removed and a previous collection at ``dir`` is left as it was.

    Parameters
    ----------
    data : numpy.ndarray or path
        ``(n, dim)`` vectors. An array is put in Ray's object store once
        and each task takes its rows from it; a ``.fbin`` / ``.u8bin`` /
        ``.i8bin`` / ``.npy`` path is memory-mapped by the driver (to
        partition) and by each task (to take its rows), so it must be
        readable at that path on every node: one machine, or a shared file
        system. Pass an array when it is not.
    dir : path
        The collection directory: absent, empty, or an earlier collection.
    segments, partition, metric
        As ``stratavec.partition_collection``: ``"range"`` (consecutive
        rows) or ``"kmeans"`` (one centroid a segment; searches may probe
        only the nearest segments).
    seed : int
        Seed of the partition's k-means and of every segment's build (as
        ``stratavec.build_collection``); with ``threads=1`` the segments
        are byte-identical to an in-process build's.
    memory_budget_mb : float, optional
        The collection's total budget; each segment is built for its share,
        in proportion to its rows (what :class:`RayCollection` opens it
        with).
    ids : array-like of int, optional
        A unique id per row (default: the row number). Search answers these.
    threads : int, optional
        Threads each build uses, also the CPUs it asks Ray for. Default:
        the cluster's CPUs over the segments (at least 1).
    timeout_s : float, optional
        Give up (cancel every build, commit nothing) after this long.
    **build_kwargs
        Passed to every segment's ``stratavec.build_index`` (``profile``,
        ``graph_degree``, ``pq_bytes``, ...).

    Returns
    -------
    dict
        ``n``, ``dim``, ``segments`` (rows a segment), ``partition_s``,
        ``build_s`` (the parallel builds, wall), ``commit_s``, ``total_s``
        and ``reports`` (each segment's ``dir``, ``n``, ``total_s``,
        ``node``).
    """
    ray = require_ray()
    t0 = time.perf_counter()
    for bad in ("index_dir", "data"):
        if bad in build_kwargs:
            raise TypeError(f"{bad}: set by build_collection_ray itself, found it among the build arguments")
    dir = os.path.abspath(os.fspath(dir))
    # commit_collection's own check, made before the builds rather than
    # after them.
    ours = any(os.path.isfile(os.path.join(dir, f)) for f in ("collection.json", "manifest.json"))
    if os.path.exists(dir) and not ours and not (os.path.isdir(dir) and not os.listdir(dir)):
        raise FileExistsError(
            f"{dir}: expected a new path, an empty directory or a stratavec index or collection "
            "(collection.json), found something else; not replacing it"
        )
    xb = load_vectors(data)
    if xb.ndim != 2 or 0 in xb.shape:
        raise ValueError(f"data: expected a non-empty (n, dim) array, found shape {xb.shape}")
    n, dim = xb.shape
    segment_of, centroids = stratavec.partition_collection(xb, segments, partition, metric, seed)
    jobs = segment_plan(
        segment_of,
        segments,
        ids=None if ids is None else _check_ids(ids, n),
        memory_budget_mb=memory_budget_mb,
    )
    t_part = time.perf_counter()

    if not ray.is_initialized():
        init_local_ray()  # what a first remote call would do, on 127.0.0.1 only
    if threads is None:
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        threads = max(1, int(cpus // max(1, min(segments, cpus))))
    build = ray.remote(_build_segment).options(num_cpus=threads, max_retries=0)
    # An array goes into the object store once; each task slices its rows
    # from the shared (zero-copy on its node) object.
    source: Any = os.fspath(data) if not isinstance(data, np.ndarray) else ray.put(xb)

    # Named as the engine names its own, so a later build of this
    # collection removes it should this driver die before its cleanup.
    staged = staging_dir(dir)
    try:
        dirs = [str(staged / job.dir_name) for job in jobs]
        refs = [
            build.remote(
                dirs[job.index],
                source,
                job.rows,
                job.ids,
                metric,
                job.memory_budget_mb,
                threads,
                dict(build_kwargs, seed=seed),
            )
            for job in jobs
        ]
        reports = _gather_builds(ray, refs, dirs, timeout_s)
        t_built = time.perf_counter()
        stratavec.commit_collection(
            str(staged), dir, partition=partition, centroids=centroids, memory_budget_mb=memory_budget_mb
        )
    finally:
        # After a commit the staging directory is gone (moved into dir).
        shutil.rmtree(staged, ignore_errors=True)
    t_end = time.perf_counter()
    return {
        "n": int(n),
        "dim": int(dim),
        "segments": [len(job.rows) for job in jobs],
        "partition": partition,
        "threads_per_segment": threads,
        "partition_s": t_part - t0,
        "build_s": t_built - t_part,
        "commit_s": t_end - t_built,
        "total_s": t_end - t0,
        "reports": reports,
    }


# ---------------------------------------------------------------- search


class SegmentHost:
    """Ray actor: keeps some segments of a collection open for search.

    One per segment by default; ``segments_per_actor`` > 1 groups them
    (fewer processes, one shared Python heap). Segments are opened with
    their share of the collection's budget, so the actors together hold
    what the collection was planned to."""

    def __init__(self, segments: Dict[int, Tuple[str, Optional[float]]], io: str, open_kwargs: Dict[str, Any]):
        self._indexes = {
            i: stratavec.Index.open(d, memory_budget_mb=b, io=io, **open_kwargs)
            for i, (d, b) in segments.items()
        }
        # Queries searched and calls stopped part-way, since this process
        # started: what shows that a cancelled search's work did stop.
        self._rows = 0
        self._stopped = 0

    def ping(self) -> int:
        """The actor's process id (changes when Ray restarts it)."""
        return os.getpid()

    def sizes(self) -> Dict[int, int]:
        """Each segment's live vectors (its log replayed)."""
        return {i: ix.n for i, ix in self._indexes.items()}

    def describe(self) -> Dict[int, Dict[str, Any]]:
        return {
            i: {"n": ix.n, "memory": ix.memory(), "io": ix.io_backend, "pid": os.getpid(),
                "rows_searched": self._rows, "calls_stopped": self._stopped}
            for i, ix in self._indexes.items()
        }

    def search(
        self,
        segment: int,
        queries: np.ndarray,
        k: int,
        complexity: Optional[int],
        threads: Optional[int],
        search_kwargs: Dict[str, Any],
        deadline: Optional[float] = None,
    ) -> Tuple[np.ndarray, np.ndarray]:
        """Segment ``segment``'s top ``k`` for ``queries``, padded with
        inf / -1 when the segment holds fewer than ``k`` vectors (a segment
        search asks for at most its size).

        The rows go to the engine in chunks; between chunks the search
        stops (SearchCancelled) once ``deadline`` (``time.time()``) has
        passed or the caller cancelled the call (``ray.cancel`` only flags
        a running actor call), so a request the server gave up on does not
        keep a core busy to the end of its batch."""
        index = self._indexes[segment]
        kk = min(k, index.n)
        kw = dict(search_kwargs)
        if complexity is not None:
            kw["complexity"] = complexity
        step = max(CHUNK_ROWS, 16 * (threads or os.cpu_count() or 1))
        parts = []
        for first in range(0, queries.shape[0], step):
            why = _stop_reason(deadline)
            if why:
                self._stopped += 1
                raise SearchCancelled(f"segment {segment}: stopped after {first} of {queries.shape[0]} queries: {why}")
            chunk_kw = kw
            if isinstance(kw.get("filter"), list):  # one a query: this chunk's
                chunk_kw = {**kw, "filter": kw["filter"][first:first + step]}
            parts.append(index.search(queries[first:first + step], kk, threads=threads, **chunk_kw))
            self._rows += min(step, queries.shape[0] - first)
        D = np.concatenate([d for d, _ in parts]) if len(parts) > 1 else parts[0][0]
        I = np.concatenate([i for _, i in parts]) if len(parts) > 1 else parts[0][1]
        if kk < k:
            D = np.concatenate([D, np.full((D.shape[0], k - kk), np.inf, np.float32)], axis=1)
            I = np.concatenate([I, np.full((I.shape[0], k - kk), -1, np.int64)], axis=1)
        return D, I


    # ---------------------------------------------------------- writes

    def add(self, segment: int, vectors: np.ndarray, ids: np.ndarray, batch: int,
            labels: Optional[list] = None) -> Dict[str, Any]:
        """Logs and applies an insert to ``segment`` (``Index.add``, with
        its vectors' labels when given): a retry of an applied ``batch``
        (after this actor restarted, say) is answered again, not applied
        twice."""
        return self._indexes[segment].add(vectors, ids, labels=labels, batch=batch)

    def remove(self, segment: int, ids: np.ndarray, batch: int) -> Dict[str, Any]:
        """The ids of ``ids`` this segment holds, deleted (``Index.remove``)."""
        index = self._indexes[segment]
        mine = np.array([i for i in ids.tolist() if i in index], dtype=np.int64)
        if mine.size == 0:
            return {"seq": 0, "count": 0, "missing": 0, "repeated": False, "first_id": -1}
        return index.remove(mine, batch=batch)

    def merge(self, segment: int, threads: Optional[int]) -> Dict[str, Any]:
        index = self._indexes[segment]
        if index.pending == (0, 0):
            return {"inserted": 0, "deleted": 0, "n_after": index.n}
        return index.merge(threads)

    def pending(self) -> Tuple[int, int]:
        """(vectors inserted, rows deleted) not yet merged, over this actor's segments."""
        p = [ix.pending for ix in self._indexes.values()]
        return sum(i for i, _ in p), sum(d for _, d in p)

    def holding(self, segment: int, ids: np.ndarray) -> np.ndarray:
        """Which of ``ids`` are live in ``segment``."""
        index = self._indexes[segment]
        return np.array([i in index for i in ids.tolist()], dtype=bool)

    def next_id(self, segment: int) -> int:
        return self._indexes[segment].next_id


def _stop_reason(deadline: Optional[float]) -> Optional[str]:
    """Why an actor's search should stop now, or None."""
    if deadline is not None and time.time() > deadline:
        return "its deadline passed"
    try:
        import ray

        if ray.get_runtime_context().is_canceled():
            return "it was cancelled"
    except Exception:  # not in a Ray task (a direct call), or an older Ray
        pass
    return None


class RayCollection:
    """A collection searched through Ray actors that keep its segments open.

    Parameters
    ----------
    dir : path
        A collection directory (``collection.json``); every node running an
        actor must see its segments at the same path.
    memory_budget_mb : float, optional
        Total budget; each segment gets its share in proportion to its
        vectors. Default: the budget the collection was built for
        (``collection_info``), or none.
    segments_per_actor : int
        Segments an actor holds (1: one actor a segment).
    max_retries : int
        Times one search resends a segment's queries after its actor died
        or was unavailable, waiting for Ray to restart it; one more failure
        raises :class:`SegmentUnavailableError`.
    io : str
        I/O backend each segment opens with (``stratavec.Index.open``).
    actor_options : dict, optional
        Extra ``.options()`` for the actors (``num_cpus``, scheduling
        strategy, ...). Default: 0 CPUs reserved (a search uses the
        node's cores through its own threads), ``max_concurrency`` 4 so
        concurrent requests overlap, spread over the nodes.
    open_timeout_s : float
        How long to wait for every actor to open its segments.
    open_kwargs
        Other ``stratavec.Index.open`` arguments (``navigation_graph``).
    """

    def __init__(
        self,
        dir: PathLike,
        *,
        memory_budget_mb: Optional[float] = None,
        segments_per_actor: int = 1,
        max_retries: int = 3,
        io: str = "auto",
        actor_options: Optional[Dict[str, Any]] = None,
        open_timeout_s: float = 300.0,
        **open_kwargs: Any,
    ):
        ray = require_ray()
        self._ray = ray
        self._actor_errors = _actor_errors(ray)
        if segments_per_actor < 1:
            raise ValueError(f"segments_per_actor: expected 1 or more, found {segments_per_actor}")
        if max_retries < 0:
            raise ValueError(f"max_retries: expected 0 or more, found {max_retries}")
        self.dir = os.path.abspath(os.fspath(dir))
        info = stratavec.collection_info(self.dir)
        self.info = info
        self.n = int(info["n"])
        self.dim = int(info["dim"])
        self.metric = info["metric"]
        self.partition = info["partition"]
        self.segment_sizes = [int(s["n"]) for s in info["segments"]]
        self.segments = len(self.segment_sizes)
        self.max_retries = int(max_retries)
        self.budgets_mb = self._budgets(info, memory_budget_mb, io)

        options = {"num_cpus": 0, "max_concurrency": 4, "scheduling_strategy": "SPREAD"}
        options.update(actor_options or {})
        # Ray restarts a dead actor (its constructor reopens the segments);
        # calls are not retried by Ray, so the driver sees and counts each
        # failure and resends only what was lost.
        options.update(max_restarts=-1, max_task_retries=0)
        host = ray.remote(SegmentHost).options(**options)
        self._actor_of: List[int] = []
        self._actors: List[Any] = []
        for a, first in enumerate(range(0, self.segments, segments_per_actor)):
            group = range(first, min(first + segments_per_actor, self.segments))
            segs = {i: (info["segments"][i]["dir"], self.budgets_mb[i]) for i in group}
            self._actors.append(host.remote(segs, io, open_kwargs))
            self._actor_of.extend([a] * len(group))
        try:
            self._pids = ray.get([a.ping.remote() for a in self._actors], timeout=open_timeout_s)
            # The live counts: collection.json's are the build's, and the
            # segments' logs and merges have changed them since.
            for sizes in ray.get([a.sizes.remote() for a in self._actors], timeout=open_timeout_s):
                for i, n in sizes.items():
                    self.segment_sizes[i] = int(n)
        except Exception:
            self.close()
            raise
        self.n = sum(self.segment_sizes)

        self._lock = threading.Lock()
        self._stats = {
            "searches": 0,
            "queries": 0,
            "segment_calls": 0,
            "retries": 0,
            "actor_failures": 0,
            "searches_timed_out": 0,
            "searches_cancelled": 0,
            "calls_cancelled": 0,
            "route_s": 0.0,
            "fanout_wait_s": 0.0,
            "merge_s": 0.0,
            "total_s": 0.0,
        }
        self._segment_failures = [0] * self.segments

    def _budgets(self, info: Dict[str, Any], total_mb: Optional[float], io: str) -> List[Optional[float]]:
        """Each segment's budget in MB: its share of ``total_mb`` as the
        in-process collection splits it (``stratavec.segment_budgets``:
        what each segment cannot open without, then the rest by vectors),
        else the share the collection records."""
        if total_mb is not None:
            return [b / 1e6 for b in stratavec.segment_budgets(self.dir, total_mb, io)]
        return [
            None if s.get("memory_budget") is None else s["memory_budget"] / 1e6
            for s in info["segments"]
        ]

    # ------------------------------------------------------------ search

    def _check_queries(self, queries: Any) -> np.ndarray:
        q = np.asarray(queries)
        if q.ndim == 1:
            q = q.reshape(1, -1)
        if q.ndim != 2 or q.shape[0] == 0:
            raise ValueError(f"queries: expected a non-empty (nq, {self.dim}) array, found shape {q.shape}")
        if q.shape[1] != self.dim:
            raise ValueError(
                f"queries: expected {self.dim} components a row (the collection's dim), found {q.shape[1]}"
            )
        if not (np.issubdtype(q.dtype, np.floating) or np.issubdtype(q.dtype, np.integer)):
            raise TypeError(f"queries: expected numbers, found dtype {q.dtype}")
        q = np.ascontiguousarray(q, dtype=np.float32)
        if not np.isfinite(q).all():
            row = int(np.argmax(~np.isfinite(q).all(axis=1)))
            raise ValueError(f"queries: expected finite numbers, found NaN or inf in row {row}")
        return q

    def search(
        self,
        queries: Any,
        k: int = 10,
        complexity: Optional[int] = None,
        probe: Optional[int] = None,
        threads: Optional[int] = None,
        timeout_s: Optional[float] = None,
        probe_shrink: Optional[float] = None,
        cancel: Optional[threading.Event] = None,
        **search_kwargs: Any,
    ) -> Tuple[np.ndarray, np.ndarray]:
        """The ``k`` nearest of each query over the segments it routes to.

        As :meth:`stratavec.Collection.search`: ``complexity`` (default 64)
        is the search list in every segment of a range collection and in a query's nearest
        segment of a k-means one, whose further segments get
        ``probe_shrink`` (default 0.5) of the list before; ``probe`` the
        segments a query visits in a k-means collection (all when None; a
        range collection always searches all). Returns ``(D, I)`` as ``Index.search``: ``(nq, k)``
        float32 distances (smaller is closer) and int64 global ids, inf / -1
        where fewer than ``k`` were found.

        Raises SegmentUnavailableError when a segment's actor failed more
        than ``max_retries`` times in this call, TimeoutError after
        ``timeout_s``, SearchCancelled once ``cancel`` (an Event another
        thread sets) is set, and the search's own errors (ValueError,
        OSError) as they are. On a timeout or cancel the actor calls still
        outstanding are cancelled and stop between chunks of queries: the
        work behind a search given up on does not go on.
        """
        ray = self._ray
        t0 = time.perf_counter()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        q = self._check_queries(queries)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= self.n:
            raise ValueError(f"k: expected an integer in 1..{self.n} (the collection's vectors), found {k!r}")
        k = int(k)
        nq = q.shape[0]
        # The same calls Collection.search makes: each segment's routed rows
        # grouped by the list size their rank gives.
        complexity = 64 if complexity is None else complexity
        visits = stratavec.plan_visits(self.dir, q, complexity, k, probe, probe_shrink)
        t_route = time.perf_counter()

        # A call that searches the whole batch gets the batch put once
        # (zero-copy for every actor on a node); one routed a subset gets
        # just its rows.
        shared = None
        calls: Dict[int, _Call] = {}
        per_query = search_kwargs.get("filter")
        if isinstance(per_query, (list, tuple)):
            if len(per_query) != nq:
                raise ValueError(f"filter: expected one a query ({nq}), found {len(per_query)}")
            search_kwargs = {k: v for k, v in search_kwargs.items() if k != "filter"}
        else:
            per_query = None
        for i, (seg, l, rows) in enumerate(visits):
            rows = np.asarray(rows, dtype=np.int64)
            mine = None if per_query is None else [per_query[r] for r in rows.tolist()]
            if rows.size == nq:
                if shared is None:
                    shared = ray.put(q)
                calls[i] = _Call(seg, l, shared, rows, mine)
            else:
                calls[i] = _Call(seg, l, q[rows], rows, mine)
        answers = self._fan_out(calls, k, threads, search_kwargs, deadline, cancel)
        t_wait = time.perf_counter()
        parts = [(calls[i].rows, answers[i][0], answers[i][1]) for i in sorted(answers)]
        D, I = stratavec.merge_results(nq, k, parts)
        t_end = time.perf_counter()
        with self._lock:
            st = self._stats
            st["searches"] += 1
            st["queries"] += nq
            st["route_s"] += t_route - t0
            st["fanout_wait_s"] += t_wait - t_route
            st["merge_s"] += t_end - t_wait
            st["total_s"] += t_end - t0
        return D, I

    def _submit(self, call: "_Call", k, threads, kw, deadline: Optional[float]) -> Any:
        actor = self._actors[self._actor_of[call.segment]]
        with self._lock:
            self._stats["segment_calls"] += 1
        # The actor gets the deadline as wall-clock time (its own monotonic
        # clock is another machine's); the driver waits on its monotonic one.
        wall = None if deadline is None else time.time() + (deadline - time.monotonic())
        if call.filters is not None:
            kw = {**kw, "filter": call.filters}
        return actor.search.remote(call.segment, call.queries, k, call.complexity, threads, kw, wall)

    def _fan_out(
        self, calls, k, threads, kw, deadline: Optional[float], cancel: Optional[threading.Event]
    ) -> Dict[int, Tuple[np.ndarray, np.ndarray]]:
        """Each call's answer; a call whose actor died is resent (after a
        short wait while Ray restarts it) up to max_retries times. Whatever
        ends the wait early (deadline, cancel, an error) cancels the calls
        still outstanding."""
        ray = self._ray
        self._check_stop(calls, {}, deadline, cancel)  # given up already: send nothing
        pending = {self._submit(c, k, threads, kw, deadline): i for i, c in calls.items()}
        attempts = {i: 0 for i in calls}
        answers: Dict[int, Tuple[np.ndarray, np.ndarray]] = {}
        try:
            while pending:
                self._check_stop(calls, pending, deadline, cancel)
                # Short waits when someone may cancel, so a cancel is seen soon.
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                if cancel is not None:
                    left = CANCEL_POLL_S if left is None else min(left, CANCEL_POLL_S)
                done, _ = ray.wait(list(pending), num_returns=1, timeout=left)
                if not done:
                    continue
                ref = done[0]
                i = pending.pop(ref)
                if self._receive(ref, calls[i].segment, attempts[i], answers, i):
                    attempts[i] += 1
                    # Ray queues calls to a restarting actor; the pause only
                    # spaces retries out when the restart itself keeps
                    # failing (and ends at the deadline or a cancel).
                    pause = min(2.0, 0.05 * 2 ** (attempts[i] - 1))
                    if deadline is not None:
                        pause = min(pause, max(0.0, deadline - time.monotonic()))
                    if cancel is not None:
                        cancel.wait(pause)
                    else:
                        time.sleep(pause)
                    self._check_stop(calls, pending, deadline, cancel)
                    pending[self._submit(calls[i], k, threads, kw, deadline)] = i
        except BaseException:
            for ref in pending:
                ray.cancel(ref)  # queued calls are dropped, running ones stop at their next chunk
            with self._lock:
                self._stats["calls_cancelled"] += len(pending)
            raise
        return answers

    def _check_stop(self, calls, pending, deadline: Optional[float], cancel: Optional[threading.Event]) -> None:
        if cancel is not None and cancel.is_set():
            with self._lock:
                self._stats["searches_cancelled"] += 1
            raise SearchCancelled("search: cancelled by its caller")
        if deadline is not None and time.monotonic() >= deadline:
            late = sorted({calls[i].segment for i in pending.values()})
            with self._lock:
                self._stats["searches_timed_out"] += 1
            if not late:
                raise TimeoutError("search: its timeout_s passed before any segment was asked")
            raise TimeoutError(f"search: segments {late} did not answer within the search's timeout_s")

    def _receive(self, ref, seg: int, attempt: int, answers, i: int) -> bool:
        """Stores call ``i``'s answer; True if its actor failed and the call
        is to be resent, SegmentUnavailableError past max_retries. An actor
        that stopped at its deadline is the search's timeout."""
        try:
            answers[i] = self._ray.get(ref)
            return False
        except self._actor_errors as e:
            with self._lock:
                self._stats["actor_failures"] += 1
                self._segment_failures[seg] += 1
            if attempt >= self.max_retries:
                raise SegmentUnavailableError(
                    seg,
                    f"segment {seg} ({self.info['segments'][seg]['dir']}): its actor failed "
                    f"{attempt + 1} times in one search (max_retries = {self.max_retries}); "
                    f"last error: {_one_line(e)}",
                ) from e
            with self._lock:
                self._stats["retries"] += 1
            return True
        except SearchCancelled as e:  # RayTaskError(SearchCancelled): the actor saw the deadline first
            with self._lock:
                self._stats["searches_timed_out"] += 1
            raise TimeoutError(f"search: segment {seg} stopped at the search's deadline") from e

    # ------------------------------------------------------------ writes

    def _write(self, segment: int, method: str, *args: Any) -> Any:
        """One write call to ``segment``'s actor, resent (same batch id:
        applied once) while the actor restarts, up to max_retries."""
        for attempt in range(self.max_retries + 1):
            actor = self._actors[self._actor_of[segment]]
            try:
                return self._ray.get(getattr(actor, method).remote(segment, *args))
            except self._actor_errors as e:
                with self._lock:
                    self._stats["actor_failures"] += 1
                    self._segment_failures[segment] += 1
                if attempt >= self.max_retries:
                    raise SegmentUnavailableError(
                        segment,
                        f"segment {segment}: its actor failed {attempt + 1} times in one {method} "
                        f"(max_retries = {self.max_retries}); last error: {_one_line(e)}",
                    ) from e
                time.sleep(min(2.0, 0.05 * 2 ** attempt))

    def add(self, vectors: Any, ids: Any = None, *, labels: Any = None, batch: int = 0) -> Dict[str, Any]:
        """Insert vectors under global ``ids`` (default: the next unused),
        as :meth:`stratavec.Collection.add`: each vector to one segment (a
        k-means collection's nearest centroid; a range collection's id
        modulo the segment count), logged and fsynced by the actor holding
        it before this returns. An id live in any segment is refused. A
        ``batch`` id (non-zero) makes the whole call safe to retry: a
        segment that applied its part answers again, the others apply
        theirs. Without one, a batch that failed half-way may be partly in.
        ``labels=`` (one list of label ids a vector, or a scipy CSR matrix)
        go with the vectors into their segments."""
        from .collection import _label_lists

        v = self._check_queries(vectors)
        n = v.shape[0]
        rows_of = _label_lists(labels, n)
        if ids is None:
            start = max(self._write(s, "next_id") for s in range(self.segments))
            ids = np.arange(start, start + n, dtype=np.int64)
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        if ids.shape[0] != n:
            raise ValueError(f"ids: expected {n} (one a vector), found {ids.shape[0]}")
        first_row: Dict[int, int] = {}
        for i, id_ in enumerate(ids.tolist()):
            j = first_row.setdefault(id_, i)
            if j != i:
                raise ValueError(f"id of row {i}: expected ids unique within a batch, found {id_}, "
                                 f"also the id of row {j}")
        if self.partition == "kmeans":
            routes = stratavec.route_queries(self.dir, v, 1)
            target = np.zeros(n, dtype=np.int64)
            for s, rows in enumerate(routes):
                target[np.asarray(rows, dtype=np.int64)] = s
        else:
            target = np.mod(ids, self.segments)
        parts = []
        for s in range(self.segments):
            rows = np.flatnonzero(target == s)
            if rows.size:
                parts.append((s, rows))
        # An id live in another segment than its own is refused; one live in
        # its own is a retried batch's (the segment answers it again) or,
        # without a batch id, a duplicate the segment refuses.
        for s in range(self.segments):
            live = self._write(s, "holding", ids) & ((target != s) | (batch == 0))
            if live.any():
                i = int(np.argmax(live))
                raise ValueError(
                    f"id of row {i}: expected an id not in the collection (delete it first to "
                    f"replace it), found {int(ids[i])}, which is live in segment {s}"
                )
        answers = [self._write(s, "add", v[rows], ids[rows], batch,
                               None if rows_of is None else [rows_of[r] for r in rows.tolist()])
                   for s, rows in parts]
        count = sum(a["count"] for a in answers)
        with self._lock:
            self.n += sum(a["count"] for a in answers if not a["repeated"])
        return {"seq": max(a["seq"] for a in answers), "count": count, "missing": 0,
                "repeated": all(a["repeated"] for a in answers), "first_id": int(ids[0])}

    def remove(self, ids: Any, *, batch: int = 0) -> Dict[str, Any]:
        """Delete global ids from the segments holding them; those no
        segment holds are counted in ``missing``."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        answers = [self._write(s, "remove", ids, batch) for s in range(self.segments)]
        count = sum(a["count"] for a in answers)
        with self._lock:
            self.n -= sum(a["count"] for a in answers if not a["repeated"])
        return {"seq": max(a["seq"] for a in answers), "count": count,
                "missing": int(ids.shape[0]) - count,
                "repeated": any(a["repeated"] for a in answers), "first_id": -1}

    def merge(self, threads: Optional[int] = None) -> int:
        """Each segment with updates merged into its next generation by the
        actor holding it (the actors merge in parallel); how many merged."""
        refs = [(s, self._actors[self._actor_of[s]].merge.remote(s, threads)) for s in range(self.segments)]
        done = [self._ray.get(r) for _, r in refs]
        return sum(1 for d in done if "n_before" in d)

    @property
    def pending(self) -> Tuple[int, int]:
        """(vectors inserted, rows deleted) not yet merged, over the segments."""
        p = self._ray.get([a.pending.remote() for a in self._actors])
        return sum(i for i, _ in p), sum(d for _, d in p)

    # ------------------------------------------------------------ admin

    def stats(self) -> Dict[str, Any]:
        """Counters since open: ``searches`` (calls), ``queries`` (rows),
        ``segment_calls`` (actor calls, retries included), ``retries``,
        ``actor_failures`` (calls lost to a dead or unavailable actor),
        ``searches_timed_out``, ``searches_cancelled`` and
        ``calls_cancelled`` (actor calls cancelled behind them), and
        the time split: ``route_s``, ``fanout_wait_s`` (sending to the
        actors until the last answer), ``merge_s``, ``total_s``;
        ``segment_failures`` per segment."""
        with self._lock:
            out: Dict[str, Any] = dict(self._stats)
            out["segment_failures"] = list(self._segment_failures)
        out["segments"] = self.segments
        out["actors"] = len(self._actors)
        return out

    def actor_pids(self, timeout_s: float = 60.0) -> List[int]:
        """Each actor's process id (a restart changes it)."""
        return self._ray.get([a.ping.remote() for a in self._actors], timeout=timeout_s)

    def ping(self, timeout_s: float = 5.0) -> List[Optional[str]]:
        """For each actor, None if it answers within ``timeout_s``, else why not."""
        ray = self._ray
        refs = [a.ping.remote() for a in self._actors]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
        out: List[Optional[str]] = []
        for r in refs:
            if r not in ready:
                out.append(f"no answer within {timeout_s} s")
                continue
            try:
                ray.get(r)
                out.append(None)
            except Exception as e:
                out.append(_one_line(e))
        return out

    def describe(self, timeout_s: float = 60.0) -> List[Dict[str, Any]]:
        """Per segment: ``n``, ``memory`` (bytes by part), ``io``, ``pid``,
        and of its actor (since it last started): ``rows_searched`` (queries
        searched, in all its segments) and ``calls_stopped`` (calls that
        stopped part-way at a deadline or cancel)."""
        parts = self._ray.get([a.describe.remote() for a in self._actors], timeout=timeout_s)
        merged: Dict[int, Dict[str, Any]] = {}
        for p in parts:
            merged.update(p)
        return [merged[i] for i in range(self.segments)]

    def kill_segment_actor(self, segment: int) -> None:
        """Test hook: kill the actor holding ``segment`` as a crash would;
        Ray restarts it (and the next searches retry through it)."""
        if not 0 <= segment < self.segments:
            raise IndexError(f"segment: expected 0..{self.segments - 1}, found {segment}")
        self._ray.kill(self._actors[self._actor_of[segment]], no_restart=False)

    def close(self) -> None:
        """End the actors (no restart)."""
        for a in getattr(self, "_actors", []):
            try:
                self._ray.kill(a, no_restart=True)
            except Exception:
                pass
        self._actors = []

    def __enter__(self) -> "RayCollection":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"RayCollection({self.dir!r}, n={self.n}, dim={self.dim}, metric={self.metric!r}, "
            f"partition={self.partition!r}, segments={self.segments}, actors={len(self._actors)})"
        )
