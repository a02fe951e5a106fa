"""An HTTP search service over a stratavec collection, on Ray Serve.

One Serve deployment (one replica) holds a :class:`RayCollection` — the
segments stay open in their own actors — and answers what
docs/http-contract.md says (the Rust ``stratavec serve`` answers the same):

``POST /search``
    JSON ``{"vectors": [[...], ...]}`` (or ``"vector": [...]`` for one
    query) with optional ``"k"`` (default 10), ``"complexity"`` and
    ``"probe"``; or a binary body (``Content-Type:
    application/octet-stream``) of little-endian float32 rows, ``dim`` a
    row, with ``k``, ``complexity``, ``probe`` as query parameters. Any
    other content type is refused (415). Answers ``{"ids": [[...]],
    "distances": [[...]]}``, nearest first; ``-1`` / ``null`` where a query
    found fewer than ``k``.
``POST /insert``, ``POST /delete``
    JSON ``{"vectors": [[...]], "ids": [...], "batch": 7}`` (ids and batch
    optional) or ``{"ids": [...], "batch": 8}``: each vector to its
    segment, each id to the segment holding it, logged and fsynced by the
    segment's actor before the answer (``serve_writes``). 403 on a
    read-only server, 409 while another process writes the collection.
``GET /health``
    200 ``{"status": "ok", ...}`` when every segment actor answers, else 503.
``GET /stats``
    The server's request counters (``rejected``: queue full, deadline, slow
    body) and the collection's search statistics.

Every request is bounded (:class:`Limits`: body bytes, queries, k,
k × queries, complexity, complexity × queries, the time to send the body,
the time to search, searches running and waiting). A refused request gets a
4xx whose ``{"error": ...}`` names the field or limit, what was expected
and what was found; a failure gets 500 ``internal error (id ...)`` with the
details under that id in the server's log. The server goes on serving. Run
it with::

    python -m stratavec.serve DIR --port 8000

(Ray is optional: ``pip install 'stratavec[ray]'``.) The request parsing
below needs neither Ray nor a server, so it is tested on its own.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import dataclasses
import functools
import json
import logging
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np

__all__ = [
    "BadRequest",
    "SearchRequest",
    "Limits",
    "parse_search",
    "CollectionApp",
    "build_app",
    "serve_collection",
    "stop_serving",
    "main",
]

APP_NAME = "stratavec"
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
# A search's list size when the request gives none (RayCollection's and
# Collection.search's default); what complexity × queries counts then.
DEFAULT_COMPLEXITY = 64
MAX_JSON_DEPTH = 32
JSON_FIELDS = ("vectors", "vector", "k", "complexity", "probe")
BINARY_PARAMS = ("k", "complexity", "probe")
JSON_TYPES = ("application/json",)
BINARY_TYPE = "application/octet-stream"

log = logging.getLogger("ray.serve")  # a replica's log (Ray writes it per replica)


class BadRequest(Exception):
    """A request the server refuses: ``status`` (4xx, or 503/504) and a
    message naming the field or limit, what was expected and what was
    found. ``headers`` go on the answer (Retry-After, Allow); ``rejected``
    names the /stats ``rejected`` counter it adds to."""

    def __init__(self, status: int, message: str, headers: Optional[Dict[str, str]] = None,
                 rejected: Optional[str] = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers
        self.rejected = rejected


def _cpus() -> int:
    return os.cpu_count() or 1


@dataclass(frozen=True)
class Limits:
    """What one request may ask and how long and how many may wait (the
    contract's bounds, same defaults as ``stratavec serve``).

    ``max_body_bytes``: 413 beyond (by Content-Length before reading, and
    while reading). ``max_queries`` a request, ``max_results`` (k ×
    queries), ``max_work`` (complexity × queries): 413 beyond. ``max_k``
    (also at most the vectors held) and ``max_complexity``: 400 beyond.
    ``body_timeout_s``: 408 when the body has not all arrived this long
    after the request reached the server. ``search_timeout_s``: 504 when a
    search (waiting for a slot included) takes longer; its actor calls are
    cancelled. ``max_concurrent`` searches run at once, ``max_queue`` more
    wait; 503 with ``Retry-After`` beyond."""

    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_queries: int = 1024
    max_k: int = 1000
    max_results: int = 100_000
    max_complexity: int = 10_000
    max_work: int = 1_000_000
    body_timeout_s: float = 10.0
    search_timeout_s: float = 30.0
    max_concurrent: int = field(default_factory=_cpus)
    max_queue: int = 64

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            seconds = f.name.endswith("_s")
            ok = isinstance(v, (int, float) if seconds else int) and not isinstance(v, bool)
            # max_queue 0: no search waits (busy beyond max_concurrent).
            if not ok or not (v >= 0 if f.name == "max_queue" else v > 0) or (seconds and v == float("inf")):
                what = "a positive number of seconds" if seconds else "a positive integer"
                raise ValueError(f"Limits.{f.name}: expected {what}, found {v!r}")


@dataclass
class SearchRequest:
    queries: np.ndarray  # (nq, dim) float32
    k: int
    complexity: Optional[int]
    probe: Optional[int]


# ---------------------------------------------------------------- parsing


def _media_type(content_type: Optional[str]) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def body_kind(content_type: Optional[str]) -> str:
    """``"json"`` or ``"binary"`` by the Content-Type, else 415.

    JSON only with a JSON content type: a browser page may POST
    ``text/plain`` to 127.0.0.1 without asking first (no CORS preflight),
    so a server that parsed any body as JSON would answer it."""
    media = _media_type(content_type)
    if media in JSON_TYPES or (media.startswith("application/") and media.endswith("+json")):
        return "json"
    if media == BINARY_TYPE:
        return "binary"
    found = "none" if not (content_type or "").strip() else f"'{_clip(content_type.strip())}'"
    raise BadRequest(415, f"Content-Type: expected application/json or {BINARY_TYPE}, found {found}")


def _clip(text: str, n: int = 80) -> str:
    """A client's text as a message quotes it: printable, at most n chars."""
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= n else text[:n] + "…"


def _int_field(name: str, value: Any, lo: int, hi: int, why: str) -> int:
    """``value`` as an integer in lo..hi, else 400 naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            shown = _clip(json.dumps(value)) if isinstance(value, (str, list, dict)) else value
            raise BadRequest(400, f"{name}: expected an integer in {lo}..{hi} ({why}), found {shown}")
    if not lo <= value <= hi:
        raise BadRequest(400, f"{name}: expected an integer in {lo}..{hi} ({why}), found {value}")
    return value


def _param_int(name: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise BadRequest(400, f"query parameter {name}: expected an integer, found {_clip(repr(text))}") from None


def _check_options(
    k: Any, complexity: Any, probe: Any, *, n: int, segments: int, limits: Limits, kind: str
) -> Tuple[int, Optional[int], Optional[int]]:
    kmax = min(n, limits.max_k)
    what = "index's" if kind == "index" else "collection's"
    k = _int_field("k", 10 if k is None else k, 1, kmax,
                   f"at most the {what} {n} vectors and the server's max_k {limits.max_k}")
    if complexity is not None:
        complexity = _int_field(
            "complexity", complexity, 1, limits.max_complexity, f"a search list size, max_complexity {limits.max_complexity}"
        )
    if probe is not None:
        if kind == "index":
            raise BadRequest(400, "probe: expected none for an index (probe picks a collection's segments), found one")
        probe = _int_field("probe", probe, 1, segments, f"segments a query visits, of {segments}")
    return k, complexity, probe


def _check_work(nq: int, k: int, complexity: Optional[int], limits: Limits) -> None:
    """The bounds on a whole request: queries, k × queries, complexity ×
    queries (413: the request is too large, not malformed)."""
    if nq * k > limits.max_results:
        raise BadRequest(
            413,
            f"k × queries: expected at most {limits.max_results} (max_results), "
            f"found {nq * k} (k={k} × {nq} queries)",
        )
    c = DEFAULT_COMPLEXITY if complexity is None else complexity
    if nq * c > limits.max_work:
        raise BadRequest(
            413,
            f"complexity × queries: expected at most {limits.max_work} (max_work), "
            f"found {nq * c} (complexity={c} × {nq} queries)",
        )


def _check_count(nq: int, field: str, limits: Limits) -> None:
    if nq > limits.max_queries:
        raise BadRequest(
            413, f"{field}: expected at most {limits.max_queries} queries a request (max_queries), found {nq}"
        )


def _vectors(value: Any, field: str, dim: int, limits: Limits, check_bools: bool = True) -> np.ndarray:
    """A JSON list of rows as a (nq, dim) float32 array, or 400 naming the
    first bad row (413 for more rows than max_queries)."""
    if not isinstance(value, list) or not value:
        found = "an empty list" if isinstance(value, list) else _json_type(value)
        raise BadRequest(400, f"{field}: expected a non-empty list of vectors, found {found}")
    _check_count(len(value), field, limits)
    try:
        a = np.array(value)
    except (ValueError, TypeError, OverflowError):
        a = None  # ragged, or an integer beyond float: found below
    # numpy turns true/false among numbers into 1.0/0.0: look for them
    # only when the body could hold one (parse_search says).
    if a is not None and a.ndim == 2 and a.dtype.kind in "iuf" and check_bools:
        if any(isinstance(x, bool) for row in value for x in row):
            a = None
    if a is None or a.ndim != 2 or a.dtype.kind not in "iuf":
        for i, row in enumerate(value):
            if not isinstance(row, list):
                raise BadRequest(400, f"{field}[{i}]: expected a list of {dim} numbers, found {_json_type(row)}")
            if len(row) != dim:
                raise BadRequest(
                    400, f"{field}[{i}]: expected {dim} numbers (the collection's dimension), found {len(row)}"
                )
            for j, x in enumerate(row):
                if isinstance(x, bool) or not isinstance(x, (int, float)):
                    raise BadRequest(400, f"{field}[{i}][{j}]: expected a number, found {_clip(json.dumps(x))}")
        raise BadRequest(400, f"{field}: expected a list of lists of float32 numbers, found numbers beyond float32")
    if a.shape[1] != dim:
        raise BadRequest(
            400, f"{field}: expected vectors of {dim} numbers (the collection's dimension), found {a.shape[1]}"
        )
    with np.errstate(over="ignore"):
        a = a.astype(np.float32)
    bad = ~np.isfinite(a).all(axis=1)
    if bad.any():
        raise BadRequest(400, f"{field}[{int(np.argmax(bad))}]: expected finite float32 numbers, found NaN or infinity")
    return a


JSON_NAMES = {list: "list", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


def _json_type(value: Any) -> str:
    """A JSON value's type as JSON names it (not Python's names)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def json_depth(body: bytes) -> int:
    """How deeply ``[`` / ``{`` nest in a JSON text, brackets inside strings
    not counted, without parsing it (so a deep document cannot exhaust the
    parser's recursion). Vectorised: a 16 MiB body takes milliseconds."""
    a = np.frombuffer(body, dtype=np.uint8)
    if a.size == 0:
        return 0
    quote = a == ord('"')
    if quote.any():
        # A quote is escaped when an odd run of backslashes precedes it.
        bs = a == ord("\\")
        idx = np.arange(a.size)
        last_other = np.maximum.accumulate(np.where(bs, -1, idx))
        run_before = np.concatenate(([0], idx[:-1] - last_other[:-1]))
        quote &= run_before % 2 == 0
        in_string = (np.cumsum(quote) % 2).astype(bool)
    else:
        in_string = np.zeros(a.size, bool)
    step = np.zeros(a.size, np.int64)
    step[(a == ord("[")) | (a == ord("{"))] = 1
    step[(a == ord("]")) | (a == ord("}"))] = -1
    step[in_string] = 0
    return int(np.cumsum(step).max(initial=0))


