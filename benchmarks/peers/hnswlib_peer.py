"""hnswlib 0.8.0 (PyPI sdist, compiled at install): an all-in-RAM graph, the
in-memory ceiling the disk engines are compared against.

M defaults to graph_degree / 2 (hnswlib's base layer keeps 2*M links, so
R=64 <-> M=32) and ef_construction to 200, the REFERENCE.md setting. The sweep
value is ef (hnswlib searches with max(ef, k)). knn_query releases the GIL, so
the latency pass runs on --threads Python threads.

Filtered (issue #56): hnswlib's own filter, a callable a candidate label
goes through (`knn_query(..., filter=f)`, hnswlib >= 0.7). It takes one
filter a call, so each query is its own call, from --threads Python
threads; the callable is the membership test of a Python set of the
query's matching rows (a C-level `set.__contains__`, no Python frame).
hnswlib calls back into Python for every candidate it considers, taking
the GIL each time, and admits only matches into its result list, so its
search runs until ef matches were found or the graph ran out.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from peer_common import Peer, read_fbin

FILE = "hnsw.bin"


class Hnswlib(Peer):
    key = "hnswlib"
    label = "hnswlib (all in RAM)"
    dist = "hnswlib"
    sweep_name = "ef"
    on_disk = False
    gil_free_single = True

    def build_params(self, n: int, d: int) -> dict:
        a = self.args
        return {
            "M": a.hnsw_m if a.hnsw_m else max(2, a.graph_degree // 2),
            "ef_construction": a.hnsw_ef_construction,
            "random_seed": 100,
            "build_threads": a.build_threads,
            "metric": "l2",
        }

    def build(self, base_path: str, index_dir: str, params: dict) -> dict:
        import hnswlib

        base = read_fbin(base_path)
        n, d = base.shape
        idx = hnswlib.Index(space="l2", dim=d)
        idx.init_index(
            max_elements=n, ef_construction=params["ef_construction"], M=params["M"], random_seed=params["random_seed"]
        )
        idx.add_items(base, np.arange(n), num_threads=params["build_threads"])
        idx.save_index(os.path.join(index_dir, FILE))
        return {}

    def load(self, index_dir: str, params: dict, n: int, d: int) -> dict:
        import hnswlib

        self.index = hnswlib.Index(space="l2", dim=d)
        path = os.path.join(index_dir, FILE)
        self.index.load_index(path, max_elements=n)
        self.index.set_num_threads(self.args.threads)
        # The whole index lives in RAM; its serialised size equals the
        # level-0 block (n * size_data_per_element) plus the upper-level links.
        return {"memory_bytes": os.path.getsize(path), "memory_model": "whole index in RAM (= hnsw.bin size)"}

    def search_batch(self, queries, k, value):
        self.index.set_ef(value)
        ids, _ = self.index.knn_query(queries, k=k, num_threads=self.args.threads)
        return np.asarray(ids), {}

    def search_one(self, query, k, value):
        # set_ef was called by search_batch for this value just before
        ids, _ = self.index.knn_query(query, k=k, num_threads=1)
        return ids

    def prepare_filters(self, allowed, labels):
        return [set(a.tolist()) for a in allowed]

    def search_filtered(self, queries, k, value, filters):
        self.index.set_ef(value)
        out = np.full((queries.shape[0], k), -1, dtype=np.int64)

        def one(i):
            try:
                ids, _ = self.index.knn_query(queries[i], k=k, num_threads=1, filter=filters[i].__contains__)
            except RuntimeError:
                # Fewer than k matches reachable: hnswlib refuses to pad;
                # ask for what there is.
                ids = self._fewer(queries[i], k, filters[i])
            row = np.asarray(ids).reshape(-1)
            out[i, : row.size] = row

        if not hasattr(self, "pool"):
            self.pool = ThreadPoolExecutor(max_workers=self.args.threads)
        list(self.pool.map(one, range(queries.shape[0])))
        return out

    def _fewer(self, query, k, allowed):
        for kk in range(min(k, len(allowed)) - 1, 0, -1):
            try:
                ids, _ = self.index.knn_query(query, k=kk, num_threads=1, filter=allowed.__contains__)
                return ids
            except RuntimeError:
                continue
        return np.empty(0, dtype=np.int64)


PEER = Hnswlib
