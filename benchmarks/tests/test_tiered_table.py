"""benchmarks/tables/tiered.py against hand-made rows: systems split into
variant and tier, amplification over the raw float32 vectors, QPS ratios
to diskann on the SSD paired by round, and issue #23's verdicts."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tables import tiered as T  # noqa: E402


def row(system, rnd, L, recall, qps, index_bytes):
    return {"kind": "search", "system": system, "round": rnd, "L": L, "recall_at_10": recall,
            "qps": qps, "p50_us": 100.0, "reads_per_query": 40.0, "cpu_us_per_query": 90.0,
            "index_bytes": index_bytes}


def test_split_and_targets(tmp_path):
    assert T.split("stratavec-tiered@simulated:1000,16") == ("tiered", "simulated:1000,16")
    assert T.split("stratavec-diskann") == ("diskann", "—")
    run = {"kind": "run", "dataset": "d", "n": 100, "d": 10, "threads": 2, "rounds": 2,
           "memory_budget_bytes": 800, "command": "bench"}
    rows = [run]
    for r in range(2):
        rows += [row("stratavec-diskann@ssd", r, 40, 0.96, 1000.0 + r, 5000),
                 row("stratavec-tiered@ssd", r, 40, 0.96, 900.0, 4000),
                 row("stratavec-tiered@simulated:1000,16", r, 40, 0.96, 3000.0 + 1000 * r, 4000),
                 row("stratavec-tiered-f16@ssd", r, 40, 0.96, 900.0, 2500)]
    (tmp_path / "tiered-graph-384.jsonl").write_text("\n".join(json.dumps(x) for x in rows))
    table = "\n".join(T.graph_table(str(tmp_path / "tiered-graph-384.jsonl")))
    # 5000 bytes over 100 x 10 x 4 raw bytes.
    assert "| diskann | ssd | 1.25× |" in table
    assert "| tiered | simulated:1000,16 | 1.00× | 3,500 (L=40)" in table
    out = "\n".join(T.targets(str(tmp_path)))
    # Per round: 3000 / 1000 and 4000 / 1001.
    assert "≥ 2× diskann's SSD QPS at R@10 0.95 | 3.50× (3.00–4.00) | met |" in out
    assert "0.800× (0.0 vs 0.0 MB) | met |" in out
    assert "f16 records against the f32 coupled layout | 0.500×" in out
