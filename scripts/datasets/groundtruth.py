"""Exact nearest neighbours by squared L2, in float64, ties to the smaller id.

A block of queries is scored against the whole base with one product
(|q|^2 + |b|^2 - 2 q.b, fast but with cancellation error), k + 32 candidates
are kept, and those are re-scored as sum((b - q)^2): the slack makes sure
near-ties at the k-th place are decided by the exact distance.
"""

from concurrent.futures import ThreadPoolExecutor
from typing import Optional, Tuple

import numpy as np

SLACK = 32
BLOCK = 64
# Filtered ground truth rows with fewer than k matching vectors are padded
# with this id and an infinite distance (big-ann-benchmarks' readers treat
# ids >= n as absent).
PAD_ID = np.uint32(0xFFFFFFFF)


def top_k(base: np.ndarray, queries: np.ndarray, k: int, threads: int,
          allowed: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
    """(ids uint32, squared distances float32), each (nq, k).

    allowed: None, or a (nq, n) bool array: row i's neighbours are taken only
    among the base vectors allowed for query i (filtered search). Rows with
    fewer than k allowed vectors end with PAD_ID / +inf.
    """
    n = base.shape[0]
    k = min(k, n)
    b64 = base.astype(np.float64)
    norms = (b64 * b64).sum(1)
    ids = np.full((queries.shape[0], k), PAD_ID, dtype=np.uint32)
    dists = np.full((queries.shape[0], k), np.inf, dtype=np.float32)
    keep = min(n, k + SLACK)

    def run(start):
        q = queries[start:start + BLOCK].astype(np.float64)
        approx = (q * q).sum(1)[:, None] + norms[None, :] - 2.0 * (q @ b64.T)
        if allowed is not None:
            approx[~allowed[start:start + BLOCK]] = np.inf
        if keep < n:
            cand = np.argpartition(approx, keep - 1, axis=1)[:, :keep]
        else:
            cand = np.tile(np.arange(n), (q.shape[0], 1))
        for r in range(q.shape[0]):
            c = cand[r]
            if allowed is not None:
                c = c[allowed[start + r, c]]     # the slack may have taken excluded ones
            diff = b64[c] - q[r]
            exact = (diff * diff).sum(1)
            best = np.lexsort((c, exact))[:k]    # by distance, then id
            ids[start + r, :best.size] = c[best]
            dists[start + r, :best.size] = exact[best]

    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(run, range(0, queries.shape[0], BLOCK)))
    return ids, dists
