"""The HTTP contract (docs/http-contract.md) as test cases, written once
for both servers: the Ray Serve one (test_serve_http.py) and the Rust
``stratavec serve`` (test_serve_rust.py).

Each ``check_*`` function takes a ``served`` dict the test module's fixture
makes:

- ``url``: ``http://127.0.0.1:PORT``;
- ``dir``: the served index or collection;
- ``kind``: ``"index"`` or ``"collection"``;
- ``queries``: float32 queries (at least 20) of the served data;
- ``limits``: the server's bounds, by the contract's names
  (``max_body_bytes``, ``max_queries``, ``max_k``, ``max_results``,
  ``max_complexity``, ``max_work``, ``body_timeout_s``);
- ``load_requests`` and ``load_time_s``: the load loop's size and time bound;
- ``timeout_s``: a client's wait for one answer (from the measured start-up).

Requests go through http.client (urllib would add a Content-Type of its
own to a POST without one), one connection a request. Every loop is
bounded in count and time.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import threading
import time
import urllib.parse
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

import stratavec

K = 10
COMPLEXITY = 40
BINARY = "application/octet-stream"


# ---------------------------------------------------------------- client


def call(
    served: Dict[str, Any],
    method: str,
    path: str,
    body: Any = None,
    ctype: Optional[str] = "application/json",
    headers: Optional[Dict[str, str]] = None,
) -> Tuple[int, Any, Dict[str, str]]:
    """(status, JSON document, headers with lower-case names) of one
    request; a 4xx/5xx is an answer too. A body that is not bytes is sent
    as JSON."""
    u = urllib.parse.urlsplit(served["url"])
    if body is not None and not isinstance(body, (bytes, bytearray)):
        body = json.dumps(body).encode()
    h = dict(headers or {})
    if ctype is not None and body is not None:
        h["Content-Type"] = ctype
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=served["timeout_s"])
    try:
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        data = r.read()
        got = {k.lower(): v for k, v in r.getheaders()}
    finally:
        conn.close()
    try:
        doc = json.loads(data) if data else None
    except ValueError:
        raise AssertionError(f"{method} {path}: {r.status} with a body that is not JSON: {data[:300]!r}") from None
    return r.status, doc, got


def search(served: Dict[str, Any], q: np.ndarray, k: int = K, complexity: int = COMPLEXITY,
           binary: bool = False, **more: Any) -> Tuple[int, Any]:
    if binary:
        params = urllib.parse.urlencode(dict(k=k, complexity=complexity, **more))
        status, doc, _ = call(served, "POST", f"/search?{params}", q.astype("<f4").tobytes(), BINARY)
    else:
        status, doc, _ = call(served, "POST", "/search", dict(vectors=q.tolist(), k=k, complexity=complexity, **more))
    return status, doc


def reference(served: Dict[str, Any], q: np.ndarray, k: int = K, complexity: int = COMPLEXITY,
              probe: Optional[int] = None) -> Tuple[np.ndarray, np.ndarray]:
    """The in-process answer the server's must equal."""
    if served["kind"] == "index":
        return stratavec.Index.open(served["dir"]).search(q, k, complexity=complexity)
    return stratavec.Collection.open(served["dir"]).search(q, k=k, complexity=complexity, probe=probe)


def assert_answers(doc: Any, D0: np.ndarray, I0: np.ndarray) -> None:
    assert set(doc) >= {"ids", "distances"}, doc
    ids = np.array(doc["ids"], dtype=np.int64)
    assert ids.shape == I0.shape and (ids == I0).all(), (ids, I0)
    dist = np.array([[np.inf if d is None else d for d in row] for row in doc["distances"]], dtype=np.float32)
    np.testing.assert_allclose(dist, D0, rtol=1e-5)


def assert_clean(message: str, served: Dict[str, Any]) -> None:
    """A message for a client: no traceback, exception type name, path,
    process id or address."""
    assert "Traceback" not in message and 'File "' not in message, message
    assert not re.search(r"\b[A-Z][A-Za-z]*(Error|Exception|Interrupt)\b", message), message
    assert str(served["dir"]) not in message and "/tmp/" not in message, message
    assert not re.search(r"\bpid\b|\b\d{1,3}(\.\d{1,3}){3}\b", message), message


# ---------------------------------------------------------------- answers


