"""Filtered search on a peer (issue #56): what `run_peer.py --filtered
--serve` does once the peer's index is loaded, so `stratavec bench-filtered
--peers ...` times the peers band by band beside its own ways.

The data set's labels (`base.labels.spmat`), its filtered queries
(`query.filters.spmat`: a row a query, its labels ANDed, the NeurIPS'23
filter track's format), their bands (`query.filters.tsv`) and the filtered
truth (`gt.filtered.ibin`) are read here. Each query's matching rows are
computed before any timing, as the bench computes stratavec's (a peer's
filter is then only a membership test, the cheapest a caller can give it).
A peer makes its form of each query's filter once a band, untimed
(`prepare_filters(allowed, labels)`: the matching rows, the labels the
query ANDs), and searches with it (`search_filtered(queries, k, value,
filters)`), returning a (nq, k) id array padded with -1.

Requests on stdin: {"L": 40, "round": 1, "band": 2}; one row out each,
with the fields `bench-filtered` writes for its own points.
"""

from __future__ import annotations

import os
import resource
import time

import numpy as np

from peer_common import PAGE, log, proc_io, read_fbin, read_gt, recall_at, requests


def read_spmat(path: str) -> tuple[np.ndarray, np.ndarray]:
    """CSR rows of a big-ann-benchmarks `.spmat`: int64 nrow, ncol, nnz;
    int64 indptr[nrow + 1]; int32 indices[nnz]; float32 data[nnz]."""
    with open(path, "rb") as f:
        head = np.fromfile(f, dtype="<i8", count=3)
        if head.size != 3:
            raise SystemExit(f"{path}: header: expected 3 int64 (nrow, ncol, nnz), found {head.size}")
        nrow, _ncol, nnz = (int(x) for x in head)
        indptr = np.fromfile(f, dtype="<i8", count=nrow + 1)
        indices = np.fromfile(f, dtype="<i4", count=nnz)
    if indptr.size != nrow + 1 or indices.size != nnz or indptr[-1] != nnz:
        raise SystemExit(f"{path}: indptr/indices: expected {nrow + 1} and {nnz} entries ending at {nnz}, "
                         f"found {indptr.size} and {indices.size} ending at {indptr[-1] if indptr.size else '-'}")
    return indptr, indices


def postings(indptr: np.ndarray, indices: np.ndarray) -> dict[int, np.ndarray]:
    """Each label's rows, sorted."""
    rows = np.repeat(np.arange(indptr.size - 1, dtype=np.int64), np.diff(indptr))
    order = np.argsort(indices, kind="stable")
    labels, rows = indices[order], rows[order]
    cuts = np.flatnonzero(np.diff(labels)) + 1
    return {int(group[0]): r for group, r in zip(np.split(labels, cuts), np.split(rows, cuts)) if group.size}


def allowed_rows(qptr: np.ndarray, qind: np.ndarray, post: dict[int, np.ndarray], n: int) -> list[np.ndarray]:
    """Each query's matching rows: the intersection of its labels' rows
    (every row when it has no label)."""
    out = []
    for i in range(qptr.size - 1):
        rows = None
        for label in qind[qptr[i]:qptr[i + 1]]:
            r = post.get(int(label), np.empty(0, dtype=np.int64))
            rows = r if rows is None else np.intersect1d(rows, r, assume_unique=True)
        out.append(np.arange(n, dtype=np.int64) if rows is None else rows)
    return out


def bands(path: str, nq: int) -> dict[int, list[int]]:
    """The queries of each band (`query.filters.tsv`: columns query, band)."""
    with open(path) as f:
        head = f.readline().rstrip("\n").split("\t")
        if "query" not in head or "band" not in head:
            raise SystemExit(f"{path}: header: expected columns query and band, found {head}")
        qc, bc = head.index("query"), head.index("band")
        out: dict[int, list[int]] = {}
        for lineno, line in enumerate(f, start=2):
            if not line.strip():
                continue
            cols = line.rstrip("\n").split("\t")
            q, b = int(cols[qc]), int(cols[bc])
            if q >= nq:
                raise SystemExit(f"{path}: line {lineno}: query {q}: expected < {nq}")
            out.setdefault(b, []).append(q)
    return out


