"""Shared helpers for the peer benchmark runners (see README.md beside this file).

Everything here is plain Python + numpy so it works in every peer venv
(diskannpy 0.7.0's venv is pinned to numpy<2, the others have numpy 2).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Callable, Optional

import numpy as np

PAGE = 4096  # reads_per_query = read_bytes / nq / PAGE
MB = 1_000_000  # --memory-budget-mb is in decimal megabytes (35.9 MB = 20% of 116,707 x 384 x 4 B)
TIE_TOL = 1e-6  # absolute, on squared L2 distances, as big-ann-benchmarks

_t_start = time.monotonic()


def log(*parts) -> None:
    """Progress to stderr, never stdout (stdout carries only JSON lines)."""
    print(f"[peers {time.monotonic() - _t_start:7.1f}s]", *parts, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- data files


def read_bin_header(path: str) -> tuple[int, int]:
    with open(path, "rb") as f:
        head = f.read(8)
    if len(head) != 8:
        raise ValueError(f"{path}: file shorter than its 8-byte header")
    n, d = (int(x) for x in np.frombuffer(head, dtype="<u4"))
    return n, d


def read_fbin(path: str, mmap: bool = False) -> np.ndarray:
    """uint32 n, uint32 d, then n*d float32 rows."""
    n, d = read_bin_header(path)
    size = os.path.getsize(path)
    expected = 8 + n * d * 4
    if size != expected:
        raise ValueError(f"{path}: header says {n} x {d} float32 = {expected} bytes, file has {size}")
    if mmap:
        return np.memmap(path, dtype="<f4", mode="r", offset=8, shape=(n, d))
    with open(path, "rb") as f:
        f.seek(8)
        return np.fromfile(f, dtype="<f4", count=n * d).reshape(n, d)


def read_gt(path: str) -> tuple[np.ndarray, np.ndarray]:
    """uint32 nq, uint32 k, nq*k uint32 ids, then nq*k float32 squared distances."""
    nq, k = read_bin_header(path)
    size = os.path.getsize(path)
    expected = 8 + nq * k * 8
    if size != expected:
        raise ValueError(f"{path}: header says {nq} x {k} ids+dists = {expected} bytes, file has {size}")
    with open(path, "rb") as f:
        f.seek(8)
        ids = np.fromfile(f, dtype="<u4", count=nq * k).reshape(nq, k).astype(np.int64)
        dists = np.fromfile(f, dtype="<f4", count=nq * k).reshape(nq, k)
    return ids, dists


def data_signature(path: str) -> dict:
    st = os.stat(path)
    n, d = read_bin_header(path)
    return {"path": os.path.abspath(path), "bytes": st.st_size, "mtime_ns": st.st_mtime_ns, "n": n, "d": d}


# ---------------------------------------------------------------- recall


def recall_at(gt_ids: np.ndarray, gt_dists: np.ndarray, run_ids: np.ndarray, count: int) -> Optional[float]:
    """Mean recall@count with big-ann-benchmarks' distance-tie rule.

    For query i let t = gt_dists[i, count-1] (the count-th true distance). The
    accepted set is the first `count` ground-truth ids, extended by the ids at
    ranks count, count+1, ... for as long as |gt_dists[i, j] - t| < 1e-6
    (absolute, on squared L2; stops at the first non-tie, and at the depth of
    gt.ibin). A returned id among the first `count` returned counts once if it is
    in the accepted set; recall = hits / count. This is
    `compute_recall_with_distance_ties` of big-ann-benchmarks'
    benchmark/plotting/metrics.py. Returns None if the ground truth or the run
    has fewer than `count` columns.
    """
    if count > gt_ids.shape[1] or count > run_ids.shape[1]:
        return None
    nq = gt_ids.shape[0]
    if run_ids.shape[0] != nq:
        raise ValueError(f"run has {run_ids.shape[0]} result rows, ground truth {nq}")
    anchor = gt_dists[:, count - 1 : count].astype(np.float64)
    tail = gt_dists[:, count:].astype(np.float64)
    close = np.abs(tail - anchor) < TIE_TOL
    # run of consecutive ties right after rank count-1
    ties = np.cumprod(close, axis=1).sum(axis=1) if tail.shape[1] else np.zeros(nq, dtype=np.int64)
    set_end = count + ties
    hits = 0
    run = np.asarray(run_ids[:, :count], dtype=np.int64)
    for i in range(nq):
        accepted = gt_ids[i, : set_end[i]]
        hits += np.intersect1d(accepted, run[i], assume_unique=False).size
    return hits / (nq * count)


# ---------------------------------------------------------------- serving


def requests(out, parse: Callable[[dict], tuple], shape: str):
    """Each request line on stdin, as `parse` reads it (raising ValueError,
    KeyError or TypeError on a bad one); a bad line is answered with an
    error naming `shape` (what a request looks like) and skipped."""
    import json
    import sys

    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            yield parse(json.loads(line))
        except (ValueError, KeyError, TypeError) as e:
            why = f"missing {e}" if isinstance(e, KeyError) else str(e)
            out.emit({"error": f"bad request {line.strip()!r}: expected {shape} ({why})"})


# ---------------------------------------------------------------- /proc


def proc_io() -> dict:
    """/proc/self/io of this process (all its threads, including io_uring workers)."""
    out = {}
    with open("/proc/self/io") as f:
        for line in f:
            key, _, val = line.partition(":")
            out[key.strip()] = int(val)
    return out


def proc_status_bytes(field: str) -> Optional[int]:
    """A kB field of /proc/self/status (VmRSS, VmHWM) in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return None