def check_search_json(served: Dict[str, Any]) -> None:
    q = served["queries"][:20]
    D0, I0 = reference(served, q)
    status, doc = search(served, q)
    assert status == 200, doc
    assert_answers(doc, D0, I0)
    # One query as "vector"; media type parameters and +json are JSON too.
    for ctype in ("application/json; charset=utf-8", "application/vnd.stratavec+json"):
        status, doc, _ = call(served, "POST", "/search/", {"vector": q[3].tolist(), "k": 4, "complexity": COMPLEXITY}, ctype)
        assert status == 200, (ctype, doc)
        assert_answers(doc, *reference(served, q[3:4], k=4))
    # null is the default, in both servers: a client that sends None for an
    # option it leaves unset gets what leaving it out gives.
    nulls = {"k": None, "complexity": None}
    if served["kind"] == "collection":
        nulls["probe"] = None
    status, doc, _ = call(served, "POST", "/search", {"vector": q[5].tolist(), **nulls}, "application/json")
    assert status == 200, doc
    assert len(doc["ids"][0]) == 10, doc


def check_search_binary(served: Dict[str, Any]) -> None:
    q = served["queries"][:20]
    status, doc = search(served, q, binary=True)
    assert status == 200, doc
    assert_answers(doc, *reference(served, q))
    if served["kind"] == "collection":
        status, doc = search(served, q, k=4, binary=True, probe=1)
        assert status == 200, doc
        assert_answers(doc, *reference(served, q, k=4, probe=1))


def check_health(served: Dict[str, Any]) -> None:
    for path in ("/health", "/health/"):
        status, doc, _ = call(served, "GET", path)
        assert status == 200, doc
        assert doc["status"] == "ok" and {"n", "dim", "metric", "segments"} <= set(doc), doc
        assert doc["dim"] == served["queries"].shape[1], doc


def check_stats_counters(served: Dict[str, Any]) -> None:
    """The counters move by what was asked: one search of 3 queries, one
    400, and the body bytes."""
    def server() -> Dict[str, Any]:
        status, doc, _ = call(served, "GET", "/stats")
        assert status == 200, doc
        assert served["kind"] in doc, sorted(doc)
        return doc["server"]

    before = server()
    assert {"requests", "searches", "queries", "status", "bytes_in", "search_s", "rejected"} <= set(before), before
    assert {"queue_full", "deadline", "slow_body"} <= set(before["rejected"]), before
    q = served["queries"][:3]
    body = q.astype("<f4").tobytes()
    status, _, _ = call(served, "POST", f"/search?k={K}", body, BINARY)
    assert status == 200
    status, _, _ = call(served, "POST", "/search", {"vectors": q.tolist(), "k": 0})
    assert status == 400
    after = server()
    assert after["searches"] - before["searches"] == 1, (before, after)
    assert after["queries"] - before["queries"] == 3, (before, after)
    assert after["status"].get("400", 0) - before["status"].get("400", 0) == 1, (before, after)
    assert after["requests"] - before["requests"] >= 3, (before, after)
    assert after["bytes_in"] - before["bytes_in"] >= len(body), (before, after)
    assert after["search_s"] >= before["search_s"]


# ---------------------------------------------------------------- refusals

# (method, path, body, content type, status, substrings the message holds)
Case = Tuple[str, str, Any, Optional[str], int, Sequence[str]]


