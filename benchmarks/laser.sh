#!/usr/bin/env bash
# The AlayaLaser section of BENCHMARKS.md (issue #21), measured in one go:
#   1. `stratavec bench` at a 20% budget, 2 threads, same run: diskann,
#      starling, gorgeous, laser and its ablation (layout alone, + node
#      cache, + cluster entries, + adaptive beam = laser, + early dispatch
#      = laser-dispatch), and the peers (hnswlib, DiskANN C++ and DiskANN
#      Rust), on wordnet-minilm (384-d);
#   2. the same on wordnet-mpnet (768-d, real; scripts/wordnet-mpnet.sh
#      full makes it once into ~/.cache/stratavec, ~30 minutes), in 3
#      rounds: its CPU a query is one of issue #21's lines, and on a
#      shared virtual machine it moves by a fifth from run to run;
#   3. the tables (benchmarks/laser_table.py) into BENCHMARKS.md;
#   4. wordnet-mpnet with the device out of the way: the stratavec indexes
#      read through the `ram` backend (a fast second tier), same run with
#      hnswlib;
#   5. wordnet-mpnet latency: 1 thread x 1 query in flight, diskann, laser
#      and laser-wide (every round W wide) at W = 4 and W = 8 (p50/p99 a
#      query; 3 rounds, as one query's latency moves with the machine).
# Steps can be chosen: `benchmarks/laser.sh 1 3` runs steps 1 and 3. Index
# builds are reused from .cache/bench. Run it with nothing else on the
# machine. LASER_SYSTEMS, LASER_RAM_SYSTEMS, LASER_PEERS and LASER_SWEEP
# narrow a run;
# LASER_RESULTS (a folder) and LASER_TAG (the BENCHMARKS.md markers) keep
# another machine's rows and tables apart from these.
set -euo pipefail
cd "$(dirname "$0")/.."

steps=${*:-1 2 4 5 3}
cargo build --release -q -p stratavec-cli
bin=${CARGO_TARGET_DIR:-target}/release/stratavec
minilm=${STRATAVEC_DATA:-${STRATAVEC_DATA_HOME:-$HOME/.cache/stratavec}}/wordnet-minilm
mpnet=${STRATAVEC_DATA:-${STRATAVEC_DATA_HOME:-$HOME/.cache/stratavec}}/wordnet-mpnet
res=${LASER_RESULTS:-benchmarks/results}
work=.cache/bench
mkdir -p "$res" "$work"
has() { [[ " $steps " == *" $1 "* ]]; }
systems=${LASER_SYSTEMS:-diskann,starling,gorgeous,laser-layout,laser-cache,laser-entry,laser,laser-dispatch}
peers=${LASER_PEERS:-hnswlib,diskannpy,diskannpy-rust}

# Recall@10 0.90-0.99 lies between L = 16 and 150 for every system here
# (laser at 768-d crosses 0.95 near L = 28, diskann near 60, at 384-d
# laser near 60); LASER_SWEEP and LASER_PEERS override.
sweep=${LASER_SWEEP:-16,20,24,28,32,36,40,50,60,80,100,120,150}
if has 1; then
  [ -f "$minilm/base.fbin" ] || minilm=$(scripts/wordnet.sh full)
  "$bin" bench --data "$minilm" --work "$work" --out "$res/laser-384.jsonl" --profiles "$systems" \
    --peers "$peers" --threads 2 --memory-fraction 0.2 -L "$sweep" --rounds 2
fi
if has 2; then
  [ -f "$mpnet/base.fbin" ] || scripts/wordnet-mpnet.sh full
  "$bin" bench --data "$mpnet" --work "$work" --out "$res/laser-768.jsonl" --profiles "$systems" \
    --peers "$peers" --threads 2 --memory-fraction 0.2 -L "$sweep" --rounds 3
fi
if has 4; then
  [ -f "$mpnet/base.fbin" ] || scripts/wordnet-mpnet.sh full
  # No device probes: nothing is read from the device.
  "$bin" bench --data "$mpnet" --work "$work" --out "$res/laser-768-ram.jsonl" \
    --profiles "${LASER_RAM_SYSTEMS:-diskann,gorgeous,laser}" --peers "${LASER_RAM_PEERS:-hnswlib}" --io ram \
    --threads 2 --memory-fraction 0.2 -L "$sweep" --rounds 2 --device-seconds 0 --sustained-seconds 0
fi
if has 5; then
  [ -f "$mpnet/base.fbin" ] || scripts/wordnet-mpnet.sh full
  for w in 4 8; do
    "$bin" bench --data "$mpnet" --work "$work" --out "$res/laser-768-latency-w$w.jsonl" \
      --profiles diskann,laser,laser-wide --threads 1 --in-flight 1 -W "$w" --memory-fraction 0.2 \
      -L 16,20,24,28,32,40,50,60,80,100,150 --rounds 3 --min-pass-seconds 0 \
      --device-seconds 0 --sustained-seconds 0
  done
fi
if has 3; then
  py=benchmarks/.venvs/plot/bin/python
  [ -x "$py" ] || py=python3
  "$py" benchmarks/laser_table.py --results "$res" --into BENCHMARKS.md --tag "${LASER_TAG:-laser-tables}"
fi
