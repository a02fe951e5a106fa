#!/usr/bin/env python3
"""Build (or reuse) one peer's index, sweep its search parameter, print one JSON
object per sweep value on stdout. Logs go to stderr. Run it with the peer's
own venv interpreter, one process per peer:

  benchmarks/.venvs/<peer>/bin/python benchmarks/peers/run_peer.py \
      --peer diskannpy|diskannpy-rust|hnswlib|faiss-ivfpq|lancedb|bruteforce \
      --data DIR --index-dir DIR --threads 2 -k 10 --sweep 10,20,40 \
      --memory-budget-mb 35.9 --pq-bytes 48 --graph-degree 64 \
      --complexity 128 --alpha 1.2 --beam-width 4 [--rebuild] [--serve]

With --serve (how `stratavec bench` runs it, round-robin with the other
systems) the sweep is not run: after loading, it prints {"ready": true} and
then answers each line of stdin, {"L": 40, "round": 1}, with that point's
row (or {"error": "..."}), until end of input.

See README.md beside this file for every field and measurement rule.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from peer_common import (  # noqa: E402
    PAGE,
    requests,
    JsonOut,
    data_signature,
    dir_bytes,
    latency_pass,
    log,
    proc_io,
    proc_status_bytes,
    read_bin_header,
    read_fbin,
    read_gt,
    recall_at,
)

PEERS = {
    "diskannpy": "diskannpy_cpp",
    "diskannpy-rust": "diskannpy_rust",
    "hnswlib": "hnswlib_peer",
    "faiss-ivfpq": "faiss_ivfpq",
    "lancedb": "lancedb_peer",
    "bruteforce": "bruteforce_peer",
}
PARAMS_FILE = "params.json"
BUILDING_MARK = ".peer-index-building"
PARAMS_VERSION = 1


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--peer", required=True, choices=sorted(PEERS))
    p.add_argument("--data", required=True, help="dir with base.fbin, query.fbin, gt.ibin")
    p.add_argument("--index-dir", required=True, help="this peer's index directory (created if missing)")
    p.add_argument("--threads", type=int, default=2, help="search threads")
    p.add_argument("-k", type=int, default=10)
    p.add_argument("--sweep", default="10,20,40,60,100,150,200",
                   help="L (DiskANN), ef (hnswlib), nprobe (faiss), nprobes (lancedb)")
    p.add_argument("--memory-budget-mb", type=float, default=35.9, help="search RAM for DiskANN, 1 MB = 10^6 B")
    p.add_argument("--pq-bytes", type=int, default=48)
    p.add_argument("--graph-degree", type=int, default=64, help="R (DiskANN); hnswlib M defaults to R/2")
    p.add_argument("--complexity", type=int, default=128, help="build list size L_build (DiskANN)")
    p.add_argument("--alpha", type=float, default=1.2)
    p.add_argument("--beam-width", type=int, default=4, help="W (DiskANN)")
    p.add_argument("--rebuild", action="store_true", help="rebuild even if params.json matches")
    p.add_argument("--build-threads", type=int, default=0, help="build threads (default: --threads)")
    p.add_argument("--build-memory-gb", type=float, default=4.0, help="DiskANN build_memory_maximum")
    p.add_argument("--hnsw-m", type=int, default=0, help="hnswlib M (default graph_degree/2)")
    p.add_argument("--hnsw-ef-construction", type=int, default=200)
    p.add_argument("--ivf-nlist", type=int, default=1024)
    p.add_argument(
        "--latency",
        choices=["auto", "off"],
        default="auto",
        help="auto: after each batch run, a second pass of single-query calls gives per-query latency",
    )
    p.add_argument("--max-queries", type=int, default=0, help="use only the first N queries (0 = all)")
    p.add_argument("--min-pass-seconds", type=float, default=0.0,
                   help="repeat each sweep point's batch call until it has run this long (QPS, reads and CPU "
                        "per query over all repetitions; recall from the first)")
    p.add_argument("--serve", action="store_true", help="answer sweep points read from stdin (see above)")
    p.add_argument("--filtered", action="store_true",
                   help="with --serve: answer filtered band points (filtered_peer.py) instead")
    p.add_argument("--_build-child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--_build-result", default="", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.build_threads <= 0:
        a.build_threads = a.threads
    a.sweep_values = [int(x) for x in a.sweep.split(",") if x.strip()]
    if not a.sweep_values:
        p.error("--sweep is empty")
    return a


def data_paths(data_dir: str) -> dict:
    paths = {name: os.path.join(data_dir, f"{name}.{ext}") for name, ext in (("base", "fbin"), ("query", "fbin"), ("gt", "ibin"))}
    for name, path in paths.items():
        if not os.path.isfile(path):
            raise SystemExit(f"missing {name} file: {path}")
    return paths


def read_params(index_dir: str):
    path = os.path.join(index_dir, PARAMS_FILE)
    if not os.path.isfile(path):
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def clear_index_dir(index_dir: str) -> None:
    """Empty index_dir, but only if it is ours (params.json or the building
    mark) or already empty: never delete files this script did not write."""
    if not os.path.isdir(index_dir):
        os.makedirs(index_dir)
        return
    entries = os.listdir(index_dir)
    if not entries:
        return
    if PARAMS_FILE not in entries and BUILDING_MARK not in entries:
        raise SystemExit(f"{index_dir} holds files not written by run_peer.py ({entries[:5]}); refusing to clear it")
    for name in entries:
        path = os.path.join(index_dir, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)


def build_in_child(args, index_dir: str) -> dict:
    """Run the build in a child process so its peak RSS is the child's
    ru_maxrss and nothing the build allocated stays in the search process."""
    result_path = os.path.join(index_dir, ".build-result.json")
    cmd = [sys.executable, os.path.abspath(__file__)] + sys.argv[1:] + ["--_build-child", "--_build-result", result_path]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=sys.stderr.fileno(), stderr=sys.stderr.fileno())
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode != 0:
        raise SystemExit(f"build child failed with exit code {proc.returncode}")
    with open(result_path) as f:
        res = json.load(f)
    os.remove(result_path)
    if after <= before:
        log("warning: could not attribute ru_maxrss to the build child")
    res["build_peak_rss_bytes"] = after * 1024  # Linux: kB
    res["build_process_wall_s"] = wall
    return res


def child_build(args, peer, paths, index_dir, bparams) -> None:
    log(f"build child: {peer.key} into {index_dir} with {bparams}")
    t0 = time.perf_counter()
    extra = peer.build(paths["base"], index_dir, bparams) or {}
    build_s = time.perf_counter() - t0
    with open(args._build_result, "w") as f:
        json.dump({"build_s": build_s, "extra": extra}, f)
    log(f"build child: done in {build_s:.1f}s")


def ensure_index(args, peer, paths, bparams, version) -> tuple[dict, bool]:
    index_dir = os.path.abspath(args.index_dir)
    want = {
        "params_version": PARAMS_VERSION,
        "peer": peer.key,
        "version": version,
        "data": data_signature(paths["base"]),
        "build_params": bparams,
    }
    have = read_params(index_dir)
    if (
        not args.rebuild
        and have is not None
        and all(have.get(key) == val for key, val in want.items())
        and not os.path.exists(os.path.join(index_dir, BUILDING_MARK))
    ):
        log(f"reusing index in {index_dir} (params.json matches)")
        return have, True
    if have is not None and not args.rebuild:
        diff = [key for key, val in want.items() if have.get(key) != val]
        log(f"params.json differs in {diff}: rebuilding")
    clear_index_dir(index_dir)
    open(os.path.join(index_dir, BUILDING_MARK), "w").close()
    log(f"building {peer.key} index in {index_dir}")
    res = build_in_child(args, index_dir)
    os.remove(os.path.join(index_dir, BUILDING_MARK))
    record = dict(want)
    record["build"] = {
        "build_s": res["build_s"],
        "build_process_wall_s": res["build_process_wall_s"],
        "build_peak_rss_bytes": res["build_peak_rss_bytes"],
        "extra": res.get("extra", {}),
        "built_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    record["build"]["index_bytes"] = dir_bytes(index_dir, exclude=(PARAMS_FILE,))
    with open(os.path.join(index_dir, PARAMS_FILE), "w") as f:
        json.dump(record, f, indent=2)
    log(f"built in {res['build_s']:.1f}s, peak RSS {res['build_peak_rss_bytes'] / 2**20:.0f} MiB")
    return record, False


def pct(a: np.ndarray, q: float) -> float:
    return float(np.percentile(a, q))


def main(argv=None) -> int:
    args = parse_args(argv)
    out = None if args._build_child else JsonOut()
    peer_mod = importlib.import_module(PEERS[args.peer])
    peer = peer_mod.PEER(args)
    paths = data_paths(args.data)
    n, d = read_bin_header(paths["base"])
    bparams = peer.build_params(n, d)

    if args._build_child:
        child_build(args, peer, paths, os.path.abspath(args.index_dir), bparams)
        return 0

    version = peer.version()
    record, reused = ensure_index(args, peer, paths, bparams, version)
    index_dir = os.path.abspath(args.index_dir)
    build = record["build"]
    index_bytes = dir_bytes(index_dir, exclude=(PARAMS_FILE,))
    index_files = {
        name: os.path.getsize(os.path.join(index_dir, name))
        for name in sorted(os.listdir(index_dir))
        if name != PARAMS_FILE and os.path.isfile(os.path.join(index_dir, name))
    }

    queries = np.ascontiguousarray(read_fbin(paths["query"]), dtype=np.float32)
    gt_ids, gt_d = read_gt(paths["gt"])
    if queries.shape[1] != d:
        raise SystemExit(f"query dim {queries.shape[1]} != base dim {d}")
    if gt_ids.shape[0] != queries.shape[0]:
        raise SystemExit(f"gt has {gt_ids.shape[0]} rows, query.fbin {queries.shape[0]}")
    if args.max_queries:
        queries, gt_ids, gt_d = queries[: args.max_queries], gt_ids[: args.max_queries], gt_d[: args.max_queries]
    nq = queries.shape[0]
    k = args.k

    rss0 = proc_status_bytes("VmRSS")
    t0 = time.perf_counter()
    mem = peer.load(index_dir, bparams, n, d)
    load_s = time.perf_counter() - t0
    rss_load = proc_status_bytes("VmRSS") - rss0
    log(f"{peer.key} {version} loaded in {load_s:.1f}s, RSS +{rss_load / 2**20:.1f} MiB, model {mem}")

    if args.filtered:
        if not args.serve:
            raise SystemExit("--filtered answers band points: it runs only with --serve")
        import filtered_peer

        return filtered_peer.serve(args, peer, out, version)

    if args.latency == "off":
        lat_threads = 0
        latency_mode = "unavailable (--latency off)"
    else:
        lat_threads = args.threads if peer.gil_free_single else 1
        latency_mode = (
            f"separate pass of single-query calls from {lat_threads} Python thread(s)"
            + ("" if peer.gil_free_single else " (binding holds the GIL during search)")
        )

    common = {
        "sweep_param": peer.sweep_name,
        "threads": args.threads,
        "k": k,
        "nq": nq,
        "n": n,
        "d": d,
        "data": os.path.abspath(args.data),
        "index_dir": index_dir,
        "memory_budget_mb": args.memory_budget_mb,
        "pq_bytes": args.pq_bytes,
        "graph_degree": args.graph_degree,
        "complexity": args.complexity,
        "alpha": args.alpha,
        "beam_width": args.beam_width,
        "build_params": bparams,
        "memory_model": mem,
        "index_files": index_files,
        "index_reused": reused,
        "load_s": load_s,
        "recall_rule": "big-ann-benchmarks ties: gt[:k] plus following gt ids with |dist - dist_k| < 1e-6",
    }

    def point(value: int, round_: int) -> dict:
        load1 = os.getloadavg()[0]
        ru0 = resource.getrusage(resource.RUSAGE_SELF)
        io0 = proc_io()
        t0 = time.perf_counter()
        ids, extra = peer.search_batch(queries, k, value)
        reps = 1
        # A pass of a tenth of a second measures one burst of the device:
        # repeat the batch until it has run --min-pass-seconds, and report
        # a mean repetition (as `stratavec bench` does for its own systems).
        while time.perf_counter() - t0 < args.min_pass_seconds:
            peer.search_batch(queries, k, value)
            reps += 1
        search_s = (time.perf_counter() - t0) / reps
        io1 = proc_io()
        ru1 = resource.getrusage(resource.RUSAGE_SELF)
        cpu_user_s = (ru1.ru_utime - ru0.ru_utime) / reps
        cpu_sys_s = (ru1.ru_stime - ru0.ru_stime) / reps
        ids = np.asarray(ids)
        if ids.shape != (nq, k):
            raise SystemExit(f"{peer.key}: result shape {ids.shape}, expected {(nq, k)}")
        read_bytes = (io1["read_bytes"] - io0["read_bytes"]) / reps

        mean_us = p50_us = p99_us = lat_qps = None
        if lat_threads:
            before = getattr(peer, "before_latency_pass", None)
            if before:
                before()
            lat, lat_wall = latency_pass(lambda i: peer.search_one(queries[i], k, value), nq, lat_threads)
            mean_us, p50_us, p99_us = float(lat.mean()), pct(lat, 50), pct(lat, 99)
            lat_qps = nq / lat_wall

        reads_per_query = read_bytes / nq / PAGE if peer.on_disk else None
        row = {
            "system": peer.key,
            "label": peer.label,
            "version": version,
            "L": value,
            "round": round_,
            "repetitions": reps,
            "recall_at_1": recall_at(gt_ids, gt_d, ids, 1),
            "recall_at_10": recall_at(gt_ids, gt_d, ids, 10),
            "recall_at_100": recall_at(gt_ids, gt_d, ids, 100) if k >= 100 else None,
            "qps": nq / search_s,
            "search_s": search_s,
            "cpu_us_per_query": (cpu_user_s + cpu_sys_s) / nq * 1e6,
            "cpu_user_us_per_query": cpu_user_s / nq * 1e6,
            "cpu_sys_us_per_query": cpu_sys_s / nq * 1e6,
            # Share of the search threads' cores the batch kept busy: near 1
            # means CPU-bound (see the report's "bound by" column).
            "cpu_util": (cpu_user_s + cpu_sys_s) / search_s / args.threads,
            # What the device delivered while this batch ran.
            "reads_per_s": reads_per_query * nq / search_s if reads_per_query is not None else None,
            "loadavg_1m": load1,
            "mean_us": mean_us,
            "p50_us": p50_us,
            "p99_us": p99_us,
            "latency_mode": latency_mode,
            "latency_threads": lat_threads or None,
            "latency_pass_qps": lat_qps,
            "reads_per_query": reads_per_query,
            "bytes_per_query": read_bytes / nq if peer.on_disk else None,
            "memory_bytes": mem["memory_bytes"],
            "rss_load_delta_bytes": rss_load,
            "rss_delta_bytes": proc_status_bytes("VmRSS") - rss0,
            "build_s": build["build_s"],
            "build_peak_rss_bytes": build["build_peak_rss_bytes"],
            "index_bytes": index_bytes,
        }
        row.update(extra)
        row.update(common)
        log(
            f"{peer.sweep_name}={value} round {round_}: R@10={row['recall_at_10']} qps={row['qps']:.0f}"
            + (f" reads/q={row['reads_per_query']:.1f}" if peer.on_disk else "")
            + (f" p50={p50_us:.0f}us p99={p99_us:.0f}us" if p50_us is not None else "")
        )
        return row

    if not args.serve:
        for value in args.sweep_values:
            out.emit(point(value, 0))
        return 0
    out.emit({"ready": True, "system": peer.key, "version": version})

    def parse(req: dict) -> tuple:
        value, round_ = int(req["L"]), int(req.get("round", 0))
        if value < 1:
            raise ValueError(f"L must be at least 1, found {value}")
        return value, round_

    for value, round_ in requests(out, parse, '{"L": int, "round": int}'):
        out.emit(point(value, round_))
    return 0


if __name__ == "__main__":
    sys.exit(main())
