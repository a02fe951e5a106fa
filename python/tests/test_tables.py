"""Data users already have (issue #19): Parquet and Arrow files, pyarrow
tables, lists of arrays, and ids kept in the index and returned by search."""

import numpy as np
import pytest

import stratavec

pa = pytest.importorskip(
    "pyarrow", reason="pyarrow is not installed (test.sh installs it into .cache/venv-py)"
)
import pyarrow.feather as feather  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

N, DIM = 3000, 16


@pytest.fixture(scope="module")
def vectors():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((N, DIM)).astype(np.float32)
    q = x[:40] + 0.05 * rng.standard_normal((40, DIM)).astype(np.float32)
    # Large, negative, out-of-order ids: nothing like row numbers.
    ids = (np.arange(N, dtype=np.int64) * 7919 % N) * 1_000_003 - 5_000_000_000
    return x, q, ids


def table(x, ids, fixed=True):
    flat = pa.array(x.ravel())
    emb = (
        pa.FixedSizeListArray.from_arrays(flat, DIM)
        if fixed
        else pa.ListArray.from_arrays(pa.array(np.arange(0, x.size + 1, DIM, dtype=np.int32)), flat)
    )
    return pa.table({"doc": [f"doc {i}" for i in range(len(x))], "embedding": emb, "id": ids})


def search(path, q):
    return stratavec.Index.open(path).search(q, k=10, complexity=64)


def test_parquet_file_returns_its_ids_and_matches_numpy(vectors, tmp_path):
    x, q, ids = vectors
    pq.write_table(table(x, ids), tmp_path / "docs.parquet", row_group_size=1000)
    stratavec.build_index(tmp_path / "docs.parquet", tmp_path / "t", id_column="id", threads=2)
    stratavec.build_index(x, tmp_path / "n", threads=2)
    dt, it = search(tmp_path / "t", q)
    dn, rows = search(tmp_path / "n", q)
    np.testing.assert_array_equal(it, ids[rows])
    np.testing.assert_array_equal(dt, dn)
    # Without an id column, the table's rows are the ids.
    stratavec.build_index(tmp_path / "docs.parquet", tmp_path / "r", column="embedding")
    np.testing.assert_array_equal(search(tmp_path / "r", q)[1], rows)


def test_in_memory_tables_lists_and_ids(vectors, tmp_path):
    x, q, ids = vectors
    stratavec.build_index(x, tmp_path / "n", threads=2)
    _, rows = search(tmp_path / "n", q)
    # A pyarrow Table (list column this time), its id column kept.
    stratavec.build_index(table(x, ids, fixed=False), tmp_path / "t", id_column="id")
    np.testing.assert_array_equal(search(tmp_path / "t", q)[1], ids[rows])
    # A list of 1-D arrays, with ids given beside it.
    stratavec.build_index(list(x), tmp_path / "l", ids=ids)
    np.testing.assert_array_equal(search(tmp_path / "l", q)[1], ids[rows])
    # Arrow IPC file.
    feather.write_feather(table(x, ids), tmp_path / "docs.arrow")
    stratavec.build_index(tmp_path / "docs.arrow", tmp_path / "a", id_column="id")
    np.testing.assert_array_equal(search(tmp_path / "a", q)[1], ids[rows])
    # Range search reports the ids too.
    index = stratavec.Index.open(tmp_path / "a")
    lims, _, found = index.range_search(q[:1], radius=float(search(tmp_path / "a", q[:1])[0][0, 3]))
    assert set(found[lims[0] : lims[1]]) <= set(ids.tolist())
    assert lims[1] - lims[0] >= 1


def test_bad_ids_and_columns_are_refused(vectors, tmp_path):
    x, _, ids = vectors
    out = tmp_path / "i"
    dup = ids.copy()
    dup[10] = dup[3]
    with pytest.raises(ValueError, match=r"row 10.*again \(first at row 3\)"):
        stratavec.build_index(x, out, ids=dup)
    with pytest.raises(ValueError, match=r"ids.*one id a vector \(3000\).*found 5"):
        stratavec.build_index(x, out, ids=ids[:5])
    with pytest.raises(TypeError, match="expected integers"):
        stratavec.build_index(x, out, ids=ids.astype(np.float64))
    with pytest.raises(ValueError, match="expected data to be a table"):
        stratavec.build_index(x, out, column="embedding")
    t = table(x, ids)
    with pytest.raises(ValueError, match=r"'nope'.*the table has doc, embedding, id"):
        stratavec.build_index(t, out, column="nope")
    with pytest.raises(ValueError, match=r"column 'doc'.*found string"):
        stratavec.build_index(t, out, column="doc")
    pq.write_table(t, tmp_path / "d.parquet")
    with pytest.raises(ValueError, match=r"d.parquet: column `id`.*fixed-size list"):
        stratavec.build_index(tmp_path / "d.parquet", out, column="id")
    with pytest.raises(ValueError, match=r"data\[2\]: expected a 1-D array of shape \(16,\)"):
        stratavec.build_index([x[0], x[1], x[2][:4]], out)
    assert not out.exists()
