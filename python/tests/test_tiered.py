"""The tiered profile from Python (issue #23): a compact CSR index answers
the same through the SSD backend and the memory tiers (mmap, a simulated
tier), and a malformed tier is refused with the expected form."""

import numpy as np
import pytest

import stratavec


def test_tiered_index_answers_the_same_on_every_tier(tmp_path):
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((20, 32)).astype(np.float32) * 4
    x = (centres[rng.integers(0, 20, 3000)] + rng.standard_normal((3000, 32))).astype(np.float32)
    q = x[:50] + 0.1 * rng.standard_normal((50, 32)).astype(np.float32)
    stratavec.build_index(x, tmp_path / "i", profile="tiered", graph_degree=32, threads=2)
    d2 = ((q[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    truth = np.argsort(d2, axis=1)[:, :10]
    answers = {}
    for io in ("auto", "mmap", "simulated:500,5"):
        index = stratavec.Index.open(tmp_path / "i", memory_budget_mb=4, io=io)
        assert index.profile == "tiered"
        _, ids, stats = index.search(q, k=10, complexity=64, return_stats=True)
        hits = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, truth)])
        assert hits >= 0.95, (io, hits)
        answers[io] = ids
    assert index.io_backend == "simulated"
    assert (answers["mmap"] == answers["auto"]).all()
    assert (answers["simulated:500,5"] == answers["auto"]).all()
    with pytest.raises(ValueError, match="simulated:LAT_NS"):
        stratavec.Index.open(tmp_path / "i", io="simulated:1us")


def test_ivf_full_probe_is_exact_and_reports_small_reads(tmp_path):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2000, 16)).astype(np.float32)
    q = rng.standard_normal((30, 16)).astype(np.float32)
    stratavec.build_index(x, tmp_path / "v", profile="ivf", ivf_clusters=20, ivf_replicas=3,
                          ivf_closure=0.5, ivf_grouping="none", threads=2)
    index = stratavec.Index.open(tmp_path / "v", io="mmap")
    assert index.profile == "ivf"
    _, ids, stats = index.search(q, k=10, complexity=20, return_stats=True)
    d2 = ((q[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    truth = np.argsort(d2, axis=1)[:, :10]
    assert (np.sort(ids, axis=1) == np.sort(truth, axis=1)).all()
    # id order: every member of every probed cluster is a small read.
    assert (stats["small_reads"] > 0).all()
    with pytest.raises(ValueError, match="ivf_grouping"):
        stratavec.build_index(x, tmp_path / "w", profile="ivf", ivf_grouping="cluster")


def test_ivf_pq_reads_only_the_reranked_vectors(tmp_path):
    """IVF-PQ (``ivf_codes``): re-ranking every probed member is the plain
    cluster search's answer; at the default factor a query reads 4·k."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2000, 16)).astype(np.float32)
    q = rng.standard_normal((30, 16)).astype(np.float32)
    info = stratavec.build_index(x, tmp_path / "p", profile="ivf", ivf_clusters=20,
                                 ivf_replicas=2, ivf_codes=True, pq_bytes=8,
                                 ivf_sample_nprobe=12, threads=2)
    assert "pq" in info["stages"]
    index = stratavec.Index.open(tmp_path / "p")
    _, plain = index.search(q, k=10, complexity=12, rerank_factor=0)
    _, every = index.search(q, k=10, complexity=12, rerank_factor=1e6)
    assert (plain == every).all()
    _, ids, stats = index.search(q, k=10, complexity=12, return_stats=True)
    assert (stats["reads"] <= 40).all() and (ids >= 0).all()
    with pytest.raises(ValueError, match="rerank_factor"):
        index.search(q, k=10, complexity=12, rerank_factor=-1)
