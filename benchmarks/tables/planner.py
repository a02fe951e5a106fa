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
    fixed = fixed_profiles(per)
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
        trial = c.get("trial") or {}
        bits = trial.get("exrabitq_bits")
        layout = layout_words(trial.get("layout"))
        tried = ", ".join(w for w in [f"{bits}-bit ex-RaBitQ" if bits else "", layout] if w)
        tried = f" ({tried})" if tried else ""
        # Set against the measured only where the trial was the profile as
        # the bench built it (its own codes and layout).
        cells += [f"{pred:,.0f}{tried}" if pred else (c.get("skipped") or "—"),
                  f"{pred / p['qps']:.2f}" if pred and p and not bits and not layout else "—",
                  rounds.ratio_cell(auto_rows, rs, TARGET)]
        out.append("| " + " | ".join(cells) + " |")
    a = rounds.at_recall(rounds.collapse(auto_rows), TARGET)
    if a is not None:
        out += ["", f"auto ({plan.get('chosen')}, {codes_of(auto_rows)}): {a['qps']:,.0f} QPS at L={a['L']}, "
                f"{a['reads_per_query']:.1f} reads a query"
                + (f"; against the best fixed profile ({best}): {rounds.ratio_cell(auto_rows, fixed[best], TARGET)} "
                   f"(target ≥ 0.95×)" if best else "") + "."]
    peers = peer_lines(per, auto_rows)
    if peers:
        out += [""] + peers
    return out + [""]


def layout_words(layout: dict | None) -> str:
    """A trial's or plan's layout where not its profile's default, in
    words: `f16 records, 8192-byte pages` (empty for the default)."""
    layout = layout or {}
    words = []
    if layout.get("blocks"):
        words.append("shuffled blocks")
    if layout.get("store"):
        words.append(f"{layout['store']} records")
    if layout.get("page_size"):
        words.append(f"{layout['page_size']}-byte pages")
    if layout.get("code_dim"):
        words.append(f"{layout['code_dim']}-d codes")
    return ", ".join(words)


def fixed_profiles(per: dict) -> dict:
    """The fixed profiles' rows by profile name: every stratavec system but
    auto (peers such as hnswlib are set beside auto apart, `peer_lines`)."""
    return {s.replace("stratavec-", ""): rs for s, rs in per.items()
            if s.startswith("stratavec-") and s != "stratavec-auto"}


def peer_lines(per: dict, auto_rows: list[dict]) -> list[str]:
    """auto against each peer in the same run (hnswlib holding everything
    in RAM), round by round, with both QPS at the target."""
    out = []
    a = rounds.at_recall(rounds.collapse(auto_rows), TARGET)
    for s, rs in per.items():
        if s.startswith("stratavec-"):
            continue
        p = rounds.at_recall(rounds.collapse(rs), TARGET)
        qps = f"{p['qps']:,.0f} QPS" if p else "never reached"
        mine = f"{a['qps']:,.0f}" if a else "never"
        out.append(f"auto against {s} in the same run (everything in RAM): {mine} against {qps}, "
                   f"{rounds.ratio_cell(auto_rows, rs, TARGET)}.")
    return out


def codes_of(rows: list[dict]) -> str:
    """The codes a build estimates from, in words: `4-bit extended RaBitQ`
    or `64 PQ bytes` (from its rows' build parameters), and for an auto
    build the layout its plan chose where not the profile's own."""
    bp = (rows[0].get("build_params") or {}) if rows else {}
    if bp.get("exrabitq_bits"):
        codes = f"{bp['exrabitq_bits']}-bit extended RaBitQ"
    else:
        codes = f"{bp.get('pq_bytes', '—')} PQ bytes"
    plan = plan_of(rows) or {}
    layout = layout_words(plan.get("layout"))
    return f"{codes}, {layout}" if layout else codes


def build_cells(auto_rows: list[dict], fixed: dict, chosen: str | None) -> list[str]:
    """auto's build seconds; over the same build without its plan (the
    report's stages); over the chosen profile's own build in the run, at
    its defaults (its codes may differ from the plan's)."""
    if not auto_rows:
        return ["—", "—", "—"]
    b = auto_rows[0].get("build") or {}
    total = rounds.num(b.get("total_s")) or rounds.num(auto_rows[0].get("build_s"))
    plan = dict((st[0], st[1]) for st in b.get("stages", []) if len(st) == 2).get("auto plan")
    if not total:
        return ["—", "—", "—"]
    alone = f"{total / (total - plan):.2f}×" if plan and total > plan else "—"
    own = rounds.num((fixed.get(chosen) or [{}])[0].get("build_s")) if chosen else None
    return [f"{total:,.0f} s", alone, f"{total / own:.2f}×" if own else "—"]


def summary_row(path: str) -> str | None:
    """One budget's line of the summary: auto's choice and QPS against the
    best fixed profile's, and what its plan cost the build."""
    rows = rounds.load(path)
    run = next((r for r in rows if r.get("kind") == "run"), {})
    per = rounds.searches(rows)
    plan = plan_of(rows)
    auto_rows = per.get("stratavec-auto", [])
    if plan is None or not auto_rows:
        return None
    fixed = fixed_profiles(per)
    at = {n: rounds.at_recall(rounds.collapse(rs), TARGET) for n, rs in fixed.items()}
    reached = {n: p for n, p in at.items() if p is not None}
    best = max(reached, key=lambda n: float(reached[n]["qps"])) if reached else None
    a = rounds.at_recall(rounds.collapse(auto_rows), TARGET)
    frac = run.get("memory_budget_bytes", 0) / max(1, 4 * run.get("n", 0) * run.get("d", 0))
    chosen = plan.get("chosen")
    cells = [f"{run.get('dataset')}", f"{100 * frac:.0f}% ({run.get('memory_budget_bytes', 0) / 1e6:.1f} MB)",
             f"{chosen} ({codes_of(auto_rows)})",
             f"{a['qps']:,.0f} · {a['reads_per_query']:.1f} reads" if a else "never",
             f"{best} {reached[best]['qps']:,.0f}" if best else "—",
             f"**{rounds.ratio_cell(auto_rows, fixed[best], TARGET)}**{rounds.same_mark(auto_rows, fixed[best])}"
             if best else "—",
             f"{plan.get('seconds', 0):.0f} s"]
    cells += build_cells(auto_rows, fixed, chosen)
    return "| " + " | ".join(cells) + " |"


def render(results: str) -> str:
    files = rounds.matching(results, FILE)
    if not files:
        return f"_No rows: no `planner-*.jsonl` in {results}; `{RUN}` makes them._\n"
    summary = [r for r in (summary_row(os.path.join(results, f)) for f in files) if r]
    lines = []
    if summary:
        lines += ["Every budget at a glance: what `auto` chose, its QPS at R@10 0.95 against the best "
                  "fixed profile's in the same rounds (target ≥ 0.95×), and what its plan cost the "
                  "build (target: the build ≤ 1.3× the chosen profile's alone; `÷ without plan` is "
                  "the auto build over its own stages but the plan, `÷ fixed` over the chosen "
                  "profile's build at its defaults in the same run).", "",
                  "| data set | budget | auto chose | auto QPS | best fixed (QPS) | auto ÷ best fixed "
                  "| plan | auto build | ÷ without plan | ÷ fixed |",
                  "|---|---|---|---:|---|---:|---:|---:|---:|---:|"] + summary + [""]
        if any("same search" in r for r in summary):
            lines += [rounds.SAME_SEARCH, ""]
    for f in files:
        lines += table(os.path.join(results, f))
    return "\n".join(lines).rstrip() + "\n"