def bad_input_cases(served: Dict[str, Any]) -> List[Case]:
    """Every bad input the contract names, for this server's data and
    bounds."""
    dim, lim = served["queries"].shape[1], served["limits"]
    v = served["queries"][0].tolist()
    nan_row = np.zeros((1, dim), "<f4")
    nan_row[0, 1] = np.nan
    kmax = lim["max_k"]
    cases: List[Case] = [
        ("POST", "/search", {"vectors": [[1.0] * (dim - 1)]}, "application/json", 400, ("vector", f"found {dim - 1}")),
        ("POST", "/search", {"vector": v, "k": 0}, "application/json", 400, ("k: expected an integer in 1..",)),
        ("POST", "/search", {"vector": v, "k": kmax + 1}, "application/json", 400,
         (f"k: expected an integer in 1..{kmax}", f"found {kmax + 1}")),
        ("POST", "/search", {"vector": v, "k": "ten"}, "application/json", 400, ("k: expected an integer",)),
        ("POST", "/search", {"vector": v, "k": 2.5}, "application/json", 400, ("k: expected an integer", "2.5")),
        ("POST", "/search", {"vector": v, "complexity": 0}, "application/json", 400,
         ("complexity: expected an integer in 1..",)),
        ("POST", "/search", {"vector": v, "complexty": 40}, "application/json", 400,
         ("field 'complexty': expected one of",)),
        ("POST", "/search", {"k": 3}, "application/json", 400, ('missing field: expected "vectors"',)),
        ("POST", "/search", {"vector": v, "vectors": [v]}, "application/json", 400,
         ("vectors, vector: expected one of them, found both",)),
        ("POST", "/search", {"vector": [v]}, "application/json", 400, ("vector: expected one vector",)),
        ("POST", "/search", {"vectors": [v, "x"]}, "application/json", 400, ("vectors[1]",)),
        ("POST", "/search", {"vectors": [v[:-1] + [True]]}, "application/json", 400, ("vector", "true")),
        ("POST", "/search", [1, 2, 3], "application/json", 400, ("expected a JSON object",)),
        ("POST", "/search", b"{not json", "application/json", 400, ("body: expected JSON",)),
        ("POST", "/search", b"\xff\xfe", "application/json", 400, ("body: expected",)),
        ("POST", "/search", b"", "application/json", 400, ("found an empty body",)),
        ("POST", "/search", b"[" * 33 + b"]" * 33, "application/json", 400, ("nested at most 32 deep",)),
        ("POST", "/search", b'{"vector": [NaN' + b", 0" * (dim - 1) + b"]}", "application/json", 400, ("body: expected",)),
        ("POST", "/search", b'{"vector": [1e400' + b", 0" * (dim - 1) + b"]}", "application/json", 400, ()),
        ("POST", "/search?k=3", {"vector": v}, "application/json", 400,
         ("query parameter k: expected none with a JSON body",)),
        ("POST", "/search", b"\x00" * (4 * dim + 2), BINARY, 400, (f"expected a multiple of {4 * dim} bytes",)),
        ("POST", "/search", b"", BINARY, 400, ("expected a multiple of",)),
        ("POST", "/search?k=x", b"\x00" * (4 * dim), BINARY, 400, ("query parameter k: expected an integer, found 'x'",)),
        ("POST", "/search?kk=3", b"\x00" * (4 * dim), BINARY, 400,
         ("query parameter kk: expected one of k, complexity, probe",)),
        ("POST", "/search", nan_row.tobytes(), BINARY, 400, ("body row 0: expected finite numbers",)),
        ("POST", "/search", json.dumps({"vector": v}).encode(), "text/plain", 415,
         ("Content-Type: expected application/json or application/octet-stream, found 'text/plain'",)),
        ("POST", "/search", json.dumps({"vector": v}).encode(), None, 415, ("Content-Type: expected", "found none")),
        ("POST", "/search", b"vector=1", "application/x-www-form-urlencoded", 415, ("Content-Type: expected",)),
        ("GET", "/nowhere", None, None, 404, ("/search", "/health", "/stats")),
        ("GET", "/search", None, None, 405, ("POST",)),
        ("DELETE", "/stats", None, None, 405, ("GET",)),
    ]
    if served["kind"] == "index":
        cases.append(("POST", "/search", {"vector": v, "probe": 1}, "application/json", 400,
                      ("probe: expected none for an index",)))
    else:
        cases.append(("POST", "/search", {"vector": v, "probe": 10_000}, "application/json", 400,
                      ("probe: expected an integer in 1..",)))
    return cases


