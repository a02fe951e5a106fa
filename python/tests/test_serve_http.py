"""The HTTP service over a collection on Ray Serve (issues #24, #54): the
shared contract suite (http_suite.py) against a served collection; the
request parsing without Ray; what only the Ray server can show from inside
(the app's admission, deadline and error answers, called directly); and
that a local Ray cluster listens on 127.0.0.1 only and leaves the process's
signal handling as it found it.

One Ray Serve app on a local cluster serves the module. Its start-up is
measured and the waits derive from it (not Ray's fixed 60 s), so the module
passes on a machine whose CPUs are busy; every loop is bounded in count and
time.
"""

import asyncio
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time

import numpy as np
import pytest

import http_suite
import stratavec
from stratavec.serve import BadRequest, Limits, json_depth, parse_search

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

N, DIM = 2000, 16
# Small bounds, so each is reached with little data; max_results and
# max_work are reachable within max_queries (http_suite.bound_cases).
LIMITS = dict(
    max_body_bytes=256 * 1024,
    max_queries=64,
    max_k=100,
    max_results=500,
    max_complexity=1000,
    max_work=2000,
    body_timeout_s=1.0,
    search_timeout_s=120.0,  # busy CPUs: a search must not time out in the suite
)


def _data():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((N, DIM)).astype(np.float32)
    q = (x[:40] + 0.1 * rng.standard_normal((40, DIM))).astype(np.float32)
    return x, q


# ---------------------------------------------------------------- parsing, no Ray


def _parse(body, ctype="application/json", params=None, **kw):
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    kw.setdefault("limits", Limits(max_k=50))
    return parse_search(ctype, body, params or {}, dim=4, n=100, segments=3, **kw)


def test_parse_json_and_binary():
    r = _parse({"vectors": [[1, 2, 3, 4], [0, 0, 0, 0.5]], "k": 5, "complexity": 40, "probe": 2})
    assert r.queries.shape == (2, 4) and r.queries.dtype == np.float32
    assert (r.k, r.complexity, r.probe) == (5, 40, 2)
    r = _parse({"vector": [1, 2, 3, 4]})
    assert r.queries.shape == (1, 4) and (r.k, r.complexity, r.probe) == (10, None, None)
    # null is the default (benchmarks/collection_client.py sends it).
    r = _parse({"vector": [1, 2, 3, 4], "complexity": None, "probe": None})
    assert (r.complexity, r.probe) == (None, None)
    rows = np.arange(12, dtype="<f4").tobytes()
    r = _parse(rows, "application/octet-stream", {"k": "3", "probe": "1"})
    assert r.queries.shape == (3, 4) and r.k == 3 and r.probe == 1
    assert r.queries[2, 3] == 11
    r = _parse({"vector": [1, 2, 3, 4]}, "Application/vnd.x+JSON; charset=utf-8")
    assert r.queries.shape == (1, 4)