def _refuse_constant(name: str) -> Any:
    raise BadRequest(400, f"body: expected finite numbers, found {name}")


def load_json(body: bytes) -> Any:
    """The body as JSON, or 400: not JSON, nested deeper than 32, NaN or
    Infinity (Python's json accepts both), a number too long to convert."""
    depth = json_depth(body)
    if depth > MAX_JSON_DEPTH:
        raise BadRequest(400, f"body: expected JSON nested at most {MAX_JSON_DEPTH} deep, found {depth}")
    try:
        return json.loads(body, parse_constant=_refuse_constant)
    except json.JSONDecodeError as e:
        raise BadRequest(
            400,
            f"body: expected JSON (or Content-Type: {BINARY_TYPE} for float32 rows), "
            f"found invalid JSON: {e.msg} at line {e.lineno} column {e.colno}",
        ) from None
    except UnicodeDecodeError:
        raise BadRequest(400, "body: expected JSON in UTF-8, found bytes that are not UTF-8") from None
    except ValueError:  # an integer literal past Python's digit limit
        raise BadRequest(400, "body: expected JSON numbers, found an integer too long to convert") from None


def parse_search(
    content_type: Optional[str],
    body: bytes,
    params: Mapping[str, str],
    *,
    dim: int,
    n: int,
    segments: int,
    limits: Limits = Limits(),
    kind: str = "collection",
) -> SearchRequest:
    """A ``POST /search`` request as queries and options, or BadRequest.

    JSON bodies carry everything; a binary body (``application/
    octet-stream``) carries float32 rows and the options come from the
    query string. Unknown fields are refused rather than ignored, so a
    misspelt ``complexity`` is not silently the default. ``kind`` is
    ``"collection"`` or ``"index"`` (which refuses ``probe``)."""
    if body_kind(content_type) == "binary":
        return _parse_binary(body, params, dim=dim, n=n, segments=segments, limits=limits, kind=kind)
    if params:
        name = sorted(params)[0]
        raise BadRequest(
            400,
            f"query parameter {_clip(name)}: expected none with a JSON body (give it in the body), "
            f"or Content-Type: {BINARY_TYPE}",
        )
    if not body:
        raise BadRequest(400, "body: expected a JSON object such as {\"vectors\": [[...]], \"k\": 10}, found an empty body")
    doc = load_json(body)
    if not isinstance(doc, dict):
        raise BadRequest(400, f"body: expected a JSON object, found a JSON {JSON_NAMES.get(type(doc), 'value')}")
    unknown = sorted(set(doc) - set(JSON_FIELDS))
    if unknown:
        raise BadRequest(400, f"field '{_clip(unknown[0])}': expected one of {', '.join(JSON_FIELDS)}")
    field_name, rows = rows_field(doc, dim, "a list of vectors")
    # The bounds before the rows are converted: a request too large is
    # refused for what it asks, whatever its rows hold.
    if isinstance(rows, list):
        _check_count(len(rows), field_name, limits)
    k, complexity, probe = _check_options(
        doc.get("k"), doc.get("complexity"), doc.get("probe"), n=n, segments=segments, limits=limits, kind=kind
    )
    if isinstance(rows, list) and rows:
        _check_work(len(rows), k, complexity, limits)
    q = _vectors(rows, field_name, dim, limits, check_bools=b"true" in body or b"false" in body)
    return SearchRequest(q, k, complexity, probe)


