"""A scenario run as the `stratavec bench` command line.

FLAGS mirrors `stratavec bench`'s arguments (crates/cli/src/cmd_bench.rs):
a scenario key is the long flag with `_` for `-`, except `sweep` (-L) and
`beam_width` (-W), written short as the study scripts did. Its order is the
order flags are written in, chosen so a ported script's command reads the
same as before (ablate, profiles, peers, io, threads, in_flight, W, budget, -L,
rounds, then the probe timings). A flag added to the bench needs a line
here before a scenario can use it: an unknown key is an error, not a
silently ignored typo.
"""

from __future__ import annotations

import os

# kind: "list" joins with commas; "repeat" gives the flag once per item
# (--tier); "switch" is a bool, the bare flag when true; "value" is one value.
FLAGS = {
    # --ablate first, as pipeann.sh wrote it: it names the profiles that follow.
    "ablate": ("--ablate", "switch"),
    "profiles": ("--profiles", "list"),
    "nav_sample": ("--nav-sample", "value"),
    "peers": ("--peers", "list"),
    "io": ("--io", "value"),
    "tier": ("--tier", "repeat"),
    "store": ("--store", "value"),
    "metric": ("--metric", "value"),
    "graph_degree": ("--graph-degree", "value"),
    "complexity": ("--complexity", "value"),
    "alpha": ("--alpha", "value"),
    "pq_bytes": ("--pq-bytes", "value"),
    "threads": ("--threads", "value"),
    "in_flight": ("--in-flight", "value"),
    "beam_width": ("-W", "value"),
    "latency": ("--latency", "switch"),
    "poll_us": ("--poll-us", "value"),
    "sqpoll": ("--sqpoll", "switch"),
    "memory_fraction": ("--memory-fraction", "value"),
    "sweep": ("-L", "list"),
    "k": ("-k", "value"),
    "rounds": ("--rounds", "value"),
    "min_pass_seconds": ("--min-pass-seconds", "value"),
    "warmup_seconds": ("--warmup-seconds", "value"),
    "device_seconds": ("--device-seconds", "value"),
    "sustained_seconds": ("--sustained-seconds", "value"),
    "radius": ("--radius", "value"),
    "range_gt": ("--range-gt", "value"),
    "range_phi": ("--range-phi", "value"),
    "rebuild": ("--rebuild", "switch"),
}

WORK = ".cache/bench"  # index builds, reused across runs and studies


def check(key: str, value, where: str) -> None:
    """Raises ScenarioError when `value` does not fit the flag's kind."""
    from .scenario import ScenarioError  # scenario imports this module

    kind = FLAGS[key][1]
    scalar = (str, int, float)
    ok = {
        "switch": isinstance(value, bool),
        "value": isinstance(value, scalar) and not isinstance(value, bool),
        # sweep items may be range strings; scenario.sweep checks them.
        # An empty list drops the flag: a run without the defaults' peers.
        "list": isinstance(value, list) and all(isinstance(v, scalar) for v in value),
        "repeat": isinstance(value, list) and all(isinstance(v, str) for v in value),
    }[kind]
    if not ok:
        raise ScenarioError(f"{where}: {key} = {value!r} is not a {kind}")


def text(v) -> str:
    """A value as the shell scripts wrote it: 0.2 not 0.20, 4 not 4.0."""
    return str(v)


def bench_binary() -> str:
    return os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release", "stratavec")


def argv(run, results: str, data_dir: str, binary: str | None = None) -> list[str]:
    """The `stratavec bench` argv for `run`, writing `results`/`run.out`."""
    cmd = [binary or bench_binary(), "bench", "--data", data_dir, "--work", WORK,
           "--out", os.path.join(results, run.out)]
    for key, (flag, kind) in FLAGS.items():
        if key not in run.flags:
            continue
        v = run.flags[key]
        if kind == "switch":
            cmd += [flag] if v else []
        elif kind == "repeat":
            for item in v:
                cmd += [flag, text(item)]
        elif kind == "list" and v:
            cmd += [flag, ",".join(text(x) for x in v)]
        elif kind == "value":
            cmd += [flag, text(v)]
    return cmd


def expand(argv: list[str], results: str, data_dir: str) -> list[str]:
    """A command run's argv with its placeholders filled in
    (scenario.PLACEHOLDERS)."""
    import sys

    values = {"bin": bench_binary(), "work": WORK, "results": results, "data": data_dir,
              "python": sys.executable}
    return [a.format(**values) for a in argv]
