"""Labels of WordNet synsets for filtered search.

A synset carries:
  pos:X          its part of speech, n v a r (adjective satellites "s" count as a);
  lex:NAME       its lexicographer file (noun.animal, verb.motion, ...: the
                 data line's lex_filenum, named by the lexnames file; 45 in 3.0);
  anc:OFFSET-P:WORD   every hypernym ancestor: the transitive closure of the
                 hypernym (@) and instance hypernym (@i) pointers, which only
                 nouns and verbs have. The synset itself is not its own ancestor.
So every vector has at least two labels (pos and lexicographer file).

Label ids are stable across subsets for pos (0-3) and lexicographer files
(4 + lex_filenum); ancestors follow, in (pos, offset) order, and only those
that label some base vector are given an id, so ncol depends on --limit.
"""

from typing import Dict, List, NamedTuple, Set

import wordnet

POS = ("n", "v", "a", "r")


def pos_of(s: wordnet.Synset) -> str:
    return "a" if s.ss_type == "s" else s.ss_type


def ancestor_name(s: wordnet.Synset) -> str:
    return f"anc:{s.key[1]:08d}-{s.key[0]}:{s.first_word}"


class Ancestry:
    """Hypernym ancestors of synsets, memoised. Walked breadth-first, not by
    recursion over parents' ancestries: the graph is not a tree (a synset
    may have several hypernyms) and WordNet 3.0's verbs even hold a cycle
    (restrain.v.01 and inhibit.v.04 are each other's hypernym), where a
    recursive walk would never end. A synset on a cycle is not counted as
    its own ancestor."""

    def __init__(self, synsets: Dict[wordnet.Key, wordnet.Synset]):
        self.synsets = synsets
        self.memo: Dict[wordnet.Key, frozenset] = {}

    def of(self, key: wordnet.Key) -> frozenset:
        got = self.memo.get(key)
        if got is None:
            seen: Set[wordnet.Key] = set()
            todo = list(self.synsets[key].hypernyms)
            while todo:
                k = todo.pop()
                if k not in seen:
                    seen.add(k)
                    todo.extend(self.synsets[k].hypernyms)
            seen.discard(key)
            got = self.memo[key] = frozenset(seen)
        return got


class Vocabulary(NamedTuple):
    names: List[str]                 # label id -> name
    ids: Dict[str, int]              # name -> label id
    counts: List[int]                # label id -> base vectors having it


def synset_label_names(s: wordnet.Synset, ancestry: Ancestry, lexnames: Dict[int, str]) -> List[str]:
    names = [f"pos:{pos_of(s)}", f"lex:{lexnames[s.lex_filenum]}"]
    anc = sorted(ancestry.of(s.key))
    names += [ancestor_name(ancestry.synsets[a]) for a in anc]
    return names


def build(base_synsets: List[wordnet.Key], synsets, lexnames: Dict[int, str]):
    """(Vocabulary, per base vector sorted label ids, Ancestry).

    A base vector is labelled by the synset its gloss came from (texts.py:
    the first synset with that gloss)."""
    ancestry = Ancestry(synsets)
    fixed = [f"pos:{p}" for p in POS] + [f"lex:{lexnames[i]}" for i in sorted(lexnames)]
    per_base = [synset_label_names(synsets[k], ancestry, lexnames) for k in base_synsets]
    used_ancestors = sorted({a for k in base_synsets for a in ancestry.of(k)})
    names = fixed + [ancestor_name(synsets[a]) for a in used_ancestors]
    ids = {n: i for i, n in enumerate(names)}
    rows = [sorted(ids[n] for n in row) for row in per_base]
    counts = [0] * len(names)
    for row in rows:
        for c in row:
            counts[c] += 1
    return Vocabulary(names, ids, counts), rows, ancestry


def write_tsv(path, vocab: Vocabulary) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("id\tname\tcount\n")
        for i, (n, c) in enumerate(zip(vocab.names, vocab.counts)):
            f.write(f"{i}\t{n}\t{c}\n")