def bound_cases(served: Dict[str, Any]) -> List[Case]:
    """Each bound just exceeded, refused with its name."""
    dim, lim = served["queries"].shape[1], served["limits"]
    row = 4 * dim
    rows = lambda n: np.zeros((n, dim), "<f4").tobytes()  # noqa: E731
    over_body = (lim["max_body_bytes"] // row + 1) * row
    nq = lim["max_results"] // K + 1  # k × queries just over
    assert nq <= lim["max_queries"], "the fixture's max_results must be reachable within max_queries"
    nw = lim["max_work"] // COMPLEXITY + 1  # complexity × queries just over, at k 1
    assert nw <= lim["max_queries"] and nw <= lim["max_results"], "the fixture's max_work must be reachable"
    return [
        ("POST", "/search", rows(over_body // row), BINARY, 413, ("max_body_bytes",)),
        ("POST", "/search", rows(lim["max_queries"] + 1), BINARY, 413,
         (f"expected at most {lim['max_queries']} queries a request (max_queries)",)),
        ("POST", "/search", {"vectors": [[0.0] * dim] * (lim["max_queries"] + 1)}, "application/json", 413,
         ("vectors: expected at most", "(max_queries)")),
        ("POST", f"/search?k={K}", rows(nq), BINARY, 413,
         (f"k × queries: expected at most {lim['max_results']} (max_results)", f"found {nq * K}")),
        ("POST", f"/search?k=1&complexity={COMPLEXITY}", rows(nw), BINARY, 413,
         (f"complexity × queries: expected at most {lim['max_work']} (max_work)", f"found {nw * COMPLEXITY}")),
        ("POST", "/search", {"vector": [0.0] * dim, "complexity": lim["max_complexity"] + 1}, "application/json", 400,
         (f"complexity: expected an integer in 1..{lim['max_complexity']}",)),
        ("POST", "/search", {"vector": [0.0] * dim, "k": lim["max_k"] + 1}, "application/json", 400,
         (f"k: expected an integer in 1..{lim['max_k']}",)),
    ]


def _refused_then_served(served: Dict[str, Any], cases: List[Case], time_s: float) -> Dict[str, int]:
    """Each case answered with its status and message (JSON, clean), and a
    good request answered right after it; the statuses counted."""
    good = served["queries"][:2]
    D0, I0 = reference(served, good, k=5)
    seen: Dict[str, int] = {}
    deadline = time.monotonic() + time_s
    for method, path, body, ctype, status, parts in cases:
        assert time.monotonic() < deadline, "the refusal loop exceeded its time bound"
        got, doc, headers = call(served, method, path, body, ctype)
        what = f"{method} {path} {ctype} {str(body)[:60]}"
        assert got == status, (what, got, doc)
        assert isinstance(doc, dict) and isinstance(doc.get("error"), str), (what, doc)
        for part in parts:
            assert part in doc["error"], (what, part, doc)
        assert_clean(doc["error"], served)
        if status == 405:
            assert headers.get("allow") == ("POST" if path.startswith("/search") else "GET"), (what, headers)
        seen[str(status)] = seen.get(str(status), 0) + 1
        ok, answer = search(served, good, k=5)  # still serving, and right
        assert ok == 200, (what, answer)
        assert_answers(answer, D0, I0)
    return seen


def check_bad_inputs(served: Dict[str, Any]) -> None:
    _refused_then_served(served, bad_input_cases(served), time_s=served["load_time_s"])


def check_bounds(served: Dict[str, Any]) -> None:
    seen = _refused_then_served(served, bound_cases(served), time_s=served["load_time_s"])
    assert seen == {"413": 5, "400": 2}, seen


def check_slow_body(served: Dict[str, Any]) -> None:
    """Headers and part of a body, then nothing: 408 after the body
    deadline, counted as slow_body; the server answers others meanwhile
    and after."""
    lim = served["limits"]
    dim = served["queries"].shape[1]
    body = served["queries"][:4].astype("<f4").tobytes()
    _, before, _ = call(served, "GET", "/stats")
    u = urllib.parse.urlsplit(served["url"])
    t0 = time.monotonic()
    with socket.create_connection((u.hostname, u.port), timeout=lim["body_timeout_s"] + served["timeout_s"]) as s:
        s.sendall(
            (f"POST /search?k={K} HTTP/1.1\r\nHost: {u.hostname}\r\nContent-Type: {BINARY}\r\n"
             f"Content-Length: {len(body)}\r\n\r\n").encode() + body[: 4 * dim + 5]
        )
        # Not blocked by the slow one.
        status, doc = search(served, served["queries"][:1])
        assert status == 200, doc
        data = b""
        while b"\r\n\r\n" not in data or len(data) < _expected_length(data):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    waited = time.monotonic() - t0
    head, _, rest = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408"), data[:300]
    doc = json.loads(rest)
    assert "body_timeout_s" in doc["error"] and f"found {4 * dim + 5} bytes" in doc["error"], doc
    assert_clean(doc["error"], served)
    assert waited >= lim["body_timeout_s"] * 0.9, waited
    _, after, _ = call(served, "GET", "/stats")
    assert after["server"]["rejected"]["slow_body"] - before["server"]["rejected"]["slow_body"] == 1
    status, doc = search(served, served["queries"][:2])
    assert status == 200, doc


def _expected_length(data: bytes) -> int:
    head, sep, _ = data.partition(b"\r\n\r\n")
    m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    return len(head) + len(sep) + (int(m.group(1)) if m else 0)


# ---------------------------------------------------------------- load


def check_load(served: Dict[str, Any]) -> None:
    """``load_requests`` searches from 8 client threads at once, JSON and
    binary, 1 to 3 queries each: every one answered 200 and right, within
    ``load_time_s``."""
    total, threads = served["load_requests"], 8
    q = served["queries"][:12]
    batches = [q[i:i + 1 + i % 3] for i in range(0, 12, 3)]
    want = [reference(served, b)[1].tolist() for b in batches]
    errors: List[str] = []
    done = [0] * threads
    deadline = time.monotonic() + served["load_time_s"]

    def client(t: int) -> None:
        for i in range(t, total, threads):
            if errors or time.monotonic() > deadline:
                return
            b = i % len(batches)
            try:
                status, doc = search(served, batches[b], binary=bool(i % 2))
            except OSError as e:
                errors.append(f"request {i}: {e}")
                return
            if status != 200 or doc["ids"] != want[b]:
                errors.append(f"request {i}: {status} {str(doc)[:200]}")
                return
            done[t] += 1

    t0 = time.monotonic()
    workers = [threading.Thread(target=client, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(served["load_time_s"] + served["timeout_s"])
    assert not errors, errors[:5]
    assert sum(done) == total, f"{sum(done)} of {total} answered within {served['load_time_s']} s"
    took = time.monotonic() - t0
    _, stats, _ = call(served, "GET", "/stats")
    assert stats["server"]["searches"] >= total
    print(f"load: {total} requests from {threads} threads in {took:.1f} s ({total / took:.0f}/s)")


# ---------------------------------------------------------------- writes

# Ids far above the test data's: the write checks' own vectors.
WRITE_IDS = [9_000_000, 9_000_001, 9_000_002]


def write_bad_cases(served: Dict[str, Any]) -> List[Case]:
    """Bad writes the contract names: each 4xx, nothing applied."""
    dim = served["queries"].shape[1]
    v = served["queries"][0].tolist()
    return [
        ("POST", "/insert", {"vectors": [[1.0] * (dim - 1)]}, "application/json", 400, ("vector", f"found {dim - 1}")),
        ("POST", "/insert", {"vectors": [v, v], "ids": [7_000_001, 7_000_001]}, "application/json", 400,
         ("id of row 1", "unique within a batch", "7000001, also the id of row 0")),
        ("POST", "/insert", {"vectors": [v], "ids": [0]}, "application/json", 400, ("id of row 0", "0, which is live")),
        ("POST", "/insert", {"vectors": [v, v], "ids": [7_000_002]}, "application/json", 400,
         ("ids: expected 2 (one a vector), found 1",)),
        ("POST", "/insert", {"vectors": [v], "ids": [-1]}, "application/json", 400, ("ids[0]", "-1")),
        ("POST", "/insert", {"vectors": [v], "ids": ["a"]}, "application/json", 400, ("ids[0]: expected an integer",)),
        ("POST", "/insert", {"vector": v, "batch": 0}, "application/json", 400, ("batch: expected an integer in 1..",)),
        ("POST", "/insert", {"vector": v, "idz": [1]}, "application/json", 400, ("field 'idz': expected one of",)),
        ("POST", "/insert", {"ids": [7_000_003]}, "application/json", 400, ('missing field: expected "vectors"',)),
        ("POST", "/insert", b'{"vector": [1e400' + b", 0" * (dim - 1) + b"]}", "application/json", 400, ()),
        ("POST", "/insert", b"", "application/json", 400, ("found an empty body",)),
        ("POST", "/insert", np.zeros((1, dim), "<f4").tobytes(), BINARY, 415, ("application/json for /insert",)),
        ("POST", "/insert?batch=3", {"vector": v}, "application/json", 400, ("query string: expected none",)),
        ("POST", "/delete", {"idz": [1]}, "application/json", 400, ("field 'idz': expected one of ids, batch",)),
        ("POST", "/delete", {"batch": 4}, "application/json", 400, ('missing field: expected "ids"',)),
        ("POST", "/delete", {"ids": []}, "application/json", 400, ("ids: expected a non-empty list",)),
        ("POST", "/delete", {"ids": [1.5]}, "application/json", 400, ("ids[0]: expected an integer",)),
        ("GET", "/insert", None, None, 405, ("POST",)),
    ]


def check_writes(served: Dict[str, Any]) -> None:
    """POST /insert and /delete (issue #55): bad writes refused with the
    field and nothing applied; an inserted vector is the next search's
    nearest to itself; a retried batch is answered again and applied once;
    an insert without ids is given the next unused; deleted ids never come
    back, unknown ones are counted as missing; /health and /stats count
    the writes. The set of live vectors is as before at the end."""
    status, health, _ = call(served, "GET", "/health")
    assert status == 200 and health["writes"] is True and "pending" in health, health
    _, before, _ = call(served, "GET", "/stats")
    seen: Dict[str, int] = {}
    for method, path, body, ctype, want, parts in write_bad_cases(served):
        got, doc, _ = call(served, method, path, body, ctype)
        what = f"{method} {path} {str(body)[:60]}"
        assert got == want and isinstance(doc, dict), (what, got, doc)
        for part in parts:
            assert part in doc["error"], (what, part, doc)
        assert_clean(doc["error"], served)
        seen[str(got)] = seen.get(str(got), 0) + 1
    _, health, _ = call(served, "GET", "/health")
    assert health["pending"] == {"inserted": 0, "deleted": 0}, ("a refused write was applied", health)
    n0 = health["n"]

    q = served["queries"][:3]
    body = {"vectors": q.tolist(), "ids": WRITE_IDS, "batch": 424242}
    status, first, _ = call(served, "POST", "/insert", body)
    assert status == 200, first
    assert first["inserted"] == 3 and first["repeated"] is False and "ids" not in first, first
    status, again, _ = call(served, "POST", "/insert", body)
    assert status == 200 and again["repeated"] is True and again["inserted"] == 3, again
    status, doc = search(served, q, k=2)
    assert status == 200, doc
    assert [row[0] for row in doc["ids"]] == WRITE_IDS, doc["ids"]
    assert all(row[1] not in WRITE_IDS for row in doc["ids"]), ("a retried batch applied twice", doc["ids"])
    assert all(row[0] is not None and row[0] < 1e-3 for row in doc["distances"]), doc["distances"]

    status, given, _ = call(served, "POST", "/insert", {"vector": (q[0] * 2).tolist()})
    assert status == 200 and given["inserted"] == 1 and len(given["ids"]) == 1, given
    new_id = given["ids"][0]
    assert new_id not in WRITE_IDS and new_id >= 0, given
    _, health, _ = call(served, "GET", "/health")
    assert (health["n"], health["pending"]) == (n0 + 4, {"inserted": 4, "deleted": 0}), health

    gone = WRITE_IDS + [new_id, 8_888_888]
    status, deleted, _ = call(served, "POST", "/delete", {"ids": gone, "batch": 525252})
    assert status == 200 and (deleted["deleted"], deleted["missing"]) == (4, 1), deleted
    status, doc = search(served, np.concatenate([q, q[:1] * 2]), k=K)
    assert status == 200, doc
    assert not set(gone) & {i for row in doc["ids"] for i in row}, ("a deleted id came back", doc["ids"])
    D0, I0 = reference(served, q)
    status, doc = search(served, q)
    assert_answers(doc, D0, I0)

    # Deleting what the delta holds takes it out of the delta: nothing pends.
    _, health, _ = call(served, "GET", "/health")
    assert (health["n"], health["pending"]) == (n0, {"inserted": 0, "deleted": 0}), health
    _, after, _ = call(served, "GET", "/stats")
    w0, w1 = before["server"]["writes"], after["server"]["writes"]
    assert (w1["requests"] - w0["requests"], w1["inserted"] - w0["inserted"], w1["deleted"] - w0["deleted"]) \
        == (4, 4, 4), (w0, w1)


CHECKS = [
    check_search_json,
    check_search_binary,
    check_health,
    check_stats_counters,
    check_bad_inputs,
    check_bounds,
    check_slow_body,
    check_load,
    check_writes,
]
