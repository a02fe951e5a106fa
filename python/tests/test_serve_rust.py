"""The shared HTTP contract suite (http_suite.py) against the Rust server,
``$STRATAVEC_BIN serve DIR``, for a small collection and a small index.

The binary is the one ``cargo test`` builds (test.sh exports
STRATAVEC_BIN=target/debug/stratavec before the Python tests). Without it
the module skips, saying why — and fails instead when STRATAVEC_REQUIRE
names ``rust-serve`` (test.sh does: there the binary must be there).

Each server runs as a subprocess on 127.0.0.1 with small bounds and a 1 s
body deadline; its start-up wait is measured, not guessed (ten times what
``stratavec info DIR`` takes, at least 30 s); it is stopped with SIGTERM and
must exit 0.
"""

import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

import http_suite
import stratavec

NEED = "rust-serve"
N, DIM = 2000, 16
LIMITS = dict(
    max_body_bytes=256 * 1024,
    max_queries=64,
    max_k=100,
    max_results=500,
    max_complexity=1000,
    max_work=2000,
    body_timeout_s=1.0,
    search_timeout_s=60.0,
)


def _binary():
    """The server binary, or skip (fail when required) saying why not."""
    path = os.environ.get("STRATAVEC_BIN")
    if not path:
        why = "STRATAVEC_BIN is not set (test.sh sets it to the stratavec binary cargo test builds)"
    elif not (os.path.isfile(path) and os.access(path, os.X_OK)):
        why = f"STRATAVEC_BIN={path}: no executable file there (cargo test builds it)"
    else:
        return path
    required = [r.strip() for r in os.environ.get("STRATAVEC_REQUIRE", "").split(",")]
    if NEED in required:
        pytest.fail(f"{why}; STRATAVEC_REQUIRE={os.environ['STRATAVEC_REQUIRE']} says the Rust server tests must run")
    pytest.skip(why)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(54)
    x = rng.standard_normal((N, DIM)).astype(np.float32)
    q = (x[:40] + 0.1 * rng.standard_normal((40, DIM))).astype(np.float32)
    root = tmp_path_factory.mktemp("rust-served")
    build = dict(graph_degree=16, complexity=32, pq_bytes=8, threads=1)
    stratavec.build_collection(x, root / "collection", segments=2, partition="kmeans", **build)
    stratavec.build_index(x, root / "index", **build)
    return root, q


def _flags(limits):
    return [
        "--max-body-bytes", str(limits["max_body_bytes"]),
        "--max-queries", str(limits["max_queries"]),
        "--max-k", str(limits["max_k"]),
        "--max-results", str(limits["max_results"]),
        "--max-complexity", str(limits["max_complexity"]),
        "--max-work", str(limits["max_work"]),
        "--body-timeout-s", f"{limits['body_timeout_s']:g}",
        "--search-timeout-s", f"{limits['search_timeout_s']:g}",
        "--max-queue", "64",
    ]


def _wait_healthy(proc, url, ready_s, log_path):
    """Until GET /health answers 200; fails with the server's output if it
    exits or does not answer within ready_s."""
    deadline = time.monotonic() + ready_s
    last = "no answer"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            with open(log_path, errors="replace") as f:
                pytest.fail(f"the server exited with {proc.returncode} before answering; stderr:\n{f.read()[-3000:]}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as r:
                if r.status == 200:
                    return
        except urllib.error.HTTPError as e:
            last = f"HTTP {e.code}"
        except OSError as e:
            last = str(e)
        time.sleep(0.1)
    pytest.fail(f"{url}/health: expected 200 within {ready_s:.0f} s (10 × `stratavec info`), last: {last}")


@pytest.fixture(scope="module", params=["collection", "index"])
def served(request, data):
    binary = _binary()
    root, q = data
    kind = request.param
    path = root / kind
    t = time.monotonic()
    subprocess.run([binary, "info", str(path)], capture_output=True, timeout=600)
    ready_s = max(30.0, 10 * (time.monotonic() - t))
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = root / f"serve-{kind}.stderr"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [binary, "serve", str(path), "--host", "127.0.0.1", "--port", str(port), *_flags(LIMITS)],
            stdout=subprocess.PIPE, stderr=log, text=True,
        )
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        t = time.monotonic()
        _wait_healthy(proc, url, ready_s, log_path)
        up_s = time.monotonic() - t
        yield {
            "url": url,
            "dir": path,
            "kind": kind,
            "queries": q,
            "limits": LIMITS,
            "load_requests": 10_000,
            "load_time_s": 600.0,
            "timeout_s": max(30.0, 3 * ready_s),
            "stdout": lines,
            "up_s": up_s,
        }
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=max(30.0, ready_s))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            code = "none: killed after SIGTERM did not stop it"
        reader.join(5)
    assert code == 0, f"stratavec serve exited with {code} on SIGTERM"


@pytest.mark.parametrize("check", http_suite.CHECKS, ids=lambda c: c.__name__[len("check_"):])
def test_contract(served, check):
    check(served)


def test_it_says_where_it_serves_and_what(served):
    status, stats, _ = http_suite.call(served, "GET", "/stats")
    assert status == 200 and served["kind"] in stats, sorted(stats)
    other = "index" if served["kind"] == "collection" else "collection"
    assert other not in stats
    deadline = time.monotonic() + 10
    while not any(line.startswith("serving ") for line in served["stdout"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    ready = [line for line in served["stdout"] if line.startswith("serving ")]
    assert ready and served["url"] in ready[0], served["stdout"][:5]
