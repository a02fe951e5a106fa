"""The collections section of BENCHMARKS.md from benchmarks/collection_bench.py
rows (issue #24; benchmarks/scenarios/collection.toml runs and renders it:
`python3 benchmarks/bench.py report benchmarks/scenarios/collection.toml`):
medians over the interleaved rounds of each (system, probe, L); the
scaling table (1, 2, 4, 8 segments, every segment searched, same total data
and budget), the k-means probe table, Ray against the in-process
collection, and the issue's targets. Standard library only.
"""

from __future__ import annotations

import json
import os
import statistics
from collections import defaultdict

ROWS = "collections-384.jsonl"


def per_round(path: str) -> dict:
    """(system, probe, L) -> {round: QPS}."""
    out = defaultdict(dict)
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            out[(r["system"], r["probe"], r["L"])][r["round"]] = r["qps"]
    return out


def round_range(rounds: dict, a: tuple, b: tuple) -> str:
    """The QPS ratio a / b in each round both ran: "(rounds lo–hi)"."""
    ratios = [q / rounds[b][n] for n, q in rounds.get(a, {}).items() if n in rounds.get(b, {})]
    return f" (rounds {min(ratios):.2f}–{max(ratios):.2f})" if ratios else ""


def medians(path: str) -> dict:
    """(system, probe, L) -> the median of each measure over rounds."""
    groups = defaultdict(list)
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            groups[(r["system"], r["probe"], r["L"])].append(r)
    out = {}
    for key, rows in groups.items():
        m = dict(rows[0])
        for field in ("qps", "recall", "p50_us", "p99_us", "reads_per_query", "merge_share"):
            vals = [r[field] for r in rows if r.get(field) is not None]
            m[field] = statistics.median(vals) if vals else None
        m["rounds"] = len(rows)
        out[key] = m
    return out


def fmt(v, spec):
    return "–" if v is None else format(v, spec)


def table(rows: list[dict], with_probe: bool) -> list[str]:
    head = "| system | segments | " + ("probe | " if with_probe else "") + \
        "L | recall@10 | QPS | p50 µs | p99 µs | reads/query | merge share | RAM MB |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for m in rows:
        probe = "all" if m["probe"] is None else str(m["probe"])
        lines.append(
            f"| {m['system']} | {m['segments']} | " + (f"{probe} | " if with_probe else "")
            + f"{m['L']} | {m['recall']:.4f} | {m['qps']:,.0f} | {fmt(m['p50_us'], ',.0f')} | "
            f"{fmt(m['p99_us'], ',.0f')} | {fmt(m['reads_per_query'], '.1f')} | "
            f"{fmt(m['merge_share'], '.2%')} | {m['memory_bytes'] / 1e6:.1f} |")
    return lines


def best_at(ms: dict, system: str, probe, target: float):
    """The highest-QPS row of `system` at `probe` whose recall reaches `target`."""
    ok = [m for (s, p, _), m in ms.items() if s == system and p == probe and m["recall"] >= target]
    return max(ok, key=lambda m: m["qps"], default=None)


def targets(ms: dict, rounds: dict) -> list[str]:
    lines = ["| target | measured | |", "|---|---|---|"]
    # Recall at equal per-segment L: 4 segments (every one searched) against one index.
    diffs = []
    for (s, p, L), m in ms.items():
        if s == "collection-range-4" and ("single", None, L) in ms:
            diffs.append((m["recall"] - ms[("single", None, L)]["recall"], L))
    if diffs:
        worst, at = min(diffs)
        lines.append(f"| 4 segments, all searched, recall ≥ one index's at the same L − 0.005 | "
                     f"worst difference {worst:+.4f} (L = {at}) | {'met' if worst >= -0.005 else 'not met'} |")
    single = best_at(ms, "single", None, 0.95)
    # Each k-means-4 variant (list shrink by rank): its smallest probe
    # reaching 0.95 against the one index at 0.95.
    for system in sorted({s for (s, _, _) in ms if s.startswith("collection-kmeans-4")}):
        probes = sorted({p for (s, p, _) in ms if s == system and p is not None})
        shrink = next(m.get("probe_shrink") for (s, _, _), m in ms.items() if s == system)
        for p in probes + [None]:
            got = best_at(ms, system, p, 0.95)
            if got and single:
                ratio = got["qps"] / single["qps"]
                lines.append(
                    f"| k-means, lists shrinking ×{fmt(shrink, 'g')} a rank, smallest probe reaching "
                    f"0.95 ({'all' if p is None else p} of 4): QPS ≥ 0.5× one index's at 0.95 | "
                    f"{got['qps']:,.0f} (L = {got['L']}, {fmt(got['reads_per_query'], '.1f')} reads) vs "
                    f"{single['qps']:,.0f} (L = {single['L']}, {fmt(single['reads_per_query'], '.1f')} "
                    f"reads): {ratio:.2f}×"
                    + round_range(rounds, (system, p, got["L"]), ("single", None, single["L"]))
                    + f" | {'met' if ratio >= 0.5 else 'not met'} |")
                break
    for part in ("range", "kmeans"):
        ratios = [ms[("ray-" + part + "-4", p, L)]["qps"] / m["qps"]
                  for (s, p, L), m in ms.items()
                  if s == f"collection-{part}-4" and ("ray-" + part + "-4", p, L) in ms]
        if ratios:
            lines.append(f"| Ray's overhead, 4 segments ({part}) | Ray QPS ÷ in-process QPS: median "
                         f"{statistics.median(ratios):.2f}× ({min(ratios):.2f}–{max(ratios):.2f}) over "
                         f"{len(ratios)} rows | measured |")
    return lines


def render(results: str) -> str:
    """The text between the section's markers, from `results`/collections-384.jsonl."""
    path = os.path.join(results, ROWS)
    ms = medians(path)
    order = lambda m: (m["segments"], m["system"], m["probe"] or 99, m["L"])  # noqa: E731
    scaling = sorted((m for m in ms.values()
                      if m["system"] == "single" or m["system"].startswith("collection-range")), key=order)
    kmeans = sorted((m for m in ms.values() if m["system"].startswith("collection-kmeans")), key=order)
    ray = sorted((m for m in ms.values() if m["system"].startswith("ray-")), key=order)
    n_rounds = max(m["rounds"] for m in ms.values())
    lines = [f"Every segment searched at the same per-segment L; same data, same total budget "
             f"(split by vectors); medians of {n_rounds} interleaved rounds. A collection's "
             f"per-query latency is the sum of its segment searches'.", ""]
    lines += table(scaling, False) + ["", "k-means partitions, a query searching its `probe` "
                                      "nearest segments, the nearest at L and each further one "
                                      "at half the list before (never below k; `shrink 1`: all at "
                                      "L):", ""]
    lines += table(kmeans, True) + [""]
    if ray:
        lines += ["Through Ray actors (one a segment, 2 CPUs, local instance; the segments "
                  "searched in parallel by their actors; latency per query is not measured "
                  "through Ray):", ""] + table(ray, True) + [""]
    lines += ["Issue #24's targets (wordnet-minilm):", ""] + targets(ms, per_round(path)) + [""]
    return "\n".join(lines) + "\n"
