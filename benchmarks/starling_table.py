"""The Starling ablation table of BENCHMARKS.md from `stratavec bench` rows.

    python benchmarks/starling_table.py ROWS.jsonl [--shuffle SHUFFLE.jsonl]

ROWS.jsonl: a bench run with the variants (diskann, starling-shuffle,
starling-page, starling-nav, starling-pipeline, starling, starling-all).
SHUFFLE.jsonl: `stratavec shuffle IDX --methods bnp,bnf,bns --json` lines.
For each system and recall@10 target: the highest QPS among measured points
reaching it (ann-benchmarks' Pareto reading, no interpolation; with several
rounds, the median QPS of each L over rounds, and QPS ratios computed
within each round, their median given), the fewest
reads per query among points reaching it, and the reads at exactly the
target, interpolated linearly in recall between the two measured L around
it (so a coarse L grid cannot flatter one system); ratios against diskann in
the same run. Range rows (kind "range"), if present, get their own table.
Standard library only.
"""
import argparse
import json
import statistics

import rounds

TARGETS = (0.90, 0.95)


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def best(points, target):
    ok = [p for p in points if p["recall_at_10"] >= target - 1e-9]
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
            f = (target - lo["recall_at_10"]) / (hi["recall_at_10"] - lo["recall_at_10"])
            return lo["reads_per_query"] + f * (hi["reads_per_query"] - lo["reads_per_query"])
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rows")
    ap.add_argument("--shuffle")
    a = ap.parse_args()
    rows = load(a.rows)
    run = next((r for r in rows if r.get("kind") == "run"), {})
    raw = [r for r in rows if r.get("kind") == "search"]
    systems = list(dict.fromkeys(r["system"] for r in raw))
    per_system = {s: [r for r in raw if r["system"] == s] for s in systems}
    search = [r for s in systems for r in rounds.collapse(per_system[s])]
    print(f"{run.get('dataset')} ({run.get('n')} x {run.get('d')}), budget "
          f"{run.get('memory_budget_bytes', 0) / 1e6:.1f} MB, {run.get('threads')} threads; "
          f"command: `{run.get('command')}`\n")
    if a.shuffle:
        sh = load(a.shuffle)
        first = sh[0]
        cells = [f"id order {first['or_id_order']:.4f}"]
        for r in sh:
            name, orv, secs = r["stages"][-1]
            cells.append(f"{name} {orv:.4f} ({secs:.1f} s, {r['per_block']:.2f} records per block)")
        placed = "the undirected graph" if first.get("undirected") else "the directed graph"
        if first.get("nearest"):
            placed = (f"each node's {first['nearest']} nearest within two hops, found in "
                      f"{first['nearest_seconds']:.1f} s")
        print("OR(G): " + "; ".join(cells) + f"; placed by {placed}\n")
    base = {}
    for t in TARGETS:
        fast, few = best([r for r in search if r["system"] == "stratavec-diskann"], t)
        base[t] = (fast, few)
    base_interp = {t: interpolated_reads([r for r in search if r["system"] == "stratavec-diskann"], t)
                   for t in TARGETS}
    head = "| system | W / in flight | " + " | ".join(
        f"R@10 ≥ {t:.2f}: QPS (L) | reads (L) | reads at {t:.2f}" for t in TARGETS) + " | build |"
    print(head)
    print("|---|---:|" + "---:|---:|---:|" * len(TARGETS) + "---:|")
    for s in systems:
        pts = [r for r in search if r["system"] == s]
        cells = []
        for t in TARGETS:
            fast, few = best(pts, t)
            bfast, bfew = base[t]
            if fast is None:
                cells += ["never", "never", "never"]
                continue
            ratios = rounds.ratios_by_round(per_system[s], per_system.get("stratavec-diskann", []), t)
            qr = (f" ({statistics.median(ratios):.2f}×)" if ratios and s != "stratavec-diskann" else "")
            rr = ""
            if bfew and s != "stratavec-diskann":
                ratio = few["reads_per_query"] / bfew["reads_per_query"]
                rr = f" ({(1 - ratio) * 100:.0f}% fewer)" if ratio <= 1 else f" ({(ratio - 1) * 100:.0f}% more)"
            cells.append(f"{fast['qps']:,.0f}{qr} (L={fast['L']})")
            cells.append(f"{few['reads_per_query']:.1f}{rr} (L={few['L']})")
            ir, bir = interpolated_reads(pts, t), base_interp[t]
            if ir is None:
                cells.append("—")
            elif bir and s != "stratavec-diskann":
                ratio = ir / bir
                word = f"{(1 - ratio) * 100:.1f}% fewer" if ratio <= 1 else f"{(ratio - 1) * 100:.1f}% more"
                cells.append(f"{ir:.2f} ({word})")
            else:
                cells.append(f"{ir:.2f}")
        build = pts[0].get("build_s")
        label = s.replace("stratavec-", "")
        build = f"{build:.1f} s" if build is not None else "—"
        wf = f"{pts[0].get('beam_width')} / {pts[0].get('in_flight')}"
        print(f"| {label} | {wf} | " + " | ".join(cells) + f" | {build} |")
    rng = [r for r in rows if r.get("kind") == "range"]
    if rng:
        print(f"\nRange search, radius {rng[0]['radius']:g} ({rng[0]['results_per_query']:.1f} "
              "results per query at the first L):\n")
        print("| system | method | L (or L/k) | AP | recall | reads/query | QPS |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for r in rng:
            print(f"| {r['system'].replace('stratavec-', '')} | {r['method']} | {r['L']} | {r['ap']:.4f} | "
                  f"{r['recall']:.4f} | {r['reads_per_query']:.1f} | {r['qps']:,.0f} |")


if __name__ == "__main__":
    main()
