"""The HTTP service over a collection (issue #24): answers equal the
in-process collection's, JSON and binary bodies alike; bad requests get a
4xx naming the problem and the server goes on serving.

The request parsing is tested without Ray; the server tests run one Ray
Serve app on a local cluster at 127.0.0.1 for the module, through a real
HTTP client (urllib), in loops bounded in count and time.
"""

import json
import os
import socket
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

import stratavec
from stratavec.serve import BadRequest, Limits, parse_search

try:
    import ray

    ray.remote  # not an empty namespace package (a directory named ray)
except (ImportError, AttributeError):
    ray = None

needs_ray = pytest.mark.skipif(
    ray is None, reason="Ray is not installed: pip install 'stratavec[ray]' to run the HTTP server tests"
)
# Ray Serve's own models use pydantic features pydantic 2 deprecates.
pytestmark = pytest.mark.filterwarnings(r"ignore::DeprecationWarning:ray\..*")

N, DIM, K = 2000, 16, 10
MAX_BODY = 256 * 1024  # small, so the 413 test sends little


def _data():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((N, DIM)).astype(np.float32)
    q = (x[:20] + 0.1 * rng.standard_normal((20, DIM))).astype(np.float32)
    return x, q


# ---------------------------------------------------------------- parsing, no Ray


def _parse(body, ctype="application/json", params=None, **kw):
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    return parse_search(ctype, body, params or {}, dim=4, n=100, segments=3, limits=Limits(max_k=50), **kw)


def test_parse_json_and_binary():
    r = _parse({"vectors": [[1, 2, 3, 4], [0, 0, 0, 0.5]], "k": 5, "complexity": 40, "probe": 2})
    assert r.queries.shape == (2, 4) and r.queries.dtype == np.float32
    assert (r.k, r.complexity, r.probe) == (5, 40, 2)
    r = _parse({"vector": [1, 2, 3, 4]})
    assert r.queries.shape == (1, 4) and (r.k, r.complexity, r.probe) == (10, None, None)
    rows = np.arange(12, dtype="<f4").tobytes()
    r = _parse(rows, "application/octet-stream", {"k": "3", "probe": "1"})
    assert r.queries.shape == (3, 4) and r.k == 3 and r.probe == 1
    assert r.queries[2, 3] == 11


@pytest.mark.parametrize(
    "body, ctype, params, message",
    [
        ({"vectors": [[1, 2, 3]]}, None, None, r"vectors: expected vectors of 4 numbers \(the collection's dimension\), found 3"),
        ({"vectors": [[1, 2, 3, 4], [1, 2]]}, None, None, r"vectors\[1\]: expected 4 numbers"),
        ({"vectors": [[1, 2, "x", 4]]}, None, None, r"vectors\[0\]\[2\]: expected a number, found 'x'"),
        ({"vectors": []}, None, None, "non-empty list"),
        ({"vector": [1, 2, 3, 4], "k": 0}, None, None, r"k: expected an integer in 1\.\.50"),
        ({"vector": [1, 2, 3, 4], "k": 51}, None, None, r"k: expected an integer in 1\.\.50 .*found 51"),
        ({"vector": [1, 2, 3, 4], "k": "ten"}, None, None, "k: expected an integer"),
        ({"vector": [1, 2, 3, 4], "probe": 4}, None, None, r"probe: expected an integer in 1\.\.3"),
        ({"vector": [1, 2, 3, 4], "complexty": 40}, None, None, "field 'complexty': expected one of"),
        ({"k": 10}, None, None, 'missing field: expected "vectors"'),
        ([1, 2, 3, 4], None, None, "expected a JSON object, found a JSON list"),
        (b"{not json", None, None, "body: expected JSON"),
        (b"", None, None, "found an empty body"),
        (b"\x00" * 20, "application/octet-stream", None, "expected a multiple of 16 bytes .* found 20 bytes"),
        (b"\x00" * 16, "application/octet-stream", {"k": "x"}, "query parameter k: expected an integer, found 'x'"),
        (b"\x00" * 16, "application/octet-stream", {"kk": "3"}, "query parameter kk: expected one of"),
        ({"vector": [1, 2, 3, 4]}, None, {"k": "3"}, "query parameter k: expected none with a JSON body"),
    ],
)
def test_parse_refuses_with_a_message_naming_the_problem(body, ctype, params, message):
    with pytest.raises(BadRequest, match=message) as e:
        _parse(body, ctype or "application/json", params)
    assert e.value.status == 400


