"""Filtered queries: for each query a filter (one label, or the AND of two)
whose selectivity (matching base vectors / base size) falls in one of four
bands, so a benchmark sees broad, medium, narrow and needle filters.

Query i belongs to band i * 4 // nq (with 1,000 queries: 250 a band, rows
0-249 the broadest). Its filter is chosen, where it can be, from its own
synset's labels. A query is a WordNet example sentence, and texts.py keeps
the synset whose gloss held it (the first in (pos, offset) order), so we
know the query's part of speech, lexicographer file and ancestors; the
filter then asks for neighbours "about" what the query is about. In order:
  own       one label of the query's synset with a selectivity in the band;
  own-pair  the AND of two of them (only pairs that narrow both: nested
            labels, such as an ancestor and its own ancestor, say nothing new);
  global    when neither exists (e.g. a verb has no own label matching 30-60%
            of the base), any label in the band.
Among candidates the choice is by sha256(seed, query, name) - seeded and
the same on every platform, like the recipe's text order.
"""

import hashlib
from typing import List, NamedTuple, Sequence, Tuple

import numpy as np

import labels as labels_mod

BANDS: Tuple[Tuple[float, float], ...] = ((0.30, 0.60), (0.05, 0.15), (0.005, 0.02), (0.0005, 0.002))


class Filter(NamedTuple):
    band: int
    source: str              # own, own-pair, global
    labels: Tuple[int, ...]  # ANDed
    matches: np.ndarray      # sorted base ids having all the labels


def band_of(i: int, nq: int) -> int:
    return i * len(BANDS) // nq


def in_band(count: int, n: int, band: int) -> bool:
    lo, hi = BANDS[band]
    return lo * n <= count <= hi * n


def pick(candidates, seed: int, query: int, name):
    return min(candidates, key=lambda c: hashlib.sha256(f"{seed}\n{query}\n{name(c)}".encode()).digest())


def choose(query_synsets: Sequence, vocab: labels_mod.Vocabulary, base_rows: List[List[int]],
           ancestry: labels_mod.Ancestry, lexnames, seed: int) -> List[Filter]:
    n = len(base_rows)
    # Each label's base ids (the transpose of the label matrix), ascending.
    members: List[list] = [[] for _ in vocab.names]
    for i, row in enumerate(base_rows):
        for c in row:
            members[c].append(i)
    members = [np.asarray(m, dtype=np.int64) for m in members]
    global_by_band = [[c for c, cnt in enumerate(vocab.counts) if in_band(cnt, n, b)] for b in range(len(BANDS))]
    out = []
    nq = len(query_synsets)
    for q, key in enumerate(query_synsets):
        b = band_of(q, nq)
        s = ancestry.synsets[key]
        own = [vocab.ids[x] for x in labels_mod.synset_label_names(s, ancestry, lexnames) if x in vocab.ids]
        singles = [c for c in own if in_band(vocab.counts[c], n, b)]
        if singles:
            c = pick(singles, seed, q, lambda c: vocab.names[c])
            out.append(Filter(b, "own", (c,), members[c]))
            continue
        pairs = []
        for x in range(len(own)):
            for y in range(x + 1, len(own)):
                a, c = sorted((own[x], own[y]))
                both = np.intersect1d(members[a], members[c], assume_unique=True)
                if both.size < min(vocab.counts[a], vocab.counts[c]) and in_band(both.size, n, b):
                    pairs.append(((a, c), both))
        if pairs:
            (a, c), both = pick(pairs, seed, q, lambda p: vocab.names[p[0][0]] + "&" + vocab.names[p[0][1]])
            out.append(Filter(b, "own-pair", (a, c), both))
            continue
        if not global_by_band[b]:
            raise RuntimeError(f"no label has a selectivity in {BANDS[b]} over {n} base vectors")
        c = pick(global_by_band[b], seed, q, lambda c: vocab.names[c])
        out.append(Filter(b, "global", (c,), members[c]))
    return out


def allowed_matrix(filters: List[Filter], n: int) -> np.ndarray:
    """(nq, n) bool: which base vectors each query's filter lets through."""
    allowed = np.zeros((len(filters), n), dtype=bool)
    for i, f in enumerate(filters):
        allowed[i, f.matches] = True
    return allowed


def write_tsv(path, filters: List[Filter], vocab: labels_mod.Vocabulary, n: int) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("query\tband\tsource\tlabels\tmatches\tselectivity\n")
        for i, flt in enumerate(filters):
            names = " AND ".join(vocab.names[c] for c in flt.labels)
            f.write(f"{i}\t{flt.band}\t{flt.source}\t{names}\t{flt.matches.size}\t{flt.matches.size / n:.6f}\n")
