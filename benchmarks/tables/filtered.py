"""The "Filtered search" section of BENCHMARKS.md, from the rows of
`stratavec bench-filtered` (issue #56;
benchmarks/scenarios/filtered.toml runs and renders it).

Per profile and selectivity band: the band's mean selectivity, then for
each way — `auto` (chosen per query) and each forced on every query (pre,
in-search, post) — the QPS at recall@10 >= 0.95 (median over rounds, with
the range) and the reads a query there, or the best recall the way
reached; the mix of ways `auto` chose; and the issue's targets per band:
auto >= 1.0x the best forced way (where auto sent every query that way,
so did its very work, a shortfall within the spread of that way's own
rounds is the device's drift, and is said so), and in the two selective
bands auto >= 5x the post-filter (or the post-filter never reaches 0.95). Peers
(`--peers`: rows of way "peer", e.g. hnswlib with its filter callback)
get a column each, their QPS at the target in the same band. Standard
library only.
"""

from __future__ import annotations

import os
import statistics
from collections import OrderedDict

import rounds

ROWS = "filtered-384.jsonl"
RUN = "python3 benchmarks/bench.py run benchmarks/scenarios/filtered.toml"
TARGET = 0.95
WAYS = ["auto", "pre", "in-search", "post"]
SELECTIVE_FROM = 2  # bands 2 and 3: 0.5-2% and 0.05-0.2% of the base


def points(rows: list[dict]) -> "OrderedDict[tuple, list[dict]]":
    """The point rows of each (system, band, way), in the order first seen."""
    out: "OrderedDict[tuple, list[dict]]" = OrderedDict()
    for r in rows:
        if r.get("kind") == "point":
            out.setdefault((r["system"], r["band"], r["way"]), []).append(r)
    return out


def best_recall(rows: list[dict]) -> float | None:
    v = [rounds.num(r.get("recall_at_10")) for r in rows]
    v = [x for x in v if x is not None]
    return max(v) if v else None


def way_cell(rows: list[dict]) -> str:
    """QPS at the target (median and range over rounds) and reads a query
    there, or the best recall the way reached."""
    per_round = rounds.at_recall_by_round(rows, TARGET)
    if not per_round:
        r = best_recall(rows)
        return "never" if r is None else f"max R@10 {r:.3f}"
    qps = [float(p["qps"]) for p in per_round.values()]
    spread = "" if min(qps) == max(qps) else f" ({min(qps):,.0f}–{max(qps):,.0f})"
    reads = [float(p["reads_per_query"]) for p in per_round.values() if p.get("reads_per_query") is not None]
    if not reads:  # a peer whose index is all in RAM
        return f"{statistics.median(qps):,.0f}{spread}"
    return f"{statistics.median(qps):,.0f}{spread}, {statistics.median(reads):.1f} reads"


def mix_cell(rows: list[dict]) -> str:
    per_round = rounds.at_recall_by_round(rows, TARGET)
    pick = next(iter(per_round.values()), None) or (max(rows, key=lambda r: r.get("recall_at_10") or 0) if rows else None)
    if pick is None:
        return "—"
    mix = pick.get("mix", {})
    parts = [f"{name} {100 * mix.get(key, 0):.0f}%" for name, key in
             (("pre", "pre"), ("in-search", "in_search"), ("post", "post")) if mix.get(key, 0) > 0]
    return ", ".join(parts) or "—"


def ratio(a: list[dict], b: list[dict]) -> list[float]:
    return rounds.ratios_by_round(a, b, TARGET)


def targets(band: int, ways: dict) -> str:
    """Which of the band's targets hold: auto against the best forced way
    (per round), and in the selective bands auto against post."""
    auto = ways.get("auto", [])
    missed: list[str] = []
    held: list[str] = []
    forced = [w for w in ("pre", "in-search", "post") if rounds.at_recall_by_round(ways.get(w, []), TARGET)]
    best = max(forced, default=None, key=lambda w: max(float(p["qps"]) for p in rounds.at_recall_by_round(ways[w], TARGET).values()))
    if not rounds.at_recall_by_round(auto, TARGET):
        missed.append("auto below 0.95")
    elif best is not None:
        rs = ratio(auto, ways[best])
        if not rs:
            missed.append(f"auto vs {best}")
        elif statistics.median(rs) < 1.0:
            same = same_work(auto, ways[best], best, statistics.median(rs))
            if same is None:
                missed.append(f"auto {statistics.median(rs):.2f}x {best}")
            else:
                held.append(same)
    if band >= SELECTIVE_FROM and rounds.at_recall_by_round(ways.get("post", []), TARGET):
        rs = ratio(auto, ways["post"])
        if not rs or statistics.median(rs) < 5.0:
            missed.append(f"auto {statistics.median(rs):.1f}x post" if rs else "auto vs post")
    if missed:
        return "missed: " + ", ".join(missed)
    return "all" + (f" ({', '.join(held)})" if held else "")


