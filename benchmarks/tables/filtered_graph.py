"""The "label-aware graph" part of BENCHMARKS.md's filtered search: the
in-graph filtered search (and the per-query choice) on a plain Vamana graph
beside the same profile on a label-aware one (`--label-aware`,
FilteredVamana's pruning; issue #56), from the rows of one
`stratavec bench-filtered` run over both (benchmarks/scenarios/filtered.toml
runs and renders it).

Per profile and selectivity band: QPS at recall@10 >= 0.95 (median over
rounds) or the best recall reached, for in-search and auto on each graph,
and the label-aware graph's in-search over the plain one's (median of the
per-round ratios where both reach the target). The build rows give each
graph's build time and mean degree. Standard library only.
"""

from __future__ import annotations

import os
import statistics
from collections import OrderedDict

import rounds
from .filtered import TARGET, heading, points, way_cell

ROWS = "filtered-graph-384.jsonl"
RUN = "python3 benchmarks/bench.py run benchmarks/scenarios/filtered.toml --runs label-aware"
AWARE = "-label-aware"


def cell(rows: list[dict]) -> str:
    """A way's cell, or a dash where the run did not time it."""
    return way_cell(rows) if rows else "—"


def build_cell(row: dict | None) -> str:
    if not row:
        return "—"
    return f"{float(row.get('total_s', 0)):.0f} s, degree {float(row.get('graph_mean_degree', 0)):.1f}"


def versus(aware: list[dict], plain: list[dict]) -> str:
    """Label-aware in-search over plain: the QPS ratio at the target, or
    the best recalls when either never reaches it."""
    rs = rounds.ratios_by_round(aware, plain, TARGET)
    if rs:
        return f"{statistics.median(rs):.2f}×"
    best = lambda rows: max((rounds.num(r.get("recall_at_10")) or 0.0) for r in rows) if rows else 0.0
    return f"max R@10 {best(aware):.3f} vs {best(plain):.3f}"


def render(results: str) -> str:
    path = os.path.join(results, ROWS)
    if not os.path.exists(path):
        return f"_No rows: `{ROWS}` is missing in {results}; `{RUN}` makes it._\n"
    rows = rounds.load(path)
    run = next((r for r in rows if r.get("kind") == "run"), {})
    builds = {r.get("system"): r for r in rows if r.get("kind") == "build"}
    groups = points(rows)
    lines = heading(run, "the same filtered queries and bands", "; both graphs built with R and L as above")
    plain_systems = OrderedDict()
    for (system, band, way) in groups:
        if not system.endswith(AWARE):
            plain_systems.setdefault(system, set()).add(band)
    head = ["profile", "band", "selectivity", f"in-search, plain: QPS at R@10 {TARGET}",
            "in-search, label-aware", "label-aware / plain (in-search)", "auto, plain", "auto, label-aware",
            "build (plain; label-aware)"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for system, bands in plain_systems.items():
        aware = system + AWARE
        for band in sorted(bands):
            get = lambda s, w: groups.get((s, band, w), [])
            sel = statistics.mean(float(r.get("selectivity", 0)) for r in get(system, "in-search") or [{}])
            cells = [system.removeprefix("stratavec-"), str(band), f"{100 * sel:.2f}%",
                     cell(get(system, "in-search")), cell(get(aware, "in-search")),
                     versus(get(aware, "in-search"), get(system, "in-search")),
                     cell(get(system, "auto")), cell(get(aware, "auto")),
                     f"{build_cell(builds.get(system))}; {build_cell(builds.get(aware))}"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
