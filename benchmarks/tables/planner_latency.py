"""The planner's latency section of BENCHMARKS.md (issue #57) from
`stratavec bench --latency` rows of benchmarks/scenarios/planner.toml's
latency runs (planner-latency-<dim>-<fraction>.jsonl): one query at a time,
`auto --objective latency` beside every fixed composition (the pipelined
refinements included) and hnswlib. Each composition's p50 is the lowest
median p50 among its points reaching R@10 0.95; auto's against the best
fixed composition's is taken round by round. Beside each, what the plan
predicted for it on its sample where it tried that composition.
Standard library only.
"""

import os
import re

import rounds
from tables.laser import lowest_p50
from tables.pipeann import p50_ratios
from tables.planner import layout_words

TARGET = 0.95
RUN = "python3 benchmarks/bench.py run benchmarks/scenarios/planner.toml --runs minilm-latency,..."
FILE = re.compile(r"planner-latency-(\d+)-([0-9.]+)\.jsonl$")
AUTO = "stratavec-auto-latency"
PEERS = ("hnswlib",)


def name(system: str) -> str:
    return system.replace("stratavec-", "")


def plan_of(rows: list[dict]) -> dict | None:
    """The auto build's plan, from its search rows' build report."""
    for r in rows:
        if r.get("kind") == "search" and r.get("system") == AUTO:
            return (r.get("build") or {}).get("auto_plan")
    return None


def parts(row: dict) -> str:
    """A build's codes and refinement in words (`4-bit ex-RaBitQ, pipelined`)."""
    bp = row.get("build_params") or {}
    codes = (f"{bp['exrabitq_bits']}-bit ex-RaBitQ" if bp.get("exrabitq_bits")
             else f"{bp.get('pq_bytes', '—')} PQ bytes")
    refine = ", pipelined" if row.get("two_stage") and row.get("pipelined") else ""
    words = layout_words(((row.get("build") or {}).get("auto_plan") or {}).get("layout"))
    return ", ".join(w for w in [f"{bp.get('profile', '?')}", codes + refine, words] if w)


def predicted(plan: dict, row: dict) -> str:
    """The plan's predicted p50 for this composition's profile and
    refinement, with the codes its best trial had (`369 (pq96)`), else `—`."""
    bp = row.get("build_params") or {}
    piped = bool(row.get("two_stage") and row.get("pipelined"))
    for c in plan.get("candidates", []):
        t = c.get("trial") or {}
        p50 = (c.get("predicted") or {}).get("p50_us")
        if c.get("profile") == bp.get("profile") and bool(t.get("pipelined")) == piped and p50:
            codes = (f" (ex{t['exrabitq_bits']})" if t.get("exrabitq_bits")
                     else f" (pq{t['pq_bytes']})" if t.get("pq_bytes") else "")
            return f"{p50:,.0f}{codes}"
    return "—"


def ratio_cell(a_rows: list[dict], b_rows: list[dict]) -> str:
    """p50 of a over b at the target, median and range over rounds."""
    return rounds.spread_cell(p50_ratios(a_rows, b_rows, TARGET))


def measured(path: str):
    """The run row, each system's rows and lowest-p50 point, the fixed
    compositions (stratavec systems but auto) and the best of them."""
    rows = rounds.load(path)
    run = next((r for r in rows if r.get("kind") == "run"), {})
    per = rounds.searches(rows)
    at = {s: lowest_p50(rounds.collapse(rs), TARGET) for s, rs in per.items()}
    fixed = [s for s in per if s != AUTO and name(s) not in PEERS]
    reached = [s for s in fixed if at.get(s) is not None]
    best = min(reached, key=lambda s: float(at[s]["p50_us"])) if reached else None
    return rows, run, per, at, fixed, best


def budget(run: dict) -> str:
    b = run.get("memory_budget_bytes", 0)
    frac = b / max(1, 4 * run.get("n", 0) * run.get("d", 0))
    return f"{100 * frac:.0f}% ({b / 1e6:.1f} MB)"


