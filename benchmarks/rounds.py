"""Rounds of a `stratavec bench` run: one row per system, sweep point and
round (the bench times every system at a point before the next point, R
rounds). Standard library only; plot.py, report.py and the table renderers
in tables/ read rows through it.

- `collapse` gives one row per (system, L): the median QPS over rounds with
  its min and max (`qps_min`, `qps_max`, `rounds`), the median of each
  timed field (reads/s, CPU, mean and p50/p99/p99.9 latency), and other
  fields from the round nearest that median. Recall and reads are exact
  and the same in every round; QPS and latency are what move.
- `ratios_by_round` pairs two systems round by round: each round's systems
  ran back to back, so a slow spell of the machine cancels in the ratio.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import OrderedDict

RECALL_EPS = 1e-9  # recall is a float mean: 0.8999999999999952 is 0.90 measured


def num(x) -> float | None:
    """A finite float or None (JSON null, missing, NaN, bool)."""
    if x is None or isinstance(x, bool):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def round_of(r: dict) -> int:
    """Rows of runs before rounds carry none: round 0."""
    return int(r.get("round") or 0)


def spread(values) -> dict | None:
    """{'median', 'min', 'max', 'n'} of the finite values, None if there are none."""
    v = [x for x in (num(x) for x in values) if x is not None]
    if not v:
        return None
    return {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}


def show(s: dict | None, fmt=lambda x: f"{x:,.0f}", none: str = "—") -> str:
    """`1,234 (1,100–1,300)`; just the number when there is one value."""
    if s is None:
        return none
    if s["n"] > 1:
        return f"{fmt(s['median'])} ({fmt(s['min'])}–{fmt(s['max'])})"
    return fmt(s["median"])


def collapse(rows: list[dict]) -> list[dict]:
    """One row per sweep value L, in the order first seen; see the module doc."""
    groups: "OrderedDict[object, list[dict]]" = OrderedDict()
    for r in rows:
        groups.setdefault(r.get("L"), []).append(r)
    out = []
    for group in groups.values():
        q = spread(r.get("qps") for r in group)
        if q is None:
            out.append(dict(group[0]))
            continue
        nearest = min(group, key=lambda r: abs((num(r.get("qps")) or 0.0) - q["median"]))
        row = dict(nearest)
        row.update(qps=q["median"], qps_min=q["min"], qps_max=q["max"], rounds=len(group))
        # Each round's p99.9 is at least its p99, so their medians keep that
        # order; a p99.9 taken from the median-QPS round did not (a table
        # showed 1,564 µs at p99 and 903 at p99.9).
        for f in ("reads_per_s", "cpu_util", "p50_us", "p99_us", "p999_us", "mean_us"):
            s = spread(r.get(f) for r in group)
            if s is not None:
                row[f] = s["median"]
        out.append(row)
    return out


def pareto(rows: list[dict]) -> list[dict]:
    """Points no other point beats on both recall@10 and QPS, by recall."""
    pts = [(float(r["recall_at_10"]), float(r["qps"]), r) for r in rows
           if num(r.get("recall_at_10")) is not None and num(r.get("qps")) is not None]
    front = [p for p in pts
             if not any((q[0] >= p[0] and q[1] > p[1]) or (q[0] > p[0] and q[1] >= p[1]) for q in pts)]
    front.sort(key=lambda p: (p[0], -p[1]))
    return [p[2] for p in front]


def at_recall(rows: list[dict], target: float) -> dict | None:
    """The fastest measured point with recall@10 >= target (no interpolation)."""
    ok = [r for r in pareto(rows) if float(r["recall_at_10"]) >= target - RECALL_EPS]
    return max(ok, key=lambda r: float(r["qps"])) if ok else None


def by_round(rows: list[dict]) -> "OrderedDict[int, list[dict]]":
    out: "OrderedDict[int, list[dict]]" = OrderedDict()
    for r in sorted(rows, key=round_of):
        out.setdefault(round_of(r), []).append(r)
    return out


def at_recall_by_round(rows: list[dict], target: float) -> "OrderedDict[int, dict]":
    """Per round, the point `at_recall` picks from that round's rows alone."""
    out: "OrderedDict[int, dict]" = OrderedDict()
    for rnd, rs in by_round(rows).items():
        p = at_recall(rs, target)
        if p is not None:
            out[rnd] = p
    return out


def ratios_by_round(a_rows: list[dict], b_rows: list[dict], target: float,
                    field: str = "qps") -> list[float]:
    """`field` (QPS unless named) of a over b at `target`, one ratio per
    round both reach it in; each system's point is the one `at_recall`
    picks from that round's rows, so a CPU ratio compares the CPU each
    spent at its fastest point of the round."""
    pa, pb = at_recall_by_round(a_rows, target), at_recall_by_round(b_rows, target)
    out = []
    for r in pa:
        if r not in pb:
            continue
        x, y = num(pa[r].get(field)), num(pb[r].get(field))
        if x is not None and y:
            out.append(x / y)
    return out


