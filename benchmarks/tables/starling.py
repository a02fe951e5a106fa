"""The Starling section of BENCHMARKS.md from `stratavec bench` and
`stratavec shuffle` rows (benchmarks/scenarios/starling.toml runs and
renders it: `python3 benchmarks/bench.py report
benchmarks/scenarios/starling.toml`).

Reads, where they exist, starling-pca96.jsonl and starling-384.jsonl (an
ablation run each: diskann, each Starling technique alone, starling,
starling-all), shuffle-pca96.jsonl and shuffle-384.jsonl (`stratavec
shuffle --json` lines: OR(G) of id order and of each shuffle),
range-384.jsonl (range search against doubling k-NN), and the same with
-f16 (every index storing its vectors as f16). A missing file is named,
with the scenario run that makes it.

For each system and recall@10 target: the highest QPS among measured points
reaching it (ann-benchmarks' Pareto reading, no interpolation; the median
QPS of each L over rounds, and the QPS ratio to diskann computed within
each round, their median given), the fewest reads a query among points
reaching it, and the reads at exactly the target, interpolated linearly in
recall between the two measured L around it (so a coarse L grid cannot
flatter one system). Then each system's QPS over diskann's within each
round, median and range, with how many rounds reach 1.5× and the read rates
behind the median points: one run's ratio moves by ±15% on a shared VM, and
a round's systems run back to back, so the machine's drift cancels in it.
tables/starling_scale.py reuses `section`. Standard library only.
"""

import os
import statistics

import rounds

TARGETS = (0.90, 0.95)
BASE = "stratavec-diskann"
CLAIM = 1.5  # the ratio the section's QPS claim is about
RUN = "python3 benchmarks/bench.py run benchmarks/scenarios/starling.toml"


def best(points, target):
    """The fastest point reaching `target` and the one with the fewest reads."""
    ok = [p for p in points if p["recall_at_10"] >= target - rounds.RECALL_EPS]
    if not ok:
        return None, None
    fastest = max(ok, key=lambda p: p["qps"])
    fewest = min(ok, key=lambda p: p.get("reads_per_query") or float("inf"))  # in-RAM peers read nothing
    return fastest, fewest


def interpolated_reads(points, target):
    """Reads at recall exactly `target`, between the last point below it
    and the first reaching it (in L order); None if it is never reached or
    the first point already exceeds it."""
    pts = sorted(points, key=lambda p: p["L"])
    for lo, hi in zip(pts, pts[1:]):
        if lo["recall_at_10"] < target <= hi["recall_at_10"]:
            a, b = rounds.num(lo.get("reads_per_query")), rounds.num(hi.get("reads_per_query"))
            if a is None or b is None:  # a peer in RAM counts no reads
                return None
            f = (target - lo["recall_at_10"]) / (hi["recall_at_10"] - lo["recall_at_10"])
            return a + f * (b - a)
    return None


def missing(what, runs, run=RUN):
    return f"{what}: not measured yet: `{run} --runs {runs}`"


def caption(run, path):
    store = f", vectors stored as {run['store']}" if run.get("store") else ""
    return (f"{run.get('dataset')} ({run.get('n')} x {run.get('d')}){store}, budget "
            f"{run.get('memory_budget_bytes', 0) / 1e6:.1f} MB, {run.get('threads')} threads, "
            f"{run.get('rounds')} rounds; raw rows `{os.path.relpath(path)}`; command: "
            f"`{run.get('command')}`")


def placed_by(r):
    if r.get("nearest"):
        return (f"each node's {r['nearest']} nearest within two hops, found in "
                f"{r['nearest_seconds']:.1f} s")
    return "the undirected graph" if r.get("undirected") else "the directed graph"


def shuffle_line(rows):
    """OR(G) of id order and after each shuffle; a shuffle placed otherwise
    than the first (BNS by out-neighbours) says how."""
    first = rows[0]
    cells = [f"id order {first['or_id_order']:.4f}"]
    for r in rows:
        name, orv, secs = r["stages"][-1]
        other = f"; placed by {placed_by(r)}" if placed_by(r) != placed_by(first) else ""
        cells.append(f"{name} {orv:.4f} ({secs:.1f} s, {r['per_block']:.2f} records per block{other})")
    return "OR(G): " + "; ".join(cells) + f"; placed by {placed_by(first)}"


def change(ratio, digits):
    """`8% fewer` / `21% more` for a ratio of reads to diskann's."""
    if ratio <= 1:
        return f"{(1 - ratio) * 100:.{digits}f}% fewer"
    return f"{(ratio - 1) * 100:.{digits}f}% more"


