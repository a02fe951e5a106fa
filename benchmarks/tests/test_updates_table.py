"""benchmarks/tables/updates.py against hand-made rows: the worst recall gap
to the fresh builds, the merged index's QPS against the fresh build's per
round at R@10 0.95, write rates against the build's points a second, the
merge's cost, and which of the issue's targets a profile missed."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tables import updates as T  # noqa: E402


def rows(sys_name: str, insert_per_s: float, gap: float, merged_qps: float) -> list:
    r = lambda kind, **f: {"kind": kind, "system": sys_name, **f}  # noqa: E731
    out = [r("build", n=1000, seconds=10.0, points_per_s=100.0)]
    for step, recall in ((2, 0.96), (4, 0.95)):
        out.append(r("search", step=step, recall=recall, live=950))
        out.append(r("fresh", step=step, recall=recall + gap))
    out.append(r("step", step=3, op="insert", per_s=insert_per_s, per_s_with_merges=insert_per_s / 2, count=50))
    out.append(r("step", step=1, op="delete", per_s=20_000.0, count=50))
    out.append(r("merge", step="3", seconds=2.0))
    for rnd in range(3):
        for which, qps in (("merged", merged_qps), ("fresh", 1000.0)):
            out.append(r("final", which=which, round=rnd, L=20, recall_at_10=0.96, qps=qps))
    out.append(r("merge-cost", seconds=2.5, ratio_to_build=0.25))
    out.append(r("merge-load", ratio=0.6, during_qps=600.0, idle_qps=1000.0))
    return out


def test_targets_are_checked_per_profile(tmp_path):
    run = {"kind": "run", "dataset": "d", "n": 1000, "runbook": "churn:2:0.05", "threads": 2,
           "memory_budget_bytes": 2e6, "delta_share": 0.1, "batch": 100, "search_l": 40, "command": "stratavec ..."}
    # One file a profile, written out of ORDER: the table still lists diskann first.
    for name, qps in (("ivf", 50.0), ("diskann", 90.0)):
        gap, merged = (0.01, 950.0) if name == "diskann" else (0.05, 800.0)
        all_rows = [dict(run, command=f"stratavec ... {name}")] + rows(f"stratavec-{name}", qps, gap, merged)
        (tmp_path / f"updates-384-{name}.jsonl").write_text("\n".join(json.dumps(x) for x in all_rows) + "\n")
    text = T.render(str(tmp_path))
    assert "| diskann | 0.950 | +0.010 | 0.95× (0.95–0.95) | 90 (0.90× of 100); 45 with merges | 20,000 | " \
        "1, 2.0 s | 2.5 s (0.25×) | 0.60× (600 / 1,000) | all |" in text, text
    assert "| ivf | 0.950 | +0.050 | 0.80× (0.80–0.80) | 50 (0.50× of 100); 25 with merges |" in text, text
    assert "missed: recall, QPS, inserts |" in text, text
    assert "| 2 | 950 | 0.960 / 0.970 | 0.960 / 1.010 |" in text, text
    assert text.index("| diskann |") < text.index("| ivf |"), text
    assert "- `stratavec ... diskann`\n- `stratavec ... ivf`" in text, text


def test_a_missing_file_names_the_run_that_makes_it(tmp_path):
    assert "bench.py run benchmarks/scenarios/updates.toml" in T.render(str(tmp_path))


def test_the_search_steps_l_is_each_runs_when_they_differ():
    same = [{"search_l": 40, "nq": 1000}, {"search_l": 40, "nq": 1000}]
    assert T.search_ls(same) == "L = 40"
    mixed = [{"search_l": 40, "nq": 1000, "command": "x --profiles diskann --runbook y"},
             {"search_l": 20, "nq": 200, "command": "x --profiles ivf -L 20"}]
    assert T.search_ls(mixed) == "L = 40 (diskann, 1,000 queries), 20 (ivf, 200 queries)"
