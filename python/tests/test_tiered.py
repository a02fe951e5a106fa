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
