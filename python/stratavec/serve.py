"""An HTTP search service over a stratavec collection, on Ray Serve.

One Serve deployment (one replica) holds a :class:`RayCollection` — the
segments stay open in their own actors — and answers:

``POST /search``
    JSON ``{"vectors": [[...], ...]}`` (or ``"vector": [...]`` for one
    query) with optional ``"k"`` (default 10), ``"complexity"`` and
    ``"probe"``; or a binary body (``Content-Type:
    application/octet-stream``) of little-endian float32 rows, ``dim`` a
    row, with ``k``, ``complexity``, ``probe`` as query parameters.
    Answers ``{"ids": [[...]], "distances": [[...]]}``, nearest first;
    ``-1`` / ``null`` where a query found fewer than ``k``.
``GET /health``
    200 ``{"status": "ok", ...}`` when every segment actor answers, else 503.
``GET /stats``
    The server's request counters and the collection's search statistics.

A bad request gets a 4xx whose ``{"error": ...}`` names the field, what was
expected and what was found (413 for a body over the size limit); the
server goes on serving. Run it with::

    python -m stratavec.serve DIR --port 8000

(Ray is optional: ``pip install 'stratavec[ray]'``.) The request parsing
below needs neither Ray nor a server, so it is tested on its own.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
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
JSON_FIELDS = ("vectors", "vector", "k", "complexity", "probe")
BINARY_PARAMS = ("k", "complexity", "probe")


class BadRequest(Exception):
    """A request the server refuses: ``status`` (4xx) and a message naming
    the field, what was expected and what was found."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Limits:
    """What one request may ask. ``max_body_bytes`` bounds what the server
    reads (413 beyond); ``max_k`` and ``max_complexity`` bound the work one
    query can demand."""

    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_k: int = 1000
    max_complexity: int = 10_000


@dataclass
class SearchRequest:
    queries: np.ndarray  # (nq, dim) float32
    k: int
    complexity: Optional[int]
    probe: Optional[int]


# ---------------------------------------------------------------- parsing


