#!/usr/bin/env python3
"""One runner for every benchmark study (issue #53, item 4).

    python3 benchmarks/bench.py run benchmarks/scenarios/laser.toml [--runs minilm,mpnet]
        [--dry-run] [--results DIR] [--set profiles=diskann,laser] [--data SET] [--no-report]
    python3 benchmarks/bench.py report benchmarks/scenarios/laser.toml [--plots] [--check]
    python3 benchmarks/bench.py report --all

A scenario file (benchmarks/scenarios/NAME.toml; schema in
runner/scenario.py) says what a study measures: its runs, each one
`stratavec bench` invocation (data set, budget, profiles, peers, rounds,
sweep, threads, latency mode, tiers...) writing one raw-rows file, or one
of the study's other commands (`kind = "command"`: making synthetic data,
`stratavec shuffle` or `relayout`, a driver such as collection_bench.py or
ab_plan.sh), and the BENCHMARKS.md sections it renders, each a marker tag,
a table renderer (tables/NAME.py) and the results folder it reads. `run`
builds the CLI, makes missing data sets, runs the selected runs in file
order, then renders the reports that read the folder it wrote. `report`
renders from the committed rows only, so it is cheap, needs no build, and
gives the same bytes every time; `--check` fails instead of writing when a
section would change.

Adding a study (every study runs from a scenario; none keeps scripts of
its own beside it):
  1. Write tables/NAME.py: render(results) -> str, the section's markdown
     from the committed rows alone (no clock, no machine probe; a missing
     file named with the `bench.py run --runs` that makes it), and
     plot(results, path) if it plots; register it in tables/__init__.py.
     A table that fills several sections from one folder takes
     render(results, files=None), and each [[report]] names its `files`.
  2. Write scenarios/NAME.toml: one [[run]] per `stratavec bench` call (a
     loop over a value is `each`; flags are runner/command.py's FLAGS
     keys), command runs for its other steps (data made once, skipped by
     `creates`; a driver script's knobs as `env`; stdout into `out`), and
     one [[report]] per marker pair (another machine's folder is another
     [[report]] with its `results`).
  3. Put the marker pair in BENCHMARKS.md, its BEGIN text naming `bench.py
     report scenarios/NAME.toml`, and point the "Reproduce" lines
     (BENCHMARKS.md's, docs/'s) at `bench.py run`. Check: `bench.py report --all --check`
     is clean, `bench.py run --dry-run` prints the commands meant, and the
     section is in tests/test_bench.py's PORTED.
"""

from __future__ import annotations

import argparse
import glob
import inspect
import os
import shlex
import subprocess
import sys
import time

if sys.version_info < (3, 11):
    sys.exit("benchmarks/bench.py needs Python 3.11+ (tomllib)")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from runner import command, datasets, markers  # noqa: E402
from runner import scenario as S  # noqa: E402
from runner.scenario import ScenarioError  # noqa: E402
import tables  # noqa: E402

BUILD = ["cargo", "build", "--release", "-q", "-p", "stratavec-cli"]


def render(report) -> str:
    if report.table not in tables.RENDERERS:
        raise ScenarioError(f"report {report.marker!r}: no table {report.table!r} "
                            f"(have: {', '.join(sorted(tables.RENDERERS))})")
    table = tables.RENDERERS[report.table]
    if report.files is None:
        return table.render(report.results)
    # A table that fills several sections from one folder takes the files
    # each section shows; the others would drop them silently.
    if "files" not in inspect.signature(table.render).parameters:
        raise ScenarioError(f"report {report.marker!r}: table {report.table!r} takes no files")
    return table.render(report.results, files=report.files)


def report(sc, plots=False, check=False) -> bool:
    """Renders every report of `sc` into its document; True when a section
    changed (with `check`, nothing is written)."""
    changed = False
    for rep in sc.reports:
        with open(rep.doc) as f:
            doc = f.read()
        new = markers.splice(doc, rep.marker, render(rep))
        if new != doc:
            changed = True
            print(f"{rep.doc}: section {rep.marker} {'would change' if check else 'rewritten'}")
            if not check:
                with open(rep.doc, "w") as f:
                    f.write(new)
        if plots and rep.plot and not check:
            if getattr(tables.RENDERERS[rep.table], "plot", None) is not None:
                draw(rep.table, rep.results, rep.plot)
    return changed


