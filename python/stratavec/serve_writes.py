"""``POST /insert`` and ``POST /delete`` on the Ray Serve front (issue #55):
a request body as a batch of writes, or the 4xx that names the field, what
was expected and what was found — the same rules and messages as the Rust
server's ``serve/write_request.rs`` (docs/http-contract.md). Pure
functions of the body, tested without Ray.

- insert: ``{"vectors": [[...]]}`` or ``{"vector": [...]}``, with ``"ids"``
  (one integer a vector; without them the collection gives the next
  unused) and ``"batch"`` (an integer id: a retry of an applied batch is
  answered again and applied once), both optional.
- delete: ``{"ids": [...]}`` and an optional ``"batch"``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, Optional

import numpy as np

from .serve import BadRequest, Limits, _check_count, _clip, _json_type, _vectors, load_json, rows_field

INSERT_FIELDS = ("vectors", "vector", "ids", "batch")
DELETE_FIELDS = ("ids", "batch")
I64_MAX = 2**63 - 1


@dataclass
class WriteRequest:
    kind: str  # "insert" or "delete"
    ids: Optional[np.ndarray]  # int64; None: an insert takes the next unused ids
    batch: int  # 0: no retry protection
    vectors: Optional[np.ndarray] = None  # (n, dim) float32, inserts only


def _object(body: bytes, fields: tuple, example: str) -> Dict[str, Any]:
    if not body:
        raise BadRequest(400, f"body: expected a JSON object such as {example}, found an empty body")
    doc = load_json(body)
    if not isinstance(doc, dict):
        raise BadRequest(400, f"body: expected a JSON object such as {example}, found {_json_type(doc)}")
    unknown = sorted(set(doc) - set(fields))
    if unknown:
        raise BadRequest(400, f"field '{_clip(unknown[0])}': expected one of {', '.join(fields)}")
    return {k: v for k, v in doc.items() if v is not None}


def _integer(v: Any) -> Optional[int]:
    """A JSON integer that fits i64 (10.0 counts: JSON writers may print 10 so)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v if -I64_MAX - 1 <= v <= I64_MAX else None
    if isinstance(v, float) and v.is_integer() and abs(v) < 9.0e15:
        return int(v)
    return None


def _shown(v: Any) -> str:
    return _clip(json.dumps(v)) if isinstance(v, (str, list, dict)) else str(v)


def _id_list(v: Any, max_ids: Optional[int]) -> np.ndarray:
    """A non-empty list of at most ``max_ids`` integer ids, none of them -1."""
    if not isinstance(v, list) or not v:
        found = "an empty list" if isinstance(v, list) else _json_type(v)
        raise BadRequest(400, f"ids: expected a non-empty list of integer ids, found {found}")
    if max_ids is not None and len(v) > max_ids:
        raise BadRequest(413, f"ids: expected at most {max_ids} a request (max_queries), found {len(v)}")
    out = np.empty(len(v), dtype=np.int64)
    for i, x in enumerate(v):
        id_ = _integer(x)
        if id_ is None:
            raise BadRequest(400, f"ids[{i}]: expected an integer id (64-bit), found {_shown(x)}")
        if id_ == -1:
            raise BadRequest(400, f"ids[{i}]: expected any id but -1 (which marks an empty result), found -1")
        out[i] = id_
    return out


def _batch(doc: Dict[str, Any]) -> int:
    """``"batch"``: absent or null is 0; else an integer in 1..2^63-1."""
    if "batch" not in doc:
        return 0
    b = _integer(doc["batch"])
    if b is None or b < 1:
        raise BadRequest(
            400, f"batch: expected an integer in 1..{I64_MAX} (an id that makes a retried write "
            f"apply once), found {_shown(doc['batch'])}"
        )
    return b


def parse_insert(body: bytes, *, dim: int, limits: Limits = Limits()) -> WriteRequest:
    doc = _object(body, INSERT_FIELDS, '{"vectors": [[...]], "ids": [...]}')
    field, rows = rows_field(doc, dim, "the vectors to insert")
    if isinstance(rows, list):
        _check_count(len(rows), field, limits)
    vectors = _vectors(rows, field, dim, limits, check_bools=b"true" in body or b"false" in body)
    ids = None
    if "ids" in doc:
        ids = _id_list(doc["ids"], limits.max_queries)
        if ids.shape[0] != vectors.shape[0]:
            raise BadRequest(400, f"ids: expected {vectors.shape[0]} (one a vector), found {ids.shape[0]}")
    return WriteRequest("insert", ids, _batch(doc), vectors)


def parse_delete(body: bytes) -> WriteRequest:
    doc = _object(body, DELETE_FIELDS, '{"ids": [...]}')
    if "ids" not in doc:
        raise BadRequest(400, "missing field: expected \"ids\" (a list of the ids to delete)")
    # Ids cost 8 bytes each once parsed: the body bound keeps a request's
    # list to ~2M of them, and a delete is cheap per id.
    return WriteRequest("delete", _id_list(doc["ids"], None), _batch(doc))


def answer(req: WriteRequest, applied: Dict[str, Any]) -> Dict[str, Any]:
    """The reply: ``inserted`` (with the ids given when the request gave
    none) or ``deleted`` and ``missing``; ``seq`` and ``repeated``."""
    if req.kind == "delete":
        return {"deleted": applied["count"], "missing": applied["missing"], "seq": applied["seq"],
                "repeated": applied["repeated"]}
    doc = {"inserted": applied["count"], "seq": applied["seq"], "repeated": applied["repeated"]}
    if req.ids is None:
        first = int(applied["first_id"])
        doc["ids"] = list(range(first, first + int(applied["count"])))
    return doc


# What the engine says when another process holds the writer lock, or has
# published a generation this server did not open (engine messages).
CONFLICT_MARKS = ("held by", "rebuilt or merged")


def refused(kind: str, e: BaseException) -> Optional[BadRequest]:
    """The engine's refusal as the client's status, or None for a failure
    (500, details in the log only): a bad batch (ValueError: its message
    names the row and value) is 400, another writer 409."""
    text = str(e)
    if any(m in text for m in CONFLICT_MARKS):
        return BadRequest(
            409, f"{kind}: another process is writing this collection or has rebuilt it since the "
            "server opened it; try again, or restart the server on the new collection"
        )
    if isinstance(e, ValueError):
        # Ray wraps an actor's ValueError in a RayTaskError that is also a
        # ValueError, its text the actor's traceback: the engine's message
        # follows its last "ValueError: ".
        mark = "ValueError: "
        message = text[text.rindex(mark) + len(mark):] if mark in text else text
        return BadRequest(400, f"{kind}: {_clip(' '.join(message.split()), 400)}")
    return None
