#!/usr/bin/env bash
# The PipeANN / OctopusANN section of BENCHMARKS.md (issue #22), measured in
# one go, every step one `stratavec bench` run (systems interleaved by round):
#   1. latency on wordnet-minilm (384-d), 1 thread x 1 query in flight
#      (`bench --latency`; the peers make one single-query call at a time):
#      diskann (W = 4 beam search), starling, pipeann, octopus, the
#      pipelined search over octopus's blocks (pipeann-blocks), gorgeous and
#      gorgeous with pipelined refinement (gorgeous-pipe), pipeann with
#      DiskANN's breadth-first node cache (pipeann-bfs), diskann polling
#      for completions as the pipelined searches do (diskann-poll) and
#      pipeann sleeping until one arrives as diskann does (pipeann-sleep),
#      diskann, pipeann and gorgeous-pipe with an io_uring kernel thread
#      submitting their reads (the -sqpoll systems, `--sqpoll`),
#      DiskANN C++ (diskannpy) and hnswlib; 5 rounds;
#   2. OctopusANN's ablation (Table 1 / Figures 15-16) at 2 threads,
#      throughput mode, 20% budget: each technique alone on the PQ baseline
#      (starling-nav = MemGraph, starling-shuffle = PageShuffle,
#      starling-page = PageSearch, octopus-width = DynamicWidth,
#      octopus-pipe = Pipeline) and C1-C5 (starling, octopus-c2,
#      starling-all, pipeann, octopus), on wordnet-minilm, with C5 on
#      DiskANN's breadth-first node cache (octopus-bfs: what its
#      visit-frequency cache adds), gorgeous and gorgeous-pipe beside them
#      (what pipelined refinement costs under load);
#   3. the same on its 96-d PCA (benchmarks/datasets/pca.py);
#   4. the thread x in-flight grid between latency and throughput mode:
#      diskann and pipeann at 1 and 2 threads x 1, 4, 16 queries in flight;
#   5. the tables (benchmarks/pipeann_table.py) into BENCHMARKS.md;
#   6. latency again with the pipelined search over f16 blocks (4 records
#      a block at 384-d): diskann (f32), pipeann-blocks, pipeann-blocks-f16
#      and hnswlib, 3 rounds;
#   7. latency on the 96-d PCA (7.5 records a 4 KB block, where the block
#      compositions read far fewer pages): diskann, starling, pipeann,
#      octopus, pipeann-blocks, gorgeous, gorgeous-pipe, DiskANN C++ and
#      hnswlib, 5 rounds;
#   8. latency on wordnet-mpnet (768-d, one record a 4 KB page;
#      scripts/wordnet-mpnet.sh): diskann, gorgeous, gorgeous-pipe and the
#      -sqpoll systems of step 1 beside them, and hnswlib; 3 rounds;
#   9. latency of diskann and pipeann on this disk and, in the same rounds,
#      on a simulated device whose reads take 80 µs at any depth (`--tier
#      simulated:80000,100`, the issue's depth-1 figure): what pipelining
#      gives where a deeper queue does not slow each read; 5 rounds.
# Steps can be chosen: `benchmarks/pipeann.sh 1 5`; with no argument 1-4,
# 6-9, then 5. Index builds are reused
# from .cache/bench. Run it with nothing else on the machine.
# PIPEANN_RESULTS (a folder) and PIPEANN_TAG (the BENCHMARKS.md markers) keep
# another machine's rows and tables apart from these.
set -euo pipefail
cd "$(dirname "$0")/.."

steps=${*:-1 2 3 4 6 7 8 9 5}
cargo build --release -q -p stratavec-cli
bin=${CARGO_TARGET_DIR:-target}/release/stratavec
data=${STRATAVEC_DATA:-${STRATAVEC_DATA_HOME:-$HOME/.cache/stratavec}}/wordnet-minilm
pca=.cache/wordnet-minilm-pca96
res=${PIPEANN_RESULTS:-benchmarks/results}
work=.cache/bench
mkdir -p "$res" "$work"
has() { [[ " $steps " == *" $1 "* ]]; }
[ -f "$data/base.fbin" ] || data=$(scripts/wordnet.sh full)
ensure_pca() {
  if [ ! -f "$pca/base.fbin" ]; then
    py=$(dirname "$data")/venv-minilm/bin/python   # the data venv has numpy
    [ -x "$py" ] || py=python3
    "$py" benchmarks/datasets/pca.py --src "$data" --dims 96 --out "$pca"
  fi
}
# L steps by 5 where recall@10 crosses 0.90-0.95 (L 20-45 here), so the
# first point reaching a target is close to where each system crosses it.
sweep=${PIPEANN_SWEEP:-20,25,30,35,40,45,50,60,80,100,150}
# The throughput ablation steps by 2 there: the systems it compares differ
# by a few percent in reads, less than what L = 35 -> 40 changes.
ablate_sweep=${PIPEANN_ABLATE_SWEEP:-20,25,30,32,34,36,38,40,42,45,50,60,80}
# The 96-d PCA crosses 0.90-0.95 at L 10-20 (at L = 20 every system is
# already above 0.95).
pca_sweep=${PIPEANN_PCA_SWEEP:-10,12,14,16,18,20,25,30,40,60,100}
# --ablate runs OctopusANN's study (each technique alone, C1-C5; bench::ablation)
# and records the page-I/O model's inputs; octopus-bfs is C5 on a BFS cache.
extra=octopus-bfs

