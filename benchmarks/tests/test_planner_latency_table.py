"""benchmarks/tables/planner_latency.py against hand-made rows: each
composition's lowest p50 at R@10 0.95, the best fixed one marked, auto's
p50 against it and hnswlib's round by round, and the plan's prediction
beside the composition it tried."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tables import planner_latency as T  # noqa: E402


def search(system, rnd, L, recall, p50, bp=None, pipelined=False, build=None):
    return {"kind": "search", "system": system, "round": rnd, "L": L, "recall_at_10": recall, "qps": 1e6 / p50,
            "p50_us": p50, "p99_us": 2 * p50, "reads_per_query": 9.0, "two_stage": True,
            "pipelined": pipelined, "build_params": bp or {}, "build": build or {}}


def rows():
    ex4 = {"profile": "gorgeous", "exrabitq_bits": 4, "pq_bytes": 128}
    trial = lambda bits, piped: {"exrabitq_bits": bits, "pipelined": piped}  # noqa: E731
    plan = {"auto_plan": {"sample": 5000, "queries": 200, "seconds": 20.0, "chosen": "gorgeous",
                          "candidates": [{"profile": "gorgeous", "trial": trial(4, True),
                                          "predicted": {"p50_us": 180.0}},
                                         {"profile": "diskann", "trial": {"pq_bytes": 96},
                                          "predicted": {"p50_us": 400.0}}]},
            "chosen": {"pipelined_refinement": "true: measured"}}
    run = {"kind": "run", "dataset": "wordnet-minilm", "n": 116707, "d": 384, "threads": 1, "rounds": 2,
           "memory_budget_bytes": 35.9e6, "command": "stratavec bench --latency"}
    out = [run]
    for rnd in range(2):
        out += [search("stratavec-auto-latency", rnd, 26, 0.953, 220 + 10 * rnd, {**ex4, "plan_queries": "l"},
                       True, plan),
                search("stratavec-gorgeous-ex4-pipe", rnd, 26, 0.954, 230, ex4, True),
                search("stratavec-gorgeous-ex4", rnd, 26, 0.953, 300, ex4),
                search("stratavec-diskann", rnd, 40, 0.955, 900, {"profile": "diskann", "pq_bytes": 48}),
                search("stratavec-diskann", rnd, 30, 0.94, 700, {"profile": "diskann", "pq_bytes": 48}),
                search("hnswlib", rnd, 32, 0.95, 130)]
    return out


def test_auto_against_the_best_fixed_composition_and_hnswlib(tmp_path):
    (tmp_path / "planner-latency-384-0.2.jsonl").write_text("\n".join(json.dumps(r) for r in rows()) + "\n")
    text = T.render(str(tmp_path))
    # auto: 220 and 230 µs in its two rounds (median 225), against 230 and 230.
    line = ("| wordnet-minilm | 20% (35.9 MB) | gorgeous, 4-bit ex-RaBitQ, pipelined | 225 (L=26, 9.0 reads) "
            "| gorgeous-ex4-pipe 230 | **0.98× (0.96–1.00)** | 130 | 1.73× (1.69–1.77) |")
    assert line in text, text
    assert "| gorgeous-ex4-pipe · best fixed | gorgeous, 4-bit ex-RaBitQ, pipelined | 230 (L=26) | 460 | 9.0 " \
           "| 180 (ex4) | 0.98× (0.96–1.00) |" in text, text
    # The plan's best gorgeous trial was pipelined: the plain one has no prediction.
    assert "| gorgeous-ex4 | gorgeous, 4-bit ex-RaBitQ | 300 (L=26) | 600 | 9.0 | — | 0.75× (0.73–0.77) |" \
           in text, text
    # diskann reaches the target only at L 40.
    assert "| diskann | diskann, 48 PQ bytes | 900 (L=40) | 1,800 | 9.0 | 400 (pq96) |" in text, text
    assert "| hnswlib (peer) | in RAM | 130 (L=32) |" in text, text
    assert "200 of the set's learn queries" in text and "its refinement: true: measured" in text, text


def test_no_rows_says_how_to_make_them(tmp_path):
    assert "No rows" in T.render(str(tmp_path))


def test_a_search_identical_to_the_best_fixed_is_marked_as_the_same_search(tmp_path):
    ex4 = {"profile": "gorgeous", "exrabitq_bits": 4}
    out = [rows()[0]]
    for rnd in range(2):
        for L, recall in ((24, 0.94), (26, 0.953), (28, 0.96)):
            # The same recall and reads at every L: only the times differ.
            out += [search("stratavec-auto-latency", rnd, L, recall, 200 + 40 * rnd, ex4),
                    search("stratavec-gorgeous-ex4", rnd, L, recall, 200, ex4)]
    (tmp_path / "planner-latency-384-0.2.jsonl").write_text("\n".join(json.dumps(r) for r in out) + "\n")
    text = T.render(str(tmp_path))
    assert "**1.10× (1.00–1.20)** · same search |" in text, text
    assert "the ratio between them is the run's noise" in text, text
    # Reads 0.5% and recall 0.0003 apart (a pipelined search's) are still
    # the same search.
    out[-1] = {**out[-1], "reads_per_query": 9.045, "recall_at_10": 0.9603}
    (tmp_path / "planner-latency-384-0.2.jsonl").write_text("\n".join(json.dumps(r) for r in out) + "\n")
    assert "same search" in T.render(str(tmp_path))
    # One list size with another recall: a different search, not marked.
    out[-1] = search("stratavec-gorgeous-ex4", 1, 28, 0.962, 200, ex4)
    (tmp_path / "planner-latency-384-0.2.jsonl").write_text("\n".join(json.dumps(r) for r in out) + "\n")
    assert "same search" not in T.render(str(tmp_path))
