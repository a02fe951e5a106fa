"""LanceDB (PyPI `lancedb`): an embedded vector database. The base vectors go
into a Lance table (`id` = row number of base.fbin, `vector` = fixed-size
list of float32) in the index directory, with an IVF_PQ index on `vector`
(L2, 8-bit codes): the on-disk cluster index LanceDB users run. The sweep
value is `nprobes`; every query re-ranks its `refine_factor x k` best PQ
candidates by exact distance (REFINE_FACTOR below), as stratavec does.

Build (child process):
  - num_partitions = min(--ivf-nlist, n // 40) (at least 1): Lance trains
    on num_partitions x sample_rate vectors and refuses (it trains fewer
    partitions, with a warning) when that is more than n, so sample_rate =
    min(256, n // num_partitions), and every vector is a training point for
    small n, as in the faiss peer.
  - num_sub_vectors = --pq-bytes (8-bit codes: one byte per sub-vector). It
    must divide d; otherwise the divisor of d nearest to it (the smaller
    one on a tie) is used and logged. Both values used are in params.json.
  - --build-threads: LANCE_CPU_THREADS (Lance's compute pool, where k-means
    and PQ training run) and TOKIO_WORKER_THREADS (LanceDB's async runtime)
    are set to it before lancedb is imported. Lance has no seed for its
    k-means, so two builds differ slightly.

Search (this process): LANCE_CPU_THREADS and TOKIO_WORKER_THREADS = --threads.
Lance reads local files on its IO pool (LANCE_IO_THREADS, left at Lance's
default of 8 for local files) from tokio's blocking-thread pool; that pool
cannot be sized from Python. The CPU all of them burn is in cpu_util.

Query path: the async API's multi-vector query,
    tbl.query().nearest_to([q_1..q_m]).nprobes(p).refine_factor(r).limit(k)
       .select(["id", "_distance"]).to_arrow()
with m = QUERY_CHUNK = 20 queries a call (rows come back tagged
`query_index`), one call at a time, from one event-loop thread. Measured on
the 20k subset (500 partitions, refine 4, whole index in the Session,
LANCE_CPU_THREADS = TOKIO_WORKER_THREADS = 2; the 2 vCPUs shared with another
benchmark, so only the ratios mean anything), QPS at nprobes 8, two passes:
    sync table.search(q)...to_arrow(), 1 query a call     ~0.8x the next row (*)
    async, 1 query a call, 1 in flight                    331, 355
    async, 1 query a call, 2 in flight                    423, 488
    async, 1 query a call, from 2 Python threads          443, 424
    multi-vector, 10 a call, 1 / 2 in flight              688, 801 / 757, 864
    multi-vector, 20 a call, 1 / 2 in flight              817, 795 / 868, 780
    multi-vector, 50 a call, 1 / 2 in flight              875, 926 / 774, 886
(*) 222 vs 281 at nprobes 4, 143 vs 175 at 32, in an earlier run. The sync
path turns every vector into a Python list and builds a pydantic query object
per call; every call, sync or async, then pays ~1.5 ms of CPU to plan and set
up, which a multi-vector call pays once per chunk. From 10 to 50 a call the
differences are within the noise; past that they lose (100 a call: 703 QPS
against 863 for 10 at nprobes 4; 1000 a call: 604, and RSS grew by 1.4 GB at
nprobes 32), and a second call in flight gains nothing consistent. So the
batch sends 20 a call, one call in flight, and its threads are LanceDB's own
(search_threads_used = --threads). search_one (the latency pass) is the same
query with one vector, from --threads Python threads (2 threads beat 1, see
above).

Refine factor: fixed at 4 (40 candidates at k=10), so a sweep point differs
only in nprobes. On the 20k subset with every partition probed, recall@10 is
0.675 with refine 1 (no re-rank: faiss IVF-PQ's ceiling), 0.858 with 2, 0.953
with 4, 0.988 with 8; stratavec needs a re-rank depth of ~25-34 for 0.95 at
48-byte codes (BENCHMARKS.md), so 4 x k is the smallest power-of-two factor
that lets LanceDB reach 0.95 at all, with the depth stratavec re-ranks.

Memory: LanceDB's only memory knob is the Session: `index_cache_size_bytes`
(IVF centroids, partitions of PQ codes and row ids) and
`metadata_cache_size_bytes` (manifests, file and page metadata), LRU by
bytes (defaults 6 GiB and 1 GiB). The metadata cache gets 1/8 of
--memory-budget-mb. Lance's cache accounting charges each IVF partition far
more than Session.size_bytes says it holds (20k subset: ~0.3-0.4 MB an entry,
about the size of the PQ codebook, against ~5 KB), so an index cache capped
at the other 7/8 of 6.1 MB keeps ~30 of 517 entries, re-decodes partitions
from the page cache on every query and runs 2.2x slower at nprobes 32 (289
vs 639 QPS) and 3.5x at 500 (26 vs 90), although the whole index is 2.6 MB.
So the peer prewarms the index with Lance's default cap when the index files
are no larger than 7/8 of the budget, and keeps that when Session.size_bytes
then fits the budget (cache_mode "whole index", memory_bytes = that size);
otherwise it reopens with the index cache capped at 7/8 of the budget in
Lance's accounting (cache_mode "capped", memory_bytes = the budget).
session_cache_bytes in each row is what the Session holds after the batch.

Either way the search is NOT bounded by the budget: Lance reads its files
with buffered I/O, so the kernel's page cache keeps the data file (the full
vectors the refine step reads) and any partition not in the Session, and the
process's own buffers (Arrow batches, DataFusion plans, the runtimes) are not
capped. Hence memory_bounded is false in every row, memory_note says why, and
lance_page_cache_bytes (mincore(2) on the dataset's files after the batch)
shows the unbounded part; reads_per_query is what the kernel read from the
device (0 once the page cache holds the files). lancedb 0.40.0 has no
O_DIRECT or block-cache setting that would make it read past the page cache.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import mmap
import os
import threading
import time

import numpy as np

from peer_common import MB, Peer, log, read_bin_header, read_fbin

TABLE = "vectors"
REFINE_FACTOR = 4  # re-rank the 4k best PQ candidates by exact L2 (k=10: 40)
QUERY_CHUNK = 20  # query vectors per multi-vector call (see the table above)
WRITE_ROWS = 65536  # rows per Arrow batch while writing the table
META_CACHE_SHARE = 8  # 1/8 of the budget to the metadata cache, the rest to the index cache
PQ_BITS = 8
LANCE_DEFAULT_INDEX_CACHE = 6 * 2**30  # Lance's default index cache cap (6 GiB)
MAX_ITERATIONS = 50  # Lance's default k-means iterations


def nearest_divisor(d: int, want: int) -> int:
    """The divisor of d closest to want (the smaller one on a tie)."""
    divisors = [x for x in range(1, d + 1) if d % x == 0]
    return min(divisors, key=lambda x: (abs(x - want), x))


def lance_sizes(index_dir: str) -> dict:
    """Bytes of the Lance dataset directory, and of its parts: data files
    (the full vectors and ids), _indices (the IVF_PQ index) and the rest
    (manifests, transactions)."""
    root = os.path.join(index_dir, f"{TABLE}.lance")
    parts = {"data": 0, "_indices": 0}
    files = {}
    total = 0
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            size = os.path.getsize(path)
            rel = os.path.relpath(path, index_dir)
            files[rel] = size
            total += size
            top = os.path.relpath(path, root).split(os.sep)[0]
            if top in parts:
                parts[top] += size
    return {
        "lance_dataset_bytes": total,
        "lance_data_bytes": parts["data"],
        "lance_indices_bytes": parts["_indices"],
        "lance_other_bytes": total - parts["data"] - parts["_indices"],
        "lance_files": files,
    }


_LIBC = []


def _libc():
    if _LIBC:
        return _LIBC[0]
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    _LIBC.append(libc)
    return libc


def page_cache_bytes(paths) -> int | None:
    """Bytes of these files the kernel page cache holds now (mincore(2) on a
    read-only mapping; nothing is read). This is the RAM serving Lance's
    buffered reads that no LanceDB setting bounds. None if mincore fails."""
    try:
        libc = _libc()
        total = 0
        for path in paths:
            size = os.path.getsize(path)
            if size == 0:
                continue
            fd = os.open(path, os.O_RDONLY)
            try:
                addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
                if addr is None or addr == ctypes.c_void_p(-1).value:
                    return None
                try:
                    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
                    vec = (ctypes.c_ubyte * pages)()
                    if libc.mincore(ctypes.c_void_p(addr), size, vec) != 0:
                        return None
                    total += int((np.frombuffer(vec, dtype=np.uint8) & 1).sum()) * mmap.PAGESIZE
                finally:
                    libc.munmap(ctypes.c_void_p(addr), size)
            finally:
                os.close(fd)
        return total
    except (OSError, AttributeError):
        return None


def set_threads(n: int) -> dict:
    """Thread counts LanceDB reads from the environment when its runtimes
    start (lazily, at the first connect): must run before that."""
    env = {"LANCE_CPU_THREADS": str(n), "TOKIO_WORKER_THREADS": str(n)}
    os.environ.update(env)
    return env


class _Loop:
    """An asyncio loop on its own thread: the async LanceDB API is driven
    from here, and search_one may be called from several Python threads."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="lancedb-peer-loop", daemon=True)
        self.thread.start()

    def run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()


