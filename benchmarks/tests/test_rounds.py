"""benchmarks/rounds.py against hand-made rows."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import rounds as R  # noqa: E402


def row(system, rnd, L, recall, qps, **kw):
    return {"kind": "search", "system": system, "round": rnd, "L": L, "recall_at_10": recall, "qps": qps, **kw}


def test_collapse_keeps_the_median_round_and_its_range():
    rows = [row("a", 0, 10, 0.9, 300.0, p99_us=5.0), row("a", 1, 10, 0.9, 100.0, p99_us=9.0),
            row("a", 2, 10, 0.9, 200.0, p99_us=7.0), row("a", 0, 20, 0.95, 50.0)]
    c = R.collapse(rows)
    assert [r["L"] for r in c] == [10, 20]
    assert (c[0]["qps"], c[0]["qps_min"], c[0]["qps_max"], c[0]["rounds"]) == (200.0, 100.0, 300.0, 3)
    assert c[0]["round"] == 2 and c[0]["p99_us"] == 7.0
    assert c[1]["rounds"] == 1


def test_collapse_takes_each_latency_percentile_as_its_median_over_rounds():
    # The median-QPS round (QPS 200) has the lowest tail; the medians keep
    # p99.9 >= p99 as every round does.
    rows = [row("a", 0, 10, 0.9, 300.0, p99_us=1958.0, p999_us=5833.0),
            row("a", 1, 10, 0.9, 100.0, p99_us=3508.0, p999_us=4561.0),
            row("a", 2, 10, 0.9, 200.0, p99_us=807.0, p999_us=903.0)]
    (c,) = R.collapse(rows)
    assert (c["p99_us"], c["p999_us"]) == (1958.0, 4561.0)
    assert c["p999_us"] >= c["p99_us"]


def test_ratios_pair_the_same_round():
    a = [row("a", 0, 10, 0.96, 300.0), row("a", 1, 10, 0.96, 200.0), row("a", 0, 5, 0.90, 900.0)]
    b = [row("b", 0, 10, 0.97, 100.0), row("b", 1, 10, 0.97, 50.0), row("b", 2, 10, 0.97, 1.0)]
    assert R.ratios_by_round(a, b, 0.95) == [3.0, 4.0]
    assert R.at_recall_by_round(a, 0.90)[0]["qps"] == 900.0
    assert R.ratios_by_round(a, b, 0.99) == []


def test_ratios_of_another_field_pair_the_same_round_and_skip_missing_values():
    a = [row("a", 0, 10, 0.96, 300.0, cpu_us_per_query=50.0), row("a", 1, 10, 0.96, 200.0),
         row("a", 2, 10, 0.96, 200.0, cpu_us_per_query=30.0)]
    b = [row("b", 0, 10, 0.97, 100.0, cpu_us_per_query=200.0), row("b", 1, 10, 0.97, 50.0, cpu_us_per_query=9.0),
         row("b", 2, 10, 0.97, 1.0, cpu_us_per_query=0.0)]
    assert R.ratios_by_round(a, b, 0.95, "cpu_us_per_query") == [0.25]


def test_spread_and_show():
    s = R.spread([3.0, None, 1.0, 2.0, float("nan")])
    assert s == {"median": 2.0, "min": 1.0, "max": 3.0, "n": 3}
    assert R.show(s) == "2 (1–3)"
    assert R.show(R.spread([1234.0])) == "1,234"
    assert R.show(None) == "—"
    assert R.spread([]) is None


def test_rows_of_old_runs_are_round_zero():
    assert R.round_of({"L": 1}) == 0
    assert list(R.by_round([{"round": 1}, {}])) == [0, 1]


def test_latency_caveat_names_rows_timed_from_admission_only():
    old = row("stratavec-diskann", 0, 10, 0.9, 1.0, latency_mode=R.ADMISSION_ONLY)
    new = row("stratavec-diskann", 0, 10, 0.9, 1.0, latency_mode="in-batch (its start, then ...)")
    peer = row("hnswlib", 0, 10, 0.9, 1.0, latency_mode=R.ADMISSION_ONLY)
    assert "start" in R.latency_caveat([new, old])
    assert R.latency_caveat([new, peer]) == ""
    assert R.latency_caveat([]) == ""


def test_the_engine_writes_the_latency_mode_the_caveat_knows():
    # The caveat keys on the old string; the engine's current one differs.
    src = (Path(__file__).resolve().parents[2] / "crates/cli/src/bench/run.rs").read_text()
    assert "its start, then admission to completion" in src
    assert R.ADMISSION_ONLY not in src