PLOT_VENV = os.path.join(HERE, ".venvs", "plot")


def plot_python() -> str:
    """A Python with matplotlib: this one, or the pinned plotting venv
    (benchmarks/.venvs/plot, made on first use from requirements-plot.txt,
    so a figure is drawn by the same packages on every machine)."""
    try:
        import matplotlib  # noqa: F401
        return sys.executable
    except ImportError:
        pass
    py = os.path.join(PLOT_VENV, "bin", "python")
    if not os.path.exists(py):
        print(f"bench: making the plotting venv {os.path.relpath(PLOT_VENV, ROOT)} "
              "(benchmarks/requirements-plot.txt)", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", PLOT_VENV], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", "-r",
                        os.path.join(HERE, "requirements-plot.txt")], check=True)
    return py


def draw(table: str, results: str, out: str) -> None:
    """Draws `table`'s plot of the rows in `results` into `out`: here when
    matplotlib imports, else in the plotting venv."""
    py = plot_python()
    if py == sys.executable:
        tables.RENDERERS[table].plot(results, out)
        return
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import tables; "
            "tables.RENDERERS[sys.argv[2]].plot(sys.argv[3], sys.argv[4])")
    subprocess.run([py, "-c", code, HERE, table, results, out], check=True, cwd=ROOT)


def overrides(pairs: list[str]) -> dict:
    """--set key=value: lists split on commas, sweep items as integers or
    ranges, switches as true/false, other values as the text given."""
    out = {}
    for p in pairs:
        key, eq, value = p.partition("=")
        if not eq or key not in command.FLAGS:
            raise ScenarioError(f"--set {p!r}: expected KEY=VALUE with KEY one of the bench flags")
        kind = command.FLAGS[key][1]
        if kind in ("list", "repeat"):
            out[key] = [int(v) if v.isdigit() else v for v in value.split(",")]
        elif kind == "switch":
            out[key] = value.lower() in ("1", "true", "yes")
        else:
            out[key] = value
        command.check(key, out[key], "--set")
        if key == "sweep":
            out[key] = S.sweep(out[key], "--set")
    return out


def step(r, results, sets, data, dry_run) -> None:
    """One run of a scenario: a `stratavec bench` invocation, or a command
    (its stdout into `out`, skipped when what it `creates` exists)."""
    if r.kind == "bench":
        r.flags.update(sets or {})
    if data and (r.kind == "bench" or r.data):
        r.data = data
    if r.pause_seconds:
        print(f"# pause {r.pause_seconds:g} s before {r.name}", flush=True)
    if dry_run:
        if r.data and not datasets.present(r.data) and datasets.recipe(r.data):
            print(f"# {r.data} missing: {shlex.join(datasets.recipe(r.data))} first")
        where = datasets.path(r.data) if r.data else ""
    else:
        time.sleep(r.pause_seconds)
        where = datasets.ensure(r.data) if r.data else ""
    env = {}
    if r.kind == "bench":
        argv = command.argv(r, results, where)
    else:
        creates = r.creates and command.expand([r.creates], results, where)[0]
        if creates and os.path.exists(creates):
            print(f"# {r.name}: {creates} exists, skipped", flush=True)
            return
        argv = command.expand(r.argv, results, where)
        env = dict(zip(r.env, command.expand(list(r.env.values()), results, where)))
    redirect = f" {'>>' if r.append else '>'} {shlex.quote(os.path.join(results, r.out))}" \
        if r.kind != "bench" and r.out else ""
    # Printed as a shell would take it: VAR=value ... argv > out.
    prefix = "".join(f"{k}={shlex.quote(v)} " for k, v in env.items())
    print(prefix + shlex.join(argv) + redirect, flush=True)
    if dry_run:
        return
    child_env = {**os.environ, **env} if env else None
    if r.kind != "bench" and r.out:
        with open(os.path.join(results, r.out), "a" if r.append else "w") as f:
            subprocess.run(argv, check=True, stdout=f, env=child_env)
    else:
        subprocess.run(argv, check=True, env=child_env)


