"""faiss IVF-PQ (faiss-cpu from PyPI): IVF{nlist},PQ{pq_bytes} with 8-bit codes,
all in RAM. It never re-ranks with full-precision vectors, so its recall has a
ceiling well below the graph indexes (REFERENCE.md: ~0.66 here). The sweep
value is nprobe. faiss releases the GIL in search, so the latency pass runs on
--threads Python threads, each with one OpenMP thread.
"""

from __future__ import annotations

import os

import numpy as np

from peer_common import Peer, log, read_fbin

FILE = "ivfpq.faiss"


class FaissIvfPq(Peer):
    key = "faiss-ivfpq"
    label = "faiss IVF-PQ (no re-rank)"
    dist = "faiss-cpu"
    sweep_name = "nprobe"
    on_disk = False
    gil_free_single = True

    def build_params(self, n: int, d: int) -> dict:
        a = self.args
        nlist = a.ivf_nlist
        return {
            "factory": f"IVF{nlist},PQ{a.pq_bytes}",
            "nlist": nlist,
            "pq_bytes": a.pq_bytes,
            "pq_nbits": 8,
            "train_points": n,
            "seed": 1234,
            "build_threads": a.build_threads,
            "metric": "l2",
        }

    def build(self, base_path: str, index_dir: str, params: dict) -> dict:
        import faiss

        faiss.omp_set_num_threads(params["build_threads"])
        base = read_fbin(base_path)
        n, d = base.shape
        if n < 39 * params["nlist"]:
            log(f"note: {n} training points for {params['nlist']} lists (faiss wants >= {39 * params['nlist']})")
        index = faiss.index_factory(d, params["factory"], faiss.METRIC_L2)
        ivf = faiss.extract_index_ivf(index)
        ivf.cp.seed = params["seed"]
        index.train(base)
        index.add(base)
        faiss.write_index(index, os.path.join(index_dir, FILE))
        return {}

    def load(self, index_dir: str, params: dict, n: int, d: int) -> dict:
        import faiss

        self.faiss = faiss
        self.index = faiss.read_index(os.path.join(index_dir, FILE))
        self.ivf = faiss.extract_index_ivf(self.index)
        m, nlist = params["pq_bytes"], params["nlist"]
        mem = n * m + n * 8 + nlist * d * 4 + 256 * d * 4  # codes + int64 ids + coarse centroids + PQ centroids
        return {
            "memory_bytes": mem,
            "memory_model": "n*pq_bytes codes + n*8 ids + nlist*d*4 coarse + 256*d*4 PQ centroids",
        }

    def search_batch(self, queries, k, value):
        self.faiss.omp_set_num_threads(self.args.threads)
        self.ivf.nprobe = value
        _, ids = self.index.search(np.ascontiguousarray(queries), k)
        return ids, {}

    def search_one(self, query, k, value):
        # search_batch set nprobe for this value just before; one OpenMP
        # thread per call, the latency pass supplies the concurrency.
        _, ids = self.index.search(query.reshape(1, -1), k)
        return ids[0]

    def before_latency_pass(self) -> None:
        self.faiss.omp_set_num_threads(1)


PEER = FaissIvfPq