def ablation_table(per_system):
    """One row a system: QPS, fewest reads and interpolated reads at each
    target, against diskann in the same run."""
    search = {s: rounds.collapse(rs) for s, rs in per_system.items()}
    base = search.get(BASE, [])
    base_few = {t: best(base, t)[1] for t in TARGETS}
    base_interp = {t: interpolated_reads(base, t) for t in TARGETS}
    out = ["| system | W / in flight | " + " | ".join(
        f"R@10 ≥ {t:.2f}: QPS (L) | reads (L) | reads at {t:.2f}" for t in TARGETS) + " | build |",
        "|---|---:|" + "---:|---:|---:|" * len(TARGETS) + "---:|"]
    for s, pts in search.items():
        cells = []
        for t in TARGETS:
            fast, few = best(pts, t)
            if fast is None:
                cells += ["never", "never", "never"]
                continue
            ratios = rounds.ratios_by_round(per_system[s], per_system.get(BASE, []), t)
            qr = f" ({statistics.median(ratios):.2f}×)" if ratios and s != BASE else ""
            reads = rounds.num(few.get("reads_per_query"))
            base_reads = rounds.num(base_few[t].get("reads_per_query")) if base_few[t] else None
            rr = f" ({change(reads / base_reads, 0)})" if reads is not None and base_reads and s != BASE else ""
            cells.append(f"{fast['qps']:,.0f}{qr} (L={fast['L']})")
            cells.append("—" if reads is None else f"{reads:.1f}{rr} (L={few['L']})")
            ir, bir = interpolated_reads(pts, t), base_interp[t]
            if ir is None:
                cells.append("—")
            elif bir and s != BASE:
                cells.append(f"{ir:.2f} ({change(ir / bir, 1)})")
            else:
                cells.append(f"{ir:.2f}")
        build = pts[0].get("build_s")
        build = f"{build:.1f} s" if build is not None else "—"
        wf = f"{pts[0].get('beam_width')} / {pts[0].get('in_flight')}"
        out.append(f"| {s.replace('stratavec-', '')} | {wf} | " + " | ".join(cells) + f" | {build} |")
    return out


def ratio_table(per_system):
    """Each system's QPS over diskann's within each round (median, range,
    rounds at or above CLAIM) and the read rates at the median points."""
    base = per_system.get(BASE)
    if not base:
        return []
    n = len(rounds.by_round(base))
    out = [f"QPS ÷ diskann's at the same recall, within each of the {n} rounds (a round's systems "
           f"run back to back): median (range), and the rounds at or above {CLAIM:g}×; read rates "
           "(QPS × reads a query) at the median-QPS points:", "",
           "| system | " + " | ".join(f"R@10 ≥ {t:.2f}: ÷ diskann | rounds ≥ {CLAIM:g}×" for t in TARGETS)
           + f" | reads/s at {TARGETS[-1]:.2f} |",
           "|---|" + "---:|---:|" * len(TARGETS) + "---:|"]

    def rate(pts):
        p = best(rounds.collapse(pts), TARGETS[-1])[0]
        reads = rounds.num(p.get("reads_per_query")) if p else None
        return "—" if reads is None else f"{p['qps'] * reads / 1e3:,.0f}k"

    for s, rs in per_system.items():
        cells = []
        for t in TARGETS:
            rt = rounds.ratios_by_round(rs, base, t) if s != BASE else []
            cells += [rounds.ratio_cell(rs, base, t) if rt else "—",
                      f"{sum(r >= CLAIM for r in rt)} of {len(rt)}" if rt else "—"]
        out.append(f"| {s.replace('stratavec-', '')} | " + " | ".join(cells) + f" | {rate(rs)} |")
    return out


def range_table(rows):
    rng = [r for r in rows if r.get("kind") == "range"]
    if not rng:
        return []
    out = [f"Range search, radius {rng[0]['radius']:g} ({rng[0]['results_per_query']:.1f} "
           "results per query at the first L):", "",
           "| system | method | L (or L/k) | AP | recall | reads/query | QPS |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for r in rng:
        out.append(f"| {r['system'].replace('stratavec-', '')} | {r['method']} | {r['L']} | {r['ap']:.4f} | "
                   f"{r['recall']:.4f} | {r['reads_per_query']:.1f} | {r['qps']:,.0f} |")
    return out


def section(path, shuffle=None, shuffle_missing=None):
    """Caption, OR(G) (from `shuffle`, or the note `shuffle_missing`), the
    ablation table and the per-round ratios of one bench run's rows."""
    rows = rounds.load(path)
    run = next((r for r in rows if r.get("kind") == "run"), {})
    per_system = rounds.searches(rows)
    out = [caption(run, path), ""]
    if shuffle:
        out += [shuffle_line(rounds.load(shuffle)), ""]
    elif shuffle_missing:
        out += [shuffle_missing, ""]
    if per_system:
        out += ablation_table(per_system) + [""]
        ratios = ratio_table(per_system)
        out += ratios + ([""] if ratios else [])
    rng = range_table(rows)
    return out + rng + ([""] if rng else [])


def render(results):
    """The text between the section's markers, from the rows in `results`."""
    lines = []
    for sfx, label in (("", "f32"), ("-f16", "f16")):
        for name, about in (("pca96", "wordnet-minilm-pca96"), ("384", "wordnet-minilm (384-d)")):
            path = os.path.join(results, f"starling-{name}{sfx}.jsonl")
            shuffle = os.path.join(results, f"shuffle-{name}{sfx}.jsonl")
            runs = f"{name}{sfx},shuffle-{name}{sfx}" + (f",bns-{name}{sfx}" if name == "pca96" else "")
            lines += [f"**{about}, {label}**", ""]
            if not os.path.exists(path):
                lines += [missing("The ablation", runs), ""]
                continue
            lines += section(path, shuffle if os.path.exists(shuffle) else None,
                             missing("OR(G)", f"shuffle-{name}{sfx}"))
        path = os.path.join(results, f"range-384{sfx}.jsonl")
        lines += [f"**Range search, wordnet-minilm (384-d), {label}**", ""]
        lines += section(path) if os.path.exists(path) else [missing("Range search", f"range-384{sfx}"), ""]
    return "\n".join(lines)