@pytest.mark.parametrize(
    "body, ctype, params, status, message",
    [
        ({"vectors": [[1, 2, 3]]}, None, None, 400, r"vectors: expected vectors of 4 numbers \(the collection's dimension\), found 3"),
        ({"vectors": [[1, 2, 3, 4], [1, 2]]}, None, None, 400, r"vectors\[1\]: expected 4 numbers"),
        ({"vectors": [[1, 2, "x", 4]]}, None, None, 400, r'vectors\[0\]\[2\]: expected a number, found "x"'),
        ({"vectors": []}, None, None, 400, "non-empty list"),
        ({"vectors": [[1.5, 2, True, 4]]}, None, None, 400, r"vectors\[0\]\[2\]: expected a number, found true"),
        ({"vectors": "abc"}, None, None, 400, "vectors: expected a non-empty list of vectors, found a string"),
        ({"vector": [1, 2, 3, 4], "k": 0}, None, None, 400, r"k: expected an integer in 1\.\.50"),
        ({"vector": [1, 2, 3, 4], "k": 51}, None, None, 400, r"k: expected an integer in 1\.\.50 .*found 51"),
        ({"vector": [1, 2, 3, 4], "k": "ten"}, None, None, 400, "k: expected an integer"),
        ({"vector": [1, 2, 3, 4], "probe": 4}, None, None, 400, r"probe: expected an integer in 1\.\.3"),
        ({"vector": [1, 2, 3, 4], "complexty": 40}, None, None, 400, "field 'complexty': expected one of"),
        ({"k": 10}, None, None, 400, 'missing field: expected "vectors"'),
        ([1, 2, 3, 4], None, None, 400, "expected a JSON object, found a JSON list"),
        (b"{not json", None, None, 400, "body: expected JSON"),
        (b"", None, None, 400, "found an empty body"),
        (b"[" * 33 + b"]" * 33, None, None, 400, "expected JSON nested at most 32 deep, found 33"),
        (b'{"vector": [1, NaN, 2, 3]}', None, None, 400, "expected finite numbers, found NaN"),
        (b'{"vector": [1, Infinity, 2, 3]}', None, None, 400, "expected finite numbers, found Infinity"),
        (b'{"vector": [1, 1e400, 2, 3]}', None, None, 400, "expected finite float32 numbers"),
        (b'{"vector": [1, 1e39, 2, 3]}', None, None, 400, "expected finite float32 numbers"),
        (b'{"vector": [1, 2, 3, 4], "k": 1' + b"0" * 5000 + b"}", None, None, 400, "integer too long"),
        (b"\x00" * 20, "application/octet-stream", None, 400, "expected a multiple of 16 bytes .* found 20 bytes"),
        (b"\x00" * 16, "application/octet-stream", {"k": "x"}, 400, "query parameter k: expected an integer, found 'x'"),
        (b"\x00" * 16, "application/octet-stream", {"kk": "3"}, 400, "query parameter kk: expected one of k, complexity, probe, found 'kk'"),
        ({"vector": [1, 2, 3, 4]}, None, {"k": "3"}, 400, "query parameter k: expected none with a JSON body"),
        ({"vector": [1, 2, 3, 4]}, "text/plain", None, 415, "Content-Type: expected application/json or application/octet-stream, found 'text/plain'"),
        ({"vector": [1, 2, 3, 4]}, "", None, 415, "found none$"),
        ({"vectors": [[0, 0, 0, 1]] * 65}, None, None, 413, r"vectors: expected at most 64 queries a request \(max_queries\), found 65"),
    ],
)
def test_parse_refuses_with_a_message_naming_the_problem(body, ctype, params, status, message):
    with pytest.raises(BadRequest, match=message) as e:
        _parse(body, "application/json" if ctype is None else ctype, params, limits=Limits(max_k=50, max_queries=64))
    assert e.value.status == status


def test_parse_bounds():
    small = Limits(max_k=50, max_queries=3, max_results=20, max_work=500)
    rows = lambda n: {"vectors": [[0, 0, 0, 1]] * n, "k": 1}  # noqa: E731
    with pytest.raises(BadRequest, match=r"^body: expected at most 3 queries a request \(max_queries\), found 4$") as e:
        _parse(b"\x00" * 64, "application/octet-stream", limits=small)
    assert e.value.status == 413
    with pytest.raises(BadRequest, match=r"^k × queries: expected at most 20 \(max_results\), found 21 \(k=7 × 3 queries\)$"):
        _parse({"vectors": [[0, 0, 0, 1]] * 3, "k": 7}, limits=small)
    with pytest.raises(BadRequest, match=r"^complexity × queries: expected at most 500 \(max_work\), found 600 "):
        _parse(b"\x00" * 48, "application/octet-stream", {"k": "1", "complexity": "200"}, limits=small)
    _parse(rows(3), limits=small)  # the default list size counts too: 64 × 3 is within 500
    with pytest.raises(BadRequest, match=r"^complexity × queries: .* found 640 \(complexity=64 × 10 queries\)"):
        _parse(rows(10), limits=Limits(max_k=50, max_work=600))
    with pytest.raises(BadRequest, match="probe: expected none for an index"):
        _parse({"vector": [1, 2, 3, 4], "probe": 1}, kind="index")
    with pytest.raises(ValueError, match="max_queries: expected a positive integer"):
        Limits(max_queries=0)
    Limits(max_queue=0)  # no waiting: busy beyond max_concurrent


def test_json_depth_counts_outside_strings_only():
    assert json_depth(b"[[[]]]") == 3
    assert json_depth(b'{"a": "[[[[[[\\"[[[["}') == 1
    assert json_depth(b'{"a": "\\\\", "b": [[1]]}') == 3  # an escaped backslash ends no string
    assert json_depth(b"") == 0
    big = json.dumps({"vectors": [[0.5] * 384] * 1024}).encode()
    t = time.perf_counter()
    assert json_depth(big) == 3
    assert time.perf_counter() - t < 5


