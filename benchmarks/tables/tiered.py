"""The second-tier memory section of BENCHMARKS.md from `stratavec bench`
rows (benchmarks/scenarios/tiered.toml runs and renders it:
`python3 benchmarks/bench.py report benchmarks/scenarios/tiered.toml`).

Reads tiered-graph-384.jsonl (graph layouts x tiers, every system in the
same rounds): per system and tier, the index amplification (every file of
the index over the raw float32 vectors), and at recall@10 0.90 / 0.95 the
highest QPS reaching it (median over rounds of each L), its reads and CPU
a query, and QPS against diskann on the SSD computed within each round.
Then the cross-query software pipeline (tiered-inflight-q*.jsonl: QPS
against queries in flight a thread), and issue #23's targets with the
figure measured. Standard library, plus matplotlib for plot() (QPS at
recall@10 0.95 against amplification, a line a tier — paper 002's
Figures 9 and 13 — and QPS against queries in flight).
"""
import glob
import os
import re
import statistics

import rounds
from tables.laser import caption, number
from tables.pipeann import spread_cell

TARGETS = (0.90, 0.95)
BASELINE = "stratavec-diskann@ssd"


def split(system):
    """`stratavec-tiered@simulated:1000,16` -> ("tiered", "simulated:1000,16")."""
    name, _, tier = system.replace("stratavec-", "").partition("@")
    return name, tier or "—"


def amplification(p, run):
    raw = float(run["n"]) * float(run["d"]) * 4
    return float(p["index_bytes"]) / raw


def graph_table(path):
    rows = rounds.load(path)
    run = next((r for r in rows if r.get("kind") == "run"), {})
    per = rounds.searches(rows)
    base = per.get(BASELINE, [])
    head = "| system | tier | amplification |" + "".join(
        f" R@10 ≥ {t:.2f}: QPS (L) | reads | CPU µs | QPS vs diskann@ssd |" for t in TARGETS)
    out = [caption(run, path), "", head, "|---|---|---:|" + "---:|---:|---:|---:|" * len(TARGETS)]
    for s, rs in per.items():
        pts = rounds.collapse(rs)
        name, tier = split(s)
        cells = [name, tier, f"{amplification(pts[0], run):.2f}×"]
        for t in TARGETS:
            p = rounds.at_recall(pts, t)
            if p is None:
                cells += ["never", "—", "—", "—"]
                continue
            cells += [f"{p['qps']:,.0f} (L={p['L']})",
                      number(p.get("reads_per_query"), lambda v: f"{v:.1f}"),
                      number(p.get("cpu_us_per_query"), lambda v: f"{v:,.0f}"),
                      rounds.ratio_cell(rs, base, t) if base and rs is not base else "—"]
        out.append("| " + " | ".join(cells) + " |")
    return out


def ivf_table(path):
    """Cluster indexes: amplification, QPS at each target, reads and small
    reads a query there, and QPS against diskann@ssd when the run has it."""
    rows = rounds.load(path)
    run = next((r for r in rows if r.get("kind") == "run"), {})
    per = rounds.searches(rows)
    base = per.get(BASELINE, [])
    head = "| system | tier | amplification |" + "".join(
        f" R@10 ≥ {t:.2f}: QPS (nprobe) | reads | small reads | CPU µs | QPS vs diskann@ssd |"
        for t in TARGETS)
    out = [caption(run, path), "", head, "|---|---|---:|" + "---:|---:|---:|---:|---:|" * len(TARGETS)]
    for s, rs in per.items():
        pts = rounds.collapse(rs)
        name, tier = split(s)
        amp = f"{amplification(pts[0], run):.2f}×" if pts[0].get("index_bytes") else "—"
        cells = [name, tier, amp]
        for t in TARGETS:
            p = rounds.at_recall(pts, t)
            if p is None:
                cells += ["never", "—", "—", "—", "—"]
                continue
            cells += [f"{p['qps']:,.0f} ({p['L']})",
                      number(p.get("reads_per_query"), lambda v: f"{v:.1f}"),
                      number(p.get("small_reads_per_query"), lambda v: f"{v:.1f}"),
                      number(p.get("cpu_us_per_query"), lambda v: f"{v:,.0f}"),
                      rounds.ratio_cell(rs, base, t) if base and rs is not base else "—"]
        out.append("| " + " | ".join(cells) + " |")
    return out


