"""The "Indexes that change" section of BENCHMARKS.md, from the rows of
`stratavec bench-updates` (issue #55; benchmarks/scenarios/updates.toml
runs and renders it: `python3 benchmarks/bench.py report
benchmarks/scenarios/updates.toml`).

Per profile: the runbook's search steps (recall@10 of the changing index
beside a fresh build of the same live set at the same L), the write rates
against the build's points a second, the merges, the merged index's QPS at
R@10 0.95 against a fresh build's (interleaved rounds), and a merge of 10%
inserts and 10% deletes against the build, alone and under searches. The
issue's targets are checked in the last columns. Standard library only.
"""

from __future__ import annotations

import glob
import json
import os
import statistics
from collections import OrderedDict

import rounds

# One file a profile (`updates-384-diskann.jsonl`, ...): each profile's run
# takes ~25 minutes, so the scenario runs them one by one (`--runs`).
ROWS = "updates-384-*.jsonl"
RUN = "python3 benchmarks/bench.py run benchmarks/scenarios/updates.toml"
ORDER = ["diskann", "starling", "gorgeous", "laser", "pipeann", "octopus", "tiered", "ivf"]
TARGET = 0.95


def load(path: str) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def profile_of(path: str) -> str:
    return os.path.basename(path)[len(ROWS.split("*")[0]) : -len(ROWS.split("*")[1])]


def load_all(results: str) -> list[list[dict]]:
    """Every profile's rows, in ORDER (unknown names last, by name)."""
    paths = glob.glob(os.path.join(results, ROWS))
    rank = {n: i for i, n in enumerate(ORDER)}
    paths.sort(key=lambda p: (rank.get(profile_of(p), len(ORDER)), profile_of(p)))
    return [load(p) for p in paths]


def by_system(rows: list[dict]) -> "OrderedDict[str, list[dict]]":
    out: "OrderedDict[str, list[dict]]" = OrderedDict()
    for r in rows:
        if r.get("system"):
            out.setdefault(r["system"], []).append(r)
    return out


def of(rows: list[dict], kind: str, **match) -> list[dict]:
    return [r for r in rows if r.get("kind") == kind and all(r.get(k) == v for k, v in match.items())]


def median(values) -> float | None:
    v = [x for x in (rounds.num(x) for x in values) if x is not None]
    return statistics.median(v) if v else None


def fmt(v, spec: str, none: str = "—") -> str:
    return none if v is None else format(v, spec)


def recall_pairs(rows: list[dict]) -> list[tuple[int, float, float | None]]:
    """(step, recall of the changing index, recall of the fresh build)."""
    fresh = {r["step"]: r["recall"] for r in of(rows, "fresh")}
    return [(r["step"], r["recall"], fresh.get(r["step"])) for r in of(rows, "search")]


def summary_row(name: str, rows: list[dict]) -> list[str]:
    build = (of(rows, "build") or [{}])[0]
    pps = rounds.num(build.get("points_per_s"))
    ins = median(r["per_s"] for r in of(rows, "step", op="insert"))
    amortized = median(r.get("per_s_with_merges") for r in of(rows, "step", op="insert"))
    dels = median(r["per_s"] for r in of(rows, "step", op="delete"))
    merges = of(rows, "merge")
    pairs = recall_pairs(rows)
    gaps = [f - s for _, s, f in pairs if f is not None]
    worst = max(gaps) if gaps else None
    merged, fresh = of(rows, "final", which="merged"), of(rows, "final", which="fresh")
    qps_ratio = rounds.ratios_by_round(merged, fresh, TARGET)
    cost = (of(rows, "merge-cost") or [{}])[0]
    load_ = (of(rows, "merge-load") or [{}])[0]
    checks = [
        ("recall", worst is not None and worst <= 0.02),
        ("QPS", bool(qps_ratio) and statistics.median(qps_ratio) >= 0.9),
        ("inserts", ins is not None and pps is not None and ins >= 0.8 * pps),
        ("deletes", dels is not None and dels >= 10_000),
        ("merge", rounds.num(cost.get("ratio_to_build")) is not None and cost["ratio_to_build"] <= 0.3),
        ("under merge", rounds.num(load_.get("ratio")) is not None and load_["ratio"] >= 0.5),
    ]
    missed = [n for n, ok in checks if not ok]
    return [
        name.removeprefix("stratavec-"),
        fmt(min((s for _, s, _ in pairs), default=None), ".3f"),
        fmt(worst, "+.3f"),
        rounds.ratio_cell(merged, fresh, TARGET),
        f"{fmt(ins, ',.0f')} ({fmt(ins / pps if ins and pps else None, '.2f')}× of {fmt(pps, ',.0f')}); "
        f"{fmt(amortized, ',.0f')} with merges",
        fmt(dels, ",.0f"),
        f"{len(merges)}, {fmt(median(r['seconds'] for r in merges), '.1f')} s",
        f"{fmt(cost.get('seconds'), '.1f')} s ({fmt(cost.get('ratio_to_build'), '.2f')}×)",
        f"{fmt(load_.get('ratio'), '.2f')}× ({fmt(load_.get('during_qps'), ',.0f')} / {fmt(load_.get('idle_qps'), ',.0f')})",
        "all" if not missed else "missed: " + ", ".join(missed),
    ]


