#!/usr/bin/env bash
# Makes a data set with scripts/datasets/make.py unless the cache has it, and
# prints its folder on stdout (everything else goes to stderr):
#   scripts/datasets/cached.sh wordnet-minilm 20k|full
#   scripts/datasets/cached.sh wordnet-mpnet 20k|full
# The cache is $STRATAVEC_DATA (alias: $STRATAVEC_DATA_HOME), default
# ~/.cache/stratavec: outside the work tree, so every checkout on a machine
# shares sets that take up to half an hour to make. Each recipe has a private
# venv there with its pinned inputs (requirements-<set>.txt, pip --no-deps;
# set PIP_FIND_LINKS=/dir/of/wheels to install them offline).
# Exits 3 with a message when the inputs cannot be installed, so callers can
# skip; any other failure is an error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dataset=${1:?usage: $0 wordnet-minilm|wordnet-mpnet 20k|full}
which=${2:-20k}
case "$dataset" in wordnet-minilm|wordnet-mpnet) ;; *) echo "$0: unknown data set $dataset" >&2; exit 2 ;; esac
case "$which" in
  20k) name=$dataset-20k; limit=(--limit 20000) ;;
  full) name=$dataset; limit=() ;;
  *) echo "usage: $0 $dataset 20k|full" >&2; exit 2 ;;
esac
home=${STRATAVEC_DATA:-${STRATAVEC_DATA_HOME:-$HOME/.cache/stratavec}}
mkdir -p "$home"
home=$(cd "$home" && pwd)    # absolute: callers cd elsewhere
out=$home/$name

have() { for f in "$@"; do [ -f "$out/$f" ] || return 1; done; }
vectors=(base.fbin query.fbin gt.ibin)
labels=(base.labels.spmat labels.tsv query.filters.spmat query.filters.tsv gt.filtered.ibin)
learn=(learn.fbin)
if have "${vectors[@]}" "${labels[@]}" "${learn[@]}"; then echo "$out"; exit 0; fi

# The venv is (re)filled when its requirements file changed: a stamp holds
# the file's content, so an unchanged venv costs no pip run (nor network).
req=$here/requirements-$dataset.txt
venv=$home/venv-${dataset#wordnet-}
if ! cmp -s "$req" "$venv/requirements.installed" 2>/dev/null; then
  if ! { [ -x "$venv/bin/python" ] || python3 -m venv "$venv" >&2; } ||
     ! "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r "$req" >&2; then
    echo "$dataset: could not install the pinned inputs ($req) into $venv" >&2
    exit 3
  fi
  cp "$req" "$venv/requirements.installed"
fi
py=$venv/bin/python

if have "${vectors[@]}"; then
  # A set made before the labels existed: add them (the step renames its
  # files into place only when all are written).
  if ! have "${labels[@]}" &&
     ! "$py" "$here/make.py" "$dataset" "${limit[@]}" --out "$out" --labels-only >&2; then
    # Failed after writing (say, a checksum mismatch): leave no labels that
    # the check above would take for good ones.
    (cd "$out" && rm -f "${labels[@]}")
    exit 1
  fi
  # One made before the learn queries existed: add them the same way.
  if ! have "${learn[@]}" &&
     ! "$py" "$here/make.py" "$dataset" "${limit[@]}" --out "$out" --learn-only >&2; then
    (cd "$out" && rm -f "${learn[@]}")
    exit 1
  fi
else
  # Made in a temporary sibling and renamed: an interrupted run leaves no
  # half set that the check above would take for a whole one.
  tmp=$out.making-$$
  rm -rf "$tmp"
  trap 'rm -rf "$tmp"' EXIT
  "$py" "$here/make.py" "$dataset" "${limit[@]}" --out "$tmp" >&2
  rm -rf "$out"
  mv "$tmp" "$out"
  trap - EXIT
fi
echo "$out"
