"""Where a scenario's data set lives, and the recipe that makes it.

A name resolves as the study scripts did: $STRATAVEC_DATA, else
$STRATAVEC_DATA_HOME, else ~/.cache/stratavec, joined with the name. A
value with a `/` is a path and used as it is. A missing set is made by its
recipe (scripts/, the project's own; minutes to half an hour) before the
first run that needs it; a set derived from another (DERIVED) is made
after its source.
"""

from __future__ import annotations

import os
import subprocess

RECIPES = {
    "wordnet-minilm": ["scripts/wordnet.sh", "full"],
    "wordnet-mpnet": ["scripts/wordnet-mpnet.sh", "full"],
    # The 20k subsets (CI's, and the plan-of-parts A/B's): 1 and 6 minutes.
    "wordnet-minilm-20k": ["scripts/wordnet.sh", "20k"],
    "wordnet-mpnet-20k": ["scripts/wordnet-mpnet.sh", "20k"],
}

# Sets a project script makes from another set: name -> (source set, script,
# its arguments). The 96-d PCA of wordnet-minilm stays where the Starling and
# PipeANN studies' first scripts made it, under .cache/, so their index
# builds (.cache/bench/wordnet-minilm-pca96-*) are found again.
DERIVED = {
    ".cache/wordnet-minilm-pca96": ("wordnet-minilm", "benchmarks/datasets/pca.py", ["--dims", "96"]),
}


def home() -> str:
    env = os.environ
    return env.get("STRATAVEC_DATA") or env.get("STRATAVEC_DATA_HOME") or os.path.expanduser("~/.cache/stratavec")


def path(name: str) -> str:
    return name if "/" in name else os.path.join(home(), name)


def present(name: str) -> bool:
    return os.path.isfile(os.path.join(path(name), "base.fbin"))


def recipe(name: str, src_dir: str | None = None) -> list[str] | None:
    """The command that makes `name` (None: no recipe). A derived set's
    command reads its source at `src_dir` (default: where it resolves)."""
    if name in RECIPES:
        return RECIPES[name]
    if name not in DERIVED:
        return None
    src, script, args = DERIVED[name]
    src_dir = src_dir or path(src)
    # The venv scripts/wordnet.sh makes beside the set has numpy; the
    # system python3 may not.
    py = os.path.join(os.path.dirname(src_dir), "venv-minilm", "bin", "python")
    if not os.access(py, os.X_OK):
        py = "python3"
    return [py, script, "--src", src_dir, *args, "--out", name]


def ensure(name: str) -> str:
    """The data set's folder, made first if missing. scripts/wordnet.sh
    prints the folder it made (it may differ from `path`), so a printed
    folder holding base.fbin wins."""
    if present(name):
        return path(name)
    if name in DERIVED:
        subprocess.run(recipe(name, ensure(DERIVED[name][0])), check=True)
        return path(name)
    if name not in RECIPES:
        raise SystemExit(f"data set {name!r} is missing at {path(name)} and has no recipe")
    out = subprocess.run(RECIPES[name], check=True, stdout=subprocess.PIPE, text=True).stdout
    printed = out.strip().splitlines()[-1:] if out.strip() else []
    if printed and os.path.isfile(os.path.join(printed[0], "base.fbin")):
        return printed[0]
    return path(name)
