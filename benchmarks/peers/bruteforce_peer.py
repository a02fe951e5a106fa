"""Exact search with numpy: every query against every base vector, in RAM.

Not an ANN engine. It is the peer that needs nothing but numpy, so the
bench's peer protocol (run_peer.py --serve) can be tested anywhere, and a
reference for recall 1.0 at the cost of a full scan. The sweep value is
ignored (every point is the same search); there is no index to build.
"""

from __future__ import annotations

import os

import numpy as np

from peer_common import Peer, read_fbin

CHUNK = 256  # queries a matrix product: bounds the distance block to CHUNK x n floats


class BruteForce(Peer):
    key = "bruteforce"
    label = "exact (numpy brute force)"
    dist = "numpy"
    sweep_name = "L (ignored)"
    on_disk = False
    gil_free_single = True

    def build_params(self, n: int, d: int) -> dict:
        return {"metric": "l2"}

    def build(self, base_path: str, index_dir: str, params: dict) -> dict:
        return {}  # nothing to build: the base file is the index

    def load(self, index_dir: str, params: dict, n: int, d: int) -> dict:
        self.base = np.ascontiguousarray(read_fbin(os.path.join(self.args.data, "base.fbin")), dtype=np.float32)
        self.norms = (self.base.astype(np.float64) ** 2).sum(axis=1).astype(np.float32)
        return {"memory_bytes": int(self.base.nbytes + self.norms.nbytes),
                "memory_model": "base vectors and their norms in RAM"}

    def _knn(self, q: np.ndarray, k: int) -> np.ndarray:
        # |q - b|^2 = |b|^2 - 2 q.b (+ |q|^2, the same for every b of a query)
        d = self.norms[None, :] - 2.0 * (q @ self.base.T)
        part = np.argpartition(d, k - 1, axis=1)[:, :k]
        order = np.take_along_axis(d, part, axis=1).argsort(axis=1, kind="stable")
        return np.take_along_axis(part, order, axis=1)

    def search_batch(self, queries, k, value):
        out = [self._knn(queries[i:i + CHUNK], k) for i in range(0, len(queries), CHUNK)]
        return np.concatenate(out), {}

    def search_one(self, query, k, value):
        return self._knn(query[None, :], k)[0]

    def prepare_filters(self, allowed, labels):
        return allowed

    def search_filtered(self, queries, k, value, filters):
        """Exact over each query's matching rows: the filtered truth."""
        out = np.full((queries.shape[0], k), -1, dtype=np.int64)
        for i, rows in enumerate(filters):
            if rows.size == 0:
                continue
            d = self.norms[rows] - 2.0 * (self.base[rows] @ queries[i])
            top = np.argsort(d, kind="stable")[:k]
            out[i, : top.size] = rows[top]
        return out


PEER = BruteForce
