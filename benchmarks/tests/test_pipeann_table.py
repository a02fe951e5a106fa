"""benchmarks/tables/pipeann.py against hand-made rows: p50 ratios pair the
same round and take each round's lowest p50 reaching the recall."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tables import pipeann as T  # noqa: E402


def row(system, rnd, L, recall, p50, reads=30.0):
    return {"kind": "search", "system": system, "round": rnd, "L": L, "recall_at_10": recall,
            "qps": 1e6 / p50, "p50_us": p50, "p99_us": 2 * p50, "p999_us": 3 * p50,
            "reads_per_query": reads}


def latency_targets(tmp_path, systems):
    """The targets table over a latency run of two rounds, each system at
    one point: `systems` maps a system to (L, p50, reads)."""
    rows = [row(s, r, L, 0.95, p50, *([reads] if reads else []))
            for s, (L, p50, reads) in systems.items() for r in range(2)]
    (tmp_path / "pipeann-latency-384.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    return "\n".join(T.targets(str(tmp_path)))


def test_p50_ratios_pair_rounds_and_take_the_lowest_p50_reaching_the_recall():
    d = [row("stratavec-diskann", 0, 40, 0.95, 1000.0), row("stratavec-diskann", 0, 60, 0.97, 1200.0),
         row("stratavec-diskann", 1, 40, 0.95, 1100.0)]
    p = [row("stratavec-pipeann", 0, 30, 0.94, 100.0), row("stratavec-pipeann", 0, 40, 0.96, 700.0),
         row("stratavec-pipeann", 1, 40, 0.96, 550.0), row("stratavec-pipeann", 2, 40, 0.96, 1.0)]
    assert T.p50_ratios(p, d, 0.95) == [0.7, 0.5]
    assert T.p50_ratios(p, d, 0.99) == []
    assert T.spread_cell([0.7, 0.5]) == "0.60× (0.50–0.70)"


def test_targets_read_the_latency_run(tmp_path):
    out = latency_targets(tmp_path, {"stratavec-diskann": (40, 1000.0, 35.0),
                                     "stratavec-pipeann": (40, 700.0, 38.0),
                                     "hnswlib": (40, 200.0, None)})
    assert "pipeann p50 ≤ 0.75× diskann's (1 thread x 1 query) | 0.70×" in out
    assert "| 0.70× (0.70–0.70) (median, range over rounds) | met |" in out
    assert "≤ 3× hnswlib's p50 | 3.50×" in out and "not met" in out
    assert "within 15%" in out and "1.09×" in out


def test_polling_rows_compare_like_with_like(tmp_path):
    out = latency_targets(tmp_path, {"stratavec-diskann": (40, 1000.0, 35.0),
                                     "stratavec-pipeann": (40, 640.0, 38.0),
                                     "stratavec-diskann-poll": (40, 800.0, 35.0),
                                     "stratavec-pipeann-sleep": (40, 800.0, 38.0)})
    assert "pipeann p50 ≤ 0.75× diskann's (1 thread x 1 query) | 0.64×" in out
    assert "both polling for completions (pipeann vs diskann-poll) | 0.80× (0.80–0.80) " \
           "(median, range over rounds) | (not a target) |" in out
    assert "both sleeping until a completion (pipeann-sleep vs diskann) | 0.80×" in out


def test_sqpoll_rows_sit_beside_the_targets_and_compete_for_the_best_composition(tmp_path):
    out = latency_targets(tmp_path, {"stratavec-diskann": (40, 1000.0, 35.0),
                                     "stratavec-pipeann": (40, 800.0, 35.0),
                                     "stratavec-gorgeous-pipe": (30, 450.0, 16.0),
                                     "stratavec-diskann-sqpoll": (40, 900.0, 35.0),
                                     "stratavec-gorgeous-pipe-sqpoll": (30, 380.0, 16.0),
                                     "hnswlib": (40, 400.0, None)})
    # The pipeann line stays the default search's.
    assert "pipeann p50 ≤ 0.75× diskann's (1 thread x 1 query) | 0.80×" in out
    assert "gorgeous-pipe with SQPOLL (gorgeous-pipe-sqpoll vs diskann) | 0.38× (0.38–0.38) " \
           "(median, range over rounds) | (not a target) |" in out
    assert "both with SQPOLL (gorgeous-pipe-sqpoll vs diskann-sqpoll) | 0.42×" in out
    assert "pipeann with SQPOLL" not in out  # not run
    assert "best pipelined composition (gorgeous-pipe-sqpoll) p50 ≤ 0.4× diskann's | 0.38× " \
           "(0.38–0.38) (median, range over rounds) | met |" in out


def test_model_table_reads_the_ablate_fields(tmp_path):
    def abl(system, technique, model, **extra):
        r = row(system, 0, 40, 0.96, 500.0, 20.0)
        r.update(technique=technique, model_reads_per_query=model, hops_per_query=30.0,
                 cache_hits_per_query=6.0, wasted_per_query=0.0, overlap_ratio=0.3,
                 records_per_page=7.82, reads_per_s=40000.0, bytes_per_query=81920.0, **extra)
        return r
    rows = [abl("stratavec-diskann", "Baseline (PQ, node cache)", 24.0),
            abl("stratavec-starling", "C1: PS + PSe", 7.9)]
    path = tmp_path / "pipeann-ablation-384.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    out = "\n".join(T.model_table(str(path)))
    assert "| C1: PS + PSe | starling | 40 | 20.0 | 7.9 | 30.0 | 6.0 | 0.0 | 0.3000 | 7.82 | 40.0 | 164 |" in out
    # Rows of a run without --ablate: no table.
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps(row("stratavec-diskann", 0, 40, 0.96, 500.0)))
    assert T.model_table(str(plain)) == []


def test_pca96_latency_lines_are_figures_beside_the_targets(tmp_path):
    rows = [row("stratavec-diskann", r, 16, 0.95, 1000.0, 20.0) for r in range(2)]
    rows += [row("stratavec-pipeann", r, 16, 0.95, 500.0, 21.0) for r in range(2)]
    rows += [row("stratavec-pipeann-blocks", r, 16, 0.95, 300.0, 12.0) for r in range(2)]
    rows += [row("hnswlib", r, 16, 0.95, 100.0) for r in range(2)]
    (tmp_path / "pipeann-latency-pca96.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    out = "\n".join(T.targets(str(tmp_path)))
    # Without the 384 run its lines are absent; the pca96 ones carry no verdict.
    assert "(1 thread x 1 query) |" not in out
    assert "pipeann p50 ≤ 0.75× diskann's (1 thread x 1 query, pca96) | 0.50× (0.50–0.50) " \
           "(median, range over rounds) | (not a target) |" in out
    assert "best pipelined composition (pipeann-blocks, pca96) p50 ≤ 0.4× diskann's | 0.30×" in out
    assert "(pipeann-blocks, pca96) ≤ 3× hnswlib's p50 | 3.00×" in out
    assert " met |" not in out


def test_a_768_run_without_pipeann_gives_only_the_lines_it_can(tmp_path):
    rows = [row("stratavec-diskann", r, 28, 0.95, 1000.0, 30.0) for r in range(2)]
    rows += [row("stratavec-gorgeous-pipe-sqpoll", r, 28, 0.95, 350.0, 12.0) for r in range(2)]
    rows += [row("hnswlib", r, 28, 0.95, 500.0) for r in range(2)]
    (tmp_path / "pipeann-latency-768.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    out = "\n".join(T.targets(str(tmp_path)))
    assert "pipeann p50" not in out and "not measured" not in out
    assert "gorgeous-pipe with SQPOLL (gorgeous-pipe-sqpoll vs diskann, 768) | 0.35×" in out
    assert "best pipelined composition (gorgeous-pipe-sqpoll, 768) p50 ≤ 0.4× diskann's | 0.35× " \
           "(0.35–0.35) (median, range over rounds) | (not a target) |" in out
    assert " met |" not in out


def test_tier_lines_pair_each_tier_s_own_diskann(tmp_path):
    rows = [row(f"stratavec-{s}@{tier}", r, 40, 0.95, p50)
            for s, tier, p50 in (("diskann", "ssd", 1000.0), ("pipeann", "ssd", 800.0),
                                 ("diskann", "simulated:80000,100", 1200.0),
                                 ("pipeann", "simulated:80000,100", 840.0))
            for r in range(2)]
    (tmp_path / "pipeann-latency-384-tiers.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    out = "\n".join(T.targets(str(tmp_path)))
    assert "pipeann p50 against diskann's on the ssd tier (1 thread x 1 query) | 0.80× " \
           "(0.80–0.80) (median, range over rounds) | (not a target) |" in out
    assert "on the simulated:80000,100 tier (1 thread x 1 query) | 0.70×" in out