def dir_bytes(path: str, exclude: tuple[str, ...] = ()) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            if name in exclude:
                continue
            total += os.path.getsize(os.path.join(root, name))
    return total


# ---------------------------------------------------------------- latency


def latency_pass(search_one: Callable[[int], object], nq: int, nthreads: int) -> tuple[np.ndarray, float]:
    """Issue nq single-query calls from nthreads Python threads (a shared
    counter hands out query indices). Returns per-query wall latency in
    microseconds and the pass's wall time in seconds. Only meaningful with
    nthreads > 1 when the binding releases the GIL during search."""
    lat = np.zeros(nq, dtype=np.float64)
    lock = threading.Lock()
    nxt = [0]

    def worker():
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= nq:
                return
            t0 = time.perf_counter_ns()
            search_one(i)
            lat[i] = (time.perf_counter_ns() - t0) / 1000.0

    # A thread coming back from a GIL-free native call must not wait out the
    # default 5 ms switch interval behind the other thread's Python code.
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    t0 = time.perf_counter()
    try:
        if nthreads <= 1:
            worker()
        else:
            ts = [threading.Thread(target=worker) for _ in range(nthreads)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
    finally:
        wall = time.perf_counter() - t0
        sys.setswitchinterval(old_interval)
    return lat, wall


# ---------------------------------------------------------------- output


class JsonOut:
    """Writes JSON lines to the original stdout. The peers' native code prints
    progress with printf/std::cout, so fd 1 is pointed at stderr for the rest
    of the process and results go through a private duplicate of it."""

    def __init__(self) -> None:
        sys.stdout.flush()
        self._fd = os.dup(1)
        os.dup2(2, 1)
        self._f = os.fdopen(self._fd, "w", buffering=1)
        sys.stdout = sys.stderr

    def emit(self, obj: dict) -> None:
        self._f.write(json.dumps(obj, sort_keys=False) + "\n")
        self._f.flush()


# ---------------------------------------------------------------- peer interface


class Peer:
    """One peer system. Subclasses live in one file each and implement
    build_params / build (run in a child process) / load / search_batch /
    search_one. Peers never see stdout."""

    key = ""  # --peer value
    label = ""  # human-readable system name
    dist = ""  # PyPI distribution, for the version field
    sweep_name = "L"  # what the sweep value means for this peer
    on_disk = False  # reads_per_query is measured only for on-disk peers
    gil_free_single = False  # does search_one release the GIL (latency pass may use threads)

    def __init__(self, args) -> None:
        self.args = args

    def version(self) -> str:
        from importlib.metadata import version

        return version(self.dist)

    def build_params(self, n: int, d: int) -> dict:
        """Everything that changes the files on disk (a change triggers a rebuild)."""
        raise NotImplementedError

    def build(self, base_path: str, index_dir: str, params: dict) -> dict:
        """Build into index_dir; return extra build facts for params.json."""
        raise NotImplementedError

    def load(self, index_dir: str, params: dict, n: int, d: int) -> dict:
        """Open the index for search; return the memory model (memory_bytes, ...)."""
        raise NotImplementedError

    def search_batch(self, queries: np.ndarray, k: int, value: int) -> tuple[np.ndarray, dict]:
        """All queries at once with args.threads threads; (ids[nq, k], extra)."""
        raise NotImplementedError

    def search_one(self, query: np.ndarray, k: int, value: int) -> np.ndarray:
        raise NotImplementedError

    def prepare_filters(self, allowed: list, labels: list) -> object:
        """The peer's form of each query's filter, made outside the timing:
        from its matching rows (`allowed`, sorted row numbers) or the
        labels it ANDs (`labels`), one array a query."""
        raise SystemExit(f"peer {self.key} has no filtered search")

    def search_filtered(self, queries: np.ndarray, k: int, value: int, filters: object) -> np.ndarray:
        """(nq, k) row numbers, each query's only from its filter, -1 past
        what it found."""
        raise SystemExit(f"peer {self.key} has no filtered search")


def node_record_bytes(d: int, degree: int, vector_bytes_per_dim: int = 4) -> int:
    """Bytes one cached DiskANN node holds in RAM: the full-precision vector,
    the neighbour count (u32) and R neighbour ids (u32). This is what both
    DiskANN engines allocate per cached node (coords + (R+1) u32); on disk the
    same record is padded into the 4 KiB sector layout (floor(4096 / record)
    records per sector), which is NOT what the cache costs in RAM."""
    return d * vector_bytes_per_dim + 4 + 4 * degree


def diskann_memory_plan(n: int, d: int, pq_bytes: int, degree: int, budget_mb: float) -> dict:
    """Split the search-memory budget into PQ codes and a node cache."""
    budget = int(round(budget_mb * MB))
    pq_total = pq_bytes * n
    node = node_record_bytes(d, degree)
    cache_nodes = max(0, (budget - pq_total) // node)
    cache_nodes = min(cache_nodes, n)
    return {
        "memory_budget_bytes": budget,
        "pq_codes_bytes": pq_total,
        "node_record_bytes": node,
        "cache_nodes": int(cache_nodes),
        "cache_bytes": int(cache_nodes) * node,
        "memory_bytes": pq_total + int(cache_nodes) * node,
    }
