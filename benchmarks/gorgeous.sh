#!/usr/bin/env bash
# The Gorgeous section of BENCHMARKS.md (issue #20), measured in one go:
#   1. `stratavec bench` at a 20% budget, 2 threads, same run: diskann,
#      starling, gorgeous and each Gorgeous part alone (two-stage search,
#      graph cache on the coupled layout, replicated blocks without the
#      graph cache, the separated layout, 8 KB blocks) on wordnet-minilm
#      (384-d);
#   2. the same on wordnet-mpnet (768-d, real; scripts/wordnet-mpnet.sh
#      full makes it once into ~/.cache/stratavec, ~30 minutes);
#   3. diskann, starling and gorgeous as the budget goes 5%, 10%, 20%, 40%
#      of the raw vectors on wordnet-minilm (Gorgeous Figure 12; gorgeous
#      plans its PQ bytes for each budget, so each budget is its own index);
#   4. the tables (benchmarks/gorgeous_table.py) into BENCHMARKS.md (between
#      its gorgeous-tables markers) and the budget plot.
# Steps can be chosen: `benchmarks/gorgeous.sh 1 3` runs steps 1 and 3.
# About 1.5 hours on this 2-vCPU machine, most of it index builds (reused
# from .cache/bench on later runs). Run it with nothing else on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."

steps=${*:-1 2 3 4}
cargo build --release -q -p stratavec-cli
bin=${CARGO_TARGET_DIR:-target}/release/stratavec
minilm=${STRATAVEC_DATA:-${STRATAVEC_DATA_HOME:-$HOME/.cache/stratavec}}/wordnet-minilm
mpnet=${STRATAVEC_DATA:-${STRATAVEC_DATA_HOME:-$HOME/.cache/stratavec}}/wordnet-mpnet
res=benchmarks/results
work=.cache/bench
mkdir -p "$res" "$work"
has() { [[ " $steps " == *" $1 "* ]]; }
ablations=diskann,starling,gorgeous,gorgeous-two-stage,gorgeous-graph-cache,gorgeous-replicated,gorgeous-separated,gorgeous-8k

# L steps by 1 where the systems cross recall 0.90-0.95 (gorgeous near
# L = 20-30 at σ = 0.5, diskann and starling near 30-45), so "the first
# point that reaches the recall" is within one L of where each crosses it.
sweep="$(seq -s, 14 45),50,60"
if has 1; then
  [ -f "$minilm/base.fbin" ] || minilm=$(scripts/wordnet.sh full)
  "$bin" bench --data "$minilm" --work "$work" --out "$res/gorgeous-384.jsonl" --profiles "$ablations" \
    --threads 2 --memory-fraction 0.2 -L "$sweep" --rounds 3
fi
if has 2; then
  [ -f "$mpnet/base.fbin" ] || scripts/wordnet-mpnet.sh full
  # Coarser in L than step 1 (every system's reads grow ~1 a step, and
  # builds at 768-d take twice as long): the run stays under 40 minutes.
  "$bin" bench --data "$mpnet" --work "$work" --out "$res/gorgeous-768.jsonl" --profiles "$ablations" \
    --threads 2 --memory-fraction 0.2 -L "$(seq -s, 14 2 46),50,60" --rounds 2
fi
if has 3; then
  for f in 0.05 0.1 0.2 0.4; do
    "$bin" bench --data "$minilm" --work "$work" --out "$res/gorgeous-budget-$f.jsonl" \
      --profiles diskann,starling,gorgeous --threads 2 --memory-fraction "$f" \
      -L "$(seq -s, 14 2 60),70,80" --rounds 2 --sustained-seconds 10
  done
fi
if has 4; then
  py=benchmarks/.venvs/plot/bin/python
  [ -x "$py" ] || py=python3
  "$py" benchmarks/gorgeous_table.py --results "$res" --out "$res/gorgeous.md" \
    --plot benchmarks/plots/gorgeous-budget.png --into BENCHMARKS.md
fi
