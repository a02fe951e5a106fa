"""The headline section at the top of BENCHMARKS.md: every profile at its
defaults beside every peer, one run per real data set
(benchmarks/scenarios/headline.toml runs and renders it).

Reads headline-384.jsonl / headline-768.jsonl (2 threads, 20% budget,
interleaved rounds) and headline-384-latency.jsonl /
headline-768-latency.jsonl (the same systems and indexes, 1 thread x 1
query in flight). For each system: QPS at recall@10 0.90 / 0.95 / 0.99
(each round's fastest point reaching the target, median and range over
rounds, no interpolation), reads a query and p50 at one query at a time at
0.95, build time, index bytes and memory at search. `plot` draws one
recall-QPS figure with every system, a panel a data set. Standard library
only, but for the plot (matplotlib).
"""

from __future__ import annotations

import os
from pathlib import Path

import plot as P
import report as R
import rounds
from tables.laser import lowest_p50

SETS = (("384", "wordnet-minilm"), ("768", "wordnet-mpnet"))
TARGETS = (0.90, 0.95, 0.99)
LATENCY_AT = 0.95  # the target p50 and reads a query are given at


def files(results: str, dim: str) -> tuple[str, str]:
    base = os.path.join(results, f"headline-{dim}")
    return base + ".jsonl", base + "-latency.jsonl"


def one_set(path: str):
    """The single data set of a rows file (None when it has none)."""
    sets = P.load([path])
    return next(iter(sets.values()), None)


def run_row(path: str) -> dict:
    return next((r for r in rounds.load(path) if r.get("kind") == "run"), {})


def qps_cell(s: P.System, t: float) -> str:
    q, _ = R.qps_spread(s, t)
    if q is None:
        return "never"
    return f"{rounds.show(q)} · {R.param_name(s)}={R.sweep_values(s, t)}"


def reads_cell(s: P.System, t: float) -> str:
    p = rounds.at_recall(s.rows, t)
    if p is None:
        return "—"
    v = rounds.num(p.get("reads_per_query"))
    return "0 (in RAM)" if not v else f"{v:.1f}"


def p50_cell(lat, s: P.System, t: float) -> str:
    if lat is None or s.key not in lat.systems:
        return "—"
    p = lowest_p50(lat.systems[s.key].rows, t)
    if p is None:
        return "never"
    return f"{float(p['p50_us']) / 1e3:.2f} ms · {R.param_name(s)}={p.get('L')}"


def backend(d) -> str:
    """The I/O backend stratavec's searches read through."""
    return next((str(s.first.get("io_backend")) for s in d.systems.values()
                 if s.is_stratavec and s.first.get("io_backend")), "—")


def rounds_done(d) -> int:
    """Rounds every system completed (a stopped run has fewer than asked)."""
    per = [len(rounds.by_round(s.round_rows)) for s in d.systems.values()]
    return min(per) if per else 0


def device_line(path: str) -> str | None:
    """The device's random-read rate at queue depth 64 over the run (its
    probes before, between and after the rounds), and a warning when it
    moved more than twofold: the disk-bound systems' figures move with it."""
    rates = [rounds.num(r.get("reads_per_s")) for r in rounds.load(path)
             if r.get("kind") == "device" and r.get("depth") == 64]
    rates = [x for x in rates if x]
    if not rates:
        return None
    lo, hi = min(rates), max(rates)
    line = (f"Device (4 KiB random reads at depth 64, probed before, between and after the rounds): "
            f"{lo:,.0f}–{hi:,.0f} reads/s.")
    if lo < hi / 2:
        line += (f" **The device's rate moved {hi / lo:,.0f}-fold during this run** (the disk is "
                 "shared): the disk-bound systems' QPS moved with it, so their "
                 "ranges are wide and their medians low; the systems in RAM (hnswlib, faiss) did "
                 "not. Compare within a round, or run the set again.")
    return line


def caption(d, run: dict, lat_run: dict, path: str, lat_path: str | None) -> list[str]:
    budget = rounds.num(run.get("memory_budget_bytes")) or 0
    m = run.get("machine") or {}
    done, asked = rounds_done(d), run.get("rounds")
    rnds = f"{done} rounds" if done == asked else f"{done} of {asked} rounds (the run was stopped)"
    lines = [f"**{d.name}** · n={d.n:,}, d={d.d} · {d.nq:,} queries · k=10 · memory budget "
             f"{budget / 1e6:.1f} MB (20% of the raw vectors) · {run.get('threads')} threads · "
             f"{rnds} · {m.get('ncpu')} vCPU {m.get('cpu_model')}, "
             f"{run.get('simd')} kernel, I/O {backend(d)}.", ""]
    lines.append(f"Raw rows `{os.path.relpath(path)}`; command: `{run.get('command')}`" +
                 (f"; one query at a time: `{os.path.relpath(lat_path)}`, `{lat_run.get('command')}`"
                  if lat_path else "; one query at a time: not measured yet (the scenario's "
                  "`-latency` run), so its column is empty") + ".")
    dev = device_line(path)
    return lines + ([""] + [dev] if dev else []) + [""]