MIX_KEY = {"pre": "pre", "in-search": "in_search", "post": "post"}


def same_work(auto: list[dict], forced: list[dict], way: str, r: float) -> str | None:
    """When auto sent every query the way `way` at its points at the
    target in every round, it did that way's very work, and a ratio `r`
    below 1 is the device's drift between two passes of it: a note saying
    so if the shortfall lies within the spread of `way`'s own rounds
    (half their range over their median), or if the two passes' ratio
    within a round is above 1 in some rounds and below it in others;
    else None (a miss)."""
    mine = rounds.at_recall_by_round(auto, TARGET)
    if not mine or any(float(p.get("mix", {}).get(MIX_KEY[way], 0)) < 1.0 for p in mine.values()):
        return None
    theirs = rounds.at_recall_by_round(forced, TARGET)
    q = [float(p["qps"]) for p in theirs.values()]
    spread = (max(q) - min(q)) / (2 * statistics.median(q))
    if 1.0 - r <= spread:
        return f"auto = {way} for every query, {r:.2f}× within {way}'s ±{100 * spread:.0f}% between rounds"
    paired = rounds.ratios_by_round(auto, forced, TARGET)
    if paired and min(paired) <= 1.0 <= max(paired):
        return (f"auto = {way} for every query, {r:.2f}×; the two passes' ratio within a round "
                f"{min(paired):.2f}–{max(paired):.2f}×")
    return None


def heading(run: dict, queries: str, after: str) -> list[str]:
    """The lines above a filtered table: the data set, `queries` (what
    was searched), threads, budget and rounds (then `after`), and the
    command of the run."""
    return [
        f"{run.get('dataset', '?')} (n = {run.get('n', 0):,}), {queries}, {run.get('threads', '?')} threads, "
        f"memory budget {run.get('memory_budget_bytes', 0) / 1e6:.1f} MB, {run.get('rounds', '?')} interleaved "
        f"rounds{after}.",
        "",
        "Command: `" + str(run.get("command", "?")).replace(os.path.expanduser("~"), "~") + "`",
        "",
    ]


def render(results: str) -> str:
    path = os.path.join(results, ROWS)
    if not os.path.exists(path):
        return f"_No rows: `{ROWS}` is missing in {results}; `{RUN}` makes it._\n"
    rows = rounds.load(path)
    run = next((r for r in rows if r.get("kind") == "run"), {})
    groups = points(rows)
    lines = heading(run, f"{run.get('nq', '?')} filtered queries in {len(run.get('bands', []))} selectivity bands",
                    "")
    systems = OrderedDict()
    peers: "OrderedDict[str, dict]" = OrderedDict()
    for (system, band, way), rs in groups.items():
        if way == "peer":
            peers.setdefault(system, {})[band] = rs
            continue
        systems.setdefault(system, OrderedDict()).setdefault(band, {})[way] = rs
    head = ["profile", "band", "selectivity"] + [f"{w}: QPS at R@10 {TARGET}" for w in WAYS] + \
        ["auto chose", "auto / best forced", "auto / post", "targets"] + \
        [f"{p} (filter callback, all in RAM): QPS at R@10 {TARGET}" if p == "hnswlib" else f"{p}: QPS at R@10 {TARGET}"
         for p in peers]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for system, bands in systems.items():
        for band, ways in bands.items():
            sel = statistics.mean(float(r.get("selectivity", 0)) for rs in ways.values() for r in rs)
            cells = [system.removeprefix("stratavec-"), str(band), f"{100 * sel:.2f}%"]
            cells += [way_cell(ways.get(w, [])) for w in WAYS]
            cells.append(mix_cell(ways.get("auto", [])))
            forced = {w: ways[w] for w in ("pre", "in-search", "post") if w in ways}
            best = [(statistics.median(rs), w) for w, wr in forced.items() if (rs := ratio(ways.get("auto", []), wr))]
            cells.append(f"{min(best)[0]:.2f}× ({min(best)[1]})" if best else "—")
            post = ratio(ways.get("auto", []), ways.get("post", []))
            cells.append(f"{statistics.median(post):.1f}×" if post else "—")
            cells.append(targets(band, ways))
            cells += [way_cell(bands_of.get(band, [])) for bands_of in peers.values()]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