def small_read_cut(per, tier):
    """1 - small reads of ivf (grouped) over ivf-nogroup's, at each L both
    ran on `tier` (same replication, same clusters probed)."""
    def by_l(system):
        return {p["L"]: float(p.get("small_reads_per_query") or 0)
                for p in rounds.collapse(per.get(system, []))}
    g, ng = by_l(f"stratavec-ivf@{tier}"), by_l(f"stratavec-ivf-nogroup@{tier}")
    return [1 - g[l] / ng[l] for l in g if l in ng and ng[l] > 0]


def inflight_table(results):
    found = []
    for path in glob.glob(os.path.join(results, "tiered-inflight-q*.jsonl")):
        m = re.search(r"-q(\d+)\.jsonl$", path)
        if m:
            found.append((int(m.group(1)), path))
    if not found:
        return []
    out = ["| queries in flight a thread | tier | L | recall@10 | QPS | p50 µs | CPU µs a query |",
           "|---:|---|---:|---:|---:|---:|---:|"]
    for q, path in sorted(found):
        for s, rs in rounds.searches(rounds.load(path)).items():
            for p in rounds.collapse(rs):
                out.append(f"| {q} | {split(s)[1]} | {p['L']} | {float(p['recall_at_10']):.3f} | "
                           f"{float(p['qps']):,.0f} | {float(p['p50_us']):,.0f} | "
                           f"{number(p.get('cpu_us_per_query'), lambda v: f'{v:,.0f}')} |")
    return out


def targets(results, target=0.95):
    out = ["| target | measured | |", "|---|---|---|"]

    def row(what, values, ok, fmt=spread_cell):
        if not values:
            out.append(f"| {what} | not measured | |")
            return
        verdict = "met" if ok(statistics.median(values)) else "not met"
        out.append(f"| {what} | {fmt(values)} | {verdict} |")

    path = os.path.join(results, "tiered-graph-384.jsonl")
    if not os.path.exists(path):
        return out
    rows = rounds.load(path)
    per = rounds.searches(rows)
    base = per.get(BASELINE, [])
    sim1 = next((s for s in per if s.startswith("stratavec-tiered@simulated:1000")), None)
    if sim1:
        row(f"tiered (CSR) at 1 µs ≥ 2× diskann's SSD QPS at R@10 {target:.2f}",
            rounds.ratios_by_round(per[sim1], base, target), lambda v: v >= 2.0)

    def size(system):
        rs = per.get(system)
        return float(rs[0]["index_bytes"]) if rs else None

    for csr, coupled, label in (("stratavec-tiered@ssd", BASELINE, "f32"),):
        a, b = size(csr), size(coupled)
        if a and b:
            row(f"tiered index bytes ≤ 0.9× the coupled layout's ({label}, every file)",
                [a / b], lambda v: v <= 0.9, fmt=lambda v: f"{v[0]:.3f}× ({a / 1e6:.1f} vs {b / 1e6:.1f} MB)")
    ivf = os.path.join(results, "tiered-ivf-384.jsonl")
    if os.path.exists(ivf):
        irows = rounds.load(ivf)
        run = next((r for r in irows if r.get("kind") == "run"), {})
        iper = rounds.searches(irows)
        for system in ("stratavec-ivf@mmap", "stratavec-ivf-r8@mmap"):
            rs = iper.get(system)
            if rs:
                amp = amplification(rounds.collapse(rs)[0], run)
                row(f"{split(system)[0]} (replication and grouping) amplification ≤ 1.3×", [amp],
                    lambda v: v <= 1.3, fmt=lambda v: f"{v[0]:.3f}×")
        cut = small_read_cut(iper, "mmap")
        row("ivf issues ≥ 60% fewer small reads than without grouping (replication 4, each nprobe)",
            cut, lambda v: v >= 0.6,
            fmt=lambda v: f"{100 * statistics.median(v):.1f}% fewer (median; {100 * min(v):.1f}–{100 * max(v):.1f}% over nprobe)")
    grouping = os.path.join(results, "tiered-ivf-ssd-grouping.jsonl")
    if os.path.exists(grouping):
        gper = rounds.searches(rounds.load(grouping))
        cut = small_read_cut(gper, "ssd")
        if cut:
            out.append(f"| (beside it) the same on the SSD, nprobe 10 and 20 | "
                       f"{', '.join(f'{100 * c:.1f}%' for c in cut)} fewer | |")
    ssd = os.path.join(results, "tiered-ivf-ssd.jsonl")
    if os.path.exists(ssd):
        sper = rounds.searches(rounds.load(ssd))
        lance = next((s for s in sper if "lancedb" in s), None)
        lance_best = lance and max((float(p["recall_at_10"]) for p in rounds.collapse(sper[lance])),
                                   default=0.0)
        srows = rounds.load(ssd)
        srun = next((r for r in srows if r.get("kind") == "run"), {})

        def amp_of(system):
            pts = rounds.collapse(sper[system])
            return amplification(pts[0], srun) if pts and pts[0].get("index_bytes") else None

        lance_amp = lance and amp_of(lance)
        for system in ("stratavec-ivf@ssd", "stratavec-ivf-r1@ssd", "stratavec-ivf-pq@ssd",
                       "stratavec-ivf-pq-r4@ssd"):
            amps = system in sper and amp_of(system)
            at = (f" (amplification {amps:.2f}× vs {lance_amp:.2f}×)" if amps and lance_amp else "")
            what = f"{split(system)[0]} on the SSD ≥ LanceDB's QPS at R@10 0.90{at}"
            if lance and system in sper and lance_best < 0.90:
                out.append(f"| {what} | LanceDB never reached 0.90 in the sweep (best "
                           f"{lance_best:.3f}) | not measured |")
            elif lance and system in sper:
                row(what, rounds.ratios_by_round(sper[system], sper[lance], 0.90), lambda v: v >= 1.0)
    f16 = size("stratavec-tiered-f16@ssd")
    if f16 and size(BASELINE):
        out.append(f"| (beside it) tiered with f16 records against the f32 coupled layout | "
                   f"{f16 / size(BASELINE):.3f}× ({f16 / 1e6:.1f} MB) | |")
    return out