if has 1; then
  "$bin" bench --data "$data" --work "$work" --out "$res/pipeann-latency-384.jsonl" \
    --profiles "${PIPEANN_LATENCY_SYSTEMS:-diskann,starling,pipeann,octopus,pipeann-blocks,gorgeous,gorgeous-pipe,pipeann-bfs,diskann-poll,pipeann-sleep,diskann-sqpoll,pipeann-sqpoll,gorgeous-pipe-sqpoll}" \
    --peers "${PIPEANN_PEERS:-diskannpy,hnswlib}" \
    --latency --memory-fraction 0.2 -L "$sweep" --rounds 5 --min-pass-seconds 0 \
    --device-seconds 0 --sustained-seconds 0
fi
if has 2; then
  "$bin" bench --data "$data" --work "$work" --out "$res/pipeann-ablation-384.jsonl" \
    --ablate --profiles "$extra,gorgeous,gorgeous-pipe" --threads 2 --memory-fraction 0.2 -L "$ablate_sweep" --rounds 3 \
    --device-seconds 0 --sustained-seconds 0
fi
if has 3; then
  ensure_pca
  "$bin" bench --data "$pca" --work "$work" --out "$res/pipeann-ablation-pca96.jsonl" \
    --ablate --profiles "$extra" --threads 2 --memory-fraction 0.2 -L "$pca_sweep" --rounds 3 \
    --device-seconds 0 --sustained-seconds 0
fi
if has 4; then
  for t in 1 2; do
    for q in 1 4 16; do
      "$bin" bench --data "$data" --work "$work" --out "$res/pipeann-grid-t$t-q$q.jsonl" \
        --profiles diskann,pipeann --threads "$t" --in-flight "$q" --memory-fraction 0.2 \
        -L 40,60 --rounds 2 --min-pass-seconds 0 --device-seconds 0 --sustained-seconds 0
    done
  done
fi
if has 6; then
  "$bin" bench --data "$data" --work "$work" --out "$res/pipeann-latency-384-f16.jsonl" \
    --profiles diskann,pipeann-blocks,pipeann-blocks-f16 --peers hnswlib \
    --latency --memory-fraction 0.2 -L "$sweep" --rounds 3 --min-pass-seconds 0 \
    --device-seconds 0 --sustained-seconds 0
fi
if has 7; then
  ensure_pca
  "$bin" bench --data "$pca" --work "$work" --out "$res/pipeann-latency-pca96.jsonl" \
    --profiles diskann,starling,pipeann,octopus,pipeann-blocks,gorgeous,gorgeous-pipe \
    --peers "${PIPEANN_PEERS:-diskannpy,hnswlib}" \
    --latency --memory-fraction 0.2 -L "$pca_sweep" --rounds 5 --min-pass-seconds 0 \
    --device-seconds 0 --sustained-seconds 0
fi
if has 8; then
  mpnet=${STRATAVEC_DATA:-${STRATAVEC_DATA_HOME:-$HOME/.cache/stratavec}}/wordnet-mpnet
  [ -f "$mpnet/base.fbin" ] || scripts/wordnet-mpnet.sh full
  "$bin" bench --data "$mpnet" --work "$work" --out "$res/pipeann-latency-768.jsonl" \
    --profiles diskann,gorgeous,gorgeous-pipe,diskann-sqpoll,gorgeous-pipe-sqpoll \
    --peers "${PIPEANN_PEERS_768:-hnswlib}" \
    --latency --memory-fraction 0.2 -L 16,20,24,28,32,40,50,60 --rounds 3 --min-pass-seconds 0 \
    --device-seconds 0 --sustained-seconds 0
fi
if has 9; then
  "$bin" bench --data "$data" --work "$work" --out "$res/pipeann-latency-384-tiers.jsonl" \
    --profiles diskann,pipeann --tier ssd --tier simulated:80000,100 \
    --latency --memory-fraction 0.2 -L 30,35,40,45,50 --rounds 5 --min-pass-seconds 0 \
    --device-seconds 0 --sustained-seconds 0
fi
if has 5; then
  python3 benchmarks/pipeann_table.py --results "$res" --into BENCHMARKS.md --tag "${PIPEANN_TAG:-pipeann-tables}"
fi