def _same(a, b) -> bool:
    """A --set value (text) against an `each` value from the file."""
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


def narrowed(runs: list, sets: dict | None) -> list:
    """The runs a --set of an `each` key leaves: `--set memory_fraction=0.4`
    runs only the 0.4 expansion of a run that sweeps memory_fraction, where
    overriding the flag alone would write 0.4's rows into every budget's
    file. A value the run does not sweep is an error naming the values."""
    kept = []
    for r in runs:
        swept = {k: v for k, v in (sets or {}).items() if k in r.each}
        if all(_same(v, r.each[k]) for k, v in swept.items()):
            kept.append(r)
    for name in dict.fromkeys(r.name for r in runs):
        group = [r for r in runs if r.name == name]
        if not any(r in kept for r in group):
            for k, v in (sets or {}).items():
                values = [r.each[k] for r in group if k in r.each]
                if values:
                    raise ScenarioError(f"--set {k}={v}: run {name} sweeps {k} over "
                                        f"{values}; pick one of them (its rows file is named by it)")
    return kept


def run(sc, names=None, dry_run=False, results=None, sets=None, no_report=False, data=None) -> None:
    results = results or sc.results
    missing = set(names or ()) - {r.name for r in sc.runs}
    if missing:
        raise ScenarioError(f"{sc.path}: no run named {', '.join(sorted(missing))}")
    chosen = narrowed([r for r in sc.runs if names is None or r.name in names], sets)
    say = lambda argv: print(shlex.join(argv), flush=True)  # noqa: E731
    say(BUILD)
    if not dry_run:
        subprocess.run(BUILD, check=True)
        os.makedirs(results, exist_ok=True)
        os.makedirs(command.WORK, exist_ok=True)
    for r in chosen:
        step(r, results, sets, data, dry_run)
    # Only the sections that read the folder just written: another
    # machine's folder (--results) must not overwrite this one's tables.
    reps = [rep for rep in sc.reports if os.path.normpath(rep.results) == os.path.normpath(results)]
    if no_report:
        return
    if not reps:
        print(f"# no [[report]] reads {results}: add one to render these rows")
    for rep in reps:
        print(f"# report: {rep.marker} into {rep.doc} from {rep.results}")
    if not dry_run:
        report(S.Scenario(sc.name, sc.path, results, reports=reps), plots=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a scenario's `stratavec bench` runs, then its reports")
    r.add_argument("scenario")
    r.add_argument("--runs", help="comma-separated run names (default: all, in file order)")
    r.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    r.add_argument("--results", help="write rows here instead (another machine's folder)")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a bench flag in every chosen run (narrows a run)")
    r.add_argument("--data", help="run on this data set (a name or a folder) instead of each run's, "
                   "e.g. wordnet-minilm-20k for a quick smoke test into --results elsewhere")
    r.add_argument("--no-report", action="store_true")
    p = sub.add_parser("report", help="render scenarios' sections from committed rows")
    p.add_argument("scenarios", nargs="*")
    p.add_argument("--all", action="store_true", help="every benchmarks/scenarios/*.toml")
    p.add_argument("--plots", action="store_true", help="also write plots (needs matplotlib)")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if a section would change")
    a = ap.parse_args(argv)
    # Rows name their files relative to the repository (captions quote
    # them), and scenarios name paths from it, as the old scripts' `cd` did.
    os.chdir(ROOT)
    try:
        if a.cmd == "run":
            names = set(a.runs.split(",")) if a.runs else None
            run(S.load(a.scenario), names, a.dry_run, a.results, overrides(a.set), a.no_report, a.data)
            return 0
        paths = sorted(glob.glob("benchmarks/scenarios/*.toml")) if a.all else a.scenarios
        if not paths:
            ap.error("report: name scenario files or give --all")
        changed = False
        for path in paths:
            changed |= report(S.load(path), a.plots, a.check)
        return 1 if (a.check and changed) else 0
    except (ScenarioError, markers.MarkerError) as e:
        print(f"bench.py: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