def set_table(d, lat) -> list[str]:
    head = (["system"] + [f"QPS at R@10 ≥ {t:.2f} (range)" for t in TARGETS] +
            [f"reads a query (≥ {LATENCY_AT:.2f})", f"p50, 1 query at a time (≥ {LATENCY_AT:.2f})",
             "build", "index on disk", "memory at search"])
    rows = []
    for s in d.systems.values():
        rows.append([s.display] + [qps_cell(s, t) for t in TARGETS] +
                    [reads_cell(s, LATENCY_AT), p50_cell(lat, s, LATENCY_AT),
                     R.build_cell(s).replace(" (index reused: time of its earlier build)", " (reused)"),
                     R.mb(s.first.get("index_bytes")), R.mb(s.first.get("memory_bytes"))])
    return [R.table(head, rows, ["l"] + ["r"] * (len(head) - 1))]


def render(results: str) -> str:
    out = ["Every profile at its defaults and every peer in one run a data set; QPS is the median "
           "over interleaved rounds of each round's fastest sweep point reaching the target "
           "(min–max over rounds), no interpolation; \"never\": no point reached it. Peers that keep "
           "the whole index in RAM (hnswlib, faiss IVF-PQ) are an upper reference, not held to the "
           "budget (their \"memory at search\" says what they hold). \"(reused)\": the index was "
           "built by an earlier run of the same parameters and its recorded build time is shown.", "",
           "![recall@10 against QPS, every system, both data sets](benchmarks/plots/headline.png)", ""]
    for dim, name in SETS:
        path, lat_path = files(results, dim)
        if not os.path.exists(path):
            out += [f"**{name}**: not measured yet (`{os.path.relpath(path)}` is missing).", ""]
            continue
        d = one_set(path)
        lat = one_set(lat_path) if os.path.exists(lat_path) else None
        out += caption(d, run_row(path), run_row(lat_path) if lat else {}, path,
                       lat_path if lat else None)
        out += set_table(d, lat) + [""]
    return "\n".join(out)


def plot(results: str, path: str) -> None:
    """Recall@10 against QPS (log), every system's Pareto front, a panel a
    data set; the range over rounds as a vertical bar."""
    plt, FixedLocator, FuncFormatter, NullLocator = P._mpl()
    sets = [one_set(files(results, dim)[0]) for dim, _ in SETS
            if os.path.exists(files(results, dim)[0])]
    if not sets:
        return
    fig, axes = plt.subplots(1, len(sets), figsize=(7.5 * len(sets), 6), squeeze=False)
    for ax, d in zip(axes[0], sets):
        recalls = []
        for s in d.systems.values():
            front = rounds.pareto(s.points())
            if not front:
                continue
            xs = [P._rx(float(r["recall_at_10"]), False) for r in front]
            ys = [float(r["qps"]) for r in front]
            recalls += [float(r["recall_at_10"]) for r in front]
            ax.plot(xs, ys, color=s.color, marker=s.marker, lw=1.8, ms=5,
                    ls="-" if s.is_stratavec else "--", label=s.display)
            ax.vlines(xs, [float(r.get("qps_min", r["qps"])) for r in front],
                      [float(r.get("qps_max", r["qps"])) for r in front], color=s.color, lw=0.8)
        P._recall_axis(ax, [r for r in recalls if r >= 0.8] or recalls, False,
                       FixedLocator, FuncFormatter, NullLocator)
        ax.set_yscale("log")
        P._log_labels(ax)
        P._targets(ax, False)
        ax.set_xlabel("recall@10 (logit scale)")
        ax.set_ylabel("queries per second (2 threads)")
        ax.set_title(f"{d.name} (n={d.n:,}, d={d.d}), 20% memory", loc="left")
        ax.grid(True, color="#dddddd", lw=0.7)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, frameon=False, fontsize=8,
               bbox_to_anchor=(0.5, -0.08))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
