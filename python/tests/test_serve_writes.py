"""The Ray Serve front's write requests without Ray (issue #55):
``serve_writes`` parses ``POST /insert`` and ``POST /delete`` bodies by the
Rust server's rules (docs/http-contract.md), answers them, and maps the
engine's refusals to 400 / 409. The served writes themselves are in the
shared suite (http_suite.check_writes), against both servers."""

import json

import numpy as np
import pytest

from stratavec.serve import BadRequest, Limits
from stratavec.serve_writes import answer, parse_delete, parse_insert, refused


def _body(doc):
    return json.dumps(doc).encode()


def test_an_insert_with_and_without_ids():
    r = parse_insert(_body({"vectors": [[1, 2], [3, 4.5]], "ids": [7, 9.0], "batch": 3}), dim=2)
    assert r.kind == "insert" and r.batch == 3 and r.ids.tolist() == [7, 9]
    assert r.vectors.dtype == np.float32 and r.vectors.tolist() == [[1, 2], [3, 4.5]]
    r = parse_insert(_body({"vector": [1, 2], "ids": None, "batch": None}), dim=2)
    assert r.ids is None and r.batch == 0 and r.vectors.shape == (1, 2)
    assert answer(r, {"count": 1, "seq": 4, "repeated": False, "first_id": 100}) == \
        {"inserted": 1, "seq": 4, "repeated": False, "ids": [100]}


def test_a_delete_and_its_answer():
    r = parse_delete(_body({"ids": [1, 2**62], "batch": 2**63 - 1}))
    assert r.ids.tolist() == [1, 2**62] and r.batch == 2**63 - 1
    got = answer(r, {"count": 1, "missing": 1, "seq": 9, "repeated": True, "first_id": -1})
    assert got == {"deleted": 1, "missing": 1, "seq": 9, "repeated": True}


@pytest.mark.parametrize("doc, status, message", [
    ({"vectors": [[1, 2, 3]]}, 400, "vectors: expected vectors of 2 numbers"),
    ({"vectors": [[1, 2]], "ids": [1, 2]}, 400, "ids: expected 1 (one a vector), found 2"),
    ({"vectors": [[1, 2]], "ids": [-1]}, 400, "ids[0]: expected any id but -1"),
    ({"vectors": [[1, 2]], "ids": [True]}, 400, "ids[0]: expected an integer id (64-bit), found True"),
    ({"vectors": [[1, 2]], "ids": [2**63]}, 400, "ids[0]: expected an integer id (64-bit)"),
    ({"vectors": [[1, 2]], "ids": "1"}, 400, "ids: expected a non-empty list of integer ids, found a string"),
    ({"vectors": [[1, 2]], "batch": -3}, 400, "batch: expected an integer in 1..9223372036854775807"),
    ({"vectors": [[1, 2]], "batch": "7"}, 400, 'batch: expected an integer in 1..9223372036854775807 '
                                              '(an id that makes a retried write apply once), found "7"'),
    ({"vectors": [[1, 2]] * 5}, 413, "vectors: expected at most 4 queries a request (max_queries), found 5"),
    ({"vectors": [[1, 2]] * 3, "ids": [1, 2]}, 400, "ids: expected 3 (one a vector), found 2"),
    ({"vector": [[1, 2]]}, 400, "vector: expected one vector"),
    ({"vector": [1, 2], "vectors": [[1, 2]]}, 400, "vectors, vector: expected one of them, found both"),
    ({"ids": [1]}, 400, 'missing field: expected "vectors"'),
    ({"vector": [1, 2], "k": 3}, 400, "field 'k': expected one of vectors, vector, ids, batch"),
    ([1, 2], 400, "body: expected a JSON object such as"),
])
def test_a_bad_insert_names_its_field(doc, status, message):
    with pytest.raises(BadRequest) as e:
        parse_insert(_body(doc), dim=2, limits=Limits(max_queries=4))
    assert e.value.status == status and message in e.value.message, e.value.message


@pytest.mark.parametrize("body, message", [
    (b"", "found an empty body"),
    (b"{", "body: expected JSON"),
    (b'{"ids": [1, NaN]}', "body: expected finite numbers, found NaN"),
    (_body({"batch": 1}), 'missing field: expected "ids"'),
    (_body({"ids": []}), "ids: expected a non-empty list of integer ids, found an empty list"),
    (_body({"ids": [1, 2.5]}), "ids[1]: expected an integer id (64-bit), found 2.5"),
    (_body({"ids": [1], "vector": [1]}), "field 'vector': expected one of ids, batch"),
])
def test_a_bad_delete_names_its_field(body, message):
    with pytest.raises(BadRequest) as e:
        parse_delete(body)
    assert e.value.status == 400 and message in e.value.message, e.value.message


def test_a_delete_takes_more_ids_than_max_queries():
    assert parse_delete(_body({"ids": list(range(5000))})).ids.shape == (5000,)


class RayTaskError(ValueError):
    """What Ray raises for an actor's ValueError: also a ValueError, its
    text the actor's traceback."""


def test_the_engines_refusals_become_400_and_409():
    wrapped = RayTaskError(
        "ray::SegmentHost.add() (pid=4242, ip=10.1.2.3)\n  File \"/x/ray_collection.py\", line 505, in add\n"
        "ValueError: id of row 0: expected an id not in the index (delete it first to replace it),\n"
        "found 7, which is live")
    e = refused("insert", wrapped)
    assert e.status == 400 and e.message == (
        "insert: id of row 0: expected an id not in the index (delete it first to replace it), "
        "found 7, which is live"), e.message
    assert refused("delete", ValueError("ids: bad")).message == "delete: ids: bad"
    held = OSError("/data/c/seg-0000/writer.lock: expected no other writer, found it held by pid 77")
    e = refused("delete", held)
    assert e.status == 409 and "/data" not in e.message and "77" not in e.message, e.message
    assert refused("insert", RuntimeError("disk on fire")) is None
