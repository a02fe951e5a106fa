"""A scenario file (benchmarks/scenarios/*.toml) read and checked.

    name = "laser"                    # required; the study's name
    about = "..."                     # optional, free text
    results = "benchmarks/results"    # where the runs write (default shown)
    [defaults]                        # optional: keys every run starts from
    threads = 2
    [[run]]                           # one `stratavec bench` invocation each
    name = "minilm"                   # required; `bench.py run --runs` picks by it
    data = "wordnet-minilm"           # required; a data set name or a path
    out = "laser-384.jsonl"           # required; file in `results`
    profiles = ["diskann", "laser"]   # any key of command.FLAGS
    sweep = ["16..=40 step 4", 50]    # -L; "a..=b [step s]" ranges expand
    each = { beam_width = [4, 8] }    # optional: one run per value (cross
    out = "lat-w{beam_width}.jsonl"   #   product), named in `out`
    pause_seconds = 120               # optional: idle this long first (a
                                      #   second run of the same command)
    [[run]]                           # a step that is not `stratavec bench`:
    name = "shuffle-384"              #   a study's other commands (synth,
    kind = "command"                  #   shuffle, relayout, a Python driver),
    argv = ["{bin}", "shuffle", "{work}/IDX", "--json"]  # no shell; {bin}
    out = "shuffle-384.jsonl"         #   {work} {results} {data} {python}
    append = true                     #   expand; stdout to `out` (optional,
    creates = ".cache/x/gt.ibin"      #   appended to with `append`); skipped
                                      #   when `creates` exists (placeholders
                                      #   expand there too); `data` optional
    env = { ROUNDS = "8" }            #   optional: environment variables set
                                      #   for it (a driver script's knobs)
    [[report]]                        # a BENCHMARKS.md section to render
    marker = "laser-tables"           # required; its BEGIN/END markers' tag
    table = "laser"                   # required; a key of tables.RENDERERS
    results = "benchmarks/results"    # the rows it reads (default: top-level)
    doc = "BENCHMARKS.md"             # optional
    plot = "benchmarks/plots/x.png"   # optional; `report --plots` writes it
    files = ["a.jsonl", "b.jsonl"]    # optional: the rows files in `results`
                                      #   it renders, for a table that fills
                                      #   several sections from one folder

Unknown keys and missing required ones are errors naming the key and where
it is: a typo in a flag name must not silently run the bench with its
default. Python 3.11+ (tomllib); the table modules stay 3.9-compatible.
"""

from __future__ import annotations

import itertools
import re
import tomllib
from dataclasses import dataclass, field

from . import command

DEFAULT_RESULTS = "benchmarks/results"
TOP_KEYS = {"name", "about", "results", "defaults", "run", "report"}
RUN_KEYS = {"name", "data", "out", "each", "pause_seconds"} | set(command.FLAGS)
COMMAND_KEYS = {"name", "kind", "argv", "data", "out", "append", "creates", "env", "pause_seconds"}
REPORT_KEYS = {"marker", "table", "results", "doc", "plot", "files"}


class ScenarioError(ValueError):
    """A scenario file that cannot be run: the message names the key."""


@dataclass
class Run:
    name: str
    data: str
    out: str  # a file name inside the results folder
    flags: dict  # command.FLAGS key -> value, in the file's order
    pause_seconds: float = 0.0  # idle before the run starts
    kind: str = "bench"  # or "command": `argv` run as it is
    argv: list = field(default_factory=list)
    append: bool = False  # a command's stdout appended to `out`
    creates: str | None = None  # a command is skipped when this exists
    env: dict = field(default_factory=dict)  # a command's extra environment
    each: dict = field(default_factory=dict)  # the `each` values this run stands for


@dataclass
class Report:
    marker: str
    table: str
    results: str
    doc: str = "BENCHMARKS.md"
    plot: str | None = None
    files: list | None = None  # rows files in `results` (None: the table's own choice)


@dataclass
class Scenario:
    name: str
    path: str
    results: str
    runs: list = field(default_factory=list)
    reports: list = field(default_factory=list)
    about: str = ""


def load(path: str) -> Scenario:
    with open(path, "rb") as f:
        try:
            doc = tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise ScenarioError(f"{path}: {e}") from None
    return parse(doc, path)


def parse(doc: dict, path: str = "<scenario>") -> Scenario:
    _keys(doc, TOP_KEYS, {"name"}, path)
    results = _str(doc.get("results", DEFAULT_RESULTS), f"{path}: results")
    sc = Scenario(name=_str(doc["name"], f"{path}: name"), path=path, results=results,
                  about=doc.get("about", ""))
    defaults = doc.get("defaults", {})
    if not isinstance(defaults, dict):
        raise ScenarioError(f"{path}: defaults must be a table")
    # Defaults hold flags only: a default name or out would make runs collide.
    _keys(defaults, set(command.FLAGS) | {"data"}, set(), f"{path}: [defaults]")
    names = set()
    for i, raw in enumerate(doc.get("run", [])):
        where = f"{path}: run {raw.get('name', '#' + str(i + 1))!r}"
        if raw.get("kind", "bench") != "bench":
            if raw.get("name") in names:
                raise ScenarioError(f"{where}: a second run of that name")
            sc.runs.append(_command(raw, where))
            names.add(raw["name"])
            continue
        merged = {**defaults, **raw}
        _keys(merged, RUN_KEYS, {"name", "data", "out"}, where)
        if merged["name"] in names:
            raise ScenarioError(f"{where}: a second run of that name")
        names.add(merged["name"])
        sc.runs += _expand(merged, where)
    for i, raw in enumerate(doc.get("report", [])):
        where = f"{path}: report #{i + 1}"
        _keys(raw, REPORT_KEYS, {"marker", "table"}, where)
        files = raw.get("files")
        if files is not None and (not isinstance(files, list) or not files
                                  or not all(isinstance(f, str) and f and "/" not in f for f in files)):
            raise ScenarioError(f"{where}: files must be a non-empty list of file names in results")
        sc.reports.append(Report(marker=_str(raw["marker"], where), table=_str(raw["table"], where),
                                 results=raw.get("results", results), doc=raw.get("doc", "BENCHMARKS.md"),
                                 plot=raw.get("plot"), files=files))
    if not sc.runs and not sc.reports:
        raise ScenarioError(f"{path}: neither a [[run]] nor a [[report]]")
    return sc


