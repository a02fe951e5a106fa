"""The vectors and ground truth are the recipe's, bit for bit."""

import hashlib
import json
from pathlib import Path

import numpy as np

import bab_readers as readers

RECORD = Path(__file__).resolve().parent.parent / "checksums.json"


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def test_files_equal_the_recorded_sha256(data_dir, meta):
    expected = json.loads(RECORD.read_text())["sets"][meta["set"]]
    for name in ("base.fbin", "query.fbin", "gt.ibin", "learn.fbin"):
        assert sha256(data_dir / name) == expected[name], name


def test_shapes_and_unit_length(data_dir):
    base, queries = readers.read_fbin(data_dir / "base.fbin"), readers.read_fbin(data_dir / "query.fbin")
    ids, _ = readers.read_gt(data_dir / "gt.ibin")
    assert base.shape[1] == queries.shape[1]
    assert ids.shape == (queries.shape[0], 100)
    # The model's output is L2-normalised: squared L2 ranks as cosine does.
    np.testing.assert_allclose((base.astype(np.float64) ** 2).sum(1), 1.0, atol=1e-5)


def test_the_learn_queries_are_other_example_sentences(data_dir):
    """learn.fbin: 1,000 queries to plan with, embedded as the queries are,
    none of them one of the queries scored on (nor a base vector)."""
    queries, learn = readers.read_fbin(data_dir / "query.fbin"), readers.read_fbin(data_dir / "learn.fbin")
    assert learn.shape == (1000, queries.shape[1])
    np.testing.assert_allclose((learn.astype(np.float64) ** 2).sum(1), 1.0, atol=1e-5)
    seen = {q.tobytes() for q in queries}
    assert not any(v.tobytes() in seen for v in learn)
    # Drawn as the queries are: as far from their nearest gloss (median
    # squared L2 of unit vectors, 2 - 2 cos) within a quarter.
    base = readers.read_fbin(data_dir / "base.fbin")[:5000].astype(np.float64)
    nearest = lambda q: np.median(2 - 2 * (q[:200].astype(np.float64) @ base.T).max(1))
    assert 0.8 < nearest(learn) / nearest(queries) < 1.25
