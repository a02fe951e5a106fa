"""The main wordnet-minilm section of BENCHMARKS.md: the `diskann` profile
beside DiskANN C++, DiskANN Rust and hnswlib, in detail (every sweep point,
what bound each system, the device ceiling over the run), and a second run
of the same command minutes later, its ratios set beside the first's
(benchmarks/scenarios/main.toml runs and renders it; report.py holds the
parts). Rendered from the committed rows alone: the machine is the one the
rows record, and the plots are linked when benchmarks/plots/ has them.
"""

from __future__ import annotations

import os
from pathlib import Path

import plot as P
import report as R

FIRST, SECOND = "wordnet-minilm.jsonl", "wordnet-minilm-second.jsonl"
PLOTS = Path("benchmarks/plots")
DOC = Path("BENCHMARKS.md")
REPORT = "python3 benchmarks/bench.py report benchmarks/scenarios/main.toml"


def render(results: str) -> str:
    first, second = os.path.join(results, FIRST), os.path.join(results, SECOND)
    datasets = P.load([first])
    later = (second, P.load([second])) if os.path.exists(second) else None
    ran = [first] + ([second] if later else [])
    command = "\n".join([str(r["command"]) for r in R.run_rows(ran) if r.get("command")] + [REPORT])
    return R.section_body(datasets, [first], PLOTS, DOC, command, [], later)


def plot(results: str, path: str) -> None:
    """The three figures of the section (recall against QPS, reads a query
    and p99) into the folder `path`."""
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    for d in P.load([os.path.join(results, FIRST)]).values():
        if d.systems:
            P.plot_dataset(d, out, "", linear=False, annotate=True)
