#!/usr/bin/env python3
"""Load client for a served collection (python -m stratavec.serve).

Sends the queries of a ``.fbin`` file to ``POST /search`` in batches, from
a few threads at once (so the server has requests in flight, as under real
load), and prints recall@k against a ``.ibin`` ground truth and QPS
(queries answered per second of wall time, all batches):

    python benchmarks/collection_client.py http://127.0.0.1:8000 \\
        --queries query.fbin --gt gt.ibin [--batch 100] [--concurrency 4] \\
        [--k 10] [--complexity 64] [--probe 2] [--format binary|json]

Needs only numpy and the standard library. ``--json-out FILE`` also
writes the numbers as a JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import List, Optional, Tuple

import numpy as np


def read_bin(path: str, dtype: str) -> np.ndarray:
    """An ``.fbin`` (float32) or ``.ibin`` (int32) file: int32 n, int32 dim,
    then n rows of dim values."""
    with open(path, "rb") as f:
        header = np.fromfile(f, dtype="<i4", count=2)
        if header.size != 2:
            raise SystemExit(f"{path}: expected an 8-byte header (int32 n, int32 dim), found a shorter file")
        n, dim = int(header[0]), int(header[1])
        data = np.fromfile(f, dtype=dtype, count=n * dim)
    if data.size != n * dim:
        raise SystemExit(f"{path}: expected {n} x {dim} values after the header, found {data.size}")
    return data.reshape(n, dim)


def search(url: str, batch: np.ndarray, k: int, complexity: Optional[int], probe: Optional[int],
           fmt: str, timeout: float) -> np.ndarray:
    """One ``POST /search``; the ids, (len(batch), k)."""
    if fmt == "binary":
        params = {"k": k}
        if complexity is not None:
            params["complexity"] = complexity
        if probe is not None:
            params["probe"] = probe
        target = f"{url}/search?{urllib.parse.urlencode(params)}"
        body, ctype = batch.astype("<f4").tobytes(), "application/octet-stream"
    else:
        target = f"{url}/search"
        doc = {"vectors": batch.tolist(), "k": k, "complexity": complexity, "probe": probe}
        body, ctype = json.dumps(doc).encode(), "application/json"
    req = urllib.request.Request(target, data=body, headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            ids = json.loads(r.read())["ids"]
    except urllib.error.HTTPError as e:
        raise SystemExit(f"{target}: HTTP {e.code}: {e.read().decode(errors='replace')[:500]}") from None
    out = np.array(ids, dtype=np.int64)
    if out.shape != (len(batch), k):
        raise SystemExit(f"{target}: expected ids of shape {(len(batch), k)}, found {out.shape}")
    return out


def recall_at(ids: np.ndarray, gt: np.ndarray, k: int) -> float:
    """Mean share of each query's true k nearest found in its k answers."""
    hits = [len(np.intersect1d(a[:k], g[:k])) for a, g in zip(ids, gt)]
    return float(np.sum(hits)) / (k * len(ids))


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("url", help="the server, e.g. http://127.0.0.1:8000")
    p.add_argument("--queries", required=True, help="query vectors (.fbin)")
    p.add_argument("--gt", required=True, help="ground truth ids (.ibin), at least k a query")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--complexity", type=int, default=None)
    p.add_argument("--probe", type=int, default=None)
    p.add_argument("--batch", type=int, default=100, help="queries a request")
    p.add_argument("--concurrency", type=int, default=4, help="requests in flight")
    p.add_argument("--format", choices=("binary", "json"), default="binary")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds a request may take")
    p.add_argument("--json-out", default=None)
    a = p.parse_args(argv)

    url = a.url.rstrip("/")
    xq = read_bin(a.queries, "<f4")
    gt = read_bin(a.gt, "<i4")
    if gt.shape[0] < xq.shape[0] or gt.shape[1] < a.k:
        raise SystemExit(f"{a.gt}: expected at least {xq.shape[0]} rows of {a.k} ids, found {gt.shape}")
    batches: List[Tuple[int, np.ndarray]] = [(i, xq[i:i + a.batch]) for i in range(0, len(xq), a.batch)]

    # One warm-up request (opens caches, JIT-free but connection set-up).
    search(url, xq[:1], a.k, a.complexity, a.probe, a.format, a.timeout)
    ids = np.full((len(xq), a.k), -1, dtype=np.int64)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=a.concurrency) as pool:
        futures = {
            pool.submit(search, url, b, a.k, a.complexity, a.probe, a.format, a.timeout): i for i, b in batches
        }
        for f, i in futures.items():
            got = f.result()
            ids[i:i + len(got)] = got
    wall = time.perf_counter() - t0

    result = {
        "url": url,
        "queries": int(len(xq)),
        "k": a.k,
        "complexity": a.complexity,
        "probe": a.probe,
        "batch": a.batch,
        "concurrency": a.concurrency,
        "format": a.format,
        f"recall@{a.k}": recall_at(ids, gt, a.k),
        "qps": len(xq) / wall,
        "wall_s": wall,
    }
    print(f"recall@{a.k}: {result[f'recall@{a.k}']:.4f}")
    print(f"QPS: {result['qps']:.1f} ({len(xq)} queries in {wall:.2f} s; batch {a.batch}, "
          f"{a.concurrency} in flight, {a.format} bodies)")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
