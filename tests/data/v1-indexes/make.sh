#!/usr/bin/env bash
# How the indexes in this directory were made: by stratavec at commit
# e8951bf (before issue #20 made profiles compositions and added the memory
# planner), from a small seeded synthetic set. crates/core/tests/engine/
# engine_old_indexes.rs opens them with today's code and checks that they
# search as an index built today from the same data does, byte for byte.
# Usage: tests/data/v1-indexes/make.sh PATH/TO/OLD/stratavec
set -euo pipefail
bin=${1:?the stratavec binary of commit e8951bf}
cd "$(dirname "$0")"
rm -rf data diskann starling
"$bin" synth data --n 600 --queries 20 --dim 8 --clusters 8 --seed 3 --threads 1
rm -f data/gt.ibin
common=(--graph-degree 16 --complexity 32 --pq-bytes 4 --threads 1)
"$bin" build data/base.fbin diskann --profile diskann "${common[@]}"
"$bin" build data/base.fbin starling --profile starling --nav-sample 0.05 "${common[@]}"
rm -f diskann/build_report.json starling/build_report.json
