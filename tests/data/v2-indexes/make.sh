#!/usr/bin/env bash
# How the indexes in this directory were made: by stratavec at commit
# 9a74618 (before issue #52 recorded a plan of parts in the manifest), one
# index of every profile (and the ivf profile with codes, and a diskann
# index with ids and f16 records) from a small seeded synthetic set.
# crates/core/tests/engine/engine_old_indexes.rs builds each again from the
# same data and parameters and checks that today's build writes the same
# bytes, and that the old index opens and searches as today's does.
# Usage: tests/data/v2-indexes/make.sh PATH/TO/OLD/stratavec
set -euo pipefail
bin=${1:?the stratavec binary of commit 9a74618}
cd "$(dirname "$0")"
rm -rf data diskann* starling gorgeous laser pipeann octopus tiered ivf*
"$bin" synth data --n 600 --queries 20 --dim 16 --clusters 8 --seed 5 --threads 1
rm -f data/gt.ibin
common=(--graph-degree 16 --complexity 32 --pq-bytes 8 --threads 1)
for p in diskann starling gorgeous pipeann octopus tiered; do
  "$bin" build data/base.fbin "$p" --profile "$p" "${common[@]}"
done
"$bin" build data/base.fbin laser --profile laser --graph-degree 16 --complexity 32 --threads 1
"$bin" build data/base.fbin ivf --profile ivf --ivf-clusters 12 --ivf-sample-nprobe 3 "${common[@]}"
"$bin" build data/base.fbin ivf-codes --profile ivf --ivf-clusters 12 --ivf-sample-nprobe 3 --ivf-codes "${common[@]}"
"$bin" build data/base.fbin diskann-f16 --profile diskann --store f16 --node-cache-rank visits "${common[@]}"
rm -f ./*/build_report.json
