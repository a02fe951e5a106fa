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
    for name in ("base.fbin", "query.fbin", "gt.ibin"):
        assert sha256(data_dir / name) == expected[name], name


def test_shapes_and_unit_length(data_dir):
    base, queries = readers.read_fbin(data_dir / "base.fbin"), readers.read_fbin(data_dir / "query.fbin")
    ids, _ = readers.read_gt(data_dir / "gt.ibin")
    assert base.shape[1] == queries.shape[1]
    assert ids.shape == (queries.shape[0], 100)
    # The model's output is L2-normalised: squared L2 ranks as cosine does.
    np.testing.assert_allclose((base.astype(np.float64) ** 2).sum(1), 1.0, atol=1e-5)
