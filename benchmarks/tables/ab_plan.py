"""The plan-of-parts A/B tables of BENCHMARKS.md (issue #52) from
benchmarks/ab_plan.sh's rows (benchmarks/scenarios/ab_plan.toml runs it
and renders the tables: `python3 benchmarks/bench.py report
benchmarks/scenarios/ab_plan.toml`).

Each section's [[report]] names its files (`files`): one A/B's rows, or
several shown together. Renders, as markdown:
  - the builds: per data set and profile, the files compared and whether
    every one is byte-identical (manifest.json without the new `plan`,
    build_report.json without its timings);
  - the searches: per data set, profile and L, recall@10 and reads a query
    of the old binary (9a74618) and the new one, QPS of each as the median
    over rounds with its range, the new/old QPS ratio (per round, the two
    searches run one after the other) as its median and range, the old
    binary's own spread (its rounds' min and max over their median), whether
    the median ratio lies inside that spread, whether reads a query were
    exactly equal in every round of both binaries, and whether the
    neighbours returned were the same bytes in every round of both
    ("vary": how many different results each binary returned over its
    rounds, and how many of them both returned).
A figure that varies over rounds is shown as its median with its range.
Rows are grouped by the file they came from (its name, without .jsonl, is
the first column), so a rerun of the same searches stays a row of its own.
Standard library only.
"""

import json
import os
import statistics
from collections import defaultdict


def load(paths):
    rows = []
    for path in paths:
        stem = os.path.splitext(os.path.basename(path))[0]
        with open(path) as f:
            rows += [dict(json.loads(line), file=stem) for line in f if line.strip()]
    return rows


def fmt_num(x, digits):
    return f"{x:,.{digits}f}"


def spread(values, digits):
    """A figure over rounds: one value when all agree, else median (min-max)."""
    lo, hi, med = min(values), max(values), statistics.median(values)
    if lo == hi:
        return fmt_num(lo, digits)
    return f"{fmt_num(med, digits)} ({fmt_num(lo, digits)}–{fmt_num(hi, digits)})"


def builds_table(rows):
    out = [
        "| rows | profile | files compared | identical |",
        "|---|---|---|---|",
    ]
    for r in rows:
        names = " ".join(line.split()[0] for line in r["old_files"] if line)
        out.append(
            f"| {r['file']} | {r['profile']} | {names} | {'yes' if r['identical'] else '**no**'} |"
        )
    return "\n".join(out)


def searches_table(rows):
    groups = defaultdict(lambda: {"old": {}, "new": {}})
    order = []
    for r in rows:
        key = (r["file"], r["profile"], r["L"])
        if key not in groups:
            order.append(key)
        groups[key][r["side"]][r["round"]] = r
    out = [
        "| rows | profile | L | rounds | recall@10 old | recall@10 new | reads/query old | reads/query new "
        "| reads equal | neighbours | QPS old | QPS new | new/old QPS | old's own spread | ratio inside |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---|",
    ]
    for key in order:
        g = groups[key]
        old, new = g["old"], g["new"]
        rounds = sorted(set(old) & set(new))
        qo = [old[r]["qps"] for r in sorted(old)]
        qn = [new[r]["qps"] for r in sorted(new)]
        ratios = [new[r]["qps"] / old[r]["qps"] for r in rounds]
        med_o = statistics.median(qo)
        own = (min(qo) / med_o, max(qo) / med_o)
        med_ratio = statistics.median(ratios)
        inside = own[0] <= med_ratio <= own[1]
        ids_o = {old[r]["ids_sha256"] for r in old}
        ids_n = {new[r]["ids_sha256"] for r in new}
        if len(ids_o) == 1 and ids_o == ids_n:
            ids = "same"
        elif ids_o & ids_n:
            ids = f"vary (old {len(ids_o)}, new {len(ids_n)} kinds, {len(ids_o & ids_n)} shared)"
        else:
            ids = f"vary (old {len(ids_o)}, new {len(ids_n)} kinds, none shared)"
        reads = {r["reads_per_query"] for r in list(old.values()) + list(new.values())}
        ds, profile, l = key
        out.append(
            f"| {ds} | {profile} | {l} | {len(rounds)} "
            f"| {spread([old[r]['recall'] for r in old], 4)} | {spread([new[r]['recall'] for r in new], 4)} "
            f"| {spread([old[r]['reads_per_query'] for r in old], 2)} "
            f"| {spread([new[r]['reads_per_query'] for r in new], 2)} "
            f"| {'yes' if len(reads) == 1 else 'vary'} | {ids} "
            f"| {spread(qo, 0)} | {spread(qn, 0)} "
            f"| {med_ratio:.2f}× ({min(ratios):.2f}–{max(ratios):.2f}) "
            f"| {own[0]:.2f}–{own[1]:.2f} | {'yes' if inside else 'no'} |"
        )
    return "\n".join(out)


def render(results, files=None):
    """The builds table, then the searches table, of `files` in `results`
    (default: every .jsonl there, by name)."""
    if files is None:
        files = sorted(f for f in os.listdir(results) if f.endswith(".jsonl"))
    rows = load([os.path.join(results, f) for f in files])
    builds = [r for r in rows if r.get("kind") == "build"]
    searches = [r for r in rows if r.get("kind") == "search"]
    parts = ([builds_table(builds)] if builds else []) + ([searches_table(searches)] if searches else [])
    return "\n\n".join(parts) + "\n"
