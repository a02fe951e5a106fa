"""Where a scenario's data set lives, and the recipe that makes it.

A name resolves as the study scripts did: $STRATAVEC_DATA, else
$STRATAVEC_DATA_HOME, else ~/.cache/stratavec, joined with the name. A
value with a `/` is a path and used as it is. A missing set is made by its
recipe (scripts/, the project's own; minutes to half an hour) before the
first run that needs it.
"""

from __future__ import annotations

import os
import subprocess

RECIPES = {
    "wordnet-minilm": ["scripts/wordnet.sh", "full"],
    "wordnet-mpnet": ["scripts/wordnet-mpnet.sh", "full"],
}


def home() -> str:
    env = os.environ
    return env.get("STRATAVEC_DATA") or env.get("STRATAVEC_DATA_HOME") or os.path.expanduser("~/.cache/stratavec")


def path(name: str) -> str:
    return name if "/" in name else os.path.join(home(), name)


def present(name: str) -> bool:
    return os.path.isfile(os.path.join(path(name), "base.fbin"))


def ensure(name: str) -> str:
    """The data set's folder, made first if missing. scripts/wordnet.sh
    prints the folder it made (it may differ from `path`), so a printed
    folder holding base.fbin wins."""
    if present(name):
        return path(name)
    if name not in RECIPES:
        raise SystemExit(f"data set {name!r} is missing at {path(name)} and has no recipe")
    out = subprocess.run(RECIPES[name], check=True, stdout=subprocess.PIPE, text=True).stdout
    printed = out.strip().splitlines()[-1:] if out.strip() else []
    if printed and os.path.isfile(os.path.join(printed[0], "base.fbin")):
        return printed[0]
    return path(name)
