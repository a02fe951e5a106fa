"""Which texts are embedded, and in which order: the recipe's data selection.

Base: synset definitions (glosses), deduplicated by exact text. Queries:
example sentences, deduplicated, none equal to a definition (a query must
not have its own text in the base). Both orders come from sha256 of the text,
a shuffle that is the same on every platform and needs no RNG, so the first N
glosses (--limit) are a uniform sample over parts of speech and topics, and
the queries do not depend on --limit. Learn queries: the next 1,000 example
sentences of the queries' order (disjoint from them), for planning a build
(`stratavec build --plan-queries learn.fbin`) without tuning to the queries
it is scored on.

Every text keeps the synset it came from (the first synset, in the database's
(pos, offset) order, whose gloss has it): labels.py labels a base vector by
its synset, and filters.py picks a query's filter from the synset whose
example sentence the query is.
"""

import hashlib
from typing import Dict, List, NamedTuple, Tuple

import wordnet


class Text(NamedTuple):
    synset: wordnet.Key
    sid: str     # "offset-ss_type", as written to base.txt / query.txt
    text: str


class Selection(NamedTuple):
    base: List[Text]
    queries: List[Text]
    # The example sentences after the queries in the same order: queries
    # to plan with (`build --plan-queries`), never evaluated on.
    learn: List[Text]
    synsets: Dict[wordnet.Key, wordnet.Synset]
    stats: Dict[str, int]


def sha256_order(items: List[Text], salt: str = "") -> List[Text]:
    return sorted(items, key=lambda t: hashlib.sha256((salt + t.text).encode("utf-8")).digest())


def select(d, limit: int, n_queries: int, seed: int, n_learn: int = 1000) -> Selection:
    by_key = {}
    definitions: Dict[str, Tuple[wordnet.Key, str]] = {}
    examples: Dict[str, Tuple[wordnet.Key, str]] = {}
    for s in wordnet.synsets(d):
        by_key[s.key] = s
        # setdefault: the first synset having a text keeps it.
        if s.definition:
            definitions.setdefault(s.definition, (s.key, s.sid))
        for e in s.examples:
            e = e.strip()
            if e:
                examples.setdefault(e, (s.key, s.sid))
    base = sha256_order([Text(k, sid, t) for t, (k, sid) in definitions.items()])
    if limit:
        base = base[:limit]
    candidates = [Text(k, sid, t) for t, (k, sid) in examples.items() if t not in definitions]
    # The seed salts the hash: another seed, another query sample.
    ordered = sha256_order(candidates, salt=f"{seed}\n")
    queries, learn = ordered[:n_queries], ordered[n_queries:n_queries + n_learn]
    stats = {"synsets": len(by_key), "unique_glosses": len(definitions),
             "unique_examples": len(examples), "query_candidates": len(candidates)}
    return Selection(base, queries, learn, by_key, stats)