def test_cli_flags_set_the_limits():
    from stratavec.serve import _limits_from, _parser

    p = _parser()
    a = p.parse_args(["dir", "--max-queries", "7", "--max-results", "70", "--max-work", "700", "--max-k", "5",
                      "--max-complexity", "99", "--body-timeout-s", "1.5", "--search-timeout-s", "3",
                      "--max-concurrent", "2", "--max-queue", "0", "--max-body-mb", "0.5"])
    assert _limits_from(a, p) == Limits(max_body_bytes=2**19, max_queries=7, max_k=5, max_results=70,
                                        max_complexity=99, max_work=700, body_timeout_s=1.5,
                                        search_timeout_s=3.0, max_concurrent=2, max_queue=0)
    assert _limits_from(p.parse_args(["dir"]), p) == Limits()
    with pytest.raises(SystemExit):
        p.parse_args(["dir", "--max-body-mb", "1", "--max-body-bytes", "5"])
    with pytest.raises(SystemExit):
        _limits_from(p.parse_args(["dir", "--search-timeout-s", "0"]), p)
    assert "0.0.0.0" in p.format_help()  # the help says what binding every interface exposes


# ---------------------------------------------------------------- the server


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray cluster (127.0.0.1 only) for the module; yields how long
    it took to start, which the waits below scale with. The process's
    SIGINT/SIGTERM handling is the same after as before."""
    if ray is None:
        pytest.skip("Ray is not installed: pip install 'stratavec[ray]'")
    import local_ray
    from stratavec.ray_collection import shutdown_ray

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    started_s = local_ray.start(num_cpus=2, object_store_memory=100 * 2**20, log_to_driver=False)
    assert {s: signal.getsignal(s) for s in before} == before, "ray.init changed the signal handlers"
    try:
        yield started_s
    finally:
        shutdown_ray()
        assert {s: signal.getsignal(s) for s in before} == before, "ray.shutdown changed the signal handlers"


@pytest.fixture(scope="module")
def collection_dir(tmp_path_factory):
    x, q = _data()
    root = tmp_path_factory.mktemp("served")
    stratavec.build_collection(
        x, root / "c", segments=2, partition="kmeans", graph_degree=16, complexity=32, pq_bytes=8, threads=1
    )
    return root / "c", q


@pytest.fixture(scope="module")
def served(ray_cluster, collection_dir):
    """The collection served at 127.0.0.1 by one Ray Serve app, as the
    shared suite's ``served``."""
    from stratavec.serve import serve_collection, stop_serving

    started_s = ray_cluster
    path, q = collection_dir
    # The proxy and the replica start after the cluster, on the same busy
    # CPUs: ten times the cluster's own start-up, and never under a minute.
    ready_s = max(60.0, 10 * started_s)
    t = time.monotonic()
    url = serve_collection(str(path), "127.0.0.1", _free_port(), limits=Limits(**LIMITS), ready_timeout_s=ready_s)
    up_s = time.monotonic() - t
    try:
        yield {
            "url": url,
            "dir": path,
            "kind": "collection",
            "queries": q,
            "limits": LIMITS,
            "load_requests": 500,
            "load_time_s": max(180.0, 20 * (started_s + up_s)),
            "timeout_s": max(60.0, 3 * (started_s + up_s)),
        }
    finally:
        stop_serving()


@needs_ray
@pytest.mark.parametrize("check", http_suite.CHECKS, ids=lambda c: c.__name__[len("check_"):])
def test_contract(served, check):
    check(served)


@needs_ray
def test_stats_have_the_collection_statistics(served):
    status, stats, _ = http_suite.call(served, "GET", "/stats")
    assert status == 200
    assert {"fanout_wait_s", "merge_s", "retries", "actor_failures", "calls_cancelled"} <= set(stats["collection"])
    assert {"running", "waiting"} <= set(stats["server"])


def _process_tree(root):
    children = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(p))
    tree, todo = set(), [root]
    while todo:
        pid = todo.pop()
        tree.add(pid)
        todo += children.get(pid, [])
    return tree


def _loopback(address):
    host = address.rsplit(":", 1)[0].strip("[]").split("%")[0]
    return host == "::1" or host.startswith("127.") or host.startswith("::ffff:127.")


