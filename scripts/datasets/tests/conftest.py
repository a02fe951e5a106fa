"""Fixtures of the data-set tests: the 20k subset that `scripts/wordnet.sh
20k` made (test.sh exports its folder as STRATAVEC_WORDNET_DIR). The tests
read the files the way a consumer would, with their own small readers, and
skip (saying why) when the folder is absent, so they never make data."""

import json
import os
from pathlib import Path

import pytest

NEEDED = ("base.fbin", "query.fbin", "gt.ibin", "meta.json", "base.labels.spmat", "labels.tsv",
          "query.filters.spmat", "gt.filtered.ibin", "learn.fbin")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    d = os.environ.get("STRATAVEC_WORDNET_DIR")
    if not d:
        pytest.skip("STRATAVEC_WORDNET_DIR is not set: make the set with scripts/wordnet.sh 20k "
                    "(test.sh exports it)")
    d = Path(d)
    missing = [f for f in NEEDED if not (d / f).is_file()]
    if missing:
        pytest.skip(f"{d} lacks {', '.join(missing)}: remake it with scripts/wordnet.sh 20k")
    return d


@pytest.fixture(scope="session")
def meta(data_dir) -> dict:
    return json.loads((data_dir / "meta.json").read_text())


@pytest.fixture(scope="session")
def wordnet_dict(meta) -> Path:
    """The WordNet database the set was made from (its path is in meta.json)."""
    d = Path(meta.get("wordnet", {}).get("dict_dir", ""))
    if not (d / "data.verb").is_file():
        pytest.skip(f"the WordNet files the set was made from are not here ({d}): "
                    "the data venv of scripts/wordnet.sh has them")
    return d
