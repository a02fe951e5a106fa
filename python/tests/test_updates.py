"""An index that changes, from Python (issue #55): `Index.add`, `remove`
and `merge` as faiss's `add_with_ids` / `remove_ids` shapes, scored against
numpy brute force over the live set; bad input raises with the value named
and changes nothing; a merge keeps the answers and empties the delta."""

import numpy as np
import pytest

import stratavec

DIM = 16


def clustered(n, seed, centers=12):
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(centers, DIM)) * 4.0
    return (c[rng.integers(0, centers, n)] + rng.normal(size=(n, DIM))).astype(np.float32)


def brute(x, ids, q, k):
    d = ((q[:, None, :].astype(np.float64) - x[None, :, :]) ** 2).sum(-1)
    return ids[np.argsort(d, axis=1, kind="stable")[:, :k]]


def recall(found, truth):
    return np.mean([len(set(f) & set(t)) / truth.shape[1] for f, t in zip(found, truth)])


@pytest.fixture()
def index(tmp_path):
    x = clustered(1500, 1)
    stratavec.build_index(x, tmp_path / "idx", graph_degree=24, complexity=48, pq_bytes=8, threads=2)
    return stratavec.Index.open(tmp_path / "idx"), x


def test_add_remove_merge_search_the_live_set(index):
    idx, x = index
    new = clustered(300, 2)
    q = clustered(40, 3)
    r = idx.add(new)  # ids 1500..1799, given by the index
    assert (r["count"], r["seq"], r["repeated"]) == (300, 1, False)
    gone = np.concatenate([np.arange(0, 1500, 7), np.arange(1500, 1800, 11)])
    r = idx.remove(gone)
    assert (r["count"], r["missing"]) == (len(gone), 0)
    assert idx.pending == (300 - len(range(1500, 1800, 11)), len(range(0, 1500, 7)))
    assert 1501 in idx and 0 not in idx and 1500 not in idx and 1 in idx
    ids = np.arange(1800)
    keep = np.setdiff1d(ids, gone)
    allx = np.concatenate([x, new])
    truth = brute(allx[keep], keep, q, 10)
    D, I = idx.search(q, k=10, complexity=64)
    assert not np.isin(I, gone).any(), "a deleted id came back"
    assert recall(I, truth) >= 0.9
    assert idx.memory()["updates"] > 300 * DIM * 4
    m = idx.merge(threads=2)
    inserted = 300 - len(range(1500, 1800, 11))
    assert (m["inserted"], m["deleted"], m["n_before"], m["n_after"]) == (inserted, len(range(0, 1500, 7)), 1500, len(keep))
    assert idx.pending == (0, 0)
    D2, I2 = idx.search(q, k=10, complexity=64)
    assert not np.isin(I2, gone).any()
    assert recall(I2, truth) >= 0.9
    # Range search sees the live set too.
    lims, RD, RI = idx.range_search(q[:5], radius=float(np.median(D2[:5, -1])))
    assert not np.isin(RI, gone).any()


def test_bad_writes_raise_naming_the_value_and_change_nothing(index):
    idx, _ = index
    n = len(idx)
    with pytest.raises(ValueError, match=r"vectors: expected dimension 16"):
        idx.add(np.zeros((2, 8), np.float32))
    bad = np.zeros((2, DIM), np.float32)
    bad[1, 3] = np.nan
    with pytest.raises(ValueError, match=r"row 1 component 3.*finite.*NaN"):
        idx.add(bad)
    with pytest.raises(ValueError, match=r"unique within a batch.*9000, also the id of row 0"):
        idx.add(np.ones((2, DIM), np.float32), ids=[9000, 9000])
    with pytest.raises(ValueError, match=r"12, which is live"):
        idx.add(np.ones((1, DIM), np.float32), ids=[12])
    assert len(idx) == n
    r = idx.remove([3, 99999])
    assert (r["count"], r["missing"]) == (1, 1)
    # A retried batch is applied once.
    a = idx.add(np.ones((1, DIM), np.float32), ids=[5000], batch=77)
    b = idx.add(np.ones((1, DIM), np.float32), ids=[5000], batch=77)
    assert (a["repeated"], b["repeated"], a["seq"] == b["seq"]) == (False, True, True)
    assert len(idx) == n


def test_a_second_writer_is_refused_naming_the_holder(index, tmp_path):
    idx, _ = index
    other = stratavec.Index.open(tmp_path / "idx")
    idx.remove([1])
    with pytest.raises(Exception, match=r"writer.lock.*held by pid"):
        other.remove([2])


@pytest.mark.parametrize("partition", ["kmeans", "range"])
def test_a_collection_takes_inserts_deletes_and_merges(tmp_path, partition):
    """Each inserted vector goes to one segment (the nearest centroid, or
    id modulo segments), an id live in any segment is refused, deletes find
    their segments, a retried batch is applied once, and the collection
    answers its live set before and after a merge."""
    x = clustered(2000, 11)
    new = clustered(400, 12)
    q = clustered(40, 13)
    stratavec.build_collection(x, tmp_path / "c", segments=3, partition=partition,
                               graph_degree=16, complexity=32, pq_bytes=8, threads=2)
    c = stratavec.Collection.open(tmp_path / "c")
    r = c.add(new, batch=7)  # ids 2000..2399
    assert (r["count"], r["first_id"], r["repeated"]) == (400, 2000, False)
    assert c.add(new, batch=7)["repeated"], "a retried batch is applied once"
    assert sum(s["n"] for s in c.segments) == 2400 and len(c) == 2400
    with pytest.raises(ValueError, match=r"2005, which is live in segment seg-000\d"):
        c.add(new[:2], ids=[5000, 2005])
    gone = np.concatenate([np.arange(0, 2000, 9), np.arange(2000, 2400, 13), [99_999]])
    r = c.remove(gone)
    assert (r["count"], r["missing"]) == (len(gone) - 1, 1)
    ids = np.arange(2400)
    keep = np.setdiff1d(ids, gone)
    truth = brute(np.concatenate([x, new])[keep], keep, q, 10)
    D, I = c.search(q, k=10, complexity=64)
    assert not np.isin(I, gone).any(), "a deleted id came back"
    assert recall(I, truth) >= 0.9
    assert c.merge(threads=2) == 3
    assert c.pending == (0, 0) and len(c) == len(keep)
    D, I = c.search(q, k=10, complexity=64)
    assert not np.isin(I, gone).any() and recall(I, truth) >= 0.9
    # A reopen sees the merged segments (their counts are no longer the build's).
    again = stratavec.Collection.open(tmp_path / "c")
    assert len(again) == len(keep)
    assert [s["n"] for s in again.segments] != [s["built_n"] for s in again.segments]
