"""The filtered queries: selectivity bands and exact filtered ground truth."""

import numpy as np

import bab_readers as readers

BANDS = ((0.30, 0.60), (0.05, 0.15), (0.005, 0.02), (0.0005, 0.002))


def matching(data_dir):
    """(base vectors, queries, per query the set of matching base ids)."""
    base = readers.read_fbin(data_dir / "base.fbin")
    queries = readers.read_fbin(data_dir / "query.fbin")
    base_rows, ncol = readers.row_sets(data_dir / "base.labels.spmat")
    query_rows, qcol = readers.row_sets(data_dir / "query.filters.spmat")
    assert qcol == ncol and len(query_rows) == queries.shape[0]
    members = {}
    for i, r in enumerate(base_rows):
        for c in r:
            members.setdefault(c, set()).add(i)
    match = [set.intersection(*(members.get(c, set()) for c in r)) for r in query_rows]
    assert all(1 <= len(r) <= 2 for r in query_rows)
    return base, queries, match


def test_each_band_selectivity(data_dir):
    base, queries, match = matching(data_dir)
    n, nq = base.shape[0], queries.shape[0]
    for b, (lo, hi) in enumerate(BANDS):
        rows = range(b * nq // 4, (b + 1) * nq // 4)
        sel = np.array([len(match[i]) / n for i in rows])
        assert len(sel) == nq // 4
        assert sel.min() >= lo and sel.max() <= hi, (b, sel.min(), sel.max())


def test_filtered_ground_truth_by_brute_force(data_dir):
    base, queries, match = matching(data_dir)
    ids, dists = readers.read_gt(data_dir / "gt.filtered.ibin")
    k = ids.shape[1]
    b64 = base.astype(np.float64)
    # 20 queries spread over the four bands (the last band pads its rows).
    for i in np.linspace(0, queries.shape[0] - 1, 20).astype(int):
        cand = np.array(sorted(match[i]))
        d = ((b64[cand] - queries[i].astype(np.float64)) ** 2).sum(1)
        order = np.lexsort((cand, d))[:k]
        m = order.size
        assert ids[i, :m].tolist() == cand[order].tolist(), i
        np.testing.assert_allclose(dists[i, :m], d[order].astype(np.float32), rtol=1e-6, atol=1e-6)
        assert np.all(ids[i, m:] == 0xFFFFFFFF) and np.all(np.isinf(dists[i, m:]))
