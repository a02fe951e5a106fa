#!/usr/bin/env bash
# The "Starling at 1M vectors (synthetic)" part of BENCHMARKS.md: the same
# seeded clustered data (`stratavec synth`, 96-d, 256 clusters) at the size
# of wordnet-minilm (116,707) and at 1M, diskann / starling (/ starling-all
# at 1M) in one `stratavec bench` run each, 20% budget, 2 threads; then the
# peak RSS of a streaming `stratavec relayout` of the 1M diskann index.
# Synthetic: every table made from it says so. About 25 minutes on this
# 2-vCPU machine (the three 1M graph builds are 4-5 minutes each); 3 GB of
# disk under .cache/.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -q -p stratavec-cli
bin=${CARGO_TARGET_DIR:-target}/release/stratavec
res=benchmarks/results
work=.cache/bench
mkdir -p "$res" "$work"

for spec in 117k:116707 1m:1000000; do
  name=${spec%%:*}
  n=${spec##*:}
  data=.cache/synth-$name-96
  [ -f "$data/gt.ibin" ] || "$bin" synth "$data" --n "$n" --dim 96 --clusters 256 --queries 1000
  profiles=diskann,starling
  [ "$name" = 1m ] && profiles=diskann,starling,starling-all
  "$bin" bench --data "$data" --work "$work" --out "$res/starling-synth$name.jsonl" --profiles "$profiles" \
    --threads 2 --memory-fraction 0.2 -L "$(seq -s, 10 2 70)" --rounds 3 --device-seconds 0 --sustained-seconds 0
  python3 benchmarks/starling_table.py "$res/starling-synth$name.jsonl" > "$res/starling-synth$name.md"
done

# Relayout streams the pages: its peak RSS is the graph (out-lists and, at
# 4+ records a block, the undirected copy) and the block map, not the
# vectors.
out=$(mktemp -d)
/usr/bin/time -v "$bin" relayout "$work/synth-1m-96-diskann-R64-L128-pq48" "$out/starling" 2> "$res/relayout-synth1m.time"
grep -E "Elapsed|Maximum resident" "$res/relayout-synth1m.time"
rm -rf "$out"
echo "tables: $res/starling-synth117k.md $res/starling-synth1m.md"
