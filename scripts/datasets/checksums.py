"""The recorded sha256 of every file a set's recipe writes (checksums.json),
and the check of a fresh run against them.

The vectors are byte-stable for given package versions on one CPU kind
(x86-64 here); another architecture may round a last bit differently. A
mismatch therefore names the file and both sums rather than guessing why.
Only runs with the recipe's defaults (queries, k, seed) have entries.
"""

import hashlib
import json
from pathlib import Path
from typing import Dict, Optional

RECORD = Path(__file__).resolve().parent / "checksums.json"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def set_name(dataset: str, limit: int) -> str:
    """wordnet-minilm, wordnet-minilm-20k, wordnet-minilm-12345: the key in
    checksums.json and the cache folder's name."""
    if not limit:
        return dataset
    return f"{dataset}-{limit // 1000}k" if limit % 1000 == 0 else f"{dataset}-{limit}"


def recorded(name: str) -> Dict[str, str]:
    sets = json.loads(RECORD.read_text())["sets"]
    return sets.get(name, {})


class Mismatch(RuntimeError):
    pass


def verify(out: Path, name: str, files, found: Optional[Dict[str, str]] = None) -> int:
    """Compare the named files in `out` with the record; returns how many had
    an entry. Raises Mismatch listing every file that differs."""
    expected = recorded(name)
    bad, checked = [], 0
    for f in files:
        if f not in expected:
            continue
        checked += 1
        got = (found or {}).get(f) or sha256_file(out / f)
        if got != expected[f]:
            bad.append(f"{out / f}: expected sha256 {expected[f]}, found {got}")
    if bad:
        raise Mismatch(f"{name}: files differ from scripts/datasets/checksums.json:\n  " + "\n  ".join(bad))
    return checked