class LanceDbIvfPq(Peer):
    key = "lancedb"
    label = "LanceDB IVF_PQ (refine x4)"
    dist = "lancedb"
    sweep_name = "nprobes"
    # Its files are read through the page cache: the kernel counts a read
    # only when a page was not cached (see README, memory).
    on_disk = True
    # search_one waits in Future.result() with the GIL released while Rust
    # searches; two Python threads gave more QPS than one.
    gil_free_single = True

    def build_params(self, n: int, d: int) -> dict:
        a = self.args
        nlist = max(1, min(a.ivf_nlist, n // 40))
        m = nearest_divisor(d, a.pq_bytes)
        return {
            "index_type": "IVF_PQ",
            "metric": "l2",
            "num_partitions": nlist,
            "num_partitions_requested": a.ivf_nlist,
            "num_sub_vectors": m,
            "pq_bytes_requested": a.pq_bytes,
            "num_bits": PQ_BITS,
            "max_iterations": MAX_ITERATIONS,
            "sample_rate": max(1, min(256, n // nlist)),
            "table": TABLE,
            "columns": {"id": "int64", "vector": f"fixed_size_list<float32, {d}>"},
            "build_threads": a.build_threads,
            # Filtered runs (run_peer.py --filtered) keep each row's labels
            # in a list column with Lance's LABEL_LIST scalar index.
            **({"labels": "list<int32> from base.labels.spmat, LABEL_LIST index"} if getattr(a, "filtered", False) else {}),
        }

    def build(self, base_path: str, index_dir: str, params: dict) -> dict:
        env = set_threads(params["build_threads"])
        import lancedb
        import pyarrow as pa
        from lancedb.index import IvfPq

        n, d = read_bin_header(base_path)
        if params["num_sub_vectors"] != params["pq_bytes_requested"]:
            log(f"note: --pq-bytes {params['pq_bytes_requested']} does not divide d={d}; "
                f"using num_sub_vectors={params['num_sub_vectors']}")
        if params["num_partitions"] != params["num_partitions_requested"]:
            log(f"note: --ivf-nlist {params['num_partitions_requested']} clamped to "
                f"{params['num_partitions']} (at most n/40 for n={n})")
        base = read_fbin(base_path, mmap=True)
        fields = [pa.field("id", pa.int64()), pa.field("vector", pa.list_(pa.float32(), d))]
        labels = None
        if "labels" in params:
            from filtered_peer import read_spmat

            labels = read_spmat(os.path.join(os.path.dirname(base_path), "base.labels.spmat"))
            if labels[0].size - 1 != n:
                raise SystemExit(f"base.labels.spmat: rows: expected {n} (base.fbin's), found {labels[0].size - 1}")
            fields.append(pa.field("labels", pa.list_(pa.int32())))
        schema = pa.schema(fields)

        def batches():
            for s in range(0, n, WRITE_ROWS):
                e = min(n, s + WRITE_ROWS)
                flat = pa.array(np.ascontiguousarray(base[s:e], dtype=np.float32).reshape(-1))
                cols = [pa.array(np.arange(s, e, dtype=np.int64)), pa.FixedSizeListArray.from_arrays(flat, d)]
                if labels is not None:
                    indptr, indices = labels
                    offsets = (indptr[s:e + 1] - indptr[s]).astype(np.int32)
                    cols.append(pa.ListArray.from_arrays(pa.array(offsets), pa.array(indices[indptr[s]:indptr[e]])))
                yield pa.record_batch(cols, schema=schema)

        db = lancedb.connect(index_dir)
        t0 = time.perf_counter()
        tbl = db.create_table(params["table"], data=pa.RecordBatchReader.from_batches(schema, batches()))
        write_s = time.perf_counter() - t0
        rows = tbl.count_rows()
        if rows != n:
            raise SystemExit(f"lancedb: table has {rows} rows, base.fbin {n}")
        t0 = time.perf_counter()
        tbl.create_index(
            "vector",
            config=IvfPq(
                distance_type=params["metric"],
                num_partitions=params["num_partitions"],
                num_sub_vectors=params["num_sub_vectors"],
                num_bits=params["num_bits"],
                max_iterations=params["max_iterations"],
                sample_rate=params["sample_rate"],
            ),
        )
        index_s = time.perf_counter() - t0
        vector_index = [i for i in tbl.list_indices() if "vector" in i.columns]
        if labels is not None:
            tbl.create_scalar_index("labels", index_type="LABEL_LIST")
        idx = vector_index
        if len(idx) != 1:
            raise SystemExit(f"lancedb: expected one vector index, found {tbl.list_indices()}")
        stats = tbl.index_stats(idx[0].name)
        if stats.num_indexed_rows != n or stats.num_unindexed_rows:
            raise SystemExit(f"lancedb: index covers {stats.num_indexed_rows} rows of {n} ({stats})")
        log(f"lancedb: wrote {n} rows in {write_s:.1f}s, IVF_PQ index in {index_s:.1f}s")
        sizes = lance_sizes(index_dir)
        sizes.pop("lance_files")
        return {
            "write_s": write_s,
            "index_s": index_s,
            "index_name": idx[0].name,
            "num_indexed_rows": stats.num_indexed_rows,
            "thread_env": env,
            **sizes,
        }

    def load(self, index_dir: str, params: dict, n: int, d: int) -> dict:
        a = self.args
        self.env = set_threads(a.threads)
        import lancedb

        self.io = _Loop()
        self.sizes = lance_sizes(index_dir)
        self.paths = [os.path.join(index_dir, rel) for rel in self.sizes["lance_files"]]
        self.budget = budget = int(round(a.memory_budget_mb * MB))
        self.meta_cap = budget // META_CACHE_SHARE
        index_budget = budget - self.meta_cap

        def open_session(index_cap: int):
            session = lancedb.Session(index_cache_size_bytes=index_cap, metadata_cache_size_bytes=self.meta_cap)

            async def open_table():
                # An absolute path: connect_async takes a relative one
                # starting with "db" for a LanceDB Cloud name.
                db = await lancedb.connect_async(os.path.abspath(index_dir), session=session)
                tbl = await db.open_table(params["table"])
                names = [i.name for i in await tbl.list_indices()]
                if not names:
                    raise SystemExit(f"lancedb: no index on {index_dir}/{params['table']}.lance")
                for name in names:
                    await tbl.prewarm_index(name)
                return tbl

            return session, self.io.run(open_table())

        # Lance's cache accounting charges an IVF partition ~60-80x what
        # Session.size_bytes says it holds (module docstring, Memory): try
        # the whole index under Lance's default cap first, keep it if it
        # really fits the budget, else cap at 7/8 of the budget.
        self.cache_mode = "capped"
        if self.sizes["lance_indices_bytes"] <= index_budget:
            session, tbl = open_session(LANCE_DEFAULT_INDEX_CACHE)
            if session.size_bytes <= budget:
                self.cache_mode = "whole index"
                self.index_cap = LANCE_DEFAULT_INDEX_CACHE
            else:
                log(f"lancedb: the prewarmed index takes {session.size_bytes} B > budget {budget} B: capping")
                del tbl, session
        if self.cache_mode == "capped":
            self.index_cap = index_budget
            session, tbl = open_session(self.index_cap)
        self.session, self.tbl = session, tbl
        held = self.session.size_bytes
        cached = page_cache_bytes(self.paths)
        if self.cache_mode == "whole index":
            how = (f"the whole prewarmed index fits: LanceDB's Session holds {held} B <= the budget {budget} B "
                   f"(index cache left at Lance's default cap, metadata cache capped at {self.meta_cap} B)")
        else:
            how = (f"LanceDB Session caps its index cache at {self.index_cap} B and its metadata cache at "
                   f"{self.meta_cap} B (7/8 and 1/8 of the budget, in Lance's own accounting)")
        self.memory_note = (
            f"{how}; not bounded: the kernel page cache that serves Lance's buffered reads of the data file "
            f"(refine reads full vectors) and of index partitions not in the Session (lance_page_cache_bytes), "
            f"and the process's query buffers"
        )
        log(f"lancedb: {self.cache_mode}: session caches hold {held} B after prewarm; page cache holds "
            f"{cached} B of the dataset's {self.sizes['lance_dataset_bytes']} B")
        return {
            "memory_bytes": held if self.cache_mode == "whole index" else budget,
            "memory_model": "whole index: what LanceDB's Session holds after prewarming (<= budget); capped: "
                            "the Session caps (= budget). Not counted, not bounded: the page cache holding the "
                            "Lance files (lance_page_cache_bytes), query buffers",
            "cache_mode": self.cache_mode,
            "memory_budget_bytes": budget,
            "index_cache_cap_bytes": self.index_cap,
            "metadata_cache_cap_bytes": self.meta_cap,
            "session_bytes_after_load": held,
            "session_items_after_load": self.session.approx_num_items,
            "page_cache_bytes_after_load": cached,
        }

    def _query(self, vecs, k: int, nprobes: int):
        # select _distance explicitly: Lance adds it anyway and warns on
        # every query when it is not asked for.
        return (
            self.tbl.query()
            .nearest_to(vecs)
            .nprobes(nprobes)
            .refine_factor(REFINE_FACTOR)
            .limit(k)
            .select(["id", "_distance"])
            .to_arrow()
        )

    @staticmethod
    def _unpack(t, m: int, k: int) -> np.ndarray:
        """Rows of one multi-vector result (tagged query_index, absent for a
        single vector) into an (m, k) id array sorted by distance, -1 where a
        query got fewer than k rows."""
        ids = t.column("id").to_numpy()
        dist = t.column("_distance").to_numpy()
        if "query_index" in t.column_names:
            qi = t.column("query_index").to_numpy().astype(np.int64)
        else:
            qi = np.zeros(len(ids), dtype=np.int64)
        order = np.lexsort((dist, qi))
        ids, qi = ids[order], qi[order]
        starts = np.concatenate([[0], np.cumsum(np.bincount(qi, minlength=m))[:-1]])
        pos = np.arange(len(qi)) - starts[qi]
        keep = pos < k
        out = np.full((m, k), -1, dtype=np.int64)
        out[qi[keep], pos[keep]] = ids[keep]
        return out

    def search_batch(self, queries, k, value):
        nq = len(queries)

        async def run_all():
            parts = []
            for s in range(0, nq, QUERY_CHUNK):
                chunk = queries[s : s + QUERY_CHUNK]
                t = await self._query([row for row in chunk], k, value)
                parts.append(self._unpack(t, len(chunk), k))
            return np.concatenate(parts)

        ids = self.io.run(run_all())
        short = int((ids < 0).any(axis=1).sum())
        if short:
            log(f"lancedb: {short} of {nq} queries got fewer than {k} results at nprobes={value}")
        extra = {
            "refine_factor": REFINE_FACTOR,
            "rerank_candidates": REFINE_FACTOR * k,
            "nprobes": value,
            "query_path": f"async multi-vector query, {QUERY_CHUNK} vectors a call, one call in flight",
            "query_chunk": QUERY_CHUNK,
            "search_threads_used": self.args.threads,
            "thread_env": self.env,
            "queries_short": short,
            "memory_bounded": False,
            "memory_note": self.memory_note,
            "cache_mode": self.cache_mode,
            "index_cache_cap_bytes": self.index_cap,
            "metadata_cache_cap_bytes": self.meta_cap,
            "session_cache_bytes": self.session.size_bytes,
            "session_within_budget": self.session.size_bytes <= self.budget,
            "session_cache_items": self.session.approx_num_items,
            # ~0.6 ms for the handful of files, inside the timed call
            # (nothing after the batch call can add fields to its row)
            "lance_page_cache_bytes": page_cache_bytes(self.paths),
        }
        extra.update(self.sizes)
        return ids, extra

    def search_one(self, query, k, value):
        t = self.io.run(self._query(query, k, value))
        return self._unpack(t, 1, k)[0]

    def prepare_filters(self, allowed, labels):
        """Each query's filter as Lance SQL over the labels column (its
        LABEL_LIST index answers array_has_all), pre-filtering: LanceDB
        searches the vector index among the rows the predicate selects."""
        return [f"array_has_all(labels, [{', '.join(str(int(x)) for x in ls)}])" if len(ls) else None
                for ls in labels]

    def search_filtered(self, queries, k, value, filters):
        """One call a query (a predicate applies to a whole call), --threads
        calls in flight."""
        nq = len(queries)
        out = np.full((nq, k), -1, dtype=np.int64)

        async def one(i, gate):
            async with gate:
                q = (self.tbl.query().nearest_to(queries[i]).nprobes(value).refine_factor(REFINE_FACTOR)
                     .limit(k).select(["id", "_distance"]))
                if filters[i] is not None:
                    q = q.where(filters[i])
                out[i] = self._unpack(await q.to_arrow(), 1, k)[0]

        async def run_all():
            gate = asyncio.Semaphore(max(1, self.args.threads))
            await asyncio.gather(*(one(i, gate) for i in range(nq)))

        self.io.run(run_all())
        return out


PEER = LanceDbIvfPq