def rows_field(doc: Dict[str, Any], dim: int, what: str) -> Tuple[str, Any]:
    """A body's ``"vectors"`` (``what``) or ``"vector"`` (one, as a list
    of one): (the field's name, its rows as given), or 400."""
    if "vectors" in doc and "vector" in doc:
        raise BadRequest(400, "vectors, vector: expected one of them, found both")
    if "vectors" in doc:
        return "vectors", doc["vectors"]
    if "vector" in doc:
        v = doc["vector"]
        if not isinstance(v, list):
            raise BadRequest(400, f"vector: expected a list of {dim} numbers, found {_json_type(v)}")
        if v and isinstance(v[0], list):
            raise BadRequest(400, "vector: expected one vector (a list of numbers); use \"vectors\" for several")
        return "vector", [v]
    raise BadRequest(400, f"missing field: expected \"vectors\" ({what}) or \"vector\" (one)")


def _parse_binary(body: bytes, params: Mapping[str, str], *, dim: int, n: int, segments: int,
                  limits: Limits, kind: str) -> SearchRequest:
    unknown = sorted(set(params) - set(BINARY_PARAMS))
    if unknown:
        raise BadRequest(
            400, f"query parameter {_clip(unknown[0])}: expected one of {', '.join(BINARY_PARAMS)}, "
            f"found '{_clip(unknown[0])}'"
        )
    row = 4 * dim
    if len(body) == 0 or len(body) % row:
        raise BadRequest(
            400,
            f"body: expected a multiple of {row} bytes (rows of {dim} little-endian float32), "
            f"found {len(body)} bytes",
        )
    nq = len(body) // row
    _check_count(nq, "body", limits)
    k = _param_int("k", params["k"]) if "k" in params else None
    complexity = _param_int("complexity", params["complexity"]) if "complexity" in params else None
    probe = _param_int("probe", params["probe"]) if "probe" in params else None
    k, complexity, probe = _check_options(k, complexity, probe, n=n, segments=segments, limits=limits, kind=kind)
    _check_work(nq, k, complexity, limits)
    q = np.frombuffer(body, dtype="<f4").reshape(nq, dim).astype(np.float32)
    bad = ~np.isfinite(q).all(axis=1)
    if bad.any():
        raise BadRequest(400, f"body row {int(np.argmax(bad))}: expected finite numbers, found NaN or infinity")
    return SearchRequest(q, k, complexity, probe)


