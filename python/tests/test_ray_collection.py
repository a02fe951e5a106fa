"""Collections on Ray (issue #24): a collection built by Ray tasks answers
as the in-process one does, the fan-out merge is exact, a segment actor
killed under load loses no query (each is retried and counted), and a
failed segment build leaves the previous collection as it was.

One local Ray cluster (several worker processes, listening on 127.0.0.1
only: ``init_local_ray``) serves the whole module; the data are small and seeded so the module takes seconds.
"""

import os
import subprocess
import sys
import time

import numpy as np
import pytest

import stratavec

try:
    import ray

    ray.remote  # not an empty namespace package (a directory named ray)
except (ImportError, AttributeError):  # the optional extra is not installed
    ray = None

needs_ray = pytest.mark.skipif(
    ray is None, reason="Ray is not installed: pip install 'stratavec[ray]' to run the Ray backend tests"
)

N, DIM, NQ, K = 3000, 32, 60, 10
# Small, fast segment builds; threads=1 makes every build byte-identical.
BUILD = dict(graph_degree=24, complexity=48, pq_bytes=16, threads=1, seed=3)


def _data():
    rng = np.random.default_rng(24)
    centres = rng.standard_normal((16, DIM)).astype(np.float32) * 3
    x = (centres[rng.integers(0, 16, N)] + rng.standard_normal((N, DIM))).astype(np.float32)
    q = (x[rng.choice(N, NQ, replace=False)] + 0.3 * rng.standard_normal((NQ, DIM))).astype(np.float32)
    return x, q


