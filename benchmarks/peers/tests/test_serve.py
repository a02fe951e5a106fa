"""run_peer.py --serve, the protocol `stratavec bench` runs peers by: one
JSON line in per sweep point, one row out, with its round; a bad request
gets an error line and the peer keeps serving; end of input ends it.

Uses the numpy-only bruteforce peer, so it runs wherever numpy does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

RUN_PEER = Path(__file__).resolve().parents[1] / "run_peer.py"


def write_bin(path: Path, a: np.ndarray, dtype: str) -> None:
    with open(path, "wb") as f:
        f.write(np.array(a.shape, dtype="<u4").tobytes())
        f.write(np.ascontiguousarray(a, dtype=dtype).tobytes())


def make_data(d: Path, n=500, nq=20, dim=8, depth=20) -> None:
    rng = np.random.default_rng(3)
    base = rng.standard_normal((n, dim)).astype(np.float32)
    queries = rng.standard_normal((nq, dim)).astype(np.float32)
    dist = ((queries[:, None, :].astype(np.float64) - base[None, :, :]) ** 2).sum(-1)
    ids = np.argsort(dist, axis=1, kind="stable")[:, :depth]
    write_bin(d / "base.fbin", base, "<f4")
    write_bin(d / "query.fbin", queries, "<f4")
    with open(d / "gt.ibin", "wb") as f:
        f.write(np.array([nq, depth], dtype="<u4").tobytes())
        f.write(ids.astype("<u4").tobytes())
        f.write(np.take_along_axis(dist, ids, axis=1).astype("<f4").tobytes())


def start(tmp_path: Path) -> subprocess.Popen:
    data = tmp_path / "data"
    data.mkdir()
    make_data(data)
    cmd = [sys.executable, str(RUN_PEER), "--peer", "bruteforce", "--serve", "--data", str(data),
           "--index-dir", str(tmp_path / "idx"), "--threads", "1", "-k", "10", "--sweep", "10",
           "--latency", "off", "--min-pass-seconds", "0.05"]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def ask(p: subprocess.Popen, line: str) -> dict:
    p.stdin.write(line + "\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())


def test_serve_answers_each_point_with_its_round(tmp_path):
    p = start(tmp_path)
    try:
        ready = json.loads(p.stdout.readline())
        assert ready["ready"] is True and ready["system"] == "bruteforce"
        a = ask(p, json.dumps({"L": 10, "round": 0}))
        b = ask(p, json.dumps({"L": 40, "round": 2}))
        assert (a["L"], a["round"], b["L"], b["round"]) == (10, 0, 40, 2)
        for row in (a, b):
            assert row["recall_at_10"] == 1.0  # exact search
            assert row["qps"] > 0 and 0 <= row["cpu_util"]
            assert row["reads_per_s"] is None  # in RAM: no device reads
            # Repeated until the pass has run --min-pass-seconds (0.05).
            assert row["repetitions"] >= 1 and row["repetitions"] * row["search_s"] >= 0.05 - 1e-9
        bad = ask(p, "{\"round\": 1}")
        assert "bad request" in bad["error"] and "\"L\"" in bad["error"], bad
        zero = ask(p, json.dumps({"L": 0, "round": 1}))
        assert "L must be at least 1, found 0" in zero["error"], zero
        again = ask(p, json.dumps({"L": 10, "round": 1}))  # still serving after errors
        assert again["round"] == 1
    finally:
        p.stdin.close()
        assert p.wait(timeout=30) == 0
    assert p.stdout.read() == ""


def test_without_serve_it_sweeps_and_exits(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    make_data(data)
    out = subprocess.run([sys.executable, str(RUN_PEER), "--peer", "bruteforce", "--data", str(data),
                          "--index-dir", str(tmp_path / "idx"), "--threads", "1", "--sweep", "10,20",
                          "--latency", "off"], capture_output=True, text=True, check=True)
    rows = [json.loads(x) for x in out.stdout.splitlines() if x.strip()]
    assert [(r["L"], r["round"], r["repetitions"]) for r in rows] == [(10, 0, 1), (20, 0, 1)]


def write_spmat(path: Path, rows: list) -> None:
    indptr = np.cumsum([0] + [len(r) for r in rows]).astype("<i8")
    indices = np.array([x for r in rows for x in r], dtype="<i4")
    ncol = int(indices.max()) + 1 if indices.size else 0
    with open(path, "wb") as f:
        f.write(np.array([len(rows), ncol, indices.size], dtype="<i8").tobytes())
        f.write(indptr.tobytes() + indices.tobytes() + np.ones(indices.size, dtype="<f4").tobytes())


def test_filtered_serve_answers_band_points_from_the_filtered_truth(tmp_path):
    """--filtered: the labels, the filtered queries in their bands and the
    filtered truth read from the data set; the exact peer reaches recall 1
    in every band, and only its matches come back."""
    data = tmp_path / "data"
    data.mkdir()
    make_data(data)
    base = np.fromfile(data / "base.fbin", dtype="<f4")[2:].reshape(500, 8)
    queries = np.fromfile(data / "query.fbin", dtype="<f4")[2:].reshape(20, 8)
    labels = [[0] + ([1] if r % 10 == 0 else []) for r in range(500)]
    write_spmat(data / "base.labels.spmat", labels)
    filters = [[0] if q < 10 else [0, 1] for q in range(20)]
    write_spmat(data / "query.filters.spmat", filters)
    (data / "query.filters.tsv").write_text("query\tband\n" + "".join(f"{q}\t{0 if q < 10 else 1}\n" for q in range(20)))
    with open(data / "gt.filtered.ibin", "wb") as f:
        ids, dists = [], []
        for q in range(20):
            rows = np.arange(500) if q < 10 else np.arange(0, 500, 10)
            d = ((base[rows] - queries[q]) ** 2).sum(1)
            o = np.argsort(d, kind="stable")[:10]
            ids.append(rows[o]), dists.append(d[o])
        f.write(np.array([20, 10], dtype="<u4").tobytes())
        f.write(np.array(ids, dtype="<u4").tobytes() + np.array(dists, dtype="<f4").tobytes())
    cmd = [sys.executable, str(RUN_PEER), "--peer", "bruteforce", "--serve", "--filtered", "--data", str(data),
           "--index-dir", str(tmp_path / "idx"), "--threads", "1", "-k", "10", "--min-pass-seconds", "0.01"]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert json.loads(p.stdout.readline())["ready"] is True
        for band, sel in ((0, 1.0), (1, 0.1)):
            row = ask(p, json.dumps({"L": 10, "round": 1, "band": band}))
            assert (row["band"], row["way"], row["round"], row["kind"]) == (band, "peer", 1, "point"), row
            assert row["recall_at_10"] == 1.0 and abs(row["selectivity"] - sel) < 1e-9, row
        bad = ask(p, json.dumps({"L": 10, "round": 0, "band": 7}))
        assert "band 7: expected one of [0, 1]" in bad["error"], bad
    finally:
        p.stdin.close()
        assert p.wait(timeout=30) == 0