def results_json(D: np.ndarray, I: np.ndarray) -> Dict[str, Any]:
    """``{"ids", "distances"}`` with JSON's null for the infinite distance
    of an empty slot (JSON has no infinity)."""
    dist = D.astype(object)
    dist[~np.isfinite(D)] = None
    return {"ids": I.tolist(), "distances": dist.tolist()}


# ---------------------------------------------------------------- the app

ROUTES = {"/search": "POST", "/insert": "POST", "/delete": "POST", "/health": "GET", "/stats": "GET"}
# Bodies above this are parsed on a worker thread, so one large JSON body
# does not hold up the replica's event loop (health, stats, other bodies).
PARSE_INLINE_BYTES = 256 * 1024
# Requests a replica takes beyond the searches that may run and wait: room
# for health and stats, and for bodies still arriving, so those reach the
# app (and its JSON 503) rather than Serve's own queue.
ADMIN_HEADROOM = 16
# An answer that leaves a request body unread ends the connection: the
# rest of that body would otherwise be read as the next request.
CLOSE = {"Connection": "close"}


def _secs(s: float) -> str:
    """Seconds as messages print them: 10, 0.5 (no trailing .0)."""
    return f"{s:g}"


def _loopback_replica_grpc() -> None:
    """Bind a Serve replica's inter-deployment gRPC port to 127.0.0.1 on a
    loopback node.

    Ray 2.60's replica opens that port on every interface ("[::]:0",
    hard-coded in ray/serve/_private/replica.py; it carries requests only
    with RAY_SERVE_USE_GRPC_BY_DEFAULT=1). On a node whose address is
    127.0.0.1 (a local cluster started by ``init_local_ray``) no other
    machine could use it anyway, so it listens on loopback like every other
    Ray port there. Runs in the replica's process while the app is built,
    which Ray does before it opens the port; a node with a routable address
    (a real cluster) is left as Ray made it."""
    try:
        import ray
        from ray.serve._private import replica

        if ray.util.get_node_ip_address() not in ("127.0.0.1", "::1"):
            return
        original = replica.add_port_to_grpc_server
    except Exception:  # another Ray layout: leave it as it is (the ss test says so)
        return
    if getattr(original, "stratavec_loopback", False):
        return

    def add_port(server: Any, address: str) -> Any:
        if isinstance(address, str) and address.startswith("[::]:"):
            address = "127.0.0.1:" + address[len("[::]:"):]
        return original(server, address)

    add_port.stratavec_loopback = True  # type: ignore[attr-defined]
    replica.add_port_to_grpc_server = add_port


