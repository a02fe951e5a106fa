"""Collections of segments on one machine (issue #24), same run.

Interleaved rounds (each round runs every system once, in a rotated order,
so drift on a shared machine hits all alike) of:

- the single index (1 segment);
- range collections of 2, 4, 8 segments, every segment searched, at the
  same per-segment L (same total data, same total budget);
- k-means collections searched at each ``--probe``, at each
  ``--probe-shrink`` (a query's further segments searched at shrinking
  lists, 0.5 the default; 1.0 every segment at L);
- with ``--ray``: the 4-segment collections through Ray actors
  (``stratavec.ray_collection.RayCollection``) on a local Ray instance, for
  Ray's overhead against the in-process collection.

Each row: QPS, recall@10, p50/p99 of the per-query latency (a collection's
is the sum of its segment searches'), reads a query, the merge's share of
the wall time, and RAM held. One JSON row a line to ``--out``.
benchmarks/scenarios/collection.toml builds the collections and runs this
as below; benchmarks/tables/collection.py renders the rows into
BENCHMARKS.md (``python3 benchmarks/bench.py report
benchmarks/scenarios/collection.toml``).

    .cache/venv-py/bin/python benchmarks/collection_bench.py \
        --data ~/.cache/stratavec/wordnet-minilm --single .cache/bench/wordnet-minilm-diskann-R64-L128-pq48 \
        --collections .cache/collections/wordnet-minilm-{range-2,range-4,range-8,kmeans-4,kmeans-8} \
        --budget-mb 35.9 --rounds 3 --ray --out benchmarks/results/collections-384.jsonl
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import stratavec


def read_bin(path: Path, dtype) -> np.ndarray:
    n, d = np.fromfile(path, dtype=np.int32, count=2)
    return np.fromfile(path, dtype=dtype, offset=8, count=int(n) * int(d)).reshape(int(n), int(d))


def recall_at_10(I: np.ndarray, gt: np.ndarray) -> float:
    return float(np.mean([len(set(a[:10]) & set(b[:10])) / 10 for a, b in zip(I, gt)]))


def row(system, info, L, probe, rnd, nq, wall, I, gt, stats):
    lat = np.asarray(stats.get("latency_us", [np.nan])) if stats else np.array([np.nan])
    reads = np.asarray(stats["reads"]).mean() if stats and "reads" in stats else None
    return {
        "system": system,
        "segments": info["segments"],
        "partition": info["partition"],
        "probe": probe,
        "probe_shrink": info.get("probe_shrink"),
        "L": L,
        "round": rnd,
        "qps": nq / wall,
        "recall": recall_at_10(I, gt),
        "p50_us": float(np.nanpercentile(lat, 50)),
        "p99_us": float(np.nanpercentile(lat, 99)),
        "reads_per_query": None if reads is None else float(reads),
        "merge_share": (stats or {}).get("merge_s", 0.0) / wall if stats else None,
        "memory_bytes": info["memory_bytes"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--single", type=Path, required=True)
    ap.add_argument("--collections", type=Path, nargs="+", required=True)
    ap.add_argument("--budget-mb", type=float, required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-L", type=int, nargs="+", default=[10, 20, 30, 40, 60, 80])
    ap.add_argument("--probe", type=int, nargs="+", default=[1, 2, 3, 4])
    ap.add_argument("--probe-shrink", type=float, nargs="+", default=[0.5, 1.0],
                    help="k-means: list-size ratio from a query's nearer segment to the next")
    ap.add_argument("--ray", action="store_true", help="also the 4-segment collections on Ray")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()

    xq = read_bin(a.data / "query.fbin", np.float32)
    gt = read_bin(a.data / "gt.ibin", np.int32)[:, :10]
    nq = len(xq)
    systems = []  # (name, info, search(L, probe) -> (I, stats, wall), probes)

    single = stratavec.Index.open(a.single, memory_budget_mb=a.budget_mb)

    def search_single(L, probe):
        t = time.perf_counter()
        _, I, st = single.search(xq, k=10, complexity=L, threads=a.threads, return_stats=True)
        return I, st, time.perf_counter() - t

    info = {"segments": 1, "partition": "none", "memory_bytes": single.memory()["total"]}
    systems.append(("single", info, search_single, [None]))
    for d in a.collections:
        c = stratavec.Collection.open(d, memory_budget_mb=a.budget_mb)
        info = {"segments": len(c.segments), "partition": c.partition, "memory_bytes": c.memory_bytes()}
        probes = [p for p in a.probe if p < len(c.segments)] + [None] if c.partition == "kmeans" else [None]

        shrinks = a.probe_shrink if c.partition == "kmeans" else [None]
        for shrink in shrinks:

            def search_coll(L, probe, c=c, shrink=shrink):
                t = time.perf_counter()
                _, I, st = c.search(xq, k=10, complexity=L, probe=probe, probe_shrink=shrink,
                                    threads=a.threads, return_stats=True)
                return I, st, time.perf_counter() - t

            name = f"collection-{c.partition}-{len(c.segments)}"
            if shrink is not None and shrink != 0.5:
                name += f" shrink {shrink:g}"
            # At probe 1 the shrink changes nothing: measured once.
            mine = probes if shrink in (None, 0.5) else [p for p in probes if p != 1]
            systems.append((name, dict(info, probe_shrink=shrink), search_coll, mine))
        if a.ray and len(c.segments) == 4:
            from stratavec.ray_collection import RayCollection, init_local_ray, require_ray

            ray = require_ray()
            if not ray.is_initialized():  # on 127.0.0.1 only
                init_local_ray(num_cpus=2, object_store_memory=200 * 1024 * 1024, log_to_driver=False)
            rc = RayCollection(d, memory_budget_mb=a.budget_mb)

            def search_ray(L, probe, rc=rc):
                before = rc.stats()["merge_s"]
                t = time.perf_counter()
                _, I = rc.search(xq, k=10, complexity=L, probe=probe, threads=a.threads)
                wall = time.perf_counter() - t
                return I, {"merge_s": rc.stats()["merge_s"] - before}, wall

            shrink = 0.5 if c.partition == "kmeans" else None  # the default
            systems.append((f"ray-{c.partition}-{len(c.segments)}", dict(info, probe_shrink=shrink),
                            search_ray, probes))

    # One unrecorded pass each first: readers, rings and the page cache of
    # the small files set up before anything is timed.
    for _, _, search, probes in systems:
        search(a.L[0], probes[0])
    a.out.parent.mkdir(parents=True, exist_ok=True)
    with open(a.out, "w") as out:
        for rnd in range(a.rounds):
            order = systems[rnd % len(systems):] + systems[: rnd % len(systems)]
            for name, info, search, probes in order:
                for probe in probes:
                    for L in a.L:
                        I, st, wall = search(L, probe)
                        r = row(name, info, L, probe, rnd, nq, wall, I, gt, st)
                        out.write(json.dumps(r) + "\n")
                        out.flush()
                        print(f"round {rnd} {name:24} probe {str(probe):>4} L {L:3}: "
                              f"recall {r['recall']:.4f} QPS {r['qps']:7.0f} p99 {r['p99_us']:9.0f} us")


if __name__ == "__main__":
    main()
