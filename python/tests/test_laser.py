"""The laser profile from Python (issue #21): built with its defaults, no
codes in RAM, searched with each of its search switches."""

import numpy as np

import stratavec


def test_laser_builds_and_searches_with_each_switch(tmp_path):
    rng = np.random.default_rng(3)
    centres = rng.standard_normal((20, 96)).astype(np.float32) * 4
    x = (centres[rng.integers(0, 20, 3000)] + rng.standard_normal((3000, 96))).astype(np.float32)
    q = x[:50] + 0.1 * rng.standard_normal((50, 96)).astype(np.float32)
    report = stratavec.build_index(x, tmp_path / "l", profile="laser", graph_degree=32, threads=2)
    assert "code_dim" in report["chosen"] and "store" in report["chosen"]
    index = stratavec.Index.open(tmp_path / "l", memory_budget_mb=8)
    assert index.profile == "laser"
    d2 = ((q[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    truth = np.argsort(d2, axis=1)[:, :10]
    for adaptive, ratio in [(False, 1.0), (True, 0.5)]:
        _, ids = index.search(q, k=10, complexity=128, adaptive_beam=adaptive, dispatch_ratio=ratio)
        hits = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, truth)])
        assert hits >= 0.9, (adaptive, ratio, hits)