def _media_type(content_type: Optional[str]) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def _int_field(name: str, value: Any, lo: int, hi: int, why: str) -> int:
    """``value`` as an integer in lo..hi, else 400 naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise BadRequest(400, f"{name}: expected an integer in {lo}..{hi} ({why}), found {value!r}")
    if not lo <= value <= hi:
        raise BadRequest(400, f"{name}: expected an integer in {lo}..{hi} ({why}), found {value}")
    return value


def _param_int(name: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise BadRequest(400, f"query parameter {name}: expected an integer, found {text!r}") from None


def _check_options(
    k: Any, complexity: Any, probe: Any, *, n: int, segments: int, limits: Limits
) -> Tuple[int, Optional[int], Optional[int]]:
    kmax = min(n, limits.max_k)
    k = _int_field("k", k, 1, kmax, f"at most the collection's {n} vectors and the server's max_k {limits.max_k}")
    if complexity is not None:
        complexity = _int_field(
            "complexity", complexity, 1, limits.max_complexity, "a segment's search list size"
        )
    if probe is not None:
        probe = _int_field("probe", probe, 1, segments, f"segments a query visits, of {segments}")
    return k, complexity, probe


def _vectors(value: Any, field: str, dim: int) -> np.ndarray:
    """A JSON list of rows as a (nq, dim) float32 array, or 400 naming the
    first bad row."""
    if not isinstance(value, list) or not value:
        raise BadRequest(400, f"{field}: expected a non-empty list of vectors, found {type(value).__name__}"
                         + (" (empty)" if isinstance(value, list) else ""))
    try:
        a = np.array(value)
    except (ValueError, TypeError):
        a = None  # ragged: found below
    if a is None or a.ndim != 2 or a.dtype.kind not in "iuf":
        for i, row in enumerate(value):
            if not isinstance(row, list):
                raise BadRequest(400, f"{field}[{i}]: expected a list of {dim} numbers, found {type(row).__name__}")
            if len(row) != dim:
                raise BadRequest(
                    400, f"{field}[{i}]: expected {dim} numbers (the collection's dimension), found {len(row)}"
                )
            for j, x in enumerate(row):
                if isinstance(x, bool) or not isinstance(x, (int, float)):
                    raise BadRequest(400, f"{field}[{i}][{j}]: expected a number, found {x!r}")
        raise BadRequest(400, f"{field}: expected a list of lists of numbers")  # pragma: no cover
    if a.shape[1] != dim:
        raise BadRequest(
            400, f"{field}: expected vectors of {dim} numbers (the collection's dimension), found {a.shape[1]}"
        )
    a = a.astype(np.float32)
    bad = ~np.isfinite(a).all(axis=1)
    if bad.any():
        raise BadRequest(400, f"{field}[{int(np.argmax(bad))}]: expected finite numbers, found NaN or infinity")
    return a


def parse_search(
    content_type: Optional[str],
    body: bytes,
    params: Mapping[str, str],
    *,
    dim: int,
    n: int,
    segments: int,
    limits: Limits = Limits(),
) -> SearchRequest:
    """A ``POST /search`` request as queries and options, or BadRequest.

    JSON bodies carry everything; a binary body (``application/
    octet-stream``) carries float32 rows and the options come from the
    query string. Unknown fields are refused rather than ignored, so a
    misspelt ``complexity`` is not silently the default."""
    if _media_type(content_type) == "application/octet-stream":
        unknown = sorted(set(params) - set(BINARY_PARAMS))
        if unknown:
            raise BadRequest(
                400, f"query parameter {unknown[0]}: expected one of {', '.join(BINARY_PARAMS)}, found {unknown[0]!r}"
            )
        row = 4 * dim
        if len(body) == 0 or len(body) % row:
            raise BadRequest(
                400,
                f"body: expected a multiple of {row} bytes (rows of {dim} little-endian float32), "
                f"found {len(body)} bytes",
            )
        q = np.frombuffer(body, dtype="<f4").reshape(-1, dim).astype(np.float32)
        bad = ~np.isfinite(q).all(axis=1)
        if bad.any():
            raise BadRequest(400, f"body row {int(np.argmax(bad))}: expected finite numbers, found NaN or infinity")
        k = _param_int("k", params["k"]) if "k" in params else 10
        complexity = _param_int("complexity", params["complexity"]) if "complexity" in params else None
        probe = _param_int("probe", params["probe"]) if "probe" in params else None
        k, complexity, probe = _check_options(k, complexity, probe, n=n, segments=segments, limits=limits)
        return SearchRequest(q, k, complexity, probe)

    if params:
        name = sorted(params)[0]
        raise BadRequest(
            400,
            f"query parameter {name}: expected none with a JSON body (give {name} in the body), "
            "or Content-Type: application/octet-stream",
        )
    if not body:
        raise BadRequest(400, "body: expected a JSON object such as {\"vectors\": [[...]], \"k\": 10}, found an empty body")
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadRequest(
            400,
            f"body: expected JSON (or Content-Type: application/octet-stream for float32 rows), "
            f"found invalid JSON: {e}",
        ) from None
    if not isinstance(doc, dict):
        raise BadRequest(400, f"body: expected a JSON object, found a JSON {type(doc).__name__}")
    unknown = sorted(set(doc) - set(JSON_FIELDS))
    if unknown:
        raise BadRequest(400, f"field {unknown[0]!r}: expected one of {', '.join(JSON_FIELDS)}")
    if "vectors" in doc and "vector" in doc:
        raise BadRequest(400, "vectors, vector: expected one of them, found both")
    if "vectors" in doc:
        q = _vectors(doc["vectors"], "vectors", dim)
    elif "vector" in doc:
        v = doc["vector"]
        if not isinstance(v, list):
            raise BadRequest(400, f"vector: expected a list of {dim} numbers, found {type(v).__name__}")
        if v and isinstance(v[0], list):
            raise BadRequest(400, "vector: expected one vector (a list of numbers); use \"vectors\" for several")
        q = _vectors([v], "vector", dim)
    else:
        raise BadRequest(400, "missing field: expected \"vectors\" (a list of vectors) or \"vector\" (one)")
    k, complexity, probe = _check_options(
        doc.get("k", 10), doc.get("complexity"), doc.get("probe"), n=n, segments=segments, limits=limits
    )
    return SearchRequest(q, k, complexity, probe)


def results_json(D: np.ndarray, I: np.ndarray) -> Dict[str, Any]:
    """``{"ids", "distances"}`` with JSON's null for the infinite distance
    of an empty slot (JSON has no infinity)."""
    dist = D.astype(object)
    dist[~np.isfinite(D)] = None
    return {"ids": I.tolist(), "distances": dist.tolist()}


# ---------------------------------------------------------------- the app


class CollectionApp:
    """The Serve deployment: one :class:`RayCollection` and the routes.

    Searches block on Ray, so they run on a thread pool, keeping the
    replica's event loop free for other requests (health, stats, parsing).
    """

    def __init__(
        self,
        dir: str,
        collection_kwargs: Optional[Dict[str, Any]] = None,
        limits: Optional[Limits] = None,
        search_timeout_s: float = 60.0,
    ):
        from .ray_collection import RayCollection

        self.collection = RayCollection(dir, **(collection_kwargs or {}))
        self.limits = limits or Limits()
        self.search_timeout_s = search_timeout_s
        self._lock = threading.Lock()
        self._counts: Dict[str, Any] = {
            "requests": 0,
            "searches": 0,
            "queries": 0,
            "status": {},
            "bytes_in": 0,
            "search_s": 0.0,
        }

    def _count(self, status: int, **add: Any) -> None:
        with self._lock:
            c = self._counts
            c["requests"] += 1
            c["status"][str(status)] = c["status"].get(str(status), 0) + 1
            for key, v in add.items():
                c[key] += v

    async def _read_body(self, request: Any) -> bytes:
        """The body, refusing (413) one over ``max_body_bytes`` by its
        Content-Length before reading, or as soon as more arrives."""
        limit = self.limits.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                raise BadRequest(400, f"Content-Length: expected an integer, found {declared!r}") from None
            if size > limit:
                raise BadRequest(413, f"body: expected at most {limit} bytes, found Content-Length {size}")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise BadRequest(413, f"body: expected at most {limit} bytes, found more")
        return bytes(body)

    async def __call__(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        path = request.url.path.rstrip("/") or "/"
        routes = {"/search": "POST", "/health": "GET", "/stats": "GET"}
        try:
            if path not in routes:
                raise BadRequest(404, f"path {path}: expected POST /search, GET /health or GET /stats")
            if request.method != routes[path]:
                raise BadRequest(405, f"{path}: expected method {routes[path]}, found {request.method}")
            if path == "/search":
                return await self._search(request)
            if path == "/health":
                return await self._health()
            self._count(200)
            return JSONResponse(self.stats())
        except BadRequest as e:
            self._count(e.status)
            headers = {"Allow": routes[path]} if e.status == 405 else None
            return JSONResponse({"error": e.message}, status_code=e.status, headers=headers)
        except Exception as e:  # the server answers and goes on serving
            self._count(500)
            return JSONResponse({"error": f"internal error: {type(e).__name__}: {e}"}, status_code=500)

    async def _search(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        from .ray_collection import SegmentUnavailableError

        body = await self._read_body(request)
        col = self.collection
        req = parse_search(
            request.headers.get("content-type"),
            body,
            dict(request.query_params),
            dim=col.dim,
            n=col.n,
            segments=col.segments,
            limits=self.limits,
        )
        t0 = time.perf_counter()
        call = functools.partial(
            col.search, req.queries, req.k, req.complexity, req.probe, timeout_s=self.search_timeout_s
        )
        try:
            D, I = await asyncio.get_running_loop().run_in_executor(None, call)
        except (ValueError, TypeError) as e:
            raise BadRequest(400, str(e)) from None
        except SegmentUnavailableError as e:
            raise BadRequest(503, str(e)) from None
        except TimeoutError as e:
            raise BadRequest(504, str(e)) from None
        self._count(
            200, searches=1, queries=int(req.queries.shape[0]), bytes_in=len(body),
            search_s=time.perf_counter() - t0,
        )
        return JSONResponse(results_json(D, I))

    async def _health(self) -> Any:
        from starlette.responses import JSONResponse

        col = self.collection
        problems = await asyncio.get_running_loop().run_in_executor(None, col.ping, 5.0)
        down = {i: p for i, p in enumerate(problems) if p is not None}
        doc = {
            "status": "ok" if not down else "unavailable",
            "n": col.n,
            "dim": col.dim,
            "metric": col.metric,
            "partition": col.partition,
            "segments": col.segments,
            "actors_down": {str(i): p for i, p in down.items()},
        }
        status = 200 if not down else 503
        self._count(status)
        return JSONResponse(doc, status_code=status)

    def stats(self) -> Dict[str, Any]:
        with self._lock:
            server = json.loads(json.dumps(self._counts))
        return {"server": server, "collection": self.collection.stats()}


def build_app(
    dir: str,
    *,
    limits: Optional[Limits] = None,
    search_timeout_s: float = 60.0,
    max_ongoing_requests: int = 16,
    **collection_kwargs: Any,
) -> Any:
    """The Serve application (one replica: each would hold its own set of
    segment actors) for ``serve.run``."""
    from ray import serve

    deployment = serve.deployment(
        name=APP_NAME,
        num_replicas=1,
        ray_actor_options={"num_cpus": 0},
        max_ongoing_requests=max_ongoing_requests,
    )(CollectionApp)
    return deployment.bind(os.path.abspath(dir), collection_kwargs, limits or Limits(), search_timeout_s)


def serve_collection(
    dir: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    limits: Optional[Limits] = None,
    search_timeout_s: float = 60.0,
    ready_timeout_s: float = 120.0,
    **collection_kwargs: Any,
) -> str:
    """Serve the collection at ``dir`` over HTTP on ``host:port`` and
    return its URL once ``GET /health`` answers 200.

    Uses the Ray cluster this process is connected to (a local one is
    started if none). ``collection_kwargs`` go to :class:`RayCollection`
    (``memory_budget_mb``, ``segments_per_actor``, ``max_retries``, ``io``).
    Stop with :func:`stop_serving`."""
    from .ray_collection import require_ray

    ray = require_ray()
    from ray import serve

    if not ray.is_initialized():
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        ray.init(include_dashboard=False)
    serve.start(http_options={"host": host, "port": port})
    serve.run(
        build_app(dir, limits=limits, search_timeout_s=search_timeout_s, **collection_kwargs),
        name=APP_NAME,
        route_prefix="/",
    )
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::', '') else host}:{port}"
    deadline = time.monotonic() + ready_timeout_s
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
        time.sleep(0.2)
    raise TimeoutError(f"{url}/health: expected 200 within {ready_timeout_s} s, last: {last}")


def stop_serving() -> None:
    """Shut Ray Serve down (the app, its proxy and the segment actors)."""
    from ray import serve

    serve.shutdown()


# ---------------------------------------------------------------- CLI


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m stratavec.serve",
        description="Serve a stratavec collection over HTTP (POST /search, GET /health, GET /stats) on Ray Serve.",
    )
    p.add_argument("dir", help="collection directory (collection.json)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--memory-budget-mb", type=float, default=None, help="total RAM budget, shared by the segments")
    p.add_argument("--segments-per-actor", type=int, default=1)
    p.add_argument("--max-retries", type=int, default=3)
    p.add_argument("--io", default="auto", help="I/O backend (stratavec.Index.open's io)")
    p.add_argument("--max-body-mb", type=float, default=DEFAULT_MAX_BODY_BYTES / 2**20,
                   help="largest request body, MiB (413 beyond)")
    p.add_argument("--max-k", type=int, default=Limits.max_k)
    p.add_argument("--address", default=None,
                   help="Ray cluster to join (default: start a local one that ends with this process)")
    p.add_argument("--num-cpus", type=int, default=None, help="local cluster: CPUs (default: all)")
    p.add_argument("--object-store-mb", type=int, default=200, help="local cluster: object store size")
    a = p.parse_args(argv)

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    from .ray_collection import require_ray

    try:
        ray = require_ray()
    except ImportError as e:
        p.error(str(e))
    if not os.path.isfile(os.path.join(a.dir, "collection.json")):
        p.error(f"{a.dir}: expected a stratavec collection (collection.json), found none")
    if a.address:
        ray.init(address=a.address)
    else:
        ray.init(num_cpus=a.num_cpus, object_store_memory=a.object_store_mb * 2**20, include_dashboard=False)

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        url = serve_collection(
            a.dir,
            a.host,
            a.port,
            limits=Limits(max_body_bytes=int(a.max_body_mb * 2**20), max_k=a.max_k),
            memory_budget_mb=a.memory_budget_mb,
            segments_per_actor=a.segments_per_actor,
            max_retries=a.max_retries,
            io=a.io,
        )
        print(f"serving {os.path.abspath(a.dir)} at {url} (POST /search, GET /health, GET /stats); "
              "Ctrl-C stops", flush=True)
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
