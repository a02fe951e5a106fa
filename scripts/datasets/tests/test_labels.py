"""The label matrix: its layout, its coverage, and two counts redone from
the WordNet database files with code of this test's own (hyponym pointers
downwards, where the maker follows hypernyms upwards)."""

import hashlib
import re
from collections import deque

import numpy as np

import bab_readers as readers


def test_label_matrix_parses_as_big_ann_benchmarks(data_dir):
    nrow, ncol, indptr, indices, data = readers.read_sparse_matrix(data_dir / "base.labels.spmat")
    n = readers.read_fbin(data_dir / "base.fbin").shape[0]
    assert nrow == n
    assert indptr[0] == 0 and np.all(np.diff(indptr) >= 0) and indptr[-1] == indices.size
    assert indices.min() >= 0 and indices.max() < ncol
    assert np.all(data == 1.0)
    table = readers.label_table(data_dir / "labels.tsv")
    assert sorted(table) == list(range(ncol))
    counts = np.bincount(indices, minlength=ncol)
    assert [table[i][1] for i in range(ncol)] == counts.tolist()


def test_every_base_vector_has_two_labels(data_dir):
    _, _, indptr, _, _ = readers.read_sparse_matrix(data_dir / "base.labels.spmat")
    assert np.diff(indptr).min() >= 2


def wordnet_base(dict_dir, n):
    """(synsets by key, base keys in vector order), from the database files:
    definitions deduplicated (first synset in (pos, offset) order keeps
    one), ordered by sha256, first n - the recipe as its README states it."""
    synsets, first = {}, {}
    for pos, names in (("n", ("data.noun1", "data.noun2")), ("v", ("data.verb",)),
                       ("a", ("data.adj",)), ("r", ("data.adv",))):
        rows = []
        for name in names:
            for line in (dict_dir / name).read_text(encoding="utf-8").split("\n"):
                if not line.strip() or line.startswith("  "):
                    continue
                head, gloss = line.strip().split("|", 1)
                f = head.split()
                p = 4 + 2 * int(f[3], 16)
                ptrs = [(f[p + 1 + 4 * j], (f[p + 3 + 4 * j].replace("s", "a"), int(f[p + 2 + 4 * j])))
                        for j in range(int(f[p]))]
                definition = re.sub(r'"[^"]*"', "", gloss).strip().strip("; ")
                rows.append((int(f[0]), int(f[1]), ptrs, definition))
        for off, lex, ptrs, definition in sorted(rows, key=lambda r: r[0]):
            synsets[(pos, off)] = (lex, ptrs)
            if definition:
                first.setdefault(definition, (pos, off))
    order = sorted(first, key=lambda t: hashlib.sha256(t.encode("utf-8")).digest())[:n]
    return synsets, [first[t] for t in order]


def column(data_dir, name):
    table = readers.label_table(data_dir / "labels.tsv")
    (col,) = [i for i, (nm, _) in table.items() if nm == name]
    rows, _ = readers.row_sets(data_dir / "base.labels.spmat")
    return {i for i, r in enumerate(rows) if col in r}, table[col][1]


def test_recount_lexicographer_file_and_subtree(data_dir, wordnet_dict):
    n = readers.read_fbin(data_dir / "base.fbin").shape[0]
    synsets, base = wordnet_base(wordnet_dict, n)

    # noun.animal is lexicographer file 05 (lexnames).
    want = {i for i, k in enumerate(base) if synsets[k][0] == 5}
    got, count = column(data_dir, "lex:noun.animal")
    assert got == want and count == len(want) > 0

    # animal.n.01 (00015388-n): its subtree by hyponym (~) and instance
    # hyponym (~i) pointers, which mirror the hypernyms the maker follows.
    root = ("n", 15388)
    below, todo = set(), deque([root])
    while todo:
        for sym, target in synsets[todo.popleft()][1]:
            if sym in ("~", "~i") and target not in below:
                below.add(target)
                todo.append(target)
    want = {i for i, k in enumerate(base) if k in below}
    got, count = column(data_dir, "anc:00015388-n:animal")
    assert got == want and count == len(want) > 0