class FilteredSet:
    """The filtered queries of a data set, by band, with their truth."""

    def __init__(self, data: str, n: int) -> None:
        self.queries = np.ascontiguousarray(read_fbin(os.path.join(data, "query.fbin")), dtype=np.float32)
        nq = self.queries.shape[0]
        qptr, qind = read_spmat(os.path.join(data, "query.filters.spmat"))
        if qptr.size - 1 != nq:
            raise SystemExit(f"query.filters.spmat: rows: expected {nq} (query.fbin's), found {qptr.size - 1}")
        bptr, bind = read_spmat(os.path.join(data, "base.labels.spmat"))
        if bptr.size - 1 != n:
            raise SystemExit(f"base.labels.spmat: rows: expected {n} (base.fbin's), found {bptr.size - 1}")
        self.allowed = allowed_rows(qptr, qind, postings(bptr, bind), n)
        self.labels = [qind[qptr[i]:qptr[i + 1]].astype(np.int64) for i in range(nq)]
        self.gt_ids, self.gt_d = read_gt(os.path.join(data, "gt.filtered.ibin"))
        self.bands = bands(os.path.join(data, "query.filters.tsv"), nq)
        self.n = n

    def band(self, b: int):
        members = self.bands.get(b)
        if members is None:
            raise ValueError(f"band {b}: expected one of {sorted(self.bands)}")
        m = np.asarray(members)
        allowed = [self.allowed[i] for i in members]
        labels = [self.labels[i] for i in members]
        selectivity = float(np.mean([a.size for a in allowed])) / self.n
        return self.queries[m], allowed, labels, self.gt_ids[m], self.gt_d[m], selectivity


def serve(args, peer, out, version: str) -> int:
    """Answers band points on stdin until end of input."""
    from peer_common import read_bin_header

    n, _ = read_bin_header(os.path.join(args.data, "base.fbin"))
    fs = FilteredSet(args.data, n)
    prepared: dict[int, object] = {}
    out.emit({"ready": True, "system": peer.key, "version": version})

    def parse(req: dict) -> tuple:
        value, round_, band = int(req["L"]), int(req.get("round", 0)), int(req["band"])
        if value < 1:
            raise ValueError(f"L must be at least 1, found {value}")
        return (value, round_, band) + fs.band(band)

    for value, round_, band, queries, allowed, labels, gt_ids, gt_d, sel in requests(
            out, parse, '{"L": int, "round": int, "band": int}'):
        if band not in prepared:
            # The peer's form of the filter (a set, a SQL predicate), made
            # once a band and outside the timing, as stratavec's bitmaps are.
            prepared[band] = peer.prepare_filters(allowed, labels)
        filters = prepared[band]
        ru0, io0, t0 = resource.getrusage(resource.RUSAGE_SELF), proc_io(), time.perf_counter()
        ids = peer.search_filtered(queries, args.k, value, filters)
        reps = 1
        while time.perf_counter() - t0 < args.min_pass_seconds:
            peer.search_filtered(queries, args.k, value, filters)
            reps += 1
        search_s = (time.perf_counter() - t0) / reps
        io1, ru1 = proc_io(), resource.getrusage(resource.RUSAGE_SELF)
        nq = queries.shape[0]
        cpu = (ru1.ru_utime - ru0.ru_utime + ru1.ru_stime - ru0.ru_stime) / reps
        read_bytes = (io1["read_bytes"] - io0["read_bytes"]) / reps
        recall = recall_at(gt_ids, gt_d, np.asarray(ids), args.k)
        row = {
            "kind": "point",
            "system": peer.key,
            "label": peer.label,
            "version": version,
            "band": band,
            "selectivity": sel,
            "way": "peer",
            "L": value,
            "sweep_param": peer.sweep_name,
            "round": round_,
            "repetitions": reps,
            "recall": recall,
            "recall_at_10": recall_at(gt_ids, gt_d, np.asarray(ids), 10) if args.k >= 10 else None,
            "qps": nq / search_s,
            "reads_per_query": read_bytes / nq / PAGE if peer.on_disk else None,
            "cpu_s_per_query": cpu / nq,
            "threads": args.threads,
        }
        log(f"{peer.key} band {band} {peer.sweep_name}={value} round {round_}: R@{args.k}={recall:.4f} qps={row['qps']:.0f}")
        out.emit(row)
    return 0
