"""benchmarks/tables/filtered_graph.py against hand-made rows: the in-graph
way and auto on a plain graph beside a label-aware one, band by band, the
label-aware graph's in-search over the plain one's per round, the best
recalls where either never reaches R@10 0.95, and each graph's build."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tables import filtered_graph as T  # noqa: E402


def point(system, band, way, rnd, recall, qps):
    return {"kind": "point", "system": system, "band": band, "way": way, "round": rnd, "L": 40,
            "recall_at_10": recall, "qps": qps, "reads_per_query": 20.0, "selectivity": [0.3, 0.01][band],
            "mix": {"pre": 0, "in_search": 1.0, "post": 0}}


def rows():
    run = {"kind": "run", "dataset": "wordnet-minilm", "n": 116707, "threads": 2, "memory_budget_bytes": 35.9e6,
           "rounds": 2, "command": "stratavec bench-filtered --profiles diskann,diskann-label-aware"}
    builds = [{"kind": "build", "system": "stratavec-diskann", "total_s": 75.2, "graph_mean_degree": 52.5},
              {"kind": "build", "system": "stratavec-diskann-label-aware", "total_s": 90.0, "graph_mean_degree": 60.0}]
    out = [run] + builds
    for rnd in range(2):
        out += [point("stratavec-diskann", 0, "in-search", rnd, 0.96, 1000),
                point("stratavec-diskann-label-aware", 0, "in-search", rnd, 0.97, 1500 + 100 * rnd),
                point("stratavec-diskann", 0, "auto", rnd, 0.96, 1200),
                point("stratavec-diskann-label-aware", 0, "auto", rnd, 0.96, 1300),
                point("stratavec-diskann", 1, "in-search", rnd, 0.41, 100),
                point("stratavec-diskann-label-aware", 1, "in-search", rnd, 0.62, 90)]
    return out


def test_label_aware_beside_plain(tmp_path):
    (tmp_path / T.ROWS).write_text("\n".join(json.dumps(r) for r in rows()) + "\n")
    text = T.render(str(tmp_path))
    assert "| diskann | 0 | 30.00% | 1,000, 20.0 reads | 1,550 (1,500–1,600), 20.0 reads | 1.55× |" in text, text
    assert "| 75 s, degree 52.5; 90 s, degree 60.0 |" in text, text
    assert "| diskann | 1 | 1.00% | max R@10 0.410 | max R@10 0.620 | max R@10 0.620 vs 0.410 | — | — |" in text, text
    assert "| diskann-label-aware |" not in text, "a label-aware system is a column of its plain one"


def test_a_missing_file_names_the_run_that_makes_it(tmp_path):
    assert "--runs label-aware" in T.render(str(tmp_path))
