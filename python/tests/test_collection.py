"""The in-process collection (stratavec.Collection, build_collection): the
merge is exact, probe routes to the nearest segments, a failed build leaves
the previous collection, bad arguments are refused by name."""

import os

import numpy as np
import pytest

import stratavec

DIM = 16
SMALL = dict(graph_degree=16, complexity=32, pq_bytes=8, threads=2)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    centers = rng.normal(size=(8, DIM)).astype(np.float32) * 4
    xb = (centers[rng.integers(0, 8, 3000)] + rng.normal(size=(3000, DIM))).astype(np.float32)
    xq = (centers[rng.integers(0, 8, 40)] + rng.normal(size=(40, DIM))).astype(np.float32)
    d = ((xq[:, None, :] - xb[None]) ** 2).sum(-1)
    return xb, xq, np.argsort(d, 1, kind="stable")[:, :10]


@pytest.fixture(scope="module")
def kmeans_dir(tmp_path_factory, data):
    xb, _, _ = data
    out = tmp_path_factory.mktemp("coll") / "c"
    info = stratavec.build_collection(xb, out, segments=4, partition="kmeans", **SMALL)
    assert info["n"] == 3000 and len(info["segments"]) == 4
    assert info["centroids"].shape == (4, DIM)
    return out


def recall(I, gt):
    return np.mean([len(set(a) & set(b)) / 10 for a, b in zip(I, gt)])


def test_every_segment_search_is_the_exact_merge(kmeans_dir, data):
    _, xq, gt = data
    c = stratavec.Collection.open(kmeans_dir, memory_budget_mb=8)
    assert len(c) == 3000 and c.partition == "kmeans" and len(c.segments) == 4
    D, I, stats = c.search(xq, k=10, complexity=40, return_stats=True)
    assert stats["segment_queries"] == [40] * 4 and stats["merge_s"] >= 0
    parts = []
    for seg in c.segments:
        index = stratavec.Index.open(seg["dir"])
        d, i = index.search(xq, k=10, complexity=40)
        parts.append((np.arange(len(xq), dtype=np.int64), d, i))
    D2, I2 = stratavec.merge_results(len(xq), 10, parts)
    np.testing.assert_array_equal(I, I2)
    np.testing.assert_array_equal(D, D2)
    assert recall(I, gt) >= 0.95


def test_probe_routes_to_the_nearest_segments(kmeans_dir, data):
    _, xq, gt = data
    c = stratavec.Collection.open(kmeans_dir)
    routes = stratavec.route_queries(kmeans_dir, xq, probe=2)
    assert sum(len(r) for r in routes) == 2 * len(xq)
    _, _, stats = c.search(xq, k=10, complexity=40, probe=2, return_stats=True)
    assert stats["segment_queries"] == [len(r) for r in routes]
    r = [recall(c.search(xq, k=10, complexity=40, probe=p)[1], gt) for p in (1, 2, 4)]
    assert r[0] <= r[1] + 1e-9 <= r[2] + 2e-9
    # Further segments are searched at shrinking lists (40, 20, 10, 10):
    # fewer nodes fetched than every segment at 40, for most of the recall.
    plan = stratavec.plan_visits(kmeans_dir, xq, 40, 10)
    assert sorted({l for _, l, _ in plan}) == [10, 20, 40]
    fetched = lambda st: int((st["reads"] + st["cache_hits"]).sum())
    _, I_s, st_s = c.search(xq, k=10, complexity=40, return_stats=True)
    _, I_f, st_f = c.search(xq, k=10, complexity=40, probe_shrink=1.0, return_stats=True)
    assert fetched(st_s) < fetched(st_f)
    assert recall(I_s, gt) >= recall(I_f, gt) - 0.02


def test_a_failed_build_leaves_the_previous_collection(tmp_path, data):
    xb, xq, _ = data
    out = tmp_path / "c"
    stratavec.build_collection(xb[:1000], out, segments=2, **SMALL)
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    bad = xb.copy()
    bad[2999, 0] = np.nan  # in the last range segment
    with pytest.raises(ValueError):
        stratavec.build_collection(bad, out, segments=3, **SMALL)
    after = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert after == before
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".")]
    assert stratavec.Collection.open(out).n == 1000


def test_bad_arguments_are_refused_by_name(kmeans_dir, data):
    xb, xq, _ = data
    c = stratavec.Collection.open(kmeans_dir)
    with pytest.raises(ValueError, match="dimension 16"):
        c.search(xq[:, :8], k=10)
    with pytest.raises(ValueError, match="probe"):
        c.search(xq, k=10, probe=0)
    with pytest.raises(ValueError, match=r"probe shrink.*\(0, 1\].*1\.5"):
        c.search(xq, k=10, probe_shrink=1.5)
    with pytest.raises(ValueError, match="partition"):
        stratavec.partition_collection(xb, 2, partition="hash")
    with pytest.raises(ValueError, match="segments"):
        stratavec.partition_collection(xb[:3], 4)
    with pytest.raises(ValueError, match="partition"):
        stratavec.partition_collection(xb, 2, partition="kmeans", metric="ip")
    with pytest.raises(ValueError, match=r"parts\[0\] D"):
        stratavec.merge_results(2, 10, [(np.arange(2), np.zeros((2, 5), np.float32), np.zeros((2, 10), np.int64))])
    with pytest.raises(FileNotFoundError):
        stratavec.Collection.open(kmeans_dir.parent / "absent")