def _truth(x, q, k=K):
    d2 = ((q[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    return np.argsort(d2, axis=1, kind="stable")[:, :k]


def _recall(ids, truth):
    return float(np.mean([len(set(a) & set(b)) / truth.shape[1] for a, b in zip(ids, truth)]))


def test_import_stratavec_does_not_import_ray():
    code = "import sys, stratavec; assert 'ray' not in sys.modules, 'import stratavec imported ray'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.fixture(scope="module")
def cluster():
    """A local Ray cluster for the module: 4 worker CPUs on this machine."""
    if ray is None:
        pytest.skip("Ray is not installed: pip install 'stratavec[ray]'")
    import local_ray
    from stratavec.ray_collection import shutdown_ray

    local_ray.start(num_cpus=4, object_store_memory=200 * 2**20, log_to_driver=False)
    yield
    shutdown_ray()


@pytest.fixture(scope="module")
def built(cluster, tmp_path_factory):
    """The same data built as a range collection by Ray and in-process, and
    as a k-means collection by Ray."""
    from stratavec.ray_collection import build_collection_ray

    root = tmp_path_factory.mktemp("collections")
    x, q = _data()
    report = build_collection_ray(x, root / "ray-range", segments=3, partition="range", **BUILD)
    stratavec.build_collection(x, root / "local-range", segments=3, partition="range", **BUILD)
    build_collection_ray(x, root / "ray-kmeans", segments=4, partition="kmeans", memory_budget_mb=12, **BUILD)
    return {"root": root, "x": x, "q": q, "truth": _truth(x, q), "report": report}


@needs_ray
def test_ray_build_answers_as_the_in_process_collection(built):
    from stratavec.ray_collection import RayCollection

    root, q = built["root"], built["q"]
    assert built["report"]["segments"] == [1000, 1000, 1000]
    info = stratavec.collection_info(root / "ray-range")
    assert (info["n"], info["dim"], info["partition"]) == (N, DIM, "range")
    assert [s["n"] for s in info["segments"]] == [1000, 1000, 1000]
    local = stratavec.Collection.open(root / "local-range")
    D0, I0 = local.search(q, k=K, complexity=48)
    with RayCollection(root / "ray-range") as rc:
        assert rc.segments == 3 and rc.n == N and rc.dim == DIM
        D, I = rc.search(q, k=K, complexity=48)
    assert D.shape == (NQ, K) and I.dtype == np.int64
    assert (I == I0).all()
    np.testing.assert_allclose(D, D0, rtol=1e-6)
    # Global ids: segment 2 holds rows 2000..2999 and answers with those ids.
    seg2 = stratavec.Index.open(info["segments"][2]["dir"])
    _, ids = seg2.search(built["x"][2500], k=1)
    assert ids[0, 0] == 2500
    assert _recall(I, built["truth"]) >= 0.9


@needs_ray
def test_kmeans_probe_routes_to_fewer_segments_and_matches_in_process(built):
    from stratavec.ray_collection import RayCollection

    root, q = built["root"], built["q"]
    info = stratavec.collection_info(root / "ray-kmeans")
    assert info["partition"] == "kmeans" and info["centroids"].shape == (4, DIM)
    assert info["memory_budget"] is not None
    local = stratavec.Collection.open(root / "ray-kmeans")
    with RayCollection(root / "ray-kmeans") as rc:
        # Each actor opened its segment with its recorded share of the budget.
        assert sum(rc.budgets_mb) == pytest.approx(12, rel=1e-6)
        assert all(s["memory"]["total"] <= b * 1e6 for s, b in zip(rc.describe(), rc.budgets_mb))
        full = rc.search(q, k=K, complexity=48)
        calls_full = rc.stats()["segment_calls"]
        probed = rc.search(q, k=K, complexity=48, probe=1)
        calls_probe = rc.stats()["segment_calls"] - calls_full
    # One call a segment and list size: the nearest segment at 48, the
    # next at 24, 12, then k — as plan_visits says and Collection does.
    plan = stratavec.plan_visits(root / "ray-kmeans", q, 48, K)
    assert calls_full == len(plan) > 4
    assert sorted({l for _, l, _ in plan}) == sorted({max(K, 48 // 2**r) for r in range(4)})
    assert sum(len(rows) for _, _, rows in plan) == 4 * NQ
    routes = stratavec.route_queries(root / "ray-kmeans", q, 1)
    assert calls_probe == sum(1 for r in routes if len(r)) and sum(len(r) for r in routes) == NQ
    for probe, (D, I) in ((None, full), (1, probed)):
        D0, I0 = local.search(q, k=K, complexity=48, probe=probe)
        assert (I == I0).all(), probe
    assert _recall(full[1], built["truth"]) >= _recall(probed[1], built["truth"]) >= 0.5


@needs_ray
def test_merge_is_exact(built):
    """The fan-out answer equals merging every segment's own top k by hand
    (distance, then id), every segment searched at the same list size
    (probe_shrink=1)."""
    from stratavec.ray_collection import RayCollection

    root, q = built["root"], built["q"]
    info = stratavec.collection_info(root / "ray-kmeans")
    for k in (K, 40):
        pairs = [[] for _ in range(NQ)]
        for seg in info["segments"]:
            D, I = stratavec.Index.open(seg["dir"]).search(q, k=min(k, seg["n"]), complexity=64)
            for r in range(NQ):
                pairs[r] += [(float(d), int(i)) for d, i in zip(D[r], I[r]) if i >= 0]
        want = np.array([[i for _, i in sorted(p)[:k]] for p in pairs])
        with RayCollection(root / "ray-kmeans", segments_per_actor=2) as rc:
            assert rc.stats()["actors"] == 2
            D, I = rc.search(q, k=k, complexity=64, probe_shrink=1.0)
        assert (I == want).all(), k
        assert (np.diff(D, axis=1) >= 0).all()


@needs_ray
def test_k_beyond_a_segment_is_filled_from_the_others(cluster, tmp_path):
    """Segments of 10 vectors, k = 15: each segment answers its 10, the
    merge fills k from the others, exactly the brute-force top 15; k above
    the collection's n is refused."""
    from stratavec.ray_collection import RayCollection, build_collection_ray

    x, q = _data()
    x, q = x[:40], q[:5]
    build_collection_ray(x, tmp_path / "tiny", segments=4, graph_degree=8, complexity=16, pq_bytes=8, threads=1)
    with RayCollection(tmp_path / "tiny", segments_per_actor=4) as rc:
        D, I = rc.search(q, k=15, complexity=40)
        with pytest.raises(ValueError, match=r"k: expected an integer in 1\.\.40"):
            rc.search(q, k=41)
    assert (I == _truth(x, q, 15)).all()
    assert np.isfinite(D).all()


@needs_ray
def test_killed_actor_loses_no_query(built):
    """Kill segment actors during a bounded load loop: every batch still
    answers every query, identically, and each failure is retried and
    counted."""
    from stratavec.ray_collection import RayCollection

    root, q = built["root"], built["q"]
    with RayCollection(root / "ray-range", max_retries=5) as rc:
        D0, I0 = rc.search(q, k=K, complexity=48)
        pids = rc.actor_pids()
        kills = {2: 1, 5: 0}
        deadline = time.monotonic() + 60
        answered = 0
        for it in range(8):
            assert time.monotonic() < deadline, "load loop exceeded its time bound"
            if it in kills:
                rc.kill_segment_actor(kills[it])
            D, I = rc.search(q, k=K, complexity=48, timeout_s=30)
            assert I.shape == (NQ, K) and (I >= 0).all()
            assert (I == I0).all(), it
            answered += len(I)
        st = rc.stats()
        new_pids = rc.actor_pids()
    assert answered == 8 * NQ
    assert st["queries"] == 9 * NQ
    assert st["actor_failures"] >= 1, st
    assert st["retries"] == st["actor_failures"]
    assert st["segment_failures"][2] == 0
    assert new_pids[0] != pids[0] and new_pids[1] != pids[1] and new_pids[2] == pids[2]
    assert _recall(I, built["truth"]) == _recall(I0, built["truth"])
    assert st["fanout_wait_s"] > 0 and st["merge_s"] > 0


@needs_ray
def test_segment_failing_past_max_retries_raises(built):
    from stratavec.ray_collection import RayCollection, SegmentUnavailableError

    with RayCollection(built["root"] / "ray-range", max_retries=0) as rc:
        rc.search(built["q"], k=K)
        rc.kill_segment_actor(1)
        with pytest.raises(SegmentUnavailableError, match=r"segment 1 .*max_retries = 0"):
            rc.search(built["q"], k=K, timeout_s=30)
        assert rc.stats()["actor_failures"] == 1


@needs_ray
def test_bad_queries_are_refused(built):
    from stratavec.ray_collection import RayCollection

    with RayCollection(built["root"] / "ray-range") as rc:
        with pytest.raises(ValueError, match="expected 32 components"):
            rc.search(np.zeros((2, 31), np.float32))
        with pytest.raises(ValueError, match="k: expected an integer in 1..3000"):
            rc.search(built["q"], k=0)
        with pytest.raises(ValueError, match="finite"):
            rc.search(np.full((1, DIM), np.nan, np.float32))
        D, I = rc.search(built["q"][0], k=3)  # one query, 1-D
        assert I.shape == (1, 3)


@needs_ray
def test_failed_segment_build_keeps_the_previous_collection(built, tmp_path):
    from stratavec.ray_collection import SegmentBuildError, build_collection_ray

    x = built["x"][:900]
    target = tmp_path / "c"
    build_collection_ray(x, target, segments=3, **BUILD)
    before = {p: (target / p).read_bytes() for p in ("collection.json",)}
    listing = sorted(str(p.relative_to(target)) for p in target.rglob("*"))
    bad = x.copy()
    bad[850, 5] = np.nan  # only the last range segment (rows 600..899) fails
    with pytest.raises(SegmentBuildError, match="segment 2") as e:
        build_collection_ray(bad, target, segments=3, **BUILD)
    assert e.value.segment == 2
    assert {p: (target / p).read_bytes() for p in before} == before
    assert sorted(str(p.relative_to(target)) for p in target.rglob("*")) == listing
    assert [p.name for p in tmp_path.iterdir()] == ["c"], "the staging directory was left behind"
    stratavec.Collection.open(target).search(x[:5], k=3)  # still opens and answers

    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "notes.txt").write_text("not a collection")
    with pytest.raises(FileExistsError, match="collection.json"):
        build_collection_ray(x, junk, segments=2, **BUILD)


def _rows_searched(rc, settle_s=30.0):
    """The actors' rows searched, once no call is still running (the count
    stops changing)."""
    deadline = time.monotonic() + settle_s
    last = None
    while time.monotonic() < deadline:
        now = sum({d["pid"]: d["rows_searched"] for d in rc.describe()}.values())
        if now == last:
            return now
        last = now
        time.sleep(0.5)
    return last


@needs_ray
def test_a_timed_out_search_stops_its_actors_work(built):
    """A search given up at its deadline cancels its actor calls: they stop
    between chunks of queries, so far fewer rows are searched than the
    batch holds, and the timeout and the cancelled calls are counted."""
    from stratavec.ray_collection import RayCollection

    q = np.repeat(built["q"], 24, axis=0)  # 1440 queries, 23 chunks a segment
    with RayCollection(built["root"] / "ray-range") as rc:
        # The fastest of two whole searches (warm): a timeout of a
        # twentieth of it ends the search early even if the machine gets
        # less busy in between.
        times = []
        for _ in range(2):
            t = time.monotonic()
            rc.search(q, k=K, complexity=100)
            times.append(time.monotonic() - t)
        full = _rows_searched(rc)
        assert full == 2 * 3 * len(q)
        with pytest.raises(TimeoutError, match="did not answer within|deadline"):
            rc.search(q, k=K, complexity=100, timeout_s=min(times) / 20)
        given_up = _rows_searched(rc) - full
        st = rc.stats()
    assert given_up < 3 * len(q) / 2, f"{given_up} rows searched after the timeout of a {3 * len(q)}-row search"
    assert st["searches_timed_out"] == 1 and st["searches"] == 2, st


@needs_ray
def test_a_cancelled_search_stops_its_actors_work(built):
    import threading

    from stratavec.ray_collection import RayCollection, SearchCancelled

    q = np.repeat(built["q"], 12, axis=0)
    with RayCollection(built["root"] / "ray-range") as rc:
        rc.search(q[:10], k=K)
        start = _rows_searched(rc)
        cancel = threading.Event()
        cancel.set()  # given up before it is sent: no query is searched
        with pytest.raises(SearchCancelled):
            rc.search(q, k=K, complexity=200, cancel=cancel)
        assert _rows_searched(rc) - start < 3 * len(q) / 2
        assert rc.stats()["searches_cancelled"] == 1
        late = threading.Event()
        threading.Timer(0.05, late.set).start()
        try:
            rc.search(q, k=K, complexity=200, cancel=late)
        except SearchCancelled:
            assert rc.stats()["calls_cancelled"] >= 1


@needs_ray
def test_writes_go_to_the_actors_and_a_retry_applies_once(cluster, tmp_path):
    """Inserts and deletes through the actors holding the segments (issue
    #55): answered once logged; a batch retried after its actor was killed
    is applied once; the in-process collection opened on the same directory
    answers as the Ray one; a merge runs in every actor with updates."""
    from stratavec.ray_collection import RayCollection, build_collection_ray

    x, q = _data()
    build_collection_ray(x[:2000], tmp_path / "c", segments=2, partition="range", **BUILD)
    with RayCollection(tmp_path / "c", max_retries=5) as rc:
        r = rc.add(x[2000:2600], batch=11)  # ids 2000..2599
        assert (r["count"], r["first_id"], r["repeated"]) == (600, 2000, False)
        rc.kill_segment_actor(1)
        again = rc.add(x[2000:2600], batch=11)
        assert again["repeated"] and rc.n == 2600, again
        with pytest.raises(ValueError, match="found 2002, which is live in segment 0"):
            rc.add(x[:1], ids=[2002])  # live in segment 0 (2002 % 2), its own: a duplicate
        gone = np.arange(0, 2600, 5)
        r = rc.remove(np.concatenate([gone, [9_999]]))
        assert (r["count"], r["missing"]) == (len(gone), 1)
        D, I = rc.search(q, k=K, complexity=64)
        assert not np.isin(I, gone).any()
        keep = np.setdiff1d(np.arange(2600), gone)
        truth = keep[_truth(x[keep], q)]
        assert _recall(I, truth) >= 0.9
        local = stratavec.Collection.open(tmp_path / "c")
        D0, I0 = local.search(q, k=K, complexity=64)
        assert (I == I0).all()
        assert rc.merge() == 2
        D2, I2 = rc.search(q, k=K, complexity=64)
        assert not np.isin(I2, gone).any() and _recall(I2, truth) >= 0.9
        # The merge emptied the logs; the batch ids carried over with it.
        again = rc.add(x[2000:2600], batch=11)
        assert again["repeated"] and again["count"] == 600 and rc.n == len(keep), again
    # A reopen counts the live vectors, not collection.json's build count.
    with RayCollection(tmp_path / "c") as rc:
        assert rc.n == len(keep) and sum(rc.segment_sizes) == len(keep), (rc.n, rc.segment_sizes)


@needs_ray
def test_filters_pass_through_to_the_segments(cluster, tmp_path):
    """A collection built with labels, served on Ray: one expression for
    every query, or one a query (each segment gets its routed rows'),
    answers as the in-process collection does."""
    from stratavec.ray_collection import RayCollection

    x, q = _data()
    labels = [[0] if r % 3 == 0 else ([1] if r % 3 == 1 else []) for r in range(N)]
    stratavec.build_collection(x, tmp_path / "c", segments=3, partition="kmeans", labels=labels,
                               label_names=["third", "next"], **BUILD)
    local = stratavec.Collection.open(tmp_path / "c")
    each = ["third" if i % 2 == 0 else "next" for i in range(NQ)]
    with RayCollection(tmp_path / "c") as rc:
        for f in ("third", each):
            D0, I0 = local.search(q, k=K, complexity=48, filter=f)
            D, I = rc.search(q, k=K, complexity=48, filter=f)
            assert (I == I0).all(), f
            np.testing.assert_allclose(D, D0, rtol=1e-6)
        _, I = rc.search(q, k=K, complexity=48, filter=each)
        for i, row in enumerate(I):
            want = 0 if i % 2 == 0 else 1
            assert all(r % 3 == want for r in row if r >= 0), (i, row)
        with pytest.raises(ValueError, match="one a query"):
            rc.search(q, k=K, filter=each[:-1])
        # Inserts bring their labels to the actor holding their segment.
        rc.add(q[:2], ids=[10_000, 10_001], labels=[[0], [1]])
        _, I = rc.search(q[:2], k=1, complexity=48, filter=["third", "next"])
        assert I[:, 0].tolist() == [10_000, 10_001], I
