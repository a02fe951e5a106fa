#!/usr/bin/env python3
"""Plots `stratavec bench` results: recall@10 vs QPS (with each stratavec
system's device ceiling), recall@10 vs reads per query, recall@10 vs p99
latency. One figure of each per data set, as PNG and SVG.

  benchmarks/.venvs/plot/bin/python benchmarks/plot.py RESULTS.jsonl [more.jsonl ...] \\
      --out-dir benchmarks/plots [--title-suffix "..."] [--dataset-name NAME]

Input rows are the JSON lines of `stratavec bench` (kind "search": one per
(system, L); kind "device": the device ceiling) and of
`benchmarks/peers/run_peer.py` (no `kind`, no `dataset`; see
benchmarks/peers/README.md). A row without `dataset` takes `--dataset-name`,
else the last part of its `data` path, else the results file's name.

This module also holds the row loading, Pareto and machine helpers that
report.py uses; matplotlib is imported only when plotting, so report.py runs
on the standard library alone.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import sys
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import rounds  # noqa: E402  (rows per round: median and range, per-round ratios)
from rounds import RECALL_EPS, at_recall, pareto  # noqa: E402,F401  (re-exported for report.py)

TARGETS = (0.90, 0.95, 0.99)

# Okabe–Ito colours (distinguishable with the common colour-vision
# deficiencies) first, then four more, so the eight profiles of the headline
# never share a colour and a marker.
STRATAVEC_COLORS = ["#D55E00", "#CC79A7", "#000000", "#8B4513", "#6A3D9A", "#E7298A", "#A6761D", "#666666"]
PEER_STYLE = {
    "diskannpy": ("#0072B2", "s"),
    "diskannpy-rust": ("#E69F00", "D"),
    "hnswlib": ("#009E73", "^"),
    "faiss-ivfpq": ("#56B4E9", "v"),
}
OTHER_COLORS = ["#999999", "#F0E442", "#7F3C8D", "#11A579"]
STRATAVEC_MARKERS = ["o", "P", "X", "h", "p", "<", ">", "8"]


# --------------------------------------------------------------------------
# rows


def is_search(r: dict) -> bool:
    k = r.get("kind")
    if k is not None:
        return k == "search"
    # run_peer.py output read directly: no `kind`, but a sweep row has qps.
    return "qps" in r and "system" in r


def is_device(r: dict) -> bool:
    return r.get("kind") == "device"


fnum = rounds.num  # a finite float or None (JSON null, missing, NaN)


@dataclass
class System:
    key: str  # unique within its data set
    system: str  # the `system` field
    source: str  # results file
    rows: list = field(default_factory=list)  # one a sweep value: the median over rounds
    round_rows: list = field(default_factory=list)  # one a sweep value and round, as measured
    color: str = "#999999"
    marker: str = "o"

    @property
    def first(self) -> dict:
        return self.rows[0]

    @property
    def is_stratavec(self) -> bool:
        return self.system.startswith("stratavec")

    @property
    def display(self) -> str:
        r = self.first
        if self.is_stratavec:
            prof = self.system[len("stratavec-"):] if self.system.startswith("stratavec-") else ""
            name = f"stratavec · {prof}" if prof else "stratavec"
        else:
            name = r.get("label") or self.system
            if r.get("version"):
                name = f"{name} v{r['version']}"
        if self.key != self.system:  # same system from several files
            name += f" [{Path(self.source).stem}]"
        return name

    @property
    def reads_from_disk(self) -> bool:
        return any((fnum(r.get("reads_per_query")) or 0) > 0 for r in self.rows)

    @property
    def has_p99(self) -> bool:
        return any(fnum(r.get("p99_us")) is not None for r in self.rows)

    @property
    def sweep_param(self) -> str:
        return self.first.get("sweep_param") or "L"

    def points(self) -> list[dict]:
        """Rows with a recall@10 and a QPS, sorted by sweep value."""
        return [r for r in self.rows
                if fnum(r.get("recall_at_10")) is not None and fnum(r.get("qps")) is not None]


@dataclass
class Dataset:
    name: str
    systems: "OrderedDict[str, System]" = field(default_factory=OrderedDict)
    device: list = field(default_factory=list)
    sources: list = field(default_factory=list)

    def search_rows(self):
        for s in self.systems.values():
            yield from s.rows

    @property
    def synthetic(self) -> bool:
        return "synth" in self.name.lower()

    @property
    def display(self) -> str:
        return self.name + (" (synthetic)" if self.synthetic else "")

    def _first(self, *getters):
        for r in self.search_rows():
            for g in getters:
                v = g(r)
                if v is not None:
                    return v
        return None

    @property
    def n(self):
        return self._first(lambda r: r.get("n"), lambda r: (r.get("build") or {}).get("n"))

    @property
    def d(self):
        return self._first(lambda r: r.get("d"), lambda r: (r.get("build") or {}).get("dim"),
                           lambda r: (r.get("build_params") or {}).get("dim"))

    @property
    def nq(self):
        return self._first(lambda r: r.get("nq"))

    @property
    def k(self):
        return self._first(lambda r: r.get("k"))

    @property
    def threads(self) -> list:
        return sorted({r["threads"] for r in self.search_rows() if r.get("threads") is not None})

    def budgets(self) -> "OrderedDict[str, float]":
        """Memory budget in bytes of each system that sizes itself by one
        (stratavec; DiskANN peers, whose memory_model records what they used).
        In-RAM peers take the argument but hold their whole index."""
        out = OrderedDict()
        for s in self.systems.values():
            r = s.first
            mm = r.get("memory_model") or {}
            if fnum(r.get("memory_budget_bytes")) is not None:
                out[s.key] = float(r["memory_budget_bytes"])
            elif fnum(mm.get("memory_budget_bytes")) is not None:
                out[s.key] = float(mm["memory_budget_bytes"])
        return out

    @property
    def budget_bytes(self) -> float | None:
        b = self.budgets()
        for s in self.systems.values():  # stratavec's, which the peers were set from
            if s.is_stratavec and s.key in b:
                return b[s.key]
        if b:
            return next(iter(b.values()))
        mbs = [fnum(r.get("memory_budget_mb")) for r in self.search_rows()]
        mbs = [x for x in mbs if x is not None]
        return mbs[0] * 1e6 if mbs else None  # run_peer.py: 1 MB = 10^6 B

    def best_device(self, source: str | None = None) -> dict | None:
        """The fastest device row: of `source`'s run when it has any (each
        bench run probes its own device), else of the whole data set."""
        rows = [r for r in self.device if fnum(r.get("reads_per_s")) is not None]
        own = [r for r in rows if r.get("_source") == source]
        rows = own or rows
        return max(rows, key=lambda r: r["reads_per_s"]) if rows else None

    def sustained_rates(self, source: str | None = None) -> list[float]:
        """The sustained probes' reads/s (of `source`'s run when it has any)."""
        own = [r for r in self.device if r.get("_source") == source]
        return [float(r["reads_per_s"]) for r in (own or self.device)
                if r.get("mode") == "sustained" and fnum(r.get("reads_per_s")) is not None]

    def ceiling(self, source: str | None = None) -> tuple[float | None, str]:
        """The rate searches are held to: the median sustained probe of the
        run; for runs without one (before rounds), the best burst probe."""
        sus = self.sustained_rates(source)
        if sus:
            return rounds.spread(sus)["median"], "sustained"
        dev = self.best_device(source)
        return (fnum(dev.get("reads_per_s")) if dev else None), "burst"

    @property
    def device_sources(self) -> list:
        return list(OrderedDict.fromkeys(r.get("_source") for r in self.device))


def _dataset_of(row: dict, override: str | None, path: Path) -> str:
    if row.get("dataset"):
        return str(row["dataset"])
    if override:
        return override
    if row.get("data"):
        return Path(str(row["data"]).rstrip("/")).name
    return path.stem


def load(paths, dataset_name: str | None = None) -> "OrderedDict[str, Dataset]":
    datasets: "OrderedDict[str, Dataset]" = OrderedDict()
    per_file: list = []  # (path, search rows [(ds, row)], device rows)
    for p in map(Path, paths):
        search, device = [], []
        with open(p, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    r = json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"{p}:{lineno}: not JSON ({e})")
                if is_device(r):
                    device.append(r)
                elif is_search(r):
                    search.append((_dataset_of(r, dataset_name, p), r))
        per_file.append((p, search, device))

    # Which files each (data set, system) came from: a system measured in two
    # files (two runs) is kept as two curves, named by file.
    seen: dict = {}
    for p, search, _ in per_file:
        for ds, r in search:
            seen.setdefault((ds, r["system"]), [])
            if str(p) not in seen[(ds, r["system"])]:
                seen[(ds, r["system"])].append(str(p))

    for p, search, device in per_file:
        for ds, r in search:
            d = datasets.setdefault(ds, Dataset(ds))
            if str(p) not in d.sources:
                d.sources.append(str(p))
            sysname = r["system"]
            key = sysname if len(seen[(ds, sysname)]) == 1 else f"{sysname} [{p.stem}]"
            s = d.systems.setdefault(key, System(key, sysname, str(p)))
            s.rows.append(r)
        file_ds = list(OrderedDict.fromkeys(ds for ds, _ in search))
        for r in device:
            ds = _device_dataset(r, file_ds, datasets, dataset_name, p)
            d = datasets.setdefault(ds, Dataset(ds))
            r["_source"] = str(p)
            d.device.append(r)
            if str(p) not in d.sources:
                d.sources.append(str(p))

    for d in datasets.values():
        # stratavec first, then peers in the order they ran
        items = sorted(d.systems.items(), key=lambda kv: (not kv[1].is_stratavec,))
        d.systems = OrderedDict(items)
        si = oi = 0
        for s in d.systems.values():
            s.round_rows = sorted(s.rows, key=lambda r: (fnum(r.get("L")) or 0, rounds.round_of(r)))
            s.rows = rounds.collapse(s.round_rows)
            if s.is_stratavec:
                s.color = STRATAVEC_COLORS[si % len(STRATAVEC_COLORS)]
                s.marker = STRATAVEC_MARKERS[si % len(STRATAVEC_MARKERS)]
                si += 1
            elif s.system in PEER_STYLE:
                s.color, s.marker = PEER_STYLE[s.system]
            else:
                s.color, s.marker = OTHER_COLORS[oi % len(OTHER_COLORS)], "*"
                oi += 1
    return datasets


def _device_dataset(r, file_ds, datasets, override, path) -> str:
    """Device rows carry no data set: the bench probes the first index's
    pages.bin, whose directory is named `{dataset}-{profile}-R..`."""
    idx = Path(str(r.get("file", ""))).parent.name
    names = list(file_ds) + [n for n in datasets if n not in file_ds]
    match = [n for n in names if idx.startswith(n + "-")]
    if match:
        return max(match, key=len)
    if len(file_ds) >= 1:
        return file_ds[0]
    return override or path.stem


# --------------------------------------------------------------------------
# machine


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def ncpu() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 0


def mem_total_bytes() -> int | None:
    try:
        for line in open("/proc/meminfo", encoding="utf-8"):
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def kernel() -> str:
    return platform.release()


def filesystem_of(path) -> tuple[str, str, str] | None:
    """(fstype, device, mount point) of the mount holding `path`."""
    try:
        p = os.path.realpath(path)
        best = None
        for line in open("/proc/mounts", encoding="utf-8"):
            dev, mnt, fstype = line.split()[:3]
            mnt = mnt.replace("\\040", " ")
            if p == mnt or p.startswith(mnt.rstrip("/") + "/") or mnt == "/":
                if best is None or len(mnt) >= len(best[2]):
                    best = (fstype, dev, mnt)
        return best
    except OSError:
        return None


def machine_line() -> str:
    return f"{ncpu()} vCPU {cpu_model()} · Linux {kernel()}"


# --------------------------------------------------------------------------
# formatting


def mb(b) -> str:
    b = fnum(b)
    return "—" if b is None else f"{b / 1e6:,.1f} MB"


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def plot_files(dataset: str) -> dict:
    """Base names (no extension) of the figures for a data set."""
    s = slug(dataset)
    return {"qps": f"{s}-recall-qps", "reads": f"{s}-recall-reads", "p99": f"{s}-recall-p99"}


def dataset_caption(d: Dataset) -> str:
    parts = [d.display]
    if d.n is not None and d.d is not None:
        parts.append(f"n={int(d.n):,}, d={int(d.d)}")
    if d.nq is not None:
        parts.append(f"{int(d.nq):,} queries")
    return " · ".join(parts)


def setup_caption(d: Dataset) -> str:
    parts = []
    th = d.threads
    if th:
        parts.append(f"{'/'.join(map(str, th))} search thread{'s' if th != [1] else ''}")
    b = d.budget_bytes
    if b is not None:
        s = f"memory budget {b / 1e6:.1f} MB"
        if d.n and d.d:
            s += f" ({100 * b / (d.n * d.d * 4):.0f}% of raw vectors)"
        parts.append(s)
    return " · ".join(parts)


# --------------------------------------------------------------------------
# plotting


def _mpl():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    matplotlib.rcParams.update({
        "svg.fonttype": "none",  # text stays text: small, searchable SVG
        "font.size": 10,
        "axes.titlesize": 11,
        "legend.fontsize": 9,
        "figure.dpi": 100,
    })
    return plt, FixedLocator, FuncFormatter, NullLocator


RECALL_TICKS = [0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.998, 0.999, 0.9995, 0.9999]
RECALL_CLIP = 0.99995  # logit axis: recall 1.0 is drawn here, under a tick labelled "1"


def _recall_axis(ax, recalls, linear: bool, FixedLocator, FuncFormatter, NullLocator):
    lo = min(recalls) if recalls else 0.5
    hi = max(recalls) if recalls else 0.99
    if linear:
        ax.set_xlim(max(0.0, lo - 0.02), min(1.0, hi + 0.01) if hi < 0.995 else 1.001)
        return
    ax.set_xscale("logit")
    lo_x = max(0.05, lo - (1 - lo) * 0.25)
    perfect = hi >= 1 - 1e-12
    hi_x = 1 - (1 - RECALL_CLIP) * 0.6 if perfect else min(1 - (1 - RECALL_CLIP) * 0.6, 1 - (1 - hi) * 0.6)
    hi_x = max(hi_x, 0.992)  # always show the 0.99 target
    ax.set_xlim(lo_x, hi_x)
    ticks = [t for t in RECALL_TICKS if lo_x <= t <= hi_x and (1 - t) > 1.5 * (1 - RECALL_CLIP)]
    if perfect:
        ticks.append(RECALL_CLIP)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: "1" if v == RECALL_CLIP else f"{v:g}"))


def _rx(r: float, linear: bool) -> float:
    return r if linear else min(max(r, 1e-4), RECALL_CLIP)


def _targets(ax, linear):
    """The recall targets the report reads off, marked along the top."""
    for t in TARGETS:
        x = _rx(t, linear)
        ax.axvline(x, color="#999999", lw=0.9, ls=(0, (2, 3)), zorder=1)
        ax.annotate(f"{t:.2f}", (x, 1.0), xycoords=("data", "axes fraction"), xytext=(2, -10),
                    textcoords="offset points", fontsize=7, color="#777777")


def _log_labels(ax):
    """Plain numbers (1,000 not 10^3) at 1-2-5 steps on a log y axis."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    def fmt(v, _):
        if v >= 100:
            return f"{v:,.0f}"
        return f"{v:g}"

    lo, hi = ax.get_ylim()
    subs = (1.0, 2.0, 5.0) if hi / max(lo, 1e-12) < 1e4 else (1.0,)
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=subs))
    ax.yaxis.set_major_formatter(FuncFormatter(fmt))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _finish(fig, ax, title: str, d: Dataset, suffix: str, note: str, out_dir: Path, base: str) -> list[Path]:
    lines = [f"{title} — {dataset_caption(d)}", setup_caption(d), " · ".join(x for x in [machine_line(), suffix] if x)]
    ax.set_title("\n".join(x for x in lines if x), loc="left")
    ax.grid(True, which="major", color="#dddddd", lw=0.7)
    ax.grid(True, which="minor", color="#eeeeee", lw=0.4)
    ax.set_axisbelow(True)
    handles, labels = ax.get_legend_handles_labels()
    legend = None
    if handles:
        legend = ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                           borderaxespad=0.0, frameon=False)
    extra = [legend] if legend else []
    if note:
        t = fig.text(0.01, -0.01, note, ha="left", va="top", fontsize=8, color="#444444", wrap=False)
        extra.append(t)
    out = []
    for ext in ("png", "svg"):
        p = out_dir / f"{base}.{ext}"
        fig.savefig(p, dpi=150, bbox_inches="tight", bbox_extra_artists=extra, metadata=_svg_meta(ext))
        out.append(p)
    return out