@needs_ray
def test_every_ray_socket_listens_on_loopback(served):
    """Every TCP socket the Ray processes of this test (GCS, raylet, object
    manager, workers, agents, the Serve proxy and replica) listen on is on
    127.0.0.1 or ::1."""
    if shutil.which("ss") is None:
        pytest.skip("ss (iproute2) is not installed: cannot list the listening sockets")
    tree = _process_tree(os.getpid())
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, timeout=60, check=True).stdout
    ours = []
    for line in out.splitlines():
        pids = {int(p) for p in re.findall(r"pid=(\d+)", line)}
        if pids & tree:
            ours.append((line.split()[3], line))
    names = " ".join(line for _, line in ours)
    assert len(ours) >= 5 and "gcs_server" in names and "raylet" in names, out
    assert str(served["url"].rsplit(":", 1)[1]) in names, "the Serve proxy's port is not among them"
    wide = [line for address, line in ours if not _loopback(address)]
    assert not wide, "listening beyond this machine:\n" + "\n".join(wide)


# ---------------------------------------------------------------- the app, called directly


def _request(method, path, body=b"", ctype="application/json", query=b""):
    """A Starlette request as Serve hands the app one, for a direct call."""
    from starlette.requests import Request

    sent = []

    async def receive():
        if not sent:
            sent.append(1)
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)

    headers = [(b"content-length", str(len(body)).encode())]
    if ctype:
        headers.append((b"content-type", ctype.encode()))
    scope = {
        "type": "http", "http_version": "1.1", "method": method, "path": path, "raw_path": path.encode(),
        "root_path": "", "scheme": "http", "query_string": query, "headers": headers,
        "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 1),
    }
    return Request(scope, receive)


def _answer(response):
    return response.status_code, json.loads(response.body), dict(response.headers)


@pytest.fixture(scope="module")
def direct_app(ray_cluster, collection_dir):
    """A CollectionApp outside Serve (its own segment actors), for the
    answers a real server reaches only by chance: busy, deadline, failure."""
    from stratavec.serve import CollectionApp

    app = CollectionApp(str(collection_dir[0]), {}, Limits(**LIMITS))
    yield app
    app.collection.close()


@needs_ray
def test_a_search_past_its_deadline_is_504_and_not_run(direct_app, collection_dir):
    app, q = direct_app, collection_dir[1]
    app.limits = Limits(**dict(LIMITS, search_timeout_s=1e-6))
    try:
        before = app.collection.stats()["segment_calls"]
        body = json.dumps({"vectors": q[:8].tolist(), "k": 5}).encode()
        status, doc, _ = _answer(asyncio.run(app(_request("POST", "/search", body))))
    finally:
        app.limits = Limits(**LIMITS)
    assert status == 504, doc
    assert doc["error"] == "search: did not finish within 1e-06 s (search_timeout_s); its work was cancelled"
    assert app.stats()["server"]["rejected"]["deadline"] == 1
    assert app.collection.stats()["segment_calls"] == before, "a search past its deadline still called the actors"


@needs_ray
def test_beyond_the_queue_is_503_with_retry_after(direct_app, collection_dir, monkeypatch):
    """max_concurrent 1 and max_queue 1: of three searches at once, one
    runs, one waits, one is turned away; the first two are answered."""
    app, q = direct_app, collection_dir[1]
    release = threading.Event()
    real = app.collection.search

    def slow(*args, **kw):
        release.wait(60)
        return real(*args, **kw)

    monkeypatch.setattr(app.collection, "search", slow)
    import concurrent.futures

    monkeypatch.setattr(app, "limits", Limits(**dict(LIMITS, max_concurrent=1, max_queue=1)))
    monkeypatch.setattr(app, "_pool", concurrent.futures.ThreadPoolExecutor(1))
    body = json.dumps({"vectors": q[:2].tolist(), "k": 3}).encode()

    async def three():
        calls = [asyncio.ensure_future(app(_request("POST", "/search", body))) for _ in range(3)]
        done, _ = await asyncio.wait(calls, timeout=60, return_when=asyncio.FIRST_COMPLETED)
        first = [_answer(c.result()) for c in done]
        release.set()
        rest = await asyncio.gather(*[c for c in calls if c not in done])
        return first, [_answer(r) for r in rest]

    first, rest = asyncio.run(three())
    assert len(first) == 1, first
    status, doc, headers = first[0]
    assert status == 503 and headers.get("retry-after") == "1", (status, doc, headers)
    # The running one may not have reached its thread yet: 2 admitted either way.
    m = re.fullmatch(r"server busy: (\d) searches running and (\d) waiting \(max_queue\); retry later", doc["error"])
    assert m and int(m[1]) + int(m[2]) == 2, doc
    assert [s for s, _, _ in rest] == [200, 200], rest
    assert app.stats()["server"]["rejected"]["queue_full"] >= 1