def steps_table(systems: "OrderedDict[str, list[dict]]") -> list[str]:
    """Recall@10 at every search step: the changing index / the fresh build."""
    names = list(systems)
    steps = sorted({s for rows in systems.values() for s, _, _ in recall_pairs(rows)})
    out = ["| step | live | " + " | ".join(n.removeprefix("stratavec-") for n in names) + " |",
           "|---:|---:|" + "---:|" * len(names)]
    for step in steps:
        cells, live = [], None
        for n in names:
            hit = [(s, f) for st, s, f in recall_pairs(systems[n]) if st == step]
            live = live or next((r.get("live") for r in of(systems[n], "search") if r["step"] == step), None)
            cells.append("—" if not hit else f"{hit[0][0]:.3f} / {fmt(hit[0][1], '.3f')}")
        out.append(f"| {step} | {fmt(live, ',')} | " + " | ".join(cells) + " |")
    return out


def search_ls(runs: list[dict]) -> str:
    """The search steps' L: one for all runs, or each run's with its
    profile and query count where they differ (ivf probes clusters)."""
    ls = [(r.get("search_l", "?"), r.get("nq")) for r in runs]
    if len(set(ls)) <= 1:
        return f"L = {ls[0][0] if ls else '?'}"
    def who(r):
        cmd = str(r.get("command", ""))
        return cmd.split("--profiles ")[1].split()[0] if "--profiles " in cmd else "?"
    return "L = " + ", ".join(f"{l} ({who(r)}, {nq:,} queries)" if isinstance(nq, int) else f"{l} ({who(r)})"
                              for r, (l, nq) in zip(runs, ls))


def render(results: str) -> str:
    files = load_all(results)
    if not files:
        return f"_No rows: `{ROWS}` is missing in {results}; `{RUN}` makes it._\n"
    runs = [next((r for r in rows if r.get("kind") == "run"), {}) for rows in files]
    run = runs[0]
    systems: "OrderedDict[str, list[dict]]" = OrderedDict()
    for rows in files:
        systems.update(by_system(rows))
    head = ["profile", "worst recall@10", "worst gap to fresh", f"QPS at R@10 {TARGET} vs fresh",
            "inserts/s (× build's points/s)", "deletes/s", "merges (median time)",
            "merge of 10%+10% (× build)", "QPS under a merge (× idle)", "targets"]
    lines = [
        f"Runbook `{run.get('runbook', '?')}` on {run.get('dataset', '?')} (n = {run.get('n', '?'):,}), "
        f"{run.get('threads', '?')} threads, memory budget {fmt(run.get('memory_budget_bytes', 0) / 1e6, '.1f')} MB, "
        f"the delta's share {run.get('delta_share', '?')}, inserts in batches of {run.get('batch', '?')}, "
        f"every search step at {search_ls(runs)}. Each profile ran by itself "
        f"(`{RUN} --runs minilm-PROFILE`); the ratios compare figures of the same run.",
        "",
        "Commands:",
        "",
    ]
    lines += ["- `" + r.get("command", "?").replace(os.path.expanduser("~"), "~") + "`" for r in runs]
    lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(summary_row(n, rs)) + " |" for n, rs in systems.items()]
    lines += ["", "Recall@10 at each search step (the changing index / a fresh build of the same live set):", ""]
    lines += steps_table(systems)
    return "\n".join(lines) + "\n"


def plot(results: str, out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for rows in load_all(results) for r in rows]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for i, (name, rs) in enumerate(by_system(rows).items()):
        pairs = recall_pairs(rs)
        color = f"C{i}"
        label = name.removeprefix("stratavec-")
        ax.plot([p[0] for p in pairs], [p[1] for p in pairs], "o-", color=color, label=f"{label} (changing)")
        fresh = [(p[0], p[2]) for p in pairs if p[2] is not None]
        if fresh:
            ax.plot([p[0] for p in fresh], [p[1] for p in fresh], "x--", color=color, label=f"{label} (fresh build)")
    ax.set_xlabel("runbook step")
    ax.set_ylabel("recall@10 over the live set")
    ax.set_title("Deleting and re-inserting 5% a step: recall against a fresh build")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
