"""benchmarks/tables/hnswlib_gap.py against hand-made rows: QPS at R@10
0.95 per system, its ratio to hnswlib round by round, reads a query, and
p50 one query at a time against hnswlib's."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tables import hnswlib_gap as T  # noqa: E402


def search(system, rnd, L, recall, qps, reads, p50=None):
    r = {"kind": "search", "dataset": "wordnet-minilm", "n": 116707, "d": 384, "nq": 1000,
         "system": system, "round": rnd, "L": L, "recall_at_10": recall, "qps": qps,
         "reads_per_query": reads, "memory_bytes": 35.9e6}
    if p50 is not None:
        r["p50_us"] = p50
    return r


def write(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")


def test_ratios_to_hnswlib_within_each_round(tmp_path):
    run = {"kind": "run", "dataset": "wordnet-minilm", "threads": 2, "rounds": 2,
           "memory_budget_bytes": 35.9e6, "command": "stratavec bench"}
    rows = [run]
    for rnd, peer in ((0, 14000), (1, 10000)):
        rows += [search("stratavec-gorgeous-ex4", rnd, 25, 0.955, 7000, 11.7),
                 search("stratavec-gorgeous-ex4", rnd, 20, 0.91, 9000, 4.2),
                 search("hnswlib", rnd, 32, 0.96, peer, 0)]
    write(tmp_path / "hnswlib-384.jsonl", rows)
    lat = [dict(run, rounds=1), search("stratavec-gorgeous-ex4", 0, 25, 0.955, 2000, 11.7, p50=500),
           search("hnswlib", 0, 32, 0.96, 6000, 0, p50=125)]
    write(tmp_path / "hnswlib-384-latency.jsonl", lat)
    text = T.render(str(tmp_path))
    # Round 0: 7,000 / 14,000; round 1: 7,000 / 10,000.
    assert "0.60×" in text and "0.50×" in text and "0.70×" in text, text
    assert "| 11.7 |" in text, text
    assert "0.50 ms (4.00×)" in text, text
    assert "not measured yet" in text  # no 768-d rows


def test_no_rows_says_so(tmp_path):
    assert T.render(str(tmp_path)).count("not measured yet") == 2