class CollectionApp:
    """The Serve deployment: one :class:`RayCollection` and the routes.

    Searches block on Ray, so they run on a pool of ``max_concurrent``
    threads, keeping the replica's event loop free for other requests
    (health, stats, bodies arriving). Admission counts a search from when
    it is admitted until its thread has finished — a search given up on
    (504, client gone) holds its place until its actor calls have really
    stopped, so the bounds hold for the work, not only for the answers.
    """

    def __init__(
        self,
        dir: str,
        collection_kwargs: Optional[Dict[str, Any]] = None,
        limits: Optional[Limits] = None,
        read_only: bool = False,
    ):
        from .ray_collection import RayCollection

        _loopback_replica_grpc()
        self.limits = limits or Limits()
        self.read_only = read_only
        self.collection = RayCollection(dir, **(collection_kwargs or {}))
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=self.limits.max_concurrent, thread_name_prefix="stratavec-search"
        )
        self._lock = threading.Lock()
        self._admitted = 0  # searches admitted whose thread has not finished
        self._running = 0  # of those, the ones whose thread has started
        self._counts: Dict[str, Any] = {
            "requests": 0,
            "searches": 0,
            "queries": 0,
            "status": {},
            "bytes_in": 0,
            "search_s": 0.0,
            "writes": 0,
            "inserted": 0,
            "deleted": 0,
            "rejected": {"queue_full": 0, "deadline": 0, "slow_body": 0},
        }

    def _count(self, status: int, rejected: Optional[str] = None, **add: Any) -> None:
        with self._lock:
            c = self._counts
            c["requests"] += 1
            c["status"][str(status)] = c["status"].get(str(status), 0) + 1
            if rejected:
                c["rejected"][rejected] += 1
            for key, v in add.items():
                c[key] += v

    async def __call__(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        t0 = time.monotonic()
        path = request.url.path.rstrip("/") or "/"
        try:
            if path not in ROUTES:
                raise BadRequest(
                    404, f"path {_clip(path)}: expected POST /search, POST /insert, POST /delete, "
                    "GET /health or GET /stats"
                )
            if request.method != ROUTES[path]:
                raise BadRequest(
                    405, f"{path}: expected method {ROUTES[path]}, found {_clip(request.method)}",
                    headers={"Allow": ROUTES[path]},
                )
            if path == "/search":
                return await self._search(request, t0)
            if path in ("/insert", "/delete"):
                return await self._write(request, t0, path[1:])
            if path == "/health":
                return await self._health()
            self._count(200)
            return JSONResponse(self.stats())
        except BadRequest as e:
            self._count(e.status, rejected=e.rejected)
            return JSONResponse({"error": e.message}, status_code=e.status, headers=e.headers)
        except Exception:  # the server answers, logs the details under an id, and goes on serving
            error_id = uuid.uuid4().hex[:16]
            log.exception("stratavec: internal error (id %s) answering %s %s", error_id, request.method, path)
            self._count(500)
            return JSONResponse({"error": f"internal error (id {error_id})", "id": error_id}, status_code=500)

    async def _read_body(self, request: Any, t0: float) -> bytes:
        """The body, refusing one over ``max_body_bytes`` by its
        Content-Length before reading or as soon as more arrives (413), and
        one not all here ``body_timeout_s`` after the request reached the
        app (408)."""
        from starlette.requests import ClientDisconnect

        lim = self.limits
        declared = request.headers.get("content-length")
        size = None
        if declared is not None:
            try:
                size = int(declared)
                if size < 0:
                    raise ValueError
            except ValueError:
                raise BadRequest(400, f"Content-Length: expected an integer, found {_clip(repr(declared))}",
                                 headers=CLOSE) from None
            if size > lim.max_body_bytes:
                raise BadRequest(
                    413, f"body: expected at most {lim.max_body_bytes} bytes (max_body_bytes), found Content-Length {size}",
                    headers=CLOSE,
                )
        body = bytearray()
        deadline = t0 + lim.body_timeout_s
        chunks = request.stream().__aiter__()
        while True:
            try:
                chunk = await asyncio.wait_for(chunks.__anext__(), timeout=max(0.0, deadline - time.monotonic()))
            except StopAsyncIteration:
                break
            except (asyncio.TimeoutError, TimeoutError):
                of = "a body of no declared length" if size is None else str(size)
                s = _secs(lim.body_timeout_s)
                raise BadRequest(
                    408, f"body: expected the whole body within {s} s (body_timeout_s), found {len(body)} bytes of {of} after {s} s",
                    headers=CLOSE, rejected="slow_body",
                ) from None
            except ClientDisconnect:
                raise BadRequest(400, f"body: expected the whole body, found the connection closed after {len(body)} bytes",
                                 headers=CLOSE) from None
            body += chunk
            if len(body) > lim.max_body_bytes:
                raise BadRequest(413, f"body: expected at most {lim.max_body_bytes} bytes (max_body_bytes), found more",
                                 headers=CLOSE)
        with self._lock:
            self._counts["bytes_in"] += len(body)
        return bytes(body)

    async def _search(self, request: Any, t0: float) -> Any:
        from starlette.responses import JSONResponse

        ctype = request.headers.get("content-type")
        body_kind(ctype)  # 415 before reading a body it would refuse
        body = await self._read_body(request, t0)
        col = self.collection
        parse = functools.partial(
            parse_search, ctype, body, dict(request.query_params),
            dim=col.dim, n=col.n, segments=col.segments, limits=self.limits,
        )
        req = parse() if len(body) <= PARSE_INLINE_BYTES else await asyncio.get_running_loop().run_in_executor(None, parse)
        t_search = time.perf_counter()
        D, I = await self._admit_and_search(req)
        self._count(200, searches=1, queries=int(req.queries.shape[0]), search_s=time.perf_counter() - t_search)
        return JSONResponse(results_json(D, I))

    async def _admit_and_search(self, req: SearchRequest) -> Tuple[np.ndarray, np.ndarray]:
        """Admit the search (503 when ``max_concurrent`` run and
        ``max_queue`` wait), run it on the pool, and give up on it at its
        deadline (504): the search's cancel event is set and its pool task
        dropped if it has not started, so its actor calls are cancelled."""
        from .ray_collection import SearchCancelled, SegmentUnavailableError

        lim = self.limits
        deadline = time.monotonic() + lim.search_timeout_s
        self._admit()
        cancel = threading.Event()
        try:
            job = self._pool.submit(self._run_search, req, deadline, cancel)
        except BaseException:
            self._finished(None)
            raise
        job.add_done_callback(self._finished)
        try:
            left = max(0.0, deadline - time.monotonic())
            return await asyncio.wait_for(asyncio.wrap_future(job), timeout=left)
        except (asyncio.TimeoutError, TimeoutError, SearchCancelled):
            cancel.set()
            job.cancel()
            raise BadRequest(
                504, f"search: did not finish within {_secs(lim.search_timeout_s)} s (search_timeout_s); "
                "its work was cancelled", rejected="deadline",
            ) from None
        except SegmentUnavailableError as e:
            # The message names the segment's directory and Ray's error:
            # the log keeps them, the client is told which segment.
            log.warning("stratavec: search failed: %s", e)
            raise BadRequest(
                503, f"search: segment {e.segment} is unavailable (its actor kept failing); retry later",
                headers={"Retry-After": "1"},
            ) from None
        except asyncio.CancelledError:  # the client went away: stop the work behind it
            cancel.set()
            job.cancel()
            raise

    def _admit(self) -> None:
        """A place among the ``max_concurrent`` running and ``max_queue``
        waiting (searches and writes alike), or 503; ``_finished`` frees it."""
        lim = self.limits
        with self._lock:
            if self._admitted >= lim.max_concurrent + lim.max_queue:
                running, waiting = self._running, self._admitted - self._running
                raise BadRequest(
                    503, f"server busy: {running} searches running and {waiting} waiting (max_queue); retry later",
                    headers={"Retry-After": "1"}, rejected="queue_full",
                )
            self._admitted += 1

    async def _write(self, request: Any, t0: float, kind: str) -> Any:
        """An insert or delete: checked like a search (Content-Type, body
        bounds, parsing), admitted, then run on the pool to its end — a
        write is never abandoned half-way, so it has no deadline once
        admitted (one that fills a segment's delta merges before it
        answers). Its batch id makes a client's retry apply once."""
        from starlette.responses import JSONResponse

        from . import serve_writes as W
        from .ray_collection import SegmentUnavailableError

        if self.read_only:
            raise BadRequest(403, f"{kind}: this server is read-only (started with --read-only)")
        if body_kind(request.headers.get("content-type")) != "json":
            raise BadRequest(415, f"Content-Type: expected application/json for /{kind}, found {BINARY_TYPE}")
        if request.url.query:
            raise BadRequest(400, f"query string: expected none for /{kind} (give everything in the JSON body), "
                             f"found {len(request.url.query)} bytes")
        body = await self._read_body(request, t0)
        col = self.collection
        if kind == "insert":
            parse = functools.partial(W.parse_insert, body, dim=col.dim, limits=self.limits)
        else:
            parse = functools.partial(W.parse_delete, body)
        req = parse() if len(body) <= PARSE_INLINE_BYTES else await asyncio.get_running_loop().run_in_executor(None, parse)
        self._admit()
        try:
            job = self._pool.submit(self._run_write, req)
        except BaseException:
            self._finished(None)
            raise
        job.add_done_callback(self._finished)
        try:
            # Shielded: a client that goes away does not stop a write.
            applied = await asyncio.shield(asyncio.wrap_future(job))
        except SegmentUnavailableError as e:
            log.warning("stratavec: %s failed: %s", kind, e)
            raise BadRequest(
                503, f"{kind}: segment {e.segment} is unavailable (its actor kept failing); retry with the "
                "same batch id", headers={"Retry-After": "1"},
            ) from None
        except Exception as e:
            mapped = W.refused(kind, e)
            if mapped is None:
                raise
            raise mapped from None
        n = int(applied["count"]) if not applied["repeated"] else 0
        self._count(200, writes=1, **{"inserted" if kind == "insert" else "deleted": n})
        return JSONResponse(W.answer(req, applied))

    def _run_write(self, req: Any) -> Dict[str, Any]:
        with self._lock:
            self._running += 1
        try:
            if req.kind == "insert":
                return self.collection.add(req.vectors, req.ids, batch=req.batch)
            return self.collection.remove(req.ids, batch=req.batch)
        finally:
            with self._lock:
                self._running -= 1

    def _run_search(self, req: SearchRequest, deadline: float, cancel: threading.Event) -> Tuple[np.ndarray, np.ndarray]:
        """On a pool thread: the search, if its deadline has not passed while
        it waited (then it is not run at all)."""
        left = deadline - time.monotonic()
        if left <= 0 or cancel.is_set():
            raise TimeoutError("search: its deadline passed before it started")
        with self._lock:
            self._running += 1
        try:
            return self.collection.search(
                req.queries, req.k, req.complexity, req.probe, timeout_s=left, cancel=cancel
            )
        finally:
            with self._lock:
                self._running -= 1

    def _finished(self, _job: Any) -> None:
        with self._lock:
            self._admitted -= 1

    async def _health(self) -> Any:
        from starlette.responses import JSONResponse

        col = self.collection
        problems = await asyncio.get_running_loop().run_in_executor(None, col.ping, 5.0)
        down = {str(i): p for i, p in enumerate(problems) if p is not None}
        if down:
            log.warning("stratavec: health: segment actors not answering: %s", down)
        doc = {
            "status": "ok" if not down else "unavailable",
            "n": col.n,
            "dim": col.dim,
            "metric": col.metric,
            "partition": col.partition,
            "segments": col.segments,
            "writes": not self.read_only,
            # Which actors, not why: the reasons (Ray's errors, node
            # addresses) are in the server's log.
            "actors_down": sorted(int(i) for i in down),
        }
        if not down:
            inserted, deleted = await asyncio.get_running_loop().run_in_executor(None, lambda: col.pending)
            doc["pending"] = {"inserted": inserted, "deleted": deleted}
        status = 200 if not down else 503
        self._count(status)
        return JSONResponse(doc, status_code=status)

    def stats(self) -> Dict[str, Any]:
        with self._lock:
            server = json.loads(json.dumps(self._counts))
            # As the Rust server's /stats: writes answered and the vectors
            # they inserted and deleted (a retried batch adds none).
            server["writes"] = {"requests": server.pop("writes"), "inserted": server.pop("inserted"),
                                "deleted": server.pop("deleted")}
            server["running"] = self._running
            server["waiting"] = self._admitted - self._running
        return {"server": server, "collection": self.collection.stats()}


def build_app(dir: str, *, limits: Optional[Limits] = None, read_only: bool = False,
              **collection_kwargs: Any) -> Any:
    """The Serve application (one replica: each would hold its own set of
    segment actors) for ``serve.run``.

    The replica takes ``max_concurrent + max_queue`` searches and some
    headroom, so the app's own admission answers a busy server (JSON 503).
    Beyond that Serve's proxy queues ``max_queue`` more and refuses the
    rest itself: 503 with Retry-After, but Serve's text, not JSON (only
    when that many requests are still sending their bodies)."""
    from ray import serve

    limits = limits or Limits()
    options: Dict[str, Any] = dict(
        name=APP_NAME,
        num_replicas=1,
        ray_actor_options={"num_cpus": 0},
        max_ongoing_requests=limits.max_concurrent + limits.max_queue + ADMIN_HEADROOM,
        max_queued_requests=max(1, limits.max_queue),
    )
    try:
        from ray.serve.config import BackpressureConfig

        options["backpressure_config"] = BackpressureConfig(status_code=503, retry_after_s=1)
    except ImportError:  # an older Serve: 503 without Retry-After
        pass
    deployment = serve.deployment(**options)(CollectionApp)
    return deployment.bind(os.path.abspath(dir), collection_kwargs, limits, read_only)


def _app_failed(serve: Any) -> Optional[str]:
    """Serve's message when the app failed to deploy, else None."""
    try:
        app = serve.status().applications.get(APP_NAME)
    except Exception:
        return None
    if app is not None and str(getattr(app.status, "value", app.status)) == "DEPLOY_FAILED":
        return app.message or "deploy failed"
    return None


def serve_collection(
    dir: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    limits: Optional[Limits] = None,
    ready_timeout_s: float = 120.0,
    read_only: bool = False,
    **collection_kwargs: Any,
) -> str:
    """Serve the collection at ``dir`` over HTTP on ``host:port`` and
    return its URL once ``GET /health`` answers 200.

    Uses the Ray cluster this process is connected to (a local one on
    127.0.0.1 is started if none: ``init_local_ray``). ``collection_kwargs``
    go to :class:`RayCollection` (``memory_budget_mb``,
    ``segments_per_actor``, ``max_retries``, ``io``, ``delta_share``,
    ``auto_merge``). ``read_only`` refuses /insert and /delete (403). Waits up to
    ``ready_timeout_s`` for the app to answer (Serve's own waits give the
    proxy a fixed 60 s, too little on a busy machine). Stop with
    :func:`stop_serving`."""
    from .ray_collection import init_local_ray, require_ray

    ray = require_ray()
    from ray import serve

    if not ray.is_initialized():
        init_local_ray()
    deadline = time.monotonic() + ready_timeout_s
    # Serve gives its proxies a fixed 60 s (HTTP_PROXY_TIMEOUT) in
    # serve.start and again in run_many, and serve.run waits for the app
    # without a bound. None of those waits decides here: on their timeout
    # the controller and proxies go on starting, and GET /health below
    # waits for them up to ready_timeout_s.
    try:
        serve.start(http_options={"host": host, "port": port})
    except TimeoutError:
        pass
    app = build_app(dir, limits=limits, read_only=read_only, **collection_kwargs)
    try:
        serve.run_many([serve.RunTarget(target=app, name=APP_NAME, route_prefix="/")],
                       wait_for_ingress_deployment_creation=False, wait_for_applications_running=False)
    except TimeoutError:
        pass
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::', '') else host}:{port}"
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as r:
                if r.status == 200:
                    return url
        except urllib.error.HTTPError as e:
            last = f"HTTP {e.code}: {e.read()[:200]!r}"
        except OSError as e:
            last = str(e)
        failed = _app_failed(serve)
        if failed:
            raise RuntimeError(f"{url}: the app failed to deploy: {failed}")
        time.sleep(0.2)
    raise TimeoutError(f"{url}/health: expected 200 within {ready_timeout_s} s, last: {last}")


def stop_serving() -> None:
    """Shut Ray Serve down (the app, its proxy and the segment actors)."""
    from ray import serve

    serve.shutdown()


# ---------------------------------------------------------------- CLI


def _limits_from(a: argparse.Namespace, p: argparse.ArgumentParser) -> Limits:
    body = a.max_body_bytes if a.max_body_mb is None else int(a.max_body_mb * 2**20)
    try:
        return Limits(
            max_body_bytes=body,
            max_queries=a.max_queries,
            max_k=a.max_k,
            max_results=a.max_results,
            max_complexity=a.max_complexity,
            max_work=a.max_work,
            body_timeout_s=a.body_timeout_s,
            search_timeout_s=a.search_timeout_s,
            max_concurrent=a.max_concurrent or _cpus(),
            max_queue=a.max_queue,
        )
    except ValueError as e:
        p.error(str(e))
        raise  # not reached: p.error exits


def _parser() -> argparse.ArgumentParser:
    d = Limits()
    p = argparse.ArgumentParser(
        prog="python -m stratavec.serve",
        description="Serve a stratavec collection over HTTP (POST /search, POST /insert, POST /delete, "
                    "GET /health, GET /stats) on Ray Serve.",
    )
    p.add_argument("dir", help="collection directory (collection.json)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only). 0.0.0.0 lets every "
                        "machine that can reach this one search the collection and read /stats: nothing "
                        "authenticates a request, so put a proxy with authentication in front instead")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--memory-budget-mb", type=float, default=None, help="total RAM budget, shared by the segments")
    p.add_argument("--segments-per-actor", type=int, default=1)
    p.add_argument("--max-retries", type=int, default=3)
    p.add_argument("--io", default="auto", help="I/O backend (stratavec.Index.open's io)")
    p.add_argument("--read-only", action="store_true", help="refuse POST /insert and /delete (403)")
    p.add_argument("--delta-share", type=float, default=None,
                   help="share of each segment's budget its inserts and deletes may hold before a merge")
    g = p.add_argument_group("bounds (docs/http-contract.md)")
    body = g.add_mutually_exclusive_group()
    body.add_argument("--max-body-bytes", type=int, default=d.max_body_bytes, help="largest request body (413 beyond)")
    body.add_argument("--max-body-mb", type=float, default=None, help="the same in MiB")
    g.add_argument("--max-queries", type=int, default=d.max_queries, help="queries a request (413 beyond)")
    g.add_argument("--max-k", type=int, default=d.max_k, help="largest k (400 beyond)")
    g.add_argument("--max-results", type=int, default=d.max_results, help="largest k × queries (413 beyond)")
    g.add_argument("--max-complexity", type=int, default=d.max_complexity, help="largest complexity (400 beyond)")
    g.add_argument("--max-work", type=int, default=d.max_work, help="largest complexity × queries (413 beyond)")
    g.add_argument("--body-timeout-s", type=float, default=d.body_timeout_s,
                   help="seconds to receive a body once the request reached the app (408 beyond)")
    g.add_argument("--search-timeout-s", type=float, default=d.search_timeout_s,
                   help="seconds a search may take, waiting included (504 beyond; its work is cancelled)")
    g.add_argument("--max-concurrent", type=int, default=None, help="searches running at once (default: CPUs)")
    g.add_argument("--max-queue", type=int, default=d.max_queue, help="searches waiting (503 beyond)")
    r = p.add_argument_group("Ray")
    r.add_argument("--address", default=None,
                   help="Ray cluster to join (default: start a local one on 127.0.0.1 that ends with this process)")
    r.add_argument("--num-cpus", type=int, default=None, help="local cluster: CPUs (default: all)")
    r.add_argument("--object-store-mb", type=int, default=200, help="local cluster: object store size")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = _parser()
    a = p.parse_args(argv)
    limits = _limits_from(a, p)

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    from .ray_collection import init_local_ray, require_ray, signals_kept

    try:
        ray = require_ray()
    except ImportError as e:
        p.error(str(e))
    if not os.path.isfile(os.path.join(a.dir, "collection.json")):
        p.error(f"{a.dir}: expected a stratavec collection (collection.json), found none")
    if a.address:
        with signals_kept():
            ray.init(address=a.address)
    else:
        init_local_ray(num_cpus=a.num_cpus, object_store_memory=a.object_store_mb * 2**20)

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    extra = {} if a.delta_share is None else {"delta_share": a.delta_share}
    try:
        url = serve_collection(
            a.dir,
            a.host,
            a.port,
            limits=limits,
            read_only=a.read_only,
            memory_budget_mb=a.memory_budget_mb,
            segments_per_actor=a.segments_per_actor,
            max_retries=a.max_retries,
            io=a.io,
            **extra,
        )
        routes = "POST /search, GET /health, GET /stats" if a.read_only else \
            "POST /search, POST /insert, POST /delete, GET /health, GET /stats"
        print(f"serving {os.path.abspath(a.dir)} at {url} ({routes}); Ctrl-C stops", flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        try:
            stop_serving()
        finally:
            ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
