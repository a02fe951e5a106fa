"""benchmarks/tables/planner.py against hand-made rows: each profile's QPS
at R@10 0.95 beside the plan's prediction for it, the chosen and the best
fixed profile marked, and auto against the best fixed round by round."""

import sys
from pathlib import Path
import json

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tables import planner as T  # noqa: E402


def search(system, rnd, L, recall, qps, reads=10.0, build=None):
    return {"kind": "search", "system": system, "round": rnd, "L": L, "recall_at_10": recall, "qps": qps,
            "reads_per_query": reads, "build": build or {}}


def plan():
    cand = lambda name, qps: {"profile": name, "predicted": {"qps": qps, "bound": "device"}}  # noqa: E731
    return {"auto_plan": {"sample": 5000, "queries": 200, "sample_budget": 1.3e6, "seconds": 18.0,
                          "device": {"reads_per_s": 90000, "source": "probed x"}, "chosen": "starling",
                          "candidates": [cand("diskann", 3000), cand("starling", 4000),
                                         {"profile": "laser", "skipped": "its trial failed: x"}]}}


def rows():
    run = {"kind": "run", "dataset": "wordnet-minilm", "n": 116707, "d": 384, "threads": 2, "rounds": 2,
           "memory_budget_bytes": 9.0e6, "memory_fraction": 0.05, "command": "stratavec bench"}
    out = [run]
    for rnd in range(2):
        out += [search("stratavec-auto", rnd, 30, 0.96, 1980 + 40 * rnd, build=plan()),
                search("stratavec-diskann", rnd, 30, 0.96, 1500),
                search("stratavec-starling", rnd, 30, 0.96, 2000),
                search("stratavec-laser", rnd, 30, 0.90, 900)]
    return out


def test_predictions_beside_the_measured_and_auto_against_the_best(tmp_path):
    (tmp_path / "planner-384-0.05.jsonl").write_text("\n".join(json.dumps(r) for r in rows()) + "\n")
    text = T.render(str(tmp_path))
    assert "Chosen: **starling**" in text, text
    assert "| starling (chosen) · best fixed | — | 2,000 (2,000–2,000) · L=30 | 10.0 | 4,000 | 2.00 |" in text, text
    assert "| diskann | — | 1,500 (1,500–1,500) · L=30 | 10.0 | 3,000 | 2.00 |" in text, text
    assert "| laser | — | never | — | its trial failed: x | — |" in text, text
    assert "against the best fixed profile (starling): 1.00× (0.99–1.01)" in text, text


def test_the_summary_gives_the_choice_the_ratio_and_the_plans_cost(tmp_path):
    rs = rows()
    for r in rs:
        if r.get("system") == "stratavec-auto":
            r["build"]["total_s"] = 120.0
            r["build"]["stages"] = [["auto plan", 20.0], ["graph", 90.0]]
            r["build_params"] = {"exrabitq_bits": 4, "pq_bytes": 128}
        if r.get("system") == "stratavec-starling":
            r["build_s"] = 96.0
    (tmp_path / "planner-384-0.2.jsonl").write_text("\n".join(json.dumps(r) for r in rs) + "\n")
    text = T.render(str(tmp_path))
    line = ("| wordnet-minilm | 5% (9.0 MB) | starling (4-bit extended RaBitQ) | 2,000 · 10.0 reads "
            "| starling 2,000 | **1.00× (0.99–1.01)** | 18 s | 120 s | 1.20× | 1.25× |")
    assert line in text, text
    assert "auto (starling, 4-bit extended RaBitQ)" in text, text


def test_no_rows_names_the_run(tmp_path):
    assert T.RUN in T.render(str(tmp_path))


def test_a_planned_layout_is_named_and_not_set_against_the_default_build(tmp_path):
    rs = rows()
    for r in rs:
        if r.get("system") == "stratavec-auto":
            p = r["build"]["auto_plan"]
            p["layout"] = {"store": "f16"}
            p["candidates"][1]["trial"] = {"layout": {"store": "f16"}, "page_size": 4096}
            r["build_params"] = {"pq_bytes": 96}
    (tmp_path / "planner-384-0.05.jsonl").write_text("\n".join(json.dumps(r) for r in rs) + "\n")
    text = T.render(str(tmp_path))
    # The prediction was for f16 records: no ratio against the default build.
    assert "| 4,000 (f16 records) | — |" in text, text
    assert "auto (starling, 96 PQ bytes, f16 records)" in text, text
    assert T.layout_words({"page_size": 8192, "code_dim": 256}) == "8192-byte pages, 256-d codes"
    assert T.layout_words(None) == ""
    assert T.layout_words({"blocks": True, "store": "f16"}) == "shuffled blocks, f16 records"


def test_a_peer_is_set_beside_auto_not_among_the_fixed_profiles(tmp_path):
    rs = rows()
    rs += [search("hnswlib", rnd, 30, 0.96, 2500) for rnd in range(2)]
    (tmp_path / "planner-384-0.2.jsonl").write_text("\n".join(json.dumps(r) for r in rs) + "\n")
    text = T.render(str(tmp_path))
    assert "| hnswlib" not in text, text
    assert "against the best fixed profile (starling)" in text, text
    assert "auto against hnswlib in the same run (everything in RAM): 2,000 against 2,500 QPS, 0.80× (0.79–0.81)" in text, text
