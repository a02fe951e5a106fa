"""Range search vs the baseline of repeated k-NN with doubling k.

For each query the baseline searches k = 10, 20, 40, ... (search list
L = max(mult * k, 16)) until the k-th result lies outside the radius, and
counts the reads of every round. Prints AP, recall and reads per query, the
same scores `stratavec search --radius` prints for range search.

    python benchmarks/range_vs_knn.py INDEX_DIR DATA_DIR RANGE_GT RADIUS [--mult 2]
(needs the stratavec Python package: see python/README.md)
"""
import argparse
import struct

import numpy as np
import stratavec


def read_range_gt(path):
    raw = open(path, "rb").read()
    nq, total = struct.unpack("<ii", raw[:8])
    counts = np.frombuffer(raw, dtype=np.int32, count=nq, offset=8)
    ids = np.frombuffer(raw, dtype=np.int32, count=total, offset=8 + 4 * nq)
    lims = np.concatenate([[0], np.cumsum(counts)])
    return [set(ids[lims[i]:lims[i + 1]].tolist()) for i in range(nq)]


def average_precision(got, want):
    if not want:
        return 1.0 if len(got) == 0 else 0.0
    hits, s = 0, 0.0
    for rank, g in enumerate(got):
        if g in want:
            hits += 1
            s += hits / (rank + 1)
    return s / len(want)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("index_dir")
    ap.add_argument("data_dir")
    ap.add_argument("range_gt")
    ap.add_argument("radius", type=float)
    ap.add_argument("--mult", type=int, default=2, help="L = max(mult * k, 16)")
    ap.add_argument("--memory-budget-mb", type=float, default=None)
    a = ap.parse_args()
    index = stratavec.Index.open(a.index_dir, memory_budget_mb=a.memory_budget_mb)
    raw = np.fromfile(f"{a.data_dir}/query.fbin", dtype=np.uint32, count=2)
    queries = np.fromfile(f"{a.data_dir}/query.fbin", dtype=np.float32)[2:].reshape(int(raw[0]), int(raw[1]))
    truth = read_range_gt(a.range_gt)
    nq = len(queries)
    reads = np.zeros(nq)
    found = [np.empty(0, dtype=np.int64)] * nq
    todo, k = np.arange(nq), 10
    while len(todo) and k <= index.n:
        D, I, st = index.search(queries[todo], k=k, complexity=max(a.mult * k, 16), return_stats=True)
        reads[todo] += st["reads"]
        again = []
        for j, qi in enumerate(todo):
            inside = D[j] <= a.radius
            found[qi] = I[j][inside]
            if inside.all():
                again.append(qi)
        todo, k = np.array(again, dtype=int), k * 2
    aps = [average_precision(found[i].tolist(), truth[i]) for i in range(nq)]
    hits = sum(len(set(found[i].tolist()) & truth[i]) for i in range(nq))
    total = sum(len(t) for t in truth)
    print(f"doubling k-NN, L = max({a.mult}k, 16): AP {np.mean(aps):.4f}, recall {hits / max(total, 1):.4f}, "
          f"reads/query {reads.mean():.1f}")


if __name__ == "__main__":
    main()
