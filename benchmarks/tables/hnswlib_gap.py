"""Catching hnswlib (issue #57), a section of BENCHMARKS.md from
`stratavec bench` rows (benchmarks/scenarios/hnswlib.toml runs and renders
it: `python3 benchmarks/bench.py report benchmarks/scenarios/hnswlib.toml`).

Reads hnswlib-384.jsonl / hnswlib-768.jsonl (2 threads, 20% budget,
interleaved rounds) and hnswlib-384-latency.jsonl (1 thread x 1 query in
flight). For each system at recall@10 0.95: QPS (median and range over
rounds), its ratio to hnswlib within each round, reads a query, and p50
one query at a time with its ratio to hnswlib's. Standard library only.
"""

from __future__ import annotations

import os

import plot as P
import report as R
import rounds
from tables import headline as H
from tables.laser import lowest_p50

TARGET = 0.95
PEER = "hnswlib"


def files(results: str, dim: str) -> tuple[str, str]:
    base = os.path.join(results, f"hnswlib-{dim}")
    return base + ".jsonl", base + "-latency.jsonl"


def peer_of(d) -> P.System | None:
    return next((s for s in d.systems.values() if s.system == PEER), None)


def p50_of(lat, s: P.System) -> float | None:
    if lat is None or s.key not in lat.systems:
        return None
    p = lowest_p50(lat.systems[s.key].rows, TARGET)
    return float(p["p50_us"]) if p else None


def set_rows(d, lat) -> list[list[str]]:
    peer = peer_of(d)
    peer_p50 = p50_of(lat, peer) if peer else None
    rows = []
    for s in d.systems.values():
        ratio = "1" if s is peer else (R.ratio_cell(s, peer, TARGET) if peer else "—")
        p50 = p50_of(lat, s)
        p50_cell = "—" if p50 is None else f"{p50 / 1e3:.2f} ms"
        if p50 is not None and peer_p50 and s is not peer:
            p50_cell += f" ({p50 / peer_p50:.2f}×)"
        rows.append([s.display, H.qps_cell(s, TARGET), ratio, H.reads_cell(s, TARGET), p50_cell,
                     R.mb(s.first.get("memory_bytes"))])
    return rows


def render(results: str) -> str:
    out = ["The best disk plan against hnswlib holding everything in RAM (M = 32, efConstruction "
           "200), at a 20% memory budget, 2 threads, one run a data set with interleaved rounds. "
           "`gorgeous-ex4` estimates from 4-bit extended-RaBitQ codes and reads only the "
           "candidates their error bounds leave open (`search/settle.rs`); `gorgeous` is the "
           "profile at its defaults (planned PQ bytes). QPS at recall@10 ≥ 0.95: the median over "
           "rounds of each round's fastest point reaching it (min–max); the ratio to hnswlib is "
           "taken within each round. p50: one query at a time (1 thread × 1 in flight).", ""]
    head = ["system", f"QPS at R@10 ≥ {TARGET:.2f} (range)", "QPS / hnswlib (per round)",
            "reads a query", "p50, 1 query at a time (/ hnswlib)", "memory at search"]
    for dim, name in H.SETS:
        path, lat_path = files(results, dim)
        if not os.path.exists(path):
            out += [f"**{name}**: not measured yet (`{os.path.relpath(path)}` is missing).", ""]
            continue
        d = H.one_set(path)
        if d is None:
            out += [f"**{name}**: no search rows in `{os.path.relpath(path)}` yet.", ""]
            continue
        lat = H.one_set(lat_path) if os.path.exists(lat_path) else None
        out += H.caption(d, H.run_row(path), H.run_row(lat_path) if lat else {}, path,
                         lat_path if lat else None)
        out += [R.table(head, set_rows(d, lat), ["l"] + ["r"] * (len(head) - 1)), ""]
    return "\n".join(out)