def _keys(table: dict, allowed: set, required: set, where: str) -> None:
    for k in table:
        if k not in allowed:
            raise ScenarioError(f"{where}: unknown key {k!r}")
    for k in sorted(required):
        if k not in table:
            raise ScenarioError(f"{where}: missing key {k!r}")


def _str(v, where: str) -> str:
    if not isinstance(v, str) or not v:
        raise ScenarioError(f"{where}: expected a non-empty string, got {v!r}")
    return v


def _expand(merged: dict, where: str) -> list[Run]:
    """One Run per combination of `each`'s values (one Run without it)."""
    each = merged.get("each", {})
    if not isinstance(each, dict) or not all(isinstance(v, list) and v for v in each.values()):
        raise ScenarioError(f"{where}: each must map flag keys to non-empty lists")
    for k in each:
        if k not in command.FLAGS:
            raise ScenarioError(f"{where}: each: unknown key {k!r}")
    flags = {k: v for k, v in merged.items() if k in command.FLAGS}
    runs = []
    for combo in itertools.product(*each.values()):
        values = dict(zip(each, combo))
        try:
            out = merged["out"].format(**values)
        except KeyError as e:
            raise ScenarioError(f"{where}: out names {e} which each does not give") from None
        if any(r.out == out for r in runs):
            raise ScenarioError(f"{where}: out must name each's keys, or every run writes {out}")
        f = {**flags, **values}
        for k, v in f.items():
            command.check(k, v, where)
        if "sweep" in f:
            f["sweep"] = sweep(f["sweep"], where)
        runs.append(Run(name=merged["name"], data=_str(merged["data"], where), out=out, flags=f,
                        pause_seconds=_pause(merged.get("pause_seconds", 0), where), each=values))
    return runs


def _command(raw: dict, where: str) -> Run:
    """A `kind = "command"` run: argv as given (placeholders expanded when
    it runs), stdout to `out` when there is one."""
    if raw.get("kind") != "command":
        raise ScenarioError(f"{where}: kind = {raw.get('kind')!r}; runs are \"bench\" or \"command\"")
    _keys(raw, COMMAND_KEYS, {"name", "argv"}, where)
    argv = raw["argv"]
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) and a for a in argv):
        raise ScenarioError(f"{where}: argv must be a non-empty list of non-empty strings")
    env = raw.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(k, str) and k and isinstance(v, str)
                                            for k, v in env.items()):
        raise ScenarioError(f"{where}: env must map variable names to strings")
    creates = raw.get("creates")
    if creates is not None:
        _str(creates, f"{where}: creates")
    # Every string that expands placeholders, checked here: a typo must
    # fail before the first run starts, not an hour into the scenario.
    for what, a in [("argv item", a) for a in argv] + [(f"env {k}", v) for k, v in env.items()] \
            + ([("creates", creates)] if creates else []):
        try:
            a.format(**{k: "" for k in PLACEHOLDERS})
        except (KeyError, IndexError, ValueError) as e:
            raise ScenarioError(f"{where}: {what} {a!r}: unknown placeholder {e} "
                                f"(have: {', '.join(PLACEHOLDERS)})") from None
        if "{data}" in a and "data" not in raw:
            raise ScenarioError(f"{where}: {what} names {{data}} but the run gives no data")
    append = raw.get("append", False)
    if not isinstance(append, bool):
        raise ScenarioError(f"{where}: append = {append!r} is not true or false")
    return Run(name=raw["name"], data=raw.get("data", ""), out=raw.get("out", ""), flags={},
               pause_seconds=_pause(raw.get("pause_seconds", 0), where), kind="command",
               argv=list(argv), append=append, creates=creates, env=dict(env))


# What a command's argv may name: the stratavec binary, the bench's index
# folder, the results folder, the run's data set folder, this Python.
PLACEHOLDERS = ("bin", "work", "results", "data", "python")


def _pause(v, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        raise ScenarioError(f"{where}: pause_seconds = {v!r} is not a number of seconds >= 0")
    return float(v)


RANGE = re.compile(r"^\s*(\d+)\s*\.\.=\s*(\d+)\s*(?:step\s+(\d+))?\s*$")


def sweep(items, where: str = "sweep") -> list[int]:
    """["14..=46 step 2", 50] -> [14, 16, ..., 46, 50]; `seq`'s inclusive end."""
    if not isinstance(items, list):
        items = [items]
    out = []
    for it in items:
        if isinstance(it, int) and not isinstance(it, bool):
            out.append(it)
            continue
        m = RANGE.match(it) if isinstance(it, str) else None
        if m is None:
            raise ScenarioError(f"{where}: sweep item {it!r} is neither an integer nor 'a..=b [step s]'")
        lo, hi, step = int(m[1]), int(m[2]), int(m[3] or 1)
        if step < 1 or hi < lo:
            raise ScenarioError(f"{where}: sweep range {it!r} is empty")
        out += range(lo, hi + 1, step)
    return out
