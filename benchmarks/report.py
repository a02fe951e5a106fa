"""The main wordnet-minilm section of BENCHMARKS.md, in parts: the machine,
each data set's tables (QPS and reads at recall@10 targets, what bound each
system, stratavec over each peer, build and memory, the device ceiling,
plots, full sweeps, notes) and a second run's ratios beside the first's.
tables/main.py assembles them (benchmarks/scenarios/main.toml), and
tables/headline.py borrows the cell helpers.

Standard library only (the row, Pareto and machine helpers live in plot.py,
which imports matplotlib only when it plots).

Every figure "at recall r" is the fastest *measured* sweep point whose
recall@10 is >= r on the system's recall–QPS Pareto front: no interpolation
(the rule of crates/cli/src/bench/summary.rs), "never" when no point reaches it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
from collections import OrderedDict  # noqa: F401  (type hints)
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import plot as P  # noqa: E402  (helpers; matplotlib is not imported by this)
import rounds  # noqa: E402

# A row is bound by the device when it drew this share of the device's
# sustained rate, by the CPU when its threads were this busy; else by its
# own queue depth (neither saturated: more queries or reads in flight would
# have gone faster).
BOUND_SHARE = 0.85



# --------------------------------------------------------------------------
# small formatting helpers

def fnum(x):
    return P.fnum(x)


def i0(x) -> str:
    v = fnum(x)
    return "—" if v is None else f"{v:,.0f}"


def f1(x) -> str:
    v = fnum(x)
    return "—" if v is None else f"{v:,.1f}"


def f4(x) -> str:
    v = fnum(x)
    return "—" if v is None else f"{v:.4f}"


def mb(x) -> str:
    v = fnum(x)
    return "—" if v is None else f"{v / 1e6:,.1f} MB"


def secs(x) -> str:
    v = fnum(x)
    return "—" if v is None else f"{v:,.1f} s"


def table(header: list[str], rows: list[list[str]], align: list[str] | None = None) -> str:
    align = align or ["l"] + ["r"] * (len(header) - 1)
    sep = ["---:" if a == "r" else ":---:" if a == "c" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(sep) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(lines)


def param_name(s: P.System) -> str:
    return s.sweep_param


def utc(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def rel(path: Path, start: Path) -> str:
    """Relative to `start` when inside it (links in the .md), else absolute."""
    r = os.path.relpath(os.path.abspath(path), start).replace(os.sep, "/")
    return os.path.abspath(path) if r.startswith("../") else r


# --------------------------------------------------------------------------
# machine and data set


def run_rows(results: list[str]) -> list[dict]:
    """The "run" row (the first line) of each results file that has one."""
    out = []
    for path in results:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    if r.get("kind") == "run":
                        out.append(r)
                    break
    return out


def machine_section(datasets, results: list[str], out_dir: Path) -> str:
    rows = []
    runs = run_rows(results)
    # Runs record their machine; rows from before that are described by the
    # machine this report runs on.
    m0 = next((r["machine"] for r in runs if r.get("machine")), None)
    simd = sorted({str(r["simd"]) for d in datasets.values() for r in d.search_rows() if r.get("simd")})
    cpu = (f"{m0.get('ncpu')} vCPU, {m0.get('cpu_model')}" if m0 else f"{P.ncpu()} vCPU, {P.cpu_model()}")
    if simd:
        cpu += f" (stratavec SIMD kernel: {', '.join(simd)})"
    rows.append(["CPU", cpu])
    m = m0.get("mem_total_bytes") if m0 else P.mem_total_bytes()
    rows.append(["memory", f"{m / 2**30:.1f} GiB" if m else "unknown"])
    rows.append(["kernel", f"Linux {m0.get('kernel') if m0 else P.kernel()}"])
    backends = sorted({str(r["io_backend"]) for d in datasets.values() for r in d.search_rows()
                       if r.get("io_backend")})
    if backends:
        rows.append(["stratavec I/O backend", ", ".join(backends)])
    started = {}
    for p in results:
        r = run_rows([p])
        if r and fnum(r[0].get("unix_time")):
            started[p] = utc(float(r[0]["unix_time"]))
    dates = [f"`{rel(Path(p), out_dir)}`, " + (f"run started {started[p]}" if p in started
                                                else f"written {utc(os.path.getmtime(p))}")
             for p in results if os.path.exists(p)]
    rows.append(["results", "<br>".join(dates)])
    how = ("as the bench recorded it in the rows" if m0 else
           "as the report saw it (the rows predate the bench recording it)")
    return f"The machine, {how}.\n\n" + table(["", ""], rows, ["l", "l"])


# The data sets the project's recipe makes (scripts/datasets/): described
# by the recipe itself when no meta.json is given, so a report rendered on
# a machine without the data says the same.
RECIPE_SETS = {"wordnet-minilm": "all-MiniLM-L6-v2", "wordnet-mpnet": "all-mpnet-base-v2"}


def dataset_meta(d: P.Dataset, data_dirs: list[Path]) -> tuple[dict | None, str | None]:
    """meta.json of the data set from the directories given (never from
    the rows' paths: the report must not depend on what this machine has)."""
    cands = [p for p in data_dirs if p.name == d.name]
    rows = [str(r["data"]) for r in d.search_rows() if r.get("data")]
    base = d.name.split("-20k")[0]
    if not cands and base in RECIPE_SETS:
        return {"description": (
            "WordNet 3.0 glosses (deduplicated) as the base, example sentences as the queries, embedded "
            f"with sentence-transformers/{RECIPE_SETS[base]}; made by the project's recipe "
            f"(`scripts/datasets/`, sha256 of every file in `scripts/datasets/checksums.json`)")}, \
            (rows[0] if rows else None)
    for c in cands:
        m = c / "meta.json"
        if m.is_file():
            try:
                return json.loads(m.read_text()), str(c)
            except (OSError, json.JSONDecodeError):
                pass
    return None, (str(cands[0]) if cands else rows[0] if rows else None)


def describe_meta(meta: dict | None) -> str | None:
    if not meta:
        return None
    if meta.get("description"):
        return str(meta["description"])
    parts = []
    base = meta.get("base") or {}
    if base.get("text"):
        parts.append(f"base: {base['text']}")
    q = meta.get("query") or {}
    if q.get("text"):
        parts.append(f"queries: {q['text']}")
    model = meta.get("model") or {}
    if model.get("name"):
        parts.append(f"embedded with {model['name']} ({model.get('pooling', '')} pooling, "
                     f"{model.get('normalize', '')}-normalized)".replace(" (, -normalized)", ""))
    return "; ".join(parts) if parts else None


# --------------------------------------------------------------------------
# per data set


def sustained_rates(d: P.Dataset, source: str | None = None) -> list[float]:
    return d.sustained_rates(source)


def ceiling_of(d: P.Dataset, source: str | None = None) -> tuple[float | None, str]:
    return d.ceiling(source)


def qps_spread(s: P.System, t: float) -> tuple[dict | None, dict | None]:
    """QPS at recall `t` over rounds (each round's own Pareto point), and the
    point of the round nearest the median (for L and reads)."""
    by = rounds.at_recall_by_round(s.round_rows, t)
    q = rounds.spread(float(p["qps"]) for p in by.values())
    if q is None:
        return None, None
    mid = min(by.values(), key=lambda p: abs(float(p["qps"]) - q["median"]))
    return q, mid


def sweep_values(s: P.System, t: float) -> str:
    ls = sorted({p.get("L") for p in rounds.at_recall_by_round(s.round_rows, t).values()},
                key=lambda x: fnum(x) or 0)
    return "/".join(str(x) for x in ls)


def at_cell(s: P.System, t: float, d: P.Dataset) -> str:
    ceiling, _ = ceiling_of(d, s.source)
    q, p = qps_spread(s, t)
    if q is None:
        return "never"
    reads = fnum(p.get("reads_per_query"))
    cell = f"{rounds.show(q, lambda x: f'**{x:,.0f}**' if x == q['median'] else f'{x:,.0f}')}"
    cell += f" / {f1(reads) if reads is not None else '—'}"
    if ceiling and reads:
        cell += f" (ceiling {ceiling / reads:,.0f})"
    cell += f" · {param_name(s)}={sweep_values(s, t)}"
    return cell


def ratio_cell(a: P.System, b: P.System, t: float) -> str:
    qa, pa = qps_spread(a, t)
    qb, pb = qps_spread(b, t)
    if qa is None and qb is None:
        return "neither reaches it"
    if qa is None:
        return "stratavec never"
    if qb is None:
        return "peer never"
    r = rounds.spread(rounds.ratios_by_round(a.round_rows, b.round_rows, t))
    s = rounds.show(r, lambda x: f"**{x:.2f}×**" if x == r["median"] else f"{x:.2f}×") + " QPS"
    ra, rb = fnum(pa.get("reads_per_query")), fnum(pb.get("reads_per_query"))
    if ra and rb:
        s += f", {ra / rb:.2f}× reads"
    return s


def bound_by(r: dict, ceiling: float | None) -> str:
    """What held a sweep point back; see BOUND_SHARE."""
    rate, cpu = fnum(r.get("reads_per_s")), fnum(r.get("cpu_util"))
    what = []
    if rate is not None and ceiling and rate >= BOUND_SHARE * ceiling:
        what.append("disk")
    if cpu is not None and cpu >= BOUND_SHARE:
        what.append("CPU")
    if what:
        return " + ".join(what)
    if cpu is None and (rate is None or not ceiling):
        return "—"
    if rate is None:
        # In RAM: nothing to wait for but the CPU, yet it was not busy.
        return "neither (other load?)"
    return "own depth"


def drew_cell(s: P.System, t: float, d: P.Dataset) -> str:
    """Reads/s and CPU share at the point used for recall `t` (medians over
    rounds) and what bound it."""
    ceiling, _ = ceiling_of(d, s.source)
    p = P.at_recall(s.points(), t)
    if p is None:
        return "never"
    rate, cpu = fnum(p.get("reads_per_s")), fnum(p.get("cpu_util"))
    bits = []
    if rate is not None:
        bits.append(f"{rate / 1e3:,.0f}k reads/s" + (f" ({100 * rate / ceiling:.0f}%)" if ceiling else ""))
    if cpu is not None:
        bits.append(f"CPU {100 * cpu:.0f}%")
    return (", ".join(bits) or "—") + f" → **{bound_by(p, ceiling)}**"


def memory_parts(s: P.System) -> str:
    r = s.first
    if s.is_stratavec:
        parts = r.get("memory_parts") or {}
        txt = ", ".join(f"{k} {mb(v)}" for k, v in parts.items())
        if r.get("cached_nodes") is not None:
            txt += f" ({int(r['cached_nodes']):,} cached nodes)"
        return txt or "—"
    m = r.get("memory_model") or {}
    bits = []
    if "pq_codes_bytes" in m:
        bits.append(f"PQ codes {mb(m['pq_codes_bytes'])}")
    if "cache_bytes" in m:
        bits.append(f"node cache {mb(m['cache_bytes'])} ({int(m.get('cache_nodes', 0)):,} nodes, "
                    f"{m.get('cache_policy', '?')})")
    if not bits and m.get("memory_model"):
        bits.append(str(m["memory_model"]))
    return ", ".join(bits) or "—"


def index_size(s: P.System) -> str:
    r = s.first
    size = mb(r.get("index_bytes"))
    files = r.get("index_files") or {}
    build_only = {k: v for k, v in files.items() if k.endswith("_mem.index.data")}
    if build_only:
        rest = (fnum(r.get("index_bytes")) or 0) - sum(build_only.values())
        size += f" (search opens {mb(rest)}; {', '.join(build_only)} is a build-time copy of the vectors)"
    return size


def build_cell(s: P.System) -> str:
    r = s.first
    reused = r.get("index_reused")
    if s.is_stratavec:
        reused = (r.get("build") or {}).get("reused")
    t = secs(r.get("build_s"))
    if reused:
        t += " (index reused: time of its earlier build)"
    return t


def stage_note(s: P.System) -> str | None:
    st = (s.first.get("build") or {}).get("stages")
    if not st:
        return None
    return ", ".join(f"{name} {float(sec):.1f} s" for name, sec in st)


def sweep_table(s: P.System, d: P.Dataset) -> str:
    rows = s.rows
    ceiling, _ = ceiling_of(d, s.source)
    has = lambda f: any(fnum(r.get(f)) is not None for r in rows)  # noqa: E731
    if s.is_stratavec:
        eng, ker = "reads_per_query", "proc_reads_per_query"
    else:
        eng, ker = "peer_reported_mean_ios", "reads_per_query"
    cols = [(param_name(s), lambda r: str(r.get("L"))),
            ("R@1", lambda r: f4(r.get("recall_at_1"))),
            ("R@10", lambda r: f4(r.get("recall_at_10")))]
    if has("recall_at_100"):
        cols.append(("R@100", lambda r: f4(r.get("recall_at_100"))))
    multi = any((r.get("rounds") or 1) > 1 for r in rows)
    qps_col = ("QPS (range over rounds)" if multi else "QPS",
               lambda r: rounds.show({"median": r["qps"], "min": r.get("qps_min", r["qps"]),
                                      "max": r.get("qps_max", r["qps"]), "n": r.get("rounds") or 1})
               if fnum(r.get("qps")) is not None else "—")
    cols += [qps_col,
             ("mean µs", lambda r: i0(r.get("mean_us"))),
             ("p50 µs", lambda r: i0(r.get("p50_us"))),
             ("p99 µs", lambda r: i0(r.get("p99_us")))]
    if has(eng):
        cols.append(("reads/q (engine)" if s.is_stratavec else "reads/q (its own count)",
                     lambda r: f1(r.get(eng))))
    if has(ker):
        cols.append(("reads/q (kernel)", lambda r: f1(r.get(ker))))
    if s.is_stratavec and has("cache_hits_per_query"):
        cols.append(("cache hits/q", lambda r: f1(r.get("cache_hits_per_query"))))
    if has("cpu_us_per_query"):
        cols.append(("CPU µs/q", lambda r: i0(r.get("cpu_us_per_query"))))
    if has("reads_per_s"):
        cols.append(("reads/s", lambda r: "—" if fnum(r.get("reads_per_s")) is None
                     else f"{float(r['reads_per_s']) / 1e3:,.0f}k"))
    if has("cpu_util"):
        cols.append(("CPU share", lambda r: "—" if fnum(r.get("cpu_util")) is None
                     else f"{100 * float(r['cpu_util']):.0f}%"))
    if has("reads_per_s") or has("cpu_util"):
        cols.append(("bound by", lambda r: bound_by(r, ceiling)))
    cols.append(("memory", lambda r: mb(r.get("memory_bytes"))))
    if has("rss_delta_bytes"):
        cols.append(("RSS growth", lambda r: mb(r.get("rss_delta_bytes"))))
    if has("loadavg_1m"):
        cols.append(("load 1m", lambda r: f1(r.get("loadavg_1m"))))
    if s.is_stratavec and any((r.get("failed") or 0) > 0 for r in rows):
        cols.append(("failed", lambda r: str(r.get("failed"))))
    return table([c[0] for c in cols], [[c[1](r) for c in cols] for r in rows])


def phases_section(d: P.Dataset) -> str:
    """Burst and sustained probes before, between and after the rounds."""
    rows = []
    phases = list(dict.fromkeys(r.get("phase") for r in d.device))
    multi = len(d.device_sources) > 1
    for src in d.device_sources:
        for ph in phases:
            here = [r for r in d.device if r.get("_source") == src and r.get("phase") == ph]
            burst = [r for r in here if r.get("mode") == "burst" and r.get("depth") == 64]
            sus = [r for r in here if r.get("mode") == "sustained"]
            if not burst and not sus:
                continue
            b = burst[0] if burst else {}
            u = sus[0] if sus else {}
            per_s = rounds.spread(u.get("per_s") or [])
            row = [ph, i0(b.get("reads_per_s")), i0(u.get("reads_per_s")),
                   rounds.show(per_s, lambda x: f"{x:,.0f}") if per_s else "—",
                   i0(u.get("p50_us")), i0(u.get("p99_us"))]
            if multi:
                row.insert(0, Path(str(src)).stem)
            rows.append(row)
    u0 = next((r for r in d.device if r.get("mode") == "sustained"), {})
    b0 = next((r for r in d.device if r.get("mode") == "burst"), {})
    head = ["phase", f"burst reads/s ({fnum(b0.get('seconds')) or 0:g} s)",
            f"sustained reads/s ({fnum(u0.get('seconds')) or 0:g} s)",
            "its 1-s rates: median (min–max)", "p50 µs", "p99 µs"]
    align = ["l", "r", "r", "r", "r", "r"]
    if multi:
        head, align = ["run"] + head, ["l"] + align
    burst = rounds.spread(r["reads_per_s"] for r in d.device if r.get("mode") == "burst" and r.get("depth") == 64)
    sus = rounds.spread(sustained_rates(d))
    ceiling, _ = ceiling_of(d)
    k = lambda x: f"{x / 1e3:,.1f}k"  # noqa: E731
    txt = (f"Random 4 KiB reads with O_DIRECT on the first stratavec index's own file, "
           f"{u0.get('threads') or b0.get('threads')} threads ({u0.get('backend') or b0.get('backend')}), "
           f"64 in flight per thread (what a search worker keeps at most), measured before the rounds, between "
           f"them and after them: a burst probe of {fnum(b0.get('seconds')) or 0:g} s, then a sustained one of "
           f"{fnum(u0.get('seconds')) or 0:g} s counted after {fnum(u0.get('warmup_s')) or 0:g} s of warm-up. "
           f"Burst: {rounds.show(burst, k)} reads/s; sustained: {rounds.show(sus, k)} reads/s (median and range "
           f"over the probes). The ceiling used above is the median sustained rate"
           + (f", {ceiling:,.0f} reads/s" if ceiling else "") + ".\n")
    return txt + "\n" + table(head, rows, align)


def device_table(d: P.Dataset, device: list[dict], bold: bool = True) -> str:
    srcs = d.device_sources
    best = [d.best_device(src) for src in srcs] if bold else []
    rows = []
    for r in sorted(device, key=lambda r: (srcs.index(r.get("_source")), r.get("block_bytes", 0),
                                             r.get("depth", 0))):
        rate = i0(r.get("reads_per_s"))
        if any(r is b for b in best):
            rate = f"**{rate}**"
        row = [f"{int(r.get('block_bytes', 0)) // 1024} KiB", str(r.get("depth")), str(r.get("threads")),
               str(r.get("backend")), rate, f1(r.get("mb_per_s")), i0(r.get("p50_us")), i0(r.get("p99_us"))]
        if len(srcs) > 1:
            row.insert(0, Path(str(r.get("_source"))).stem)
        rows.append(row)
    head = ["block", "queue depth", "threads", "backend", "reads/s", "MB/s", "p50 µs", "p99 µs"]
    align = ["l", "r", "r", "l", "r", "r", "r", "r"]
    if len(srcs) > 1:
        head, align = ["run"] + head, ["l"] + align
    return table(head, rows, align)


def repetition_note(d: P.Dataset) -> str:
    """How long a timed pass was made to run, from the rows' repetitions."""
    reps = [int(r["repetitions"]) for s in d.systems.values() for r in s.round_rows
            if fnum(r.get("repetitions")) is not None]
    if not reps or max(reps) <= 1:
        return ""
    return (" A timed pass repeats the query set until it has run `--min-pass-seconds` (1 s by default; up to "
            f"{max(reps)} repetitions here; "
            "a pass of a tenth of a second would measure one burst of the device), and QPS, reads and CPU are "
            "per query over all repetitions.")


def notes(d: P.Dataset, ceiling_row: dict | None) -> list[str]:
    out = []
    sv = [s for s in d.systems.values() if s.is_stratavec]
    peers = [s for s in d.systems.values() if not s.is_stratavec]
    out.append("**Reading the targets.** Each figure is a measured sweep point: the fastest point on the system's "
               "recall–QPS Pareto front whose recall@10 reaches the target, no interpolation. "
               "`benchmarks/peers/summarize.py` and the peer table of `shared/REFERENCE.md` interpolate between "
               "sweep points, so their QPS at a target can be higher than the figure here for the same run.")
    rounds_n = max((r.get("rounds") or 1 for s in d.systems.values() for r in s.rows), default=1)
    if rounds_n > 1:
        out.append(f"**Rounds.** The systems were timed round-robin, {rounds_n} rounds: in each round every "
                   "system ran at one sweep value, then all at the next, the order rotating from point to point, so "
                   "a slow spell of the shared disk or CPU falls on all systems alike. A QPS cell is the median "
                   "over rounds (each round's own Pareto point) with its min–max; a ratio is computed within each "
                   "round, then its median and min–max are given. Recall and reads are the same in every round."
                   + repetition_note(d))
    ceiling, how = ceiling_of(d)
    if ceiling_row and ceiling:
        what = ("the median of the sustained probes (see the device section)" if how == "sustained" else
                f"the best of the queue depths measured ({i0(ceiling_row.get('reads_per_s'))}/s at depth "
                f"{ceiling_row.get('depth')})")
        out.append(f"**Device ceiling.** {int(ceiling_row.get('block_bytes', 4096)) // 1024} KiB random reads on "
                   f"the file the first stratavec index lives on, {ceiling_row.get('threads')} threads, "
                   f"{ceiling_row.get('backend')}: {what}, {ceiling:,.0f} reads/s. "
                   "No search that reads R pages per query can exceed that ÷ R queries per second; the ceiling "
                   "column applies it to each system's own reads. It is a 4 KiB figure: a layout reading larger "
                   "pages would need the probe at its page size.")
        spans = []
        for s in sv:
            for r in s.rows:
                rq, bq = fnum(r.get("reads_per_query")), fnum(r.get("bytes_per_query"))
                if rq and bq and abs(bq / rq - int(ceiling_row.get("block_bytes", 4096))) > 1:
                    spans.append(s.display)
                    break
        if spans:
            out.append("**Warning:** " + ", ".join(spans) + " read pages of another size than the probe's block, "
                       "so its ceiling is not exact.")
    if any(fnum(r.get("reads_per_s")) is not None or fnum(r.get("cpu_util")) is not None
           for s in d.systems.values() for r in s.rows):
        out.append(f"**What bound each point.** \"reads/s\" is what the device delivered during the timed "
                   "pass (reads per query × QPS; the kernel's count for stratavec, `/proc/self/io` for peers); "
                   "\"CPU share\" is the process's CPU time over the pass's wall time and its search threads. "
                   f"A point is bound by the **disk** when it drew at least {BOUND_SHARE:.0%} of the sustained "
                   f"ceiling, by the **CPU** when its threads were at least {BOUND_SHARE:.0%} busy, and otherwise "
                   "by its **own depth**: neither was saturated, so more reads in flight would have gone faster.")
    over = []
    for s in sv:
        rate, how_s = ceiling_of(d, s.source)
        for r in s.rows:
            q, rq = fnum(r.get("qps")), fnum(r.get("reads_per_query"))
            if rate and q and rq and q * rq > rate * 1.02:
                over.append(f"{s.display} at L={r.get('L')} ({q:,.0f} QPS × {rq:.1f} reads = {q * rq:,.0f} reads/s "
                            f"vs {rate:,.0f} {how_s})")
    if over:
        out.append("**Above the ceiling:** " + "; ".join(over) + ". The device's rate moves from minute to minute "
                   "on this virtual disk; these passes drew more than the median sustained probe (see the phases "
                   "table for the range the probes saw).")
    if sv:
        r0 = sv[0].first
        out.append(f"**stratavec latency** is each query's time inside the timed batch, with {r0.get('threads')} "
                   f"threads each keeping up to {r0.get('in_flight')} queries in flight (io_uring), so it includes "
                   "the time a query waits behind the others; it is not a one-query-at-a-time latency. Each "
                   "system was opened once and ran one discarded warm-up pass over all queries before the rounds.")
    modes = {}
    for s in peers:
        m = s.first.get("latency_mode")
        if m:
            modes.setdefault(str(m), []).append(s.display)
    for m, names in modes.items():
        out.append(f"**Peer latency** ({', '.join(names)}): {m}. Their p50/p99 are therefore not measured under "
                   "the batch's load, and their QPS comes from the batch call, not from this pass.")
    if any(s.system == "diskannpy-rust" for s in peers):
        out.append("**Reads.** stratavec counts the pages its engine reads (cache hits excluded) and, from "
                   "`/proc/self/io`, what the kernel read; peers' reads are the `/proc/self/io` delta ÷ 4096. "
                   "diskannpy-rust's own `mean_ios` (\"its own count\" column) counts cached nodes as reads and "
                   "over-reports; the kernel figure is the one compared.")
    else:
        out.append("**Reads.** stratavec counts the pages its engine reads (cache hits excluded) and, from "
                   "`/proc/self/io`, what the kernel read; peers' reads are the `/proc/self/io` delta ÷ 4096.")
    out.append("**Memory at search.** stratavec: the bytes `Index::memory()` accounts for (codes, cache, I/O "
               "buffers), enforced against the budget. DiskANN peers: PQ codes + cached node records by their "
               "configuration, excluding small fixed structures (PQ pivots, scratch); the \"RSS growth\" column is "
               "what their process actually grew by. In-RAM peers hold their whole index.")
    budgets = d.budgets()
    # Peers get the budget in MB (10^6 bytes) with 3 decimals from older
    # runs: differences under 0.01% are that rounding, not another budget.
    if budgets and max(budgets.values()) > min(budgets.values()) * 1.0001:
        vals = ", ".join(f"{d.systems[k].display} {v / 1e6:.3f} MB" for k, v in budgets.items())
        out.append(f"**Warning: the disk-resident systems did not get the same memory budget** ({vals}), so "
                   "their caches differ in size: compare with care.")
    th = d.threads
    if len(th) > 1:
        out.append(f"**Warning:** rows were measured with different thread counts ({th}).")
    busy = []
    for s in d.systems.values():
        loads = [fnum(r.get("loadavg_1m")) for r in s.rows]
        loads = [x for x in loads if x is not None]
        thr = fnum(s.first.get("threads")) or 1
        # the 1-minute average also carries the previous system's run for a while: flag clear excess only
        if loads and max(loads) > thr + 1.5:
            busy.append(f"{s.display} (1-minute load up to {max(loads):.1f})")
    if busy:
        out.append("**Warning: the machine was busy** while measuring " + "; ".join(busy) +
                   ": QPS and latency of those points are depressed by other work.")
    failed = [s.display for s in sv if any((r.get("failed") or 0) > 0 for r in s.rows)]
    if failed:
        out.append("**Warning:** some queries failed (I/O errors) in " + ", ".join(failed) + "; see `failed`.")
    if any(s.system.startswith("faiss") for s in peers):
        out.append("faiss IVF-PQ never re-ranks with full vectors, so its recall saturates well below the targets.")
    reused = [s.display for s in d.systems.values()
              if (s.first.get("build") or {}).get("reused") or s.first.get("index_reused")]
    if reused:
        out.append("Indexes reused from an earlier run (build time and peak RSS are from that build): "
                   + ", ".join(reused) + ".")
    out.append("QPS and latency move ±10–25% from run to run on a 2-vCPU virtual machine; reads per query and "
               "recall are exact and repeatable. Compare systems measured in the same run.")
    if d.synthetic:
        out.append("**This data set is synthetic** (seeded clustered Gaussian data from `stratavec synth`): its "
                   "figures say how the engine scales, not how it does on real embeddings.")
    return out


def dataset_section(d: P.Dataset, plots_dir: Path, out_dir: Path, data_dirs: list[Path]) -> str:
    L = []
    caption = P.dataset_caption(d)
    L.append(f"### {caption}\n")
    meta, path = dataset_meta(d, data_dirs)
    desc = describe_meta(meta)
    k = d.k
    info = []
    kind = "**Synthetic data**" if d.synthetic else ("Real data" if desc else "Data")
    info = ([desc] if desc else []) + ([f"files: `{path}`"] if path else [])
    if info or d.synthetic:
        L.append(kind + (": " + "; ".join(info) if info else "") + ".")
    setup = P.setup_caption(d)
    if k:
        setup += f" · k={k}"
    sv = [s for s in d.systems.values() if s.is_stratavec]
    if sv:
        bp = sv[0].first.get("build_params") or {}
        r0 = sv[0].first
        alpha = fnum(bp.get("alpha"))
        setup += (f" · stratavec: graph degree R={bp.get('graph_degree')}, build L={bp.get('complexity')}, "
                  f"alpha={'—' if alpha is None else f'{alpha:.2f}'}, PQ {bp.get('pq_bytes')} B/vector, "
                  f"{bp.get('page_size')} B pages, beam width W={r0.get('beam_width')}")
    L.append(f"\nSetup: {setup}.\n")

    dev = d.best_device()
    # main table
    L.append("#### At recall@10 targets\n")
    L.append("Each cell: **QPS**, the median over rounds (min–max), / reads per query (device-ceiling QPS for "
             "those reads) · the sweep value of the point used. \"never\": no measured point reaches the "
             "target.\n")
    rows = []
    for s in d.systems.values():
        pts = s.points()
        best = max((float(r["recall_at_10"]) for r in pts), default=None)
        rows.append([s.display] + [at_cell(s, t, d) for t in P.TARGETS] +
                    [f4(best), mb(s.first.get("memory_bytes"))])
    L.append(table(["system"] + [f"R@10 ≥ {t:.2f}" for t in P.TARGETS] + ["best R@10", "memory at search"], rows))

    # what bound each system
    if any(fnum(r.get("reads_per_s")) is not None or fnum(r.get("cpu_util")) is not None
           for s in d.systems.values() for r in s.rows):
        ceiling, how = ceiling_of(d)
        L.append("\n#### What bound each system\n")
        L.append("At the points above (medians over rounds): the reads/s it drew (its share of the "
                 f"{how} device ceiling{f', {ceiling:,.0f} reads/s' if ceiling else ''}), the CPU share of its "
                 "search threads, and so what bound it (see the notes).\n")
        rows = [[s.display] + [drew_cell(s, t, d) for t in P.TARGETS] for s in d.systems.values()]
        L.append(table(["system"] + [f"R@10 ≥ {t:.2f}" for t in P.TARGETS], rows))

    # ratios
    peers = [s for s in d.systems.values() if not s.is_stratavec]
    if sv and peers:
        L.append("\n#### stratavec ÷ peer at the same recall\n")
        txt = ("QPS ratio (> 1: stratavec faster), computed within each round and given as the median over "
               "rounds (min–max), and reads-per-query ratio (< 1: stratavec reads less), each system at its own "
               "point from the table above.")
        ram = [s.display for s in peers if not s.reads_from_disk]
        if ram:
            txt += (" " + ", ".join(ram) + " keep" + ("s" if len(ram) == 1 else "") + " the whole index in RAM "
                    "(see \"memory at search\"): not held to the memory budget, an upper reference rather "
                    "than a like-for-like peer.")
        L.append(txt + "\n")
        rows = [[f"{a.display} ÷ {b.display}"] + [ratio_cell(a, b, t) for t in P.TARGETS]
                for a in sv for b in peers]
        L.append(table(["pair"] + [f"R@10 ≥ {t:.2f}" for t in P.TARGETS], rows))

    # build and memory
    L.append("\n#### Build and memory\n")
    rows = []
    for s in d.systems.values():
        r = s.first
        rows.append([s.display, build_cell(s), mb(r.get("build_peak_rss_bytes")), index_size(s),
                     mb(r.get("memory_bytes")), memory_parts(s), mb(r.get("rss_load_delta_bytes"))])
    L.append(table(["system", "build time", "peak build RSS", "index on disk", "memory at search",
                    "of which", "RSS growth at load"], rows,
                   ["l", "r", "r", "l", "r", "l", "r"]))
    stages = [(s.display, stage_note(s)) for s in sv if stage_note(s)]
    if stages:
        L.append("")
        for name, st in stages:
            L.append(f"{name} build stages: {st}.")
    for s in peers:
        bp = s.first.get("build_params")
        if bp:
            L.append(f"\n{s.display} build parameters: " + ", ".join(f"{k}={v}" for k, v in bp.items()) + ".")

    # device
    if any(r.get("mode") for r in d.device):
        L.append("\n#### Device ceiling: burst and sustained\n")
        L.append(phases_section(d))
        scan = [r for r in d.device if r.get("phase") == "before" and r.get("mode") == "burst"]
        if len(scan) > 1:
            L.append("\nBefore the rounds, each queue depth for a burst:\n")
            L.append(device_table(d, scan, bold=False))
    elif d.device:
        L.append("\n#### Device ceiling\n")
        L.append("Random reads with O_DIRECT on the index's file system, as many threads as the searches; the "
                 "bold rate is the ceiling used above" +
                 (" (each run's own, for the systems of that run)" if len(d.device_sources) > 1 else "") + ".\n")
        L.append(device_table(d, d.device))

    # plots
    names = P.plot_files(d.name)
    figs = [("qps", "recall@10 vs QPS"), ("reads", "recall@10 vs reads per query"),
            ("p99", "recall@10 vs p99 latency")]
    present = [(k, t) for k, t in figs if (plots_dir / f"{names[k]}.png").exists()]
    missing = [t for k, t in figs if (plots_dir / f"{names[k]}.png").exists() is False]
    if present:
        L.append("\n#### Plots\n")
        for k, t in present:
            png = rel(plots_dir / f"{names[k]}.png", out_dir)
            svg = plots_dir / f"{names[k]}.svg"
            L.append(f"![{t} — {d.display}]({png})")
            if svg.exists():
                L.append(f"<sub>[{t} (SVG)]({rel(svg, out_dir)})</sub>")
            L.append("")
    if missing:
        print(f"report.py: no plot in {plots_dir} for {d.name}: {', '.join(missing)} "
              "(run plot.py first; p99/reads plots exist only when a system has those fields)", file=sys.stderr)

    # sweeps
    L.append("\n#### Full sweeps\n")
    for s in d.systems.values():
        head = s.display
        r = s.first
        if r.get("version") and not s.is_stratavec:
            head += f" (`{s.system}`)"
        L.append(f"**{head}** — {len(s.rows)} points, sweep over {param_name(s)}\n")
        L.append(sweep_table(s, d))
        L.append("")

    L.append("#### Notes\n")
    for n in notes(d, dev):
        L.append(f"- {n}")
    return "\n".join(L)


def second_run_section(first: P.Dataset, second: P.Dataset, path: str, out_dir: Path) -> str:
    """The ratios of a second run of the same command, beside the first's:
    do the two runs' per-round ranges overlap?"""
    L = [f"#### A second run, minutes later (`{rel(Path(path), out_dir)}`)\n"]
    L.append("The same bench command run again after a pause: each ratio's median over rounds (min–max) in "
             "each run, and whether the two ranges overlap (they should: that is what the rounds are for). "
             "Sustained device rate: first run " +
             rounds.show(rounds.spread(sustained_rates(first)), lambda x: f"{x / 1e3:,.1f}k") +
             ", second run " + rounds.show(rounds.spread(sustained_rates(second)), lambda x: f"{x / 1e3:,.1f}k") +
             " reads/s.\n")
    rows = []
    overlap_all = True
    for a in [s for s in first.systems.values() if s.is_stratavec]:
        for b in [s for s in first.systems.values() if not s.is_stratavec]:
            a2, b2 = second.systems.get(a.key), second.systems.get(b.key)
            if a2 is None or b2 is None:
                continue
            row = [f"{a.display} ÷ {b.display}"]
            for t in P.TARGETS:
                r1 = rounds.spread(rounds.ratios_by_round(a.round_rows, b.round_rows, t))
                r2 = rounds.spread(rounds.ratios_by_round(a2.round_rows, b2.round_rows, t))
                if r1 is None or r2 is None:
                    row.append("—")
                    continue
                ok = r1["min"] <= r2["max"] and r2["min"] <= r1["max"]
                overlap_all &= ok
                fmt = lambda x: f"{x:.2f}×"  # noqa: E731
                row.append(f"{rounds.show(r1, fmt)} · {rounds.show(r2, fmt)} · "
                           + ("overlap" if ok else "**no overlap**"))
            rows.append(row)
    if not rows:
        return ""
    L.append(table(["pair: first run · second run"] + [f"R@10 ≥ {t:.2f}" for t in P.TARGETS], rows))
    L.append("\n" + ("Every pair's ranges overlap." if overlap_all else
                     "**Some ranges do not overlap**: the device or the machine changed between the runs "
                     "by more than the rounds within a run saw."))
    return "\n".join(L)


def section_body(datasets, results, plots_dir: Path, out: Path, command: str, data_dirs,
                 second: tuple[str, "OrderedDict"] | None = None) -> str:
    """The text between the section's markers (bench.py report splices it)."""
    out_dir = out.resolve().parent
    plots_dir = plots_dir.resolve()
    names = ", ".join(d.display for d in datasets.values() if d.systems)
    L = [f"## Results: {names}", ""]
    L.append("### Reproduce\n")
    L.append("```sh")
    L.append(command.strip())
    L.append("```\n")
    L.append("### Machine\n")
    L.append(machine_section(datasets, results, out_dir))
    for d in datasets.values():
        if not d.systems:
            continue
        L.append("")
        L.append(dataset_section(d, plots_dir, out_dir, data_dirs))
        if second and d.name in second[1]:
            L.append("")
            L.append(second_run_section(d, second[1][d.name], second[0], out_dir))
    return "\n".join(L) + "\n"