def load(path: str) -> list[dict]:
    """Every row of a `stratavec bench` JSON-lines file."""
    import json

    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def searches(rows: list[dict]) -> "OrderedDict[str, list[dict]]":
    """The search rows of each system, in the order systems first appear."""
    out: "OrderedDict[str, list[dict]]" = OrderedDict()
    for r in rows:
        if r.get("kind") == "search":
            out.setdefault(r["system"], []).append(r)
    return out


def spread_cell(ratios: list[float]) -> str:
    """`1.23× (1.10–1.30)`: the median of per-round ratios and their range;
    one ratio alone; `—` for none."""
    if not ratios:
        return "—"
    if len(ratios) == 1:
        return f"{ratios[0]:.2f}×"
    return f"{statistics.median(ratios):.2f}× ({min(ratios):.2f}–{max(ratios):.2f})"


def ratio_cell(a_rows: list[dict], b_rows: list[dict], target: float) -> str:
    """`1.23× (1.10–1.30)`: QPS of a over b at `target`, median and range
    over rounds (`ratios_by_round`); `—` when no round has both."""
    return spread_cell(ratios_by_round(a_rows, b_rows, target))


def same_search(a_rows: list[dict], b_rows: list[dict]) -> bool:
    """Whether two systems searched alike: at every list size of every
    round both ran (three at least), the same recall within 0.001 and
    reads a query within 1% (a pipelined search's path depends on when its
    reads land: 45.808 against 45.811 reads, R@10 0.9413 against 0.9410,
    on the same files). Then they searched the same index the
    same way, and the ratio of their times is the run's noise, not a
    difference between them."""
    key = lambda r: (round_of(r), r.get("L"))  # noqa: E731
    seen = lambda rows: {key(r): (num(r.get("recall_at_10")) or 0.0, num(r.get("reads_per_query")) or 0.0)  # noqa: E731
                         for r in rows}
    a, b = seen(a_rows), seen(b_rows)
    shared = a.keys() & b.keys()
    alike = lambda x, y: abs(x[0] - y[0]) <= 0.001 and abs(x[1] - y[1]) <= 0.01 * max(x[1], y[1])  # noqa: E731
    return len(shared) >= 3 and all(alike(a[k], b[k]) for k in shared)


def same_mark(a_rows: list[dict], b_rows: list[dict]) -> str:
    """` · same search` after a ratio cell when `same_search` holds."""
    return " · same search" if same_search(a_rows, b_rows) else ""


SAME_SEARCH = ("`same search`: auto and the best fixed composition had the same recall (within 0.001) and "
               "reads a query (within 1%) at every list size in every round, as the same index searched the same way has: "
               "the ratio between them is the run's noise, not the plan's.")


def matching(results: str, pattern) -> list[str]:
    """The files in `results` whose names `pattern` (a compiled regex with
    two groups: a dimension, a fraction) matches, by dimension then
    fraction."""
    import os

    key = lambda f: (int(pattern.match(f).group(1)), float(pattern.match(f).group(2)))  # noqa: E731
    return sorted((f for f in os.listdir(results) if pattern.match(f)), key=key)


def publish(text: str, out: str | None, into: str | None, tag: str) -> None:
    """Prints a section's tables, writes them to `out`, and puts them in
    `into` (BENCHMARKS.md) between the lines `<!-- BEGIN {tag} ...` and
    `<!-- END {tag} -->`, which are added at the end of the file when
    missing."""
    begin, end = f"<!-- BEGIN {tag}", f"<!-- END {tag} -->"
    if out:
        with open(out, "w") as f:
            f.write(text)
    print(text, end="")
    if not into:
        return
    with open(into) as f:
        doc = f.read()
    # The whole tag, up to the marker's separator: "laser-tables" must not
    # find "laser-tables-epyc".
    at = re.search(re.escape(begin) + r"(?=[ :])", doc)
    if at is None:
        doc += f"\n{begin} (written by a script in benchmarks/) -->\n{end}\n"
        at = re.search(re.escape(begin) + r"(?=[ :])", doc)
    head, rest = doc[:at.start()], doc[at.end():]
    marker_line, rest = rest.split("\n", 1)
    _, tail = rest.split(end, 1)
    with open(into, "w") as f:
        f.write(head + begin + marker_line + "\n\n" + text + "\n" + end + tail)


# The `latency_mode` of stratavec rows written before a query's latency
# counted its start (tables, entry search, laser's query map): from
# admission only.
ADMISSION_ONLY = "in-batch (admission to completion, in_flight queries per thread)"


def latency_caveat(rows: list[dict]) -> str:
    """A caption's note when stratavec rows timed queries from admission
    only (before the start counted): '' when every row counts the start."""
    old = any(r.get("kind") == "search" and r.get("latency_mode") == ADMISSION_ONLY
              and str(r.get("system", "")).startswith("stratavec") for r in rows)
    if not old:
        return ""
    return (" — these rows predate latency counting a query's start (tables, entry search), "
            "so stratavec's p50s here leave out 20–90 µs a query")
