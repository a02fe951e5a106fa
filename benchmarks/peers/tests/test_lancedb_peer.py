"""The LanceDB peer through run_peer.py, on a tiny synthetic data set: it
builds a Lance table with an IVF_PQ index, reaches recall@10 >= 0.9 when it
probes every partition (re-ranking by exact distance), prints one JSON line
per sweep value with the common fields and its own, reuses a matching index
and rebuilds with --rebuild.

Runs with any Python that has pytest: the peer runs in its own venv
(benchmarks/.venvs/lancedb, made by `benchmarks/peers/setup_venvs.sh
lancedb`), and so does the data maker (numpy), by running this file as a
script. Skipped when that venv is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PEERS = Path(__file__).resolve().parents[1]
RUN_PEER = PEERS / "run_peer.py"
VENV_PY = PEERS.parent / ".venvs" / "lancedb" / "bin" / "python"

N, NQ, DIM, DEPTH = 2000, 50, 32, 20
PQ_BYTES = 12  # does not divide 32: the peer must take 8 (nearest divisor, smaller on the 8/16 tie)


def make_data(d: Path) -> None:
    """base.fbin / query.fbin (uint32 n, uint32 d, float32 rows) and gt.ibin
    (uint32 nq, uint32 k, ids, then float32 squared L2 distances), the ground
    truth by numpy brute force. Clustered, so the IVF partitions mean
    something. Runs in the peer's venv (it has numpy)."""
    import numpy as np

    rng = np.random.default_rng(7)
    centers = rng.standard_normal((20, DIM)) * 3.0
    base = (centers[rng.integers(0, 20, N)] + rng.standard_normal((N, DIM))).astype(np.float32)
    queries = (centers[rng.integers(0, 20, NQ)] + rng.standard_normal((NQ, DIM))).astype(np.float32)
    dist = ((queries[:, None, :].astype(np.float64) - base[None, :, :].astype(np.float64)) ** 2).sum(-1)
    ids = np.argsort(dist, axis=1, kind="stable")[:, :DEPTH]
    for name, a in (("base", base), ("query", queries)):
        with open(d / f"{name}.fbin", "wb") as f:
            f.write(np.array(a.shape, dtype="<u4").tobytes())
            f.write(np.ascontiguousarray(a, dtype="<f4").tobytes())
    with open(d / "gt.ibin", "wb") as f:
        f.write(np.array([NQ, DEPTH], dtype="<u4").tobytes())
        f.write(ids.astype("<u4").tobytes())
        f.write(np.take_along_axis(dist, ids, axis=1).astype("<f4").tobytes())


if __name__ == "__main__":
    # The peer's venv has numpy but not pytest: the data maker stops here.
    if len(sys.argv) == 3 and sys.argv[1] == "--make-data":
        make_data(Path(sys.argv[2]))
        sys.exit(0)
    sys.exit(f"usage: {os.path.basename(__file__)} --make-data DIR  (the tests run under pytest)")

import pytest  # noqa: E402

pytestmark = pytest.mark.skipif(
    not VENV_PY.exists(),
    reason=f"no LanceDB venv at {VENV_PY}: run `benchmarks/peers/setup_venvs.sh lancedb`",
)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("lancedb-data")
    subprocess.run([str(VENV_PY), __file__, "--make-data", str(d)], check=True, timeout=60)
    return d


