#!/usr/bin/env python3
"""Makes a lower-dimensional real data set by PCA: projects the base vectors
and the queries of SRC onto the top DIMS principal components of the base,
writes base.fbin / query.fbin, computes exact ground truth with the stratavec
CLI, and records everything in meta.json.

  benchmarks/.venvs/plot/bin/python benchmarks/datasets/pca.py \\
      --src ~/.cache/stratavec/wordnet-minilm --dims 96 --out .cache/wordnet-minilm-pca96

The projection is fitted on the base only (queries are held out), centred on
the base mean: x -> (x - mean) @ V[:, :dims], where V are the eigenvectors of
the base covariance (float64, numpy.linalg.eigh), by decreasing eigenvalue,
each with its sign fixed so that its largest-magnitude coordinate is positive
(eigh's signs are otherwise arbitrary across LAPACK builds). --fit-sample N
fits on a seeded sample of N base vectors instead of all of them. Vectors are
not re-normalized (--normalize does so), so the set is searched with L2 as
the source is.

Ground truth: `stratavec gt base.fbin query.fbin gt.ibin -k 100` (squared L2,
ids then distances), run with --stratavec (default target/release/stratavec).
Existing output with the same parameters and source files is kept unless
--force is given.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def read_fbin(path: Path) -> np.ndarray:
    with open(path, "rb") as f:
        head = np.fromfile(f, dtype="<u4", count=2)
        if head.size != 2:
            sys.exit(f"{path}: shorter than its 8-byte header")
        n, d = int(head[0]), int(head[1])
        expect = 8 + 4 * n * d
        size = os.path.getsize(path)
        if size != expect:
            sys.exit(f"{path}: header says {n} x {d} float32 ({expect} bytes), file has {size} bytes")
        x = np.fromfile(f, dtype="<f4", count=n * d).reshape(n, d)
    if not np.isfinite(x).all():
        sys.exit(f"{path}: holds NaN or infinite values")
    return x


def write_fbin(path: Path, x: np.ndarray) -> None:
    x = np.ascontiguousarray(x, dtype="<f4")
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        np.array(x.shape, dtype="<u4").tofile(f)
        x.tofile(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fit(base: np.ndarray, dims: int, sample: int, seed: int, chunk: int = 16384):
    """Mean, top-`dims` components (d x dims) and all eigenvalues (descending)."""
    n, d = base.shape
    if sample and sample < n:
        idx = np.sort(np.random.default_rng(seed).choice(n, size=sample, replace=False))
        x = base[idx]
    else:
        x = base
    m = x.shape[0]
    mean = x.astype(np.float64).mean(axis=0)
    cov = np.zeros((d, d), dtype=np.float64)
    for i in range(0, m, chunk):  # float64 in chunks: never a whole float64 copy
        c = x[i:i + chunk].astype(np.float64) - mean
        cov += c.T @ c
    cov /= max(m - 1, 1)
    evals, evecs = np.linalg.eigh(cov)  # ascending
    order = np.argsort(evals)[::-1]
    evals, evecs = evals[order], evecs[:, order]
    comps = evecs[:, :dims].copy()
    rows = np.argmax(np.abs(comps), axis=0)
    signs = np.sign(comps[rows, np.arange(dims)])
    signs[signs == 0] = 1.0
    comps *= signs
    return mean, comps, np.clip(evals, 0.0, None), m


def project(x: np.ndarray, mean: np.ndarray, comps: np.ndarray, normalize: bool, chunk: int = 16384):
    out = np.empty((x.shape[0], comps.shape[1]), dtype=np.float32)
    for i in range(0, x.shape[0], chunk):
        y = (x[i:i + chunk].astype(np.float64) - mean) @ comps
        if normalize:
            nrm = np.linalg.norm(y, axis=1, keepdims=True)
            y = y / np.where(nrm > 0, nrm, 1.0)
        out[i:i + chunk] = y
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--src", required=True, type=Path, help="data set with base.fbin, query.fbin")
    p.add_argument("--dims", required=True, type=int)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--seed", type=int, default=42, help="seed of the --fit-sample draw")
    p.add_argument("--fit-sample", type=int, default=0, help="fit on this many base vectors (0: all)")
    p.add_argument("--normalize", action="store_true", help="L2-normalize the projected vectors")
    p.add_argument("-k", type=int, default=100, help="ground-truth depth")
    p.add_argument("--stratavec", type=Path, default=REPO / "target/release/stratavec")
    p.add_argument("--threads", type=int, help="threads for the ground truth (stratavec's default otherwise)")
    p.add_argument("--name", help="data set name in meta.json (default: the --out directory's name)")
    p.add_argument("--force", action="store_true", help="remake even when the output matches")
    a = p.parse_args(argv)

    src_base, src_query = a.src / "base.fbin", a.src / "query.fbin"
    for f in (src_base, src_query):
        if not f.is_file():
            sys.exit(f"pca.py: {f}: no such file")
    if not a.stratavec.is_file():
        sys.exit(f"pca.py: {a.stratavec}: no stratavec binary (cargo build --release -p stratavec-cli)")
    params = {"dims": a.dims, "seed": a.seed, "fit_sample": a.fit_sample, "normalize": a.normalize, "k": a.k,
              "src_base": {"path": str(src_base.resolve()), "bytes": src_base.stat().st_size,
                           "mtime": int(src_base.stat().st_mtime)},
              "src_query": {"path": str(src_query.resolve()), "bytes": src_query.stat().st_size,
                            "mtime": int(src_query.stat().st_mtime)}}
    meta_path = a.out / "meta.json"
    if not a.force and meta_path.is_file() and all((a.out / f).is_file() for f in ("base.fbin", "query.fbin",
                                                                                  "gt.ibin")):
        try:
            if json.loads(meta_path.read_text()).get("params") == params:
                print(f"pca.py: {a.out} already made with these parameters (--force remakes it)", file=sys.stderr)
                print(a.out)
                return 0
        except json.JSONDecodeError:
            pass

    t0 = time.monotonic()
    base = read_fbin(src_base)
    query = read_fbin(src_query)
    n, d = base.shape
    if query.shape[1] != d:
        sys.exit(f"pca.py: queries have d={query.shape[1]}, base has d={d}")
    if not 0 < a.dims <= d:
        sys.exit(f"pca.py: --dims must be in 1..{d}, got {a.dims}")
    print(f"pca.py: fitting PCA {d} -> {a.dims} on {a.fit_sample or n} of {n} base vectors", file=sys.stderr)
    mean, comps, evals, fitted = fit(base, a.dims, a.fit_sample, a.seed)
    kept = float(evals[:a.dims].sum() / evals.sum()) if evals.sum() > 0 else 0.0
    t_fit = time.monotonic() - t0

    a.out.mkdir(parents=True, exist_ok=True)
    for f in ("gt.ibin", "meta.json"):  # never leave a stale pair beside new vectors
        (a.out / f).unlink(missing_ok=True)
    pb = project(base, mean, comps, a.normalize)
    pq = project(query, mean, comps, a.normalize)
    write_fbin(a.out / "base.fbin", pb)
    write_fbin(a.out / "query.fbin", pq)
    t_proj = time.monotonic() - t0 - t_fit
    print(f"pca.py: kept {100 * kept:.1f}% of the base variance; wrote {a.out}/base.fbin {pb.shape}, "
          f"query.fbin {pq.shape}", file=sys.stderr)

    cmd = [str(a.stratavec), "gt", str(a.out / "base.fbin"), str(a.out / "query.fbin"), str(a.out / "gt.ibin"),
           "-k", str(a.k)]
    if a.threads:
        cmd += ["--threads", str(a.threads)]
    t1 = time.monotonic()
    r = subprocess.run(cmd)
    if r.returncode != 0:
        sys.exit(f"pca.py: {' '.join(cmd)} failed ({r.returncode})")
    t_gt = time.monotonic() - t1

    src_meta = None
    if (a.src / "meta.json").is_file():
        try:
            src_meta = json.loads((a.src / "meta.json").read_text())
        except json.JSONDecodeError:
            src_meta = None
    src_name = (src_meta or {}).get("dataset") or a.src.name
    name = a.name or a.out.name
    meta = {
        "dataset": name,
        "description": (f"{src_name} projected by PCA from {d} to {a.dims} dimensions (fitted on the base, centred, "
                        f"{100 * kept:.1f}% of the variance kept{', L2-normalized' if a.normalize else ''}); "
                        "real data, lower-dimensional"),
        "synthetic": False,
        "source": {"dir": str(a.src.resolve()), "dataset": src_name,
                   "files": {"base.fbin": sha256(src_base), "query.fbin": sha256(src_query)},
                   "meta": src_meta},
        "base": {"n": int(n), "d": int(a.dims), "dtype": "float32"},
        "query": {"n": int(pq.shape[0]), "d": int(a.dims), "dtype": "float32"},
        "pca": {"method": "eigh of the float64 covariance of the (centred) fitted base vectors; components by "
                          "decreasing eigenvalue, sign: largest-magnitude coordinate positive",
                "d_source": int(d), "dims": a.dims, "fitted_on": int(fitted), "fit_sample": a.fit_sample,
                "seed": a.seed, "centred": True, "normalized": a.normalize,
                "explained_variance_ratio": kept,
                "eigenvalues_top": [float(v) for v in evals[:a.dims]]},
        "gt": {"k": a.k, "metric": "squared L2", "command": " ".join(cmd),
               "layout": "uint32 nq, uint32 k, nq*k uint32 ids, nq*k float32 distances"},
        "params": params,
        "files": {f: {"bytes": (a.out / f).stat().st_size, "sha256": sha256(a.out / f)}
                  for f in ("base.fbin", "query.fbin", "gt.ibin")},
        "packages": {"numpy": np.__version__, "python": platform.python_version()},
        "timings_s": {"fit": round(t_fit, 2), "project": round(t_proj, 2), "ground_truth": round(t_gt, 2),
                      "total": round(time.monotonic() - t0, 2)},
        "generated_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    tmp = meta_path.with_name("meta.json.tmp")
    tmp.write_text(json.dumps(meta, indent=2) + "\n")
    os.replace(tmp, meta_path)
    print(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