# ---------------------------------------------------------------- the server


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(url, body=None, ctype="application/json", method=None, timeout=30):
    """(status, JSON document) for a request; 4xx/5xx are answers too."""
    if body is not None and not isinstance(body, bytes):
        body = json.dumps(body).encode()
    req = urllib.request.Request(url, data=body, method=method)
    if body is not None:
        req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A collection served at 127.0.0.1 by one Ray Serve app for the module."""
    if ray is None:
        pytest.skip("Ray is not installed: pip install 'stratavec[ray]'")
    from stratavec.serve import serve_collection, stop_serving

    x, q = _data()
    root = tmp_path_factory.mktemp("served")
    stratavec.build_collection(
        x, root / "c", segments=2, partition="kmeans", graph_degree=16, complexity=32, pq_bytes=8, threads=1
    )
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(
        num_cpus=2,
        object_store_memory=100 * 2**20,
        include_dashboard=False,
        log_to_driver=False,
        _node_ip_address="127.0.0.1",
    )
    try:
        url = serve_collection(
            str(root / "c"), "127.0.0.1", _free_port(), limits=Limits(max_body_bytes=MAX_BODY, max_k=100)
        )
        yield {"url": url, "dir": root / "c", "x": x, "q": q}
    finally:
        try:
            stop_serving()
        finally:
            ray.shutdown()


@needs_ray
def test_search_answers_as_the_in_process_collection(server):
    url, q = server["url"], server["q"]
    D0, I0 = stratavec.Collection.open(server["dir"]).search(q, k=K, complexity=40)
    status, doc = _request(url + "/search", {"vectors": q.tolist(), "k": K, "complexity": 40})
    assert status == 200, doc
    assert np.array(doc["ids"]).tolist() == I0.tolist()
    np.testing.assert_allclose(np.array(doc["distances"], dtype=np.float32), D0, rtol=1e-5)

    status, doc = _request(url + "/search?k=10&complexity=40", q.astype("<f4").tobytes(), "application/octet-stream")
    assert status == 200, doc
    assert doc["ids"] == I0.tolist()

    status, doc = _request(url + "/search", {"vector": q[3].tolist(), "k": 4, "complexity": 40, "probe": 1})
    assert status == 200 and len(doc["ids"]) == 1 and len(doc["ids"][0]) == 4
    D1, I1 = stratavec.Collection.open(server["dir"]).search(q[3:4], k=4, complexity=40, probe=1)
    assert doc["ids"] == I1.tolist()


@needs_ray
def test_bad_requests_get_4xx_and_the_server_keeps_serving(server):
    url, q = server["url"], server["q"]
    good = {"vectors": q[:2].tolist(), "k": 5}
    cases = [
        (("/search", {"vectors": [[1.0] * (DIM - 1)]}), 400, "expected vectors of 16 numbers"),
        (("/search", {"vector": q[0].tolist(), "k": 0}), 400, "k: expected an integer in 1..100"),
        (("/search", {"vector": q[0].tolist(), "k": 101}), 400, "found 101"),
        (("/search", b"not json at all"), 400, "body: expected JSON"),
        (("/search", {"k": 3}), 400, "missing field"),
        (("/search", b"\x00" * (4 * DIM + 2), "application/octet-stream"), 400, "expected a multiple of 64 bytes"),
        (("/search", b"\x00" * (MAX_BODY + 4 * DIM), "application/octet-stream"), 413, f"at most {MAX_BODY} bytes"),
        (("/nowhere", None, "application/json", "GET"), 404, "expected POST /search"),
        (("/search", None, "application/json", "GET"), 405, "expected method POST"),
    ]
    deadline = time.monotonic() + 90
    for args, status, message in cases:
        assert time.monotonic() < deadline, "bad-request loop exceeded its time bound"
        path, body, *rest = args
        got, doc = _request(url + path, body, *rest)
        assert got == status, (path, doc)
        assert message in doc["error"], doc
        ok, answer = _request(url + "/search", good)  # still serving
        assert ok == 200 and len(answer["ids"]) == 2
    status, stats = _request(url + "/stats")
    assert status == 200
    counts = stats["server"]["status"]
    assert counts["400"] >= 6 and counts["413"] == 1 and counts["404"] == 1 and counts["405"] == 1
    assert stats["collection"]["queries"] >= 2 * len(cases)
    assert {"fanout_wait_s", "merge_s", "retries", "actor_failures"} <= set(stats["collection"])


@needs_ray
def test_health(server):
    status, doc = _request(server["url"] + "/health")
    assert status == 200
    assert doc["status"] == "ok" and doc["segments"] == 2 and doc["dim"] == DIM and doc["n"] == N