def run(data: Path, index_dir: Path, *extra: str, check: bool = True) -> subprocess.CompletedProcess:
    cmd = [str(VENV_PY), str(RUN_PEER), "--peer", "lancedb", "--data", str(data), "--index-dir", str(index_dir),
           "--threads", "2", "-k", "10", "--pq-bytes", str(PQ_BYTES), "--memory-budget-mb", "1.0", *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError(f"run_peer failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return p


def rows_of(p: subprocess.CompletedProcess) -> list[dict]:
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]


def lance_files(index_dir: Path) -> dict:
    return {str(f.relative_to(index_dir)): f.stat().st_mtime_ns
            for f in index_dir.rglob("*") if f.is_file() and f.name != "params.json"}


def test_build_sweep_reuse_rebuild(data, tmp_path):
    idx = tmp_path / "idx"
    first = run(data, idx, "--sweep", "1,50")
    rows = rows_of(first)
    assert [r["L"] for r in rows] == [1, 50]
    params = json.loads((idx / "params.json").read_text())
    bp = params["build_params"]
    # --ivf-nlist 1024 (default) is clamped to n/40; 12 PQ bytes -> 8 sub-vectors (divides 32)
    assert bp["num_partitions"] == N // 40 and bp["num_partitions_requested"] == 1024
    assert bp["num_sub_vectors"] == 8 and bp["pq_bytes_requested"] == PQ_BYTES
    assert params["peer"] == "lancedb" and params["build"]["extra"]["num_indexed_rows"] == N
    for r in rows:
        assert r["system"] == "lancedb" and r["sweep_param"] == "nprobes" and r["version"] == params["version"]
        assert r["nprobes"] == r["L"] and r["index_reused"] is False and r["round"] == 0
        for key in ("recall_at_1", "recall_at_10", "qps", "search_s", "cpu_us_per_query", "cpu_util",
                    "reads_per_query", "bytes_per_query", "reads_per_s", "loadavg_1m", "mean_us", "p50_us",
                    "p99_us", "latency_pass_qps", "memory_bytes", "rss_load_delta_bytes", "rss_delta_bytes",
                    "build_s", "build_peak_rss_bytes", "index_bytes", "lance_dataset_bytes",
                    "lance_data_bytes", "lance_indices_bytes", "session_cache_bytes"):
            assert isinstance(r[key], (int, float)), (key, r[key])
        assert r["recall_at_100"] is None  # k = 10
        assert r["refine_factor"] == 4 and r["rerank_candidates"] == 40
        assert r["memory_bounded"] is False and "page cache" in r["memory_note"]
        # the ~60 KB index fits 1.0 MB: prewarmed whole, and the Session holds no more than the budget
        assert r["cache_mode"] == "whole index" and r["session_within_budget"] is True
        assert 0 < r["memory_bytes"] <= 1_000_000 and r["metadata_cache_cap_bytes"] == 125_000
        assert r["session_cache_bytes"] <= 1_000_000
        assert r["lance_page_cache_bytes"] is None or r["lance_page_cache_bytes"] >= 0
        # index_bytes (the runner's sum over the index dir) is the Lance dataset directory
        assert r["index_bytes"] == r["lance_dataset_bytes"] > N * DIM * 4
        assert r["lance_data_bytes"] >= N * DIM * 4 and r["lance_indices_bytes"] > 0
        # One partition of ~40 vectors can hold fewer than k = 10 of a
        # query's candidates once PQ drops duplicates: at nprobes 1 a query
        # may come back short (k-means here has no seed, so it varies);
        # probing 50 partitions never does.
        assert r["queries_short"] == 0 or r["L"] == 1, (r["L"], r["queries_short"])
    # probing every partition, the re-rank finds the true neighbours
    assert rows[1]["recall_at_10"] >= 0.9, rows[1]["recall_at_10"]
    assert rows[1]["recall_at_10"] >= rows[0]["recall_at_10"]
    files = lance_files(idx)

    # The budget is not a build parameter: a budget smaller than the index
    # reuses it, with the index cache capped at 7/8 of the budget.
    again = run(data, idx, "--sweep", "50", "--latency", "off", "--memory-budget-mb", "0.04")
    (row,) = rows_of(again)
    assert row["index_reused"] is True and "reusing index" in again.stderr
    assert row["cache_mode"] == "capped" and row["memory_bytes"] == 40_000
    assert (row["index_cache_cap_bytes"], row["metadata_cache_cap_bytes"]) == (35_000, 5_000)
    assert row["session_cache_bytes"] <= 40_000
    assert row["build_s"] == params["build"]["build_s"]
    assert json.loads((idx / "params.json").read_text()) == params
    assert lance_files(idx) == files  # nothing rewritten
    assert row["recall_at_10"] >= 0.9 and row["mean_us"] is None  # partitions re-read, same results

    rebuilt = run(data, idx, "--sweep", "50", "--latency", "off", "--rebuild")
    (row,) = rows_of(rebuilt)
    assert row["index_reused"] is False and "building lancedb index" in rebuilt.stderr
    assert json.loads((idx / "params.json").read_text())["build"]["built_utc"] >= params["build"]["built_utc"]
    assert set(lance_files(idx)) != set(files)  # new data and index files (Lance names them by UUID)
    assert row["recall_at_10"] >= 0.9


def test_refuses_a_directory_it_does_not_own(data, tmp_path):
    idx = tmp_path / "foreign"
    idx.mkdir()
    (idx / "keep.txt").write_text("not ours")
    p = run(data, idx, "--sweep", "1", "--latency", "off", check=False)
    assert p.returncode != 0 and "refusing to clear it" in p.stderr
    assert (idx / "keep.txt").read_text() == "not ours"

