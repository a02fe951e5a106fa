"""The "Starling at 1M vectors (synthetic)" tables of BENCHMARKS.md
(benchmarks/scenarios/starling_scale.toml runs and renders them:
`python3 benchmarks/bench.py report benchmarks/scenarios/starling_scale.toml`).

Reads, where they exist, starling-synth117k.jsonl and starling-synth1m.jsonl
(diskann and starling, and starling-all at 1M, on seeded clustered data of
wordnet-minilm's size and of 1M; tables/starling.py's tables of each), and
relayout-synth1m.time (`/usr/bin/time -v` of a streaming `stratavec
relayout` of the 1M diskann index: its wall time and peak RSS). A missing
file is named, with the scenario run that makes it. Every table says the
data is synthetic. Standard library only.
"""

import os

from . import starling

RUN = "python3 benchmarks/bench.py run benchmarks/scenarios/starling_scale.toml"
TIME = "relayout-synth1m.time"


def seconds(clock):
    """`1:02:03.5` or `0:59.12` (GNU time's h:mm:ss or m:ss) in seconds."""
    total = 0.0
    for part in clock.split(":"):
        total = total * 60 + float(part)
    return total


def relayout_line(path):
    """Wall time and peak RSS of the timed relayout, from GNU time's -v report."""
    fields = {}
    with open(path) as f:
        for line in f:
            key, sep, value = line.strip().rpartition(": ")
            if sep:
                fields[key] = value
    command = fields.get("Command being timed", "").strip('"')
    wall = fields.get("Elapsed (wall clock) time (h:mm:ss or m:ss)")
    rss_kb = fields.get("Maximum resident set size (kbytes)")
    if wall is None or rss_kb is None:
        return f"`{os.path.relpath(path)}` holds no wall time or peak RSS (not a `/usr/bin/time -v` report)"
    return (f"`stratavec relayout` of the 1M diskann index (synthetic): {seconds(wall):.1f} s, "
            f"peak RSS {int(rss_kb) * 1024 / 1e6:,.0f} MB; raw report `{os.path.relpath(path)}`; "
            f"command: `{command}`")


def render(results):
    """The text between the section's markers, from the rows in `results`."""
    lines = []
    for name, runs in (("synth117k", "synth-117k,117k"), ("synth1m", "synth-1m,1m")):
        path = os.path.join(results, f"starling-{name}.jsonl")
        lines += [f"**{name} (synthetic)**", ""]
        if os.path.exists(path):
            lines += starling.section(path)
        else:
            lines += [starling.missing("The run", runs, RUN), ""]
    path = os.path.join(results, TIME)
    if os.path.exists(path):
        lines += [relayout_line(path), ""]
    else:
        lines += [starling.missing("The relayout's peak RSS", "relayout-1m", RUN), ""]
    return "\n".join(lines)