def inflight_points(results):
    """(tier, queries in flight, median QPS) from tiered-inflight-q*.jsonl."""
    out = []
    for path in glob.glob(os.path.join(results, "tiered-inflight-q*.jsonl")):
        m = re.search(r"-q(\d+)\.jsonl$", path)
        if not m:
            continue
        for sys_name, rs in rounds.searches(rounds.load(path)).items():
            for p in rounds.collapse(rs):
                out.append((split(sys_name)[1], int(m.group(1)), float(p["qps"])))
    return sorted(out)


def amplification_points(path, target):
    """{tier: [(amplification, QPS at `target`, system)]} of one run."""
    rows = rounds.load(path)
    run = next((r for r in rows if r.get("kind") == "run"), {})
    by_tier = {}
    for s, rs in rounds.searches(rows).items():
        pts = rounds.collapse(rs)
        p = rounds.at_recall(pts, target)
        if p is None or not pts[0].get("index_bytes"):
            continue
        name, tier = split(s)
        by_tier.setdefault(tier or "—", []).append((amplification(pts[0], run), float(p["qps"]), name))
    return run, by_tier


def draw_amplification(ax, by_tier, target, title):
    for tier, pts in by_tier.items():
        pts.sort()
        ax.plot([a for a, _, _ in pts], [q for _, q, _ in pts], marker="o", label=tier)
        for a, q, name in pts:
            ax.annotate(name, (a, q), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("index amplification (index bytes / raw float32 vectors)")
    ax.set_ylabel(f"QPS at recall@10 ≥ {target}")
    ax.set_yscale("log")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def plot(results, out_path, target=0.95):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    run, graphs = amplification_points(os.path.join(results, "tiered-graph-384.jsonl"), target)
    # Cluster indexes at 0.90 (without replication, some never reach
    # 0.95): in memory and on the tiers, then on the SSD with LanceDB.
    clusters = {}
    for name in ("tiered-ivf-384.jsonl", "tiered-ivf-ssd.jsonl"):
        path = os.path.join(results, name)
        if os.path.exists(path):
            for tier, pts in amplification_points(path, 0.90)[1].items():
                tier = tier if tier != "—" else "peer, its own storage"
                clusters.setdefault(tier, []).extend(p for p in pts if p[2] != "diskann")
    fig, (ax1, ax3, ax2) = plt.subplots(1, 3, figsize=(16, 4.4))
    draw_amplification(ax1, graphs, target, "graph layouts on each tier")
    draw_amplification(ax3, clusters, 0.90, "cluster indexes (ivf) and LanceDB")
    infl = inflight_points(results)
    for tier in dict.fromkeys(t for t, _, _ in infl):
        pts = [(q, v) for t, q, v in infl if t == tier]
        ax2.plot([q for q, _ in pts], [v for _, v in pts], marker="o", label=f"tiered @ {tier}")
    ax2.set_xscale("log", base=2)
    ax2.set_xlabel("queries in flight a thread (2 threads)")
    ax2.set_ylabel("QPS")
    ax2.set_title("the cross-query software pipeline")
    ax2.grid(alpha=0.3)
    if infl:
        ax2.legend(fontsize=8)
    fig.suptitle(f"{run.get('dataset')} ({run.get('n')} x {run.get('d')}), "
                 f"{run.get('threads')} threads, 20% budget")
    fig.tight_layout()
    os.makedirs(os.path.dirname(out_path) or ".", exist_ok=True)
    fig.savefig(out_path, dpi=110)


# The figure's link sits inside the section, so the text names the file the
# scenario's `plot` writes (tests/test_bench.py checks the two agree).
PLOT = "benchmarks/plots/tiered.png"


def render(results):
    """The text between the section's markers, from the rows in `results`."""
    lines = []
    path = os.path.join(results, "tiered-graph-384.jsonl")
    if os.path.exists(path):
        lines += ["Graph layouts on each tier (`ssd`: io_uring + O_DIRECT; `mmap`: the index "
                  "file mapped, local memory — the computation bound; `simulated:LAT_NS,GBPS`: "
                  "the mapping with each read held to that latency and the reads together to "
                  "that bandwidth). Amplification: every file of the index over the raw float32 "
                  "vectors.", ""] + graph_table(path) + [""]
    for name, what in (("tiered-ivf-384.jsonl", "Cluster indexes (ivf) in local memory and on the "
                         "0.3, 1 and 3 µs tiers: replication 1 (classic IVF, each vector in its cluster's group), 2, "
                         "4, 8 with grouping by frequency (§6.2), and 4 in id order (`ivf-nogroup`: "
                         "every member a small read, §6.1). Small reads: single-vector reads of "
                         "members stored outside the probed groups."),
                       ("tiered-ivf-ssd.jsonl", "Cluster indexes on the SSD, with LanceDB (IVF_PQ on "
                        "disk) in the same rounds:"),
                       ("tiered-ivf-ssd-grouping.jsonl", "The replicated cluster indexes on the SSD, "
                        "replication 2, 4, 8 with grouping and 4 without (every small read a 4 KB "
                        "page; two nprobes, a query reads hundreds to thousands of pages):")):
        p = os.path.join(results, name)
        if os.path.exists(p):
            lines += [what, ""] + ivf_table(p) + [""]
    infl = inflight_table(results)
    if infl:
        lines += ["The cross-query software pipeline (paper 002 §5): tiered at one L, 2 threads, "
                  "as the queries each thread keeps in flight grow (3 rounds, medians; raw rows "
                  "`benchmarks/results/tiered-inflight-q*.jsonl`):", ""] + infl + [""]
    if os.path.exists(path):
        lines += ["![QPS against amplification on each tier, and against queries in flight]"
                  f"({PLOT})", ""]
    lines += ["Issue #23's targets (wordnet-minilm):", ""] + targets(results) + [""]
    return "\n".join(lines) + "\n"