@needs_ray
def test_an_internal_error_is_500_with_an_id_and_the_details_in_the_log(direct_app, collection_dir, monkeypatch):
    app, q = direct_app, collection_dir[1]

    def broken(*args, **kw):
        raise RuntimeError(f"disk on fire at {collection_dir[0]} (pid {os.getpid()})")

    monkeypatch.setattr(app.collection, "search", broken)
    records = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record)
    logger = logging.getLogger("ray.serve")
    logger.addHandler(handler)
    try:
        body = json.dumps({"vectors": q[:2].tolist()}).encode()
        status, doc, _ = _answer(asyncio.run(app(_request("POST", "/search", body))))
    finally:
        logger.removeHandler(handler)
    assert status == 500
    assert re.fullmatch(r"internal error \(id [0-9a-f]{16}\)", doc["error"]) and doc["error"].endswith(f"{doc['id']})")
    logged = [r for r in records if doc["id"] in r.getMessage()]
    assert logged and "disk on fire" in str(logged[0].exc_info[1]), records
    monkeypatch.undo()
    status, doc, _ = _answer(asyncio.run(app(_request("POST", "/search", body))))  # still serving
    assert status == 200, doc


@needs_ray
def test_an_unavailable_segment_is_503_without_its_path(direct_app, collection_dir, monkeypatch):
    """The collection's error names the segment's directory and Ray's
    error; the answer names only the segment (test_ray_collection.py makes
    a real actor fail past max_retries)."""
    from stratavec.ray_collection import SegmentUnavailableError

    app, (path, q) = direct_app, collection_dir

    def unavailable(*args, **kw):
        raise SegmentUnavailableError(
            1, f"segment 1 ({path}/seg-0001): its actor failed 1 times in one search (max_retries = 0); "
               "last error: ActorDiedError: The actor died on node 10.1.2.3 (pid 4242)"
        )

    monkeypatch.setattr(app.collection, "search", unavailable)
    body = json.dumps({"vectors": q[:4].tolist(), "k": 3}).encode()
    status, doc, headers = _answer(asyncio.run(app(_request("POST", "/search", body))))
    assert status == 503, doc
    assert doc["error"] == "search: segment 1 is unavailable (its actor kept failing); retry later"
    assert headers.get("retry-after") == "1"


@needs_ray
def test_writes_are_refused_on_a_read_only_server_and_mapped_when_the_engine_refuses(
        direct_app, collection_dir, monkeypatch):
    """403 read-only; the collection's refusals as the client's status:
    a bad batch 400 with the engine's message, another writer 409, an
    unavailable segment 503 (retry with the batch id), anything else 500 —
    and searches answered after each."""
    from stratavec.ray_collection import SegmentUnavailableError

    app, (path, q) = direct_app, collection_dir
    body = json.dumps({"vectors": q[:2].tolist(), "batch": 11}).encode()
    monkeypatch.setattr(app, "read_only", True)
    status, doc, _ = _answer(asyncio.run(app(_request("POST", "/insert", body))))
    assert (status, doc["error"]) == (403, "insert: this server is read-only (started with --read-only)")
    _, health, _ = _answer(asyncio.run(app._health()))
    assert health["writes"] is False
    monkeypatch.setattr(app, "read_only", False)

    failures = [
        (ValueError("ray::SegmentHost.add()\nValueError: id of row 1: expected ids unique within a batch, "
                    "found 5, also the id of row 0"), 400,
         "insert: id of row 1: expected ids unique within a batch, found 5, also the id of row 0"),
        (OSError(f"{path}/seg-0000/writer.lock: expected no other writer, found it held by pid 99"), 409,
         "insert: another process is writing this collection"),
        (SegmentUnavailableError(1, f"segment 1 ({path}/seg-0001): its actor failed"), 503,
         "insert: segment 1 is unavailable (its actor kept failing); retry with the same batch id"),
        (RuntimeError(f"disk on fire at {path}"), 500, "internal error (id "),
    ]
    search = json.dumps({"vectors": q[:2].tolist(), "k": 3}).encode()
    for error, want, message in failures:
        def refuse(*args, _e=error, **kw):
            raise _e

        monkeypatch.setattr(app.collection, "add", refuse)
        status, doc, _ = _answer(asyncio.run(app(_request("POST", "/insert", body))))
        assert status == want and doc["error"].startswith(message), (status, doc)
        http_suite.assert_clean(doc["error"], {"dir": path})
        status, doc, _ = _answer(asyncio.run(app(_request("POST", "/search", search))))
        assert status == 200, doc
