"""QPS ratio of one system to another at a recall target, over repeated
`stratavec bench` runs, and its median: on a shared VM one run's ratio
moves by ±15%, so a claim about it needs several.

    python benchmarks/qps_ratio.py RUN1.jsonl RUN2.jsonl ... \
        [--system stratavec-starling] [--base stratavec-diskann] [--recall 0.95]

Per run and round: the highest QPS among measured points reaching the
recall for each of the two systems (as in starling_table.py), their ratio
within the round; per run, the median over its rounds and the read rates
(QPS x reads per query) behind the median points. Standard library only.
"""
import argparse
import statistics

import rounds
from starling_table import best, load


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--system", default="stratavec-starling")
    ap.add_argument("--base", default="stratavec-diskann")
    ap.add_argument("--recall", type=float, default=0.95)
    a = ap.parse_args()
    ratios = []
    for path in a.runs:
        search = [r for r in load(path) if r.get("kind") == "search"]
        pts = {s: [r for r in search if r["system"] == s] for s in (a.system, a.base)}
        fast = {s: best(rounds.collapse(p), a.recall)[0] for s, p in pts.items()}
        if None in fast.values():
            print(f"{path}: a system never reaches recall {a.recall}")
            continue
        sys_, base = fast[a.system], fast[a.base]
        per_round = rounds.ratios_by_round(pts[a.system], pts[a.base], a.recall)
        ratio = statistics.median(per_round)
        ratios.append(ratio)
        rate = lambda p: p["qps"] * (p.get("reads_per_query") or 0) / 1e3  # noqa: E731
        print(f"{path}: {ratio:.2f}x over {len(per_round)} round(s) ({min(per_round):.2f}-{max(per_round):.2f}x; "
              f"median QPS {sys_['qps']:,.0f} at L={sys_['L']}, {rate(sys_):.0f}k reads/s; "
              f"{a.base} {base['qps']:,.0f} at L={base['L']}, {rate(base):.0f}k reads/s)")
    if ratios:
        print(f"median {statistics.median(ratios):.3f}x over {len(ratios)} runs "
              f"(min {min(ratios):.2f}x, max {max(ratios):.2f}x; "
              f"{sum(r >= 1.5 for r in ratios)} of {len(ratios)} at or above 1.5x)")


if __name__ == "__main__":
    main()
