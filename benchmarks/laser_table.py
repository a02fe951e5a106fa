"""The AlayaLaser section of BENCHMARKS.md from `stratavec bench` rows
(benchmarks/laser.sh writes them).

    python benchmarks/laser_table.py --results benchmarks/results \
        --out benchmarks/results/laser.md --into BENCHMARKS.md

Reads laser-384.jsonl and laser-768.jsonl (every system at one budget, 2
threads, same run). For each system and recall@10 target (0.90, 0.95,
0.99): the highest QPS among points reaching it (median over rounds of
each L), reads and CPU microseconds a query and p99 latency at that point,
and QPS against diskann computed within each round (median and range).
Standard library only.
"""
import argparse
import os

import rounds

TARGETS = (0.90, 0.95, 0.99)
BEGIN, END = "<!-- BEGIN laser-tables", "<!-- END laser-tables -->"








def number(x, fmt):
    v = rounds.num(x)
    return "—" if v is None else fmt(v)


def table(path):
    rows = rounds.load(path)
    run = next((r for r in rows if r.get("kind") == "run"), {})
    per = rounds.searches(rows)
    out = [f"{run.get('dataset')} ({run.get('n')} x {run.get('d')}), budget "
           f"{run.get('memory_budget_bytes', 0) / 1e6:.1f} MB (20% of the raw vectors), "
           f"{run.get('threads')} threads, {run.get('rounds')} rounds; raw rows "
           f"`{os.path.relpath(path)}`; command: `{run.get('command')}`", ""]
    head = "| system | disk MB |"
    sep = "|---|---:|"
    for t in TARGETS:
        head += f" R@10 ≥ {t:.2f}: QPS (L) | reads | CPU µs | p99 ms | vs diskann |"
        sep += "---:|---:|---:|---:|---:|"
    out += [head, sep]
    disk = per.get("stratavec-diskann", [])
    for s, rs in per.items():
        pts = rounds.collapse(rs)
        first = rs[0]
        size = rounds.num(first.get("index_bytes"))
        cells = [s.replace("stratavec-", ""), "—" if size is None else f"{size / 1e6:,.0f}"]
        for t in TARGETS:
            p = rounds.at_recall(pts, t)
            if p is None:
                cells += ["never", "—", "—", "—", "—"]
                continue
            cells += [f"{p['qps']:,.0f} (L={p['L']})",
                      number(p.get("reads_per_query"), lambda v: f"{v:.1f}"),
                      number(p.get("cpu_us_per_query"), lambda v: f"{v:,.0f}"),
                      number(p.get("p99_us"), lambda v: f"{v / 1e3:.1f}"),
                      rounds.ratio_cell(rs, disk, t) if disk and rs is not disk else "—"]
        out.append("| " + " | ".join(cells) + " |")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default="benchmarks/results")
    ap.add_argument("--out")
    ap.add_argument("--into", help="replace the text between the laser-tables markers of this file "
                    "(BENCHMARKS.md) with the tables")
    a = ap.parse_args()
    lines = []
    for name in ("laser-384.jsonl", "laser-768.jsonl"):
        path = os.path.join(a.results, name)
        if os.path.exists(path):
            lines += table(path) + [""]
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text, end="")
    if a.into:
        with open(a.into) as f:
            doc = f.read()
        head, rest = doc.split(BEGIN, 1)
        marker_line, rest = rest.split("\n", 1)
        _, tail = rest.split(END, 1)
        with open(a.into, "w") as f:
            f.write(head + BEGIN + marker_line + "\n\n" + text + "\n" + END + tail)


if __name__ == "__main__":
    main()
