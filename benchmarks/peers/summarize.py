#!/usr/bin/env python3
"""Read peer JSON lines (run_peer.py output) and print, per system, QPS and
reads per query at target recall@10 values, read off the recall-QPS curve by
linear interpolation between the two sweep points that bracket the target
(the way REFERENCE.md's table is read). Standard library only.

  python3 benchmarks/peers/summarize.py peers.jsonl [--targets 0.90,0.95,0.99] [--curve]
"""

from __future__ import annotations

import argparse
import json
from collections import OrderedDict


def interp(points, target, field):
    """points: [(recall, row)] sorted by sweep value. First bracketing pair wins."""
    for (r0, a), (r1, b) in zip(points, points[1:]):
        if r0 <= target <= r1 and r1 > r0:
            t = (target - r0) / (r1 - r0)
            x0, x1 = a.get(field), b.get(field)
            if x0 is None or x1 is None:
                return None
            return x0 + t * (x1 - x0)
    for r, row in points:
        if abs(r - target) < 1e-12:
            return row.get(field)
    return None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+")
    p.add_argument("--targets", default="0.90,0.95,0.99")
    p.add_argument("--curve", action="store_true", help="also print every sweep point")
    a = p.parse_args()
    targets = [float(x) for x in a.targets.split(",")]
    systems: "OrderedDict[str, list]" = OrderedDict()
    for path in a.files:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    row = json.loads(line)
                    systems.setdefault(f"{row['system']} {row['version']}", []).append(row)

    head = "| system | " + " | ".join(f"R@10 {t:.2f}: QPS / reads" for t in targets) + " | max R@10 |"
    print(head)
    print("|---" * (len(targets) + 2) + "|")
    for name, rows in systems.items():
        rows.sort(key=lambda r: r["L"])
        pts = [(r["recall_at_10"], r) for r in rows]
        cells = []
        for t in targets:
            qps = interp(pts, t, "qps")
            if qps is None:
                cells.append("never" if max(r for r, _ in pts) < t else "—")
                continue
            reads = interp(pts, t, "reads_per_query")
            cells.append(f"{qps:.0f} / {reads:.1f}" if reads is not None else f"{qps:.0f} / —")
        print(f"| {name} | " + " | ".join(cells) + f" | {max(r for r, _ in pts):.4f} |")

    if a.curve:
        for name, rows in systems.items():
            print(f"\n{name}  (build {rows[0]['build_s']:.0f} s, peak RSS {rows[0]['build_peak_rss_bytes'] / 1e6:.0f} MB, "
                  f"memory {rows[0]['memory_bytes'] / 1e6:.1f} MB, index {rows[0]['index_bytes'] / 1e6:.1f} MB)")
            print("| value | R@1 | R@10 | QPS | reads/q | p50 µs | p99 µs | peer mean_ios |")
            print("|---|---|---|---|---|---|---|---|")
            for r in rows:
                def f(key, fmt):
                    v = r.get(key)
                    return format(v, fmt) if v is not None else "—"
                print(f"| {r['L']} | {f('recall_at_1', '.3f')} | {f('recall_at_10', '.4f')} | {f('qps', '.0f')} | "
                      f"{f('reads_per_query', '.1f')} | {f('p50_us', '.0f')} | {f('p99_us', '.0f')} | "
                      f"{f('peer_reported_mean_ios', '.1f')} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