def summary_row(path: str) -> str | None:
    rows, run, per, at, fixed, best = measured(path)
    a = at.get(AUTO)
    if AUTO not in per:
        return None
    peer = next((s for s in per if name(s) in PEERS), None)
    cells = [f"{run.get('dataset')}", budget(run), parts(per[AUTO][0]),
             f"{a['p50_us']:,.0f} (L={a['L']}, {a['reads_per_query']:.1f} reads)" if a else "never",
             f"{name(best)} {at[best]['p50_us']:,.0f}" if best else "—",
             f"**{ratio_cell(per[AUTO], per[best])}**{rounds.same_mark(per[AUTO], per[best])}" if best else "—",
             f"{at[peer]['p50_us']:,.0f}" if peer and at.get(peer) else "—",
             ratio_cell(per[AUTO], per[peer]) if peer else "—"]
    return "| " + " | ".join(cells) + " |"


def table(path: str) -> list[str]:
    rows, run, per, at, fixed, best = measured(path)
    plan = plan_of(rows) or {}
    out = [f"{run.get('dataset')} ({run.get('n')} x {run.get('d')}), budget {budget(run)}, "
           f"1 thread x 1 query in flight, {run.get('rounds')} rounds; raw rows "
           f"`{os.path.relpath(path)}`; command: `{run.get('command')}`{rounds.latency_caveat(rows)}", ""]
    if AUTO in per:
        why = ((per[AUTO][0].get("build") or {}).get("chosen") or {}).get("pipelined_refinement")
        given = (per[AUTO][0].get("build_params") or {}).get("plan_queries")
        queries = "of the set's learn queries" if given else "queries held out of the rows"
        out += [f"auto built **{parts(per[AUTO][0])}** (plan {plan.get('seconds', 0):.1f} s on "
                f"{plan.get('sample', 0):,} sample rows and {plan.get('queries', 0)} {queries})"
                + (f"; its refinement: {why}" if why else "") + ".", ""]
    out += ["| composition | parts | p50 µs at R@10 0.95 (L) | p99 µs | reads a query "
            "| predicted p50 µs (sample) | auto ÷ this |",
            "|---|---|---:|---:|---:|---:|---:|"]
    for s, rs in per.items():
        p = at.get(s)
        mark = " · best fixed" if s == best else (" (peer)" if name(s) in PEERS else "")
        cells = [f"{name(s)}{mark}", parts(rs[0]) if name(s) not in PEERS else "in RAM"]
        cells += ([f"{p['p50_us']:,.0f} (L={p['L']})", f"{p['p99_us']:,.0f}",
                   f"{p.get('reads_per_query') or 0:.1f}"] if p else ["never", "—", "—"])
        cells += [predicted(plan, rs[0]) if name(s) not in PEERS else "—",
                  ratio_cell(per[AUTO], rs) if AUTO in per and s != AUTO else "—"]
        out.append("| " + " | ".join(cells) + " |")
    return out + [""]


def render(results: str) -> str:
    files = rounds.matching(results, FILE)
    if not files:
        return f"_No rows: no `planner-latency-*.jsonl` in {results}; `{RUN}` makes them._\n"
    summary = [r for r in (summary_row(os.path.join(results, f)) for f in files) if r]
    lines = ["Latency mode at a glance: `auto --objective latency`'s p50 at R@10 0.95 against the "
             "best fixed composition's in the same rounds (target ≤ 1.05×), and hnswlib's "
             "(everything in RAM; the issue's line at 20% of wordnet-minilm: ≤ 1.0×).", "",
             "| data set | budget | auto built | auto p50 µs | best fixed (p50 µs) | auto ÷ best fixed "
             "| hnswlib p50 µs | auto ÷ hnswlib |",
             "|---|---|---|---:|---|---:|---:|---:|"] + summary + [""]
    if any("same search" in r for r in summary):
        lines += [rounds.SAME_SEARCH, ""]
    for f in files:
        lines += table(os.path.join(results, f))
    return "\n".join(lines).rstrip() + "\n"
