"""The planner section of BENCHMARKS.md (issue #57) from `stratavec bench`
rows of benchmarks/scenarios/planner.toml: one table a budget
(planner-384-<fraction>.jsonl), every candidate profile's measured QPS at
R@10 0.95 beside what `--profile auto`'s plan predicted for it on its
sample, and auto's QPS against the best fixed profile's, round by round.
Standard library only.
"""

import os
import re

import rounds

TARGET = 0.95
RUN = "python3 benchmarks/bench.py run benchmarks/scenarios/planner.toml"
FILE = re.compile(r"planner-(\d+)-([0-9.]+)\.jsonl$")


def plan_of(rows: list[dict]) -> dict | None:
    """The auto build's plan, from its search rows' build report."""
    for r in rows:
        if r.get("kind") == "search" and r.get("system") == "stratavec-auto":
            return (r.get("build") or {}).get("auto_plan")
    return None


def table(path: str) -> list[str]:
    rows = rounds.load(path)
    run = next((r for r in rows if r.get("kind") == "run"), {})
    per = rounds.searches(rows)
    plan = plan_of(rows)
    out = [f"{run.get('dataset')} ({run.get('n')} x {run.get('d')}), budget "
           f"{run.get('memory_budget_bytes', 0) / 1e6:.1f} MB "
           f"({100 * run.get('memory_budget_bytes', 0) / max(1, 4 * run.get('n', 0) * run.get('d', 0)):.0f}% "
           f"of the raw vectors), "
           f"{run.get('threads')} threads, {run.get('rounds')} rounds; raw rows `{os.path.relpath(path)}`; "
           f"command: `{run.get('command')}`", ""]
    if plan is None:
        return out + ["_No `auto` rows with a plan in this file._", ""]
    predicted = {c["profile"]: c for c in plan.get("candidates", [])}
    fixed = {s.replace("stratavec-", ""): rs for s, rs in per.items() if s != "stratavec-auto"}
    at = {name: rounds.at_recall(rounds.collapse(rs), TARGET) for name, rs in fixed.items()}
    reached = {n: p for n, p in at.items() if p is not None}
    best = max(reached, key=lambda n: float(reached[n]["qps"])) if reached else None
    dev = plan.get("device", {})
    out += [f"The plan: {plan.get('sample'):,} sample rows, {plan.get('queries')} queries, "
            f"{plan.get('sample_budget', 0) / 1e6:.1f} MB; device {dev.get('reads_per_s', 0):,.0f} reads/s "
            f"({dev.get('source', '?').split(' ')[0]}); {plan.get('seconds', 0):.1f} s. "
            f"Chosen: **{plan.get('chosen')}**.", ""]
    out += ["| profile | PQ bytes | QPS at R@10 0.95 (range) | reads a query | predicted QPS (sample) "
            "| predicted / measured | auto ÷ this profile |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    auto_rows = per.get("stratavec-auto", [])
    for name, rs in fixed.items():
        p = at.get(name)
        c = predicted.get(name, {})
        pred = (c.get("predicted") or {}).get("qps")
        mark = " (chosen)" if name == plan.get("chosen") else ""
        best_mark = " · best fixed" if name == best else ""
        pq = rs[0].get("build_params", {}).get("pq_bytes", "—")
        if p is None:
            cells = [f"{name}{mark}{best_mark}", str(pq), "never", "—"]
        else:
            cells = [f"{name}{mark}{best_mark}", str(pq),
                     f"{p['qps']:,.0f} ({p.get('qps_min', p['qps']):,.0f}–{p.get('qps_max', p['qps']):,.0f}) "
                     f"· L={p['L']}", f"{p['reads_per_query']:.1f}"]
        cells += [f"{pred:,.0f}" if pred else (c.get("skipped") or "—"),
                  f"{pred / p['qps']:.2f}" if pred and p else "—",
                  rounds.ratio_cell(auto_rows, rs, TARGET)]
        out.append("| " + " | ".join(cells) + " |")
    a = rounds.at_recall(rounds.collapse(auto_rows), TARGET)
    if a is not None:
        pq = auto_rows[0].get("build_params", {}).get("pq_bytes", "—")
        out += ["", f"auto ({plan.get('chosen')}, {pq} PQ bytes): {a['qps']:,.0f} QPS at L={a['L']}, "
                f"{a['reads_per_query']:.1f} reads a query"
                + (f"; against the best fixed profile ({best}): {rounds.ratio_cell(auto_rows, fixed[best], TARGET)} "
                   f"(target ≥ 0.95×)" if best else "") + "."]
    return out + [""]


def render(results: str) -> str:
    files = sorted((f for f in os.listdir(results) if FILE.match(f)),
                   key=lambda f: (int(FILE.match(f).group(1)), float(FILE.match(f).group(2))))
    if not files:
        return f"_No rows: no `planner-*.jsonl` in {results}; `{RUN}` makes them._\n"
    lines = []
    for f in files:
        lines += table(os.path.join(results, f))
    return "\n".join(lines).rstrip() + "\n"
