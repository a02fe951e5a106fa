"""The big-ann-benchmarks file layouts, little-endian.

.fbin         uint32 n, uint32 d, then n*d float32.
.ibin (gt)    uint32 nq, uint32 k, then nq*k uint32 ids, then nq*k float32 distances.
.spmat        a CSR matrix, as the filter track's labels: int64 nrow, ncol,
              nnz; int64 indptr[nrow+1]; int32 indices[nnz]; float32 data[nnz].
"""

import struct
from pathlib import Path
from typing import List, Sequence, Tuple

import numpy as np


def write_fbin(path: Path, a: np.ndarray) -> None:
    a = np.ascontiguousarray(a, dtype="<f4")
    with open(path, "wb") as f:
        f.write(struct.pack("<II", *a.shape))
        f.write(a.tobytes())


def read_fbin(path: Path) -> np.ndarray:
    n, d = np.fromfile(path, dtype="<u4", count=2)
    return np.fromfile(path, dtype="<f4", offset=8).reshape(int(n), int(d))


def write_gt(path: Path, ids: np.ndarray, dists: np.ndarray) -> None:
    with open(path, "wb") as f:
        f.write(struct.pack("<II", *ids.shape))
        f.write(np.ascontiguousarray(ids, dtype="<u4").tobytes())
        f.write(np.ascontiguousarray(dists, dtype="<f4").tobytes())


def read_gt(path: Path) -> Tuple[np.ndarray, np.ndarray]:
    nq, k = (int(v) for v in np.fromfile(path, dtype="<u4", count=2))
    ids = np.fromfile(path, dtype="<u4", count=nq * k, offset=8).reshape(nq, k)
    dists = np.fromfile(path, dtype="<f4", count=nq * k, offset=8 + 4 * nq * k).reshape(nq, k)
    return ids, dists


def write_spmat(path: Path, rows: Sequence[Sequence[int]], ncol: int) -> None:
    """A 0/1 matrix given by each row's column ids (written sorted, as CSR
    readers such as scipy's expect for canonical form)."""
    indptr = np.zeros(len(rows) + 1, dtype="<i8")
    indptr[1:] = np.cumsum([len(r) for r in rows])
    nnz = int(indptr[-1])
    indices = np.fromiter((c for r in rows for c in sorted(r)), dtype="<i4", count=nnz)
    with open(path, "wb") as f:
        f.write(struct.pack("<qqq", len(rows), ncol, nnz))
        f.write(indptr.tobytes())
        f.write(indices.tobytes())
        f.write(np.ones(nnz, dtype="<f4").tobytes())


def read_spmat_rows(path: Path) -> Tuple[List[np.ndarray], int]:
    """(column ids of each row, ncol)."""
    raw = Path(path).read_bytes()
    nrow, ncol, nnz = struct.unpack("<qqq", raw[:24])
    indptr = np.frombuffer(raw, dtype="<i8", count=nrow + 1, offset=24)
    indices = np.frombuffer(raw, dtype="<i4", count=nnz, offset=24 + 8 * (nrow + 1))
    return [indices[indptr[i]:indptr[i + 1]] for i in range(nrow)], ncol
