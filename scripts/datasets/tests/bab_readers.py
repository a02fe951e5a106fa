"""Reference readers for the tests, written from the big-ann-benchmarks
layouts (its benchmark/dataset_io.py), not from the maker's code."""

import numpy as np


def read_fbin(path):
    n, d = np.fromfile(path, dtype=np.uint32, count=2)
    return np.fromfile(path, dtype=np.float32, offset=8).reshape(n, d)


def read_gt(path):
    nq, k = np.fromfile(path, dtype=np.uint32, count=2)
    raw = np.fromfile(path, dtype=np.uint32, offset=8)
    ids = raw[:nq * k].reshape(nq, k)
    dists = raw[nq * k:].view(np.float32).reshape(nq, k)
    return ids, dists


def read_sparse_matrix(path):
    """(nrow, ncol, indptr, indices, data) of a filter-track .spmat file:
    int64 nrow, ncol, nnz; int64 indptr[nrow+1]; int32 indices[nnz];
    float32 data[nnz]. Returns the arrays and checks the file ends there."""
    with open(path, "rb") as f:
        nrow, ncol, nnz = np.fromfile(f, dtype=np.int64, count=3)
        indptr = np.fromfile(f, dtype=np.int64, count=nrow + 1)
        indices = np.fromfile(f, dtype=np.int32, count=nnz)
        data = np.fromfile(f, dtype=np.float32, count=nnz)
        assert f.read() == b"", "trailing bytes after the CSR arrays"
    return int(nrow), int(ncol), indptr, indices, data


def row_sets(path):
    nrow, ncol, indptr, indices, _ = read_sparse_matrix(path)
    return [set(indices[indptr[i]:indptr[i + 1]].tolist()) for i in range(nrow)], ncol


def label_table(path):
    """labels.tsv: id -> (name, count)."""
    out = {}
    with open(path, encoding="utf-8") as f:
        assert f.readline().rstrip("\n").split("\t") == ["id", "name", "count"]
        for line in f:
            i, name, count = line.rstrip("\n").split("\t")
            out[int(i)] = (name, int(count))
    return out
