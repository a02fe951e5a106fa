"""The Gorgeous section of BENCHMARKS.md from `stratavec bench` rows
(benchmarks/scenarios/gorgeous.toml runs and renders it:
`python3 benchmarks/bench.py report benchmarks/scenarios/gorgeous.toml`).

Reads gorgeous-384.jsonl and gorgeous-768.jsonl (each variant at one
budget) and gorgeous-budget-<fraction>.jsonl (diskann, starling and
gorgeous per budget). For each system and recall@10 target: the highest
QPS among points reaching it (median over rounds of each L; ratios computed
within each round against starling and diskann, their median and range
given), reads per query and p99 latency at that point, and the index's
disk bytes. The budget table and plot give QPS at recall@10 0.95 per
budget (Gorgeous Figure 12). Standard library, plus matplotlib for `plot`.
"""
import os

import rounds

TARGETS = (0.90, 0.95)


def variant_table(path):
    rows = rounds.load(path)
    run = next((r for r in rows if r.get("kind") == "run"), {})
    per = rounds.searches(rows)
    out = [f"{run.get('dataset')} ({run.get('n')} x {run.get('d')}), budget "
           f"{run.get('memory_budget_bytes', 0) / 1e6:.1f} MB, {run.get('threads')} threads, "
           f"{run.get('rounds')} rounds; raw rows `{os.path.relpath(path)}`; command: "
           f"`{run.get('command')}`", ""]
    head = "| system | PQ bytes | disk MB |"
    sep = "|---|---:|---:|"
    for t in TARGETS:
        head += f" R@10 ≥ {t:.2f}: QPS (L) | reads | p99 ms | QPS vs starling | QPS vs diskann |"
        sep += "---:|---:|---:|---:|---:|"
    out += [head, sep]
    star, disk = per.get("stratavec-starling", []), per.get("stratavec-diskann", [])
    for s, rs in per.items():
        pts = rounds.collapse(rs)
        first = rs[0]
        pq = first.get("build_params", {}).get("pq_bytes", "—")
        cells = [s.replace("stratavec-", ""), str(pq), f"{first.get('index_bytes', 0) / 1e6:,.0f}"]
        for t in TARGETS:
            p = rounds.at_recall(pts, t)
            if p is None:
                cells += ["never", "—", "—", "—", "—"]
                continue
            cells += [f"{p['qps']:,.0f} (L={p['L']})", f"{p['reads_per_query']:.1f}",
                      f"{p['p99_us'] / 1e3:.1f}",
                      rounds.ratio_cell(rs, star, t) if star and rs is not star else "—",
                      rounds.ratio_cell(rs, disk, t) if disk and rs is not disk else "—"]
        out.append("| " + " | ".join(cells) + " |")
    return out


def budget_rows(results):
    """(fraction, budget MB, system, QPS at 0.95, reads at 0.95) per file."""
    found = []
    for name in sorted(os.listdir(results)):
        if not (name.startswith("gorgeous-budget-") and name.endswith(".jsonl")):
            continue
        frac = float(name[len("gorgeous-budget-"):-len(".jsonl")])
        rows = rounds.load(os.path.join(results, name))
        run = next((r for r in rows if r.get("kind") == "run"), {})
        for s, rs in rounds.searches(rows).items():
            p = rounds.at_recall(rounds.collapse(rs), 0.95)
            found.append((frac, run.get("memory_budget_bytes", 0) / 1e6, s.replace("stratavec-", ""),
                          p["qps"] if p else None, p["reads_per_query"] if p else None,
                          rs[0].get("build_params", {}).get("pq_bytes")))
    return sorted(found)


def render(results):
    """The text between the section's markers, from the rows in `results`."""
    lines = []
    for name in ("gorgeous-384.jsonl", "gorgeous-768.jsonl"):
        path = os.path.join(results, name)
        if os.path.exists(path):
            lines += variant_table(path) + [""]
    budget = budget_rows(results)
    if budget:
        lines += ["QPS and reads a query at recall@10 0.95 as the budget grows (wordnet-minilm; "
                  "gorgeous plans its PQ bytes for each budget):", "",
                  "| budget (share of raw vectors) | system | PQ bytes | QPS | reads |", "|---|---|---:|---:|---:|"]
        for frac, mb, s, qps, reads, pq in budget:
            q = f"{qps:,.0f}" if qps else "never"
            rd = f"{reads:.1f}" if reads else "—"
            lines.append(f"| {frac * 100:g}% ({mb:.1f} MB) | {s} | {pq} | {q} | {rd} |")
    return "\n".join(lines) + "\n"


def plot(results, path):
    """The budget plot (Gorgeous Figure 12) as a PNG at `path`; needs matplotlib."""
    budget = budget_rows(results)
    if not budget:
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    for s in dict.fromkeys(b[2] for b in budget):
        pts = [b for b in budget if b[2] == s and b[3]]
        ax1.plot([b[0] * 100 for b in pts], [b[3] for b in pts], marker="o", label=s)
        ax2.plot([b[0] * 100 for b in pts], [b[4] for b in pts], marker="o", label=s)
    ax1.set(xlabel="memory budget (% of raw vectors)", ylabel="QPS at recall@10 0.95", xscale="log")
    ax2.set(xlabel="memory budget (% of raw vectors)", ylabel="reads a query at recall@10 0.95", xscale="log")
    for ax in (ax1, ax2):
        ax.set_xticks([5, 10, 20, 40], ["5", "10", "20", "40"])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("wordnet-minilm (384-d, 116,707 vectors), 2 threads")
    fig.tight_layout()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=120)