def _svg_meta(ext):
    # No creation date in the SVG: regenerating unchanged results leaves the file unchanged.
    return {"Date": None} if ext == "svg" else None


def _annotate_sweep(ax, xs, ys, rows, color, rising=False):
    """Sweep values beside the points, on the side the curve does not go."""
    off = (7, -10) if rising else (4, 4)
    for x, y, r in zip(xs, ys, rows):
        L = r.get("L")
        if L is None:
            continue
        ax.annotate(f"{L}", (x, y), textcoords="offset points", xytext=off, fontsize=7, color=color,
                    alpha=0.85)


def plot_dataset(d: Dataset, out_dir: Path, suffix: str, linear: bool, annotate: bool) -> list[Path]:
    plt, FixedLocator, FuncFormatter, NullLocator = _mpl()

    written: list[Path] = []
    names = plot_files(d.name)
    dev = d.best_device()
    dev_rate, dev_how = d.ceiling()
    all_recalls = [float(r["recall_at_10"]) for s in d.systems.values() for r in s.points()]
    axis = (FixedLocator, FuncFormatter, NullLocator)
    label_suffix_note = ("recall@10 axis is logit-scaled (it spreads 0.9–0.999 apart); the tick \"1\" marks "
                         "recall 1.0 exactly." if not linear else "")

    # (a) recall vs QPS
    fig, ax = plt.subplots(figsize=(10, 6))
    qmin, qmax = math.inf, 0.0
    for s in d.systems.values():
        pts = s.points()
        if not pts:
            continue
        xs = [_rx(float(r["recall_at_10"]), linear) for r in pts]
        ys = [float(r["qps"]) for r in pts]
        qmin, qmax = min(qmin, *ys), max(qmax, *ys)
        front = pareto(pts)
        ax.plot([_rx(float(r["recall_at_10"]), linear) for r in front], [float(r["qps"]) for r in front],
                color=s.color, lw=2.0, zorder=3)
        front_ids = {id(r) for r in front}
        on = [(x, y) for x, y, r in zip(xs, ys, pts) if id(r) in front_ids]
        off = [(x, y) for x, y, r in zip(xs, ys, pts) if id(r) not in front_ids]
        ax.scatter([p[0] for p in on], [p[1] for p in on], color=s.color, marker=s.marker, s=36, zorder=4,
                   edgecolors="white", linewidths=0.6)
        if off:
            ax.scatter([p[0] for p in off], [p[1] for p in off], facecolors="none", edgecolors=s.color,
                       marker=s.marker, s=36, zorder=4, linewidths=1.0)
        # The range over rounds, where there were several.
        spans = [(x, float(r["qps_min"]), float(r["qps_max"])) for x, r in zip(xs, pts)
                 if fnum(r.get("qps_min")) is not None and (r.get("rounds") or 1) > 1]
        if spans:
            ax.vlines([p[0] for p in spans], [p[1] for p in spans], [p[2] for p in spans], color=s.color,
                      lw=1.0, alpha=0.7, zorder=3)
            qmin, qmax = min(qmin, *(p[1] for p in spans)), max(qmax, *(p[2] for p in spans))
        ax.plot([], [], color=s.color, marker=s.marker, lw=2.0, label=s.display)
        if annotate and s.is_stratavec:
            _annotate_sweep(ax, xs, ys, pts, s.color)
        s_rate, _ = d.ceiling(s.source)
        if s.is_stratavec and s_rate:
            cpts = [r for r in pts if (fnum(r.get("reads_per_query")) or 0) > 0]
            cpts.sort(key=lambda r: float(r["recall_at_10"]))
            if cpts:
                cy = [s_rate / float(r["reads_per_query"]) for r in cpts]
                qmax = max(qmax, *cy)
                qmin = min(qmin, *cy)
                ax.plot([_rx(float(r["recall_at_10"]), linear) for r in cpts], cy, color=s.color, lw=1.3,
                        ls="--", alpha=0.8, zorder=2, label=f"{s.display}: device ceiling")
    ax.set_yscale("log")
    if qmax > 0:
        ax.set_ylim(qmin / 1.5, qmax * 1.6)
    _log_labels(ax)
    _recall_axis(ax, all_recalls, linear, *axis)
    _targets(ax, linear)
    ax.set_xlabel("recall@10")
    ax.set_ylabel("queries per second (log)")
    note = ["Solid line: each system's Pareto front (no other sweep point has both higher recall and higher QPS); "
            "filled markers are on it, hollow ones are dominated."]
    if any((r.get("rounds") or 1) > 1 for s in d.systems.values() for r in s.rows):
        note.append("Markers: the median QPS over the rounds; vertical bars: its min–max.")
    if dev_rate and dev_how == "sustained":
        note.append(f"Dashed: device ceiling = the median sustained {int(dev.get('block_bytes', 4096)) // 1024} KiB "
                    f"random read rate ({dev_rate:,.0f}/s at queue depth 64, {dev.get('threads')} threads, "
                    f"{dev.get('backend')}) ÷ the point's reads per query"
                    + ("; each run's own probe where results come from several runs." if len(d.device_sources) > 1
                       else "."))
    elif dev_rate:
        note.append(f"Dashed: device ceiling = best measured {int(dev.get('block_bytes', 4096)) // 1024} KiB random "
                    f"read rate ({dev_rate:,.0f}/s at queue depth {dev.get('depth')}, {dev.get('threads')} threads, "
                    f"{dev.get('backend')}) ÷ the point's reads per query"
                    + ("; each run's own probe where results come from several runs." if len(d.device_sources) > 1
                       else "."))
    if annotate and any(s.is_stratavec for s in d.systems.values()):
        note.append("Numbers beside stratavec points: search list size L.")
    if label_suffix_note:
        note.append(label_suffix_note)
    written += _finish(fig, ax, "recall@10 vs QPS", d, suffix, "\n".join(note), out_dir, names["qps"])
    plt.close(fig)

    # (b) recall vs reads per query
    disk = [s for s in d.systems.values() if s.reads_from_disk]
    if disk:
        fig, ax = plt.subplots(figsize=(10, 6))
        recalls = []
        for s in disk:
            pts = [r for r in s.points() if fnum(r.get("reads_per_query")) is not None]
            xs = [_rx(float(r["recall_at_10"]), linear) for r in pts]
            ys = [float(r["reads_per_query"]) for r in pts]
            recalls += [float(r["recall_at_10"]) for r in pts]
            ax.plot(xs, ys, color=s.color, marker=s.marker, lw=1.8, ms=6, label=s.display,
                    markeredgecolor="white", markeredgewidth=0.6)
            if annotate and s.is_stratavec:
                _annotate_sweep(ax, xs, ys, pts, s.color, rising=True)
        ax.set_yscale("log")
        ax.margins(y=0.08)
        _recall_axis(ax, recalls, linear, *axis)
        _targets(ax, linear)
        ax.set_xlabel("recall@10")
        ax.set_ylabel("4 KiB reads per query (log)")
        _log_labels(ax)
        note = ["Points in sweep order (L, or the peer's sweep value)."]
        in_ram = [s.display for s in d.systems.values() if not s.reads_from_disk]
        if in_ram:
            note[0] += " Not shown (no reads from disk): " + ", ".join(in_ram) + "."
        how = []
        if any(s.is_stratavec for s in disk):
            how.append("stratavec: pages its engine read (cache hits excluded)")
        if any(not s.is_stratavec for s in disk):
            how.append("peers: /proc/self/io read_bytes ÷ 4096 around the batch call (the DiskANN engines read "
                       "with O_DIRECT, so the page cache hides nothing)")
        note.append("; ".join(how) + ".")
        if label_suffix_note:
            note.append(label_suffix_note)
        written += _finish(fig, ax, "recall@10 vs reads per query", d, suffix, "\n".join(note), out_dir,
                           names["reads"])
        plt.close(fig)

    # (c) recall vs p99 latency
    lat = [s for s in d.systems.values() if s.has_p99]
    if lat:
        fig, ax = plt.subplots(figsize=(10, 6))
        recalls = []
        separate = False
        for s in lat:
            pts = [r for r in s.points() if fnum(r.get("p99_us")) is not None]
            xs = [_rx(float(r["recall_at_10"]), linear) for r in pts]
            ys = [float(r["p99_us"]) / 1000.0 for r in pts]
            recalls += [float(r["recall_at_10"]) for r in pts]
            mode = str(s.first.get("latency_mode") or "")
            label = s.display
            if "separate" in mode:
                lt = s.first.get("latency_threads")
                label += f" † ({lt} thread{'s' if lt != 1 else ''})" if lt else " †"
                separate = True
            ax.plot(xs, ys, color=s.color, marker=s.marker, lw=1.8, ms=6, label=label,
                    markeredgecolor="white", markeredgewidth=0.6)
        ax.set_yscale("log")
        ax.margins(y=0.08)
        _recall_axis(ax, recalls, linear, *axis)
        _targets(ax, linear)
        _log_labels(ax)
        ax.set_xlabel("recall@10")
        ax.set_ylabel("p99 latency, ms (log)")
        note = []
        sv = [s for s in lat if s.is_stratavec]
        if sv:
            r0 = sv[0].first
            note.append(f"stratavec: latency of each query inside the timed batch ({r0.get('threads')} threads, "
                        f"up to {r0.get('in_flight')} queries in flight per thread), so it includes waiting "
                        "behind the other in-flight queries.")
        if separate:
            note.append("† peers: p99 from a separate pass of single-query calls after the batch (one query in "
                        "flight per Python thread; thread count in brackets), not under the batch's load.")
        skipped = [s.display for s in d.systems.values() if not s.has_p99]
        if skipped:
            note.append("No latency recorded for: " + ", ".join(skipped) + ".")
        if label_suffix_note:
            note.append(label_suffix_note)
        written += _finish(fig, ax, "recall@10 vs p99 latency", d, suffix, "\n".join(note), out_dir, names["p99"])
        plt.close(fig)
    return written


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="+", help="JSON lines from `stratavec bench` or run_peer.py")
    p.add_argument("--out-dir", required=True, type=Path)
    p.add_argument("--title-suffix", default="", help="appended to every figure's second title line")
    p.add_argument("--dataset-name", help="data set of rows that carry no `dataset` field")
    p.add_argument("--linear-recall", action="store_true", help="linear recall axis instead of logit")
    p.add_argument("--no-annotate", action="store_true", help="do not print L beside stratavec points")
    a = p.parse_args(argv)
    datasets = load(a.results, a.dataset_name)
    if not any(d.systems for d in datasets.values()):
        print("plot.py: no search rows in " + ", ".join(a.results), file=sys.stderr)
        return 1
    a.out_dir.mkdir(parents=True, exist_ok=True)
    for d in datasets.values():
        if not d.systems:
            continue
        for f in plot_dataset(d, a.out_dir, a.title_suffix, a.linear_recall, not a.no_annotate):
            print(f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
