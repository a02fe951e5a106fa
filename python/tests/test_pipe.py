"""The pipeann and octopus profiles from Python (issue #22): built with their
defaults, searched pipelined and under every width policy; bad widths get a
clear error."""

import json

import numpy as np
import pytest

import stratavec


@pytest.mark.parametrize("profile", ["pipeann", "octopus"])
def test_profile_searches_under_every_width(tmp_path, profile):
    rng = np.random.default_rng(5)
    centres = rng.standard_normal((20, 32)).astype(np.float32) * 4
    x = (centres[rng.integers(0, 20, 3000)] + rng.standard_normal((3000, 32))).astype(np.float32)
    q = x[:50] + 0.1 * rng.standard_normal((50, 32)).astype(np.float32)
    stratavec.build_index(x, tmp_path / "i", profile=profile, graph_degree=32, threads=2)
    index = stratavec.Index.open(tmp_path / "i", memory_budget_mb=4)
    assert index.profile == profile
    d2 = ((q[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    truth = np.argsort(d2, axis=1)[:, :10]
    for pipelined in (False, True):
        for width in ("fixed", "schedule", "double", "adaptive"):
            _, ids, stats = index.search(
                q, k=10, complexity=100, beam_width=8, in_flight=1, threads=1,
                pipelined=pipelined, width=width, return_stats=True,
            )
            hits = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, truth)])
            assert hits >= 0.95, (pipelined, width, hits)
            assert (stats["wasted"] <= stats["reads"]).all()
    with pytest.raises(ValueError, match="width"):
        index.search(q, k=10, width="wide")


def test_node_cache_rank_and_polling_change_no_answer(tmp_path):
    """Every node cache order holds different records and returns the same
    neighbours; polling for completions returns the same neighbours as
    sleeping; bad values are refused by name."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2000, 16)).astype(np.float32)
    q = x[:40] + 0.05 * rng.standard_normal((40, 16)).astype(np.float32)
    answers = []
    for rank, share in (("bfs", 0.1), ("nav", 0.1), ("indegree", 0.1), ("visits", 0.1),
                        ("visits", 1.0)):
        name = f"{rank}-{share}"
        stratavec.build_index(
            x, tmp_path / name, graph_degree=24, nav_sample=0.02, node_cache_rank=rank,
            visits_sample=share, threads=2,
        )
        # The sample share is recorded, and sizes the visits rank: all 2,000
        # rows as sample queries rank the cache differently from 1,000.
        manifest = json.loads((tmp_path / name / "manifest.json").read_text())
        assert manifest["build"]["visits_sample"] == pytest.approx(share)
        assert (tmp_path / name / "order.bin").exists() == (rank != "bfs")
        floor = stratavec.Index.open(tmp_path / name).memory()["total"]
        # About a tenth of the 2,000 records (164 bytes each) cached.
        index = stratavec.Index.open(tmp_path / name, memory_budget_mb=(floor + 33_000) / 1e6)
        assert 0 < index.cached_nodes < 2000
        _, ids = index.search(q, k=10, complexity=40, threads=1)
        answers.append(ids)
        _, polled = index.search(q, k=10, complexity=40, threads=1, in_flight=1, poll_us=1000)
        np.testing.assert_array_equal(polled, ids)
    for ids in answers[1:]:
        np.testing.assert_array_equal(ids, answers[0])
    assert (tmp_path / "visits-0.1" / "order.bin").read_bytes() != \
        (tmp_path / "visits-1.0" / "order.bin").read_bytes()
    with pytest.raises(ValueError, match="node_cache_rank"):
        stratavec.build_index(x, tmp_path / "bad", node_cache_rank="hot")
    with pytest.raises(ValueError, match="visits_sample"):
        stratavec.build_index(x, tmp_path / "bad", visits_sample=0.0)
    with pytest.raises(ValueError, match="poll_us"):
        index.search(q, k=10, poll_us=-1)
    with pytest.raises(ValueError, match="poll_us"):
        index.search(q, k=10, poll_us=100_000)
