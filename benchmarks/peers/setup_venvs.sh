#!/usr/bin/env bash
# Create one virtualenv per peer under benchmarks/.venvs/<peer>, each with the
# peer installed from PyPI at a pinned version. Idempotent: a venv whose
# .stamp matches its requirement line is left alone; otherwise it is rebuilt.
#
# Usage: benchmarks/peers/setup_venvs.sh [peer ...]     (default: all peers)
#   peers: diskannpy diskannpy-rust hnswlib faiss-ivfpq lancedb
#   PYTHON=python3.11 to choose the interpreter (default python3, needs 3.11).
#
# diskannpy (C++, 0.7.0) and diskannpy-rust (0.49.1) both install a Python
# package named `diskannpy`, so they can never share a venv. diskannpy 0.7.0
# was built against numpy 1.x and needs numpy<2. hnswlib 0.8.0 is an sdist:
# it compiles with the system C++ compiler (g++) and needs pybind11/numpy at
# build time (pip's isolated build handles that). lancedb is a manylinux wheel
# (Rust engine inside) that depends on pyarrow; numpy and pyarrow are
# named because lancedb_peer.py imports both directly.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venvs="$(cd "$here/.." && pwd)/.venvs"
PYTHON="${PYTHON:-python3}"

declare -A REQS=(
  [diskannpy]="diskannpy==0.7.0 numpy<2"
  [diskannpy-rust]="diskannpy-rust==0.49.1 numpy<3"
  [hnswlib]="hnswlib==0.8.0 numpy<3"
  [faiss-ivfpq]="faiss-cpu==1.15.1 numpy<3"
  [lancedb]="lancedb==0.40.0 numpy<3 pyarrow"
)
# The module each venv must be able to import, as a post-install check.
declare -A MODS=(
  [diskannpy]="diskannpy"
  [diskannpy-rust]="diskannpy"
  [hnswlib]="hnswlib"
  [faiss-ivfpq]="faiss"
  [lancedb]="lancedb"
)

peers=("$@")
if [ ${#peers[@]} -eq 0 ]; then peers=(diskannpy diskannpy-rust hnswlib faiss-ivfpq lancedb); fi

"$PYTHON" - <<'PY'
import sys
if sys.version_info[:2] != (3, 11):
    sys.stderr.write(f"warning: pinned wheels were chosen for CPython 3.11, this is {sys.version.split()[0]}\n")
PY

mkdir -p "$venvs"
for peer in "${peers[@]}"; do
  req="${REQS[$peer]:-}"
  if [ -z "$req" ]; then echo "unknown peer: $peer" >&2; exit 2; fi
  dir="$venvs/$peer"
  stamp="$dir/.stamp"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$req" ] \
     && "$dir/bin/python" -c "import ${MODS[$peer]}" >/dev/null 2>&1; then
    echo "[$peer] up to date ($req)" >&2
    continue
  fi
  echo "[$peer] creating $dir with: $req" >&2
  rm -rf "$dir"
  "$PYTHON" -m venv "$dir"
  "$dir/bin/python" -m pip install --quiet --upgrade pip >&2
  # shellcheck disable=SC2086  # word splitting of the requirement list is intended
  "$dir/bin/python" -m pip install --quiet $req >&2
  "$dir/bin/python" -c "import ${MODS[$peer]}" >&2
  echo "$req" > "$stamp"
  "$dir/bin/python" -m pip freeze > "$dir/.freeze"
  echo "[$peer] ok: $(grep -iE '^(diskannpy|hnswlib|faiss|lancedb|pylance|pyarrow|numpy)' "$dir/.freeze" | tr '\n' ' ')" >&2
done
