#!/usr/bin/env bash
# The second-tier memory section of BENCHMARKS.md (issue #23, paper 002),
# every step one `stratavec bench` run (systems interleaved by round):
#   1. graph indexes on each tier, wordnet-minilm, 2 threads, 20% budget:
#      coupled (diskann), blocked (starling), CSR (tiered, tiered-f16), each
#      on the SSD (io_uring + O_DIRECT), in local memory (mmap: the
#      computation bound) and on simulated tiers of 0.3, 1 and 3 µs a read
#      (TIER_GBPS GB/s link, default 16); 3 rounds;
#   2. the cross-query software pipeline (§5): tiered on the 1 µs tier and
#      in local memory at 1, 2, 4, 8, 16, 32, 64 queries in flight a thread
#      (2 threads, L = TIER_L, default 40);
#   3. the tables and the figure (benchmarks/tiered_table.py) into
#      BENCHMARKS.md;
#   4. cluster indexes (ivf, §6) in local memory and on the 0.3, 1 and
#      3 µs tiers:
#      replication 1, 2, 4, 8 grouped by frequency, and 4 in id order
#      (ivf-nogroup), -L = nprobe;
#   5. cluster indexes on the SSD with LanceDB (IVF_PQ on disk) in the same
#      rounds: ivf-r1 reading whole clusters (a cluster read is ~150 KB, so
#      a query reads megabytes and a pass takes seconds; the replicated
#      ivf, slower still, is measured on the tiers only), and IVF-PQ
#      (ivf-pq, ivf-pq-r4: codes and members in RAM, 4·k vectors read),
#      nprobe up to 160 so LanceDB reaches 0.90;
#   6. the replicated cluster indexes on the SSD, replication 2, 4 and 8
#      grouped and 4 without grouping (ivf-r2, ivf, ivf-r8, ivf-nogroup),
#      at nprobe 10 and 20 (every small read a 4 KB page: a pass takes a
#      minute).
# Steps can be chosen: `benchmarks/tiered.sh 2 3`; with no argument 1 2 4
# 5 6 3. Index builds are reused
# from .cache/bench. Run it with nothing else on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."

steps=${*:-1 2 4 5 6 3}
cargo build --release -q -p stratavec-cli
bin=${CARGO_TARGET_DIR:-target}/release/stratavec
data=$(scripts/wordnet.sh full)   # made once, then found in the data cache
res=benchmarks/results
work=.cache/bench
mkdir -p "$res" "$work"
has() { [[ " $steps " == *" $1 "* ]]; }
gbps=${TIER_GBPS:-16}
sweep=${TIER_SWEEP:-20,25,30,40,50,60,80,100,150}
tiers=(--tier ssd --tier mmap --tier "simulated:300,$gbps" --tier "simulated:1000,$gbps" --tier "simulated:3000,$gbps")

if has 1; then
  "$bin" bench --data "$data" --work "$work" --out "$res/tiered-graph-384.jsonl" \
    --profiles diskann,starling,tiered,tiered-f16 "${tiers[@]}" \
    --threads 2 --memory-fraction 0.2 -L "$sweep" --rounds 3 --min-pass-seconds 0.5 \
    --device-seconds 0 --sustained-seconds 0
fi
if has 2; then
  for q in 1 2 4 8 16 32 64; do
    "$bin" bench --data "$data" --work "$work" --out "$res/tiered-inflight-q$q.jsonl" \
      --profiles tiered --tier mmap --tier "simulated:1000,$gbps" \
      --threads 2 --in-flight "$q" --memory-fraction 0.2 -L "${TIER_L:-40}" --rounds 3 \
      --min-pass-seconds 0.5 --device-seconds 0 --sustained-seconds 0
  done
fi
if has 4; then
  "$bin" bench --data "$data" --work "$work" --out "$res/tiered-ivf-384.jsonl" \
    --profiles ivf-r1,ivf-r2,ivf,ivf-r8,ivf-nogroup --tier mmap --tier "simulated:300,$gbps" \
    --tier "simulated:1000,$gbps" --tier "simulated:3000,$gbps" \
    --threads 2 --memory-fraction 0.2 -L "${IVF_SWEEP:-10,15,20,30,40,60,80,120}" --rounds 3 \
    --min-pass-seconds 0.5 --device-seconds 0 --sustained-seconds 0
fi
if has 5; then
  "$bin" bench --data "$data" --work "$work" --out "$res/tiered-ivf-ssd.jsonl" \
    --profiles diskann,ivf-r1,ivf-pq,ivf-pq-r4 --tier ssd --peers "${IVF_PEERS:-lancedb}" \
    --threads 2 --memory-fraction 0.2 -L "${IVF_SSD_SWEEP:-10,20,40,60,80,120,160}" --rounds 2 \
    --min-pass-seconds 0 --device-seconds 0 --sustained-seconds 0
fi
if has 6; then
  "$bin" bench --data "$data" --work "$work" --out "$res/tiered-ivf-ssd-grouping.jsonl" \
    --profiles ivf-r2,ivf,ivf-r8,ivf-nogroup --tier ssd --threads 2 --memory-fraction 0.2 -L 10,20 \
    --rounds 2 --min-pass-seconds 0 --device-seconds 0 --sustained-seconds 0
fi
if has 3; then
  py=benchmarks/.venvs/plot/bin/python
  [ -x "$py" ] || py=python3
  "$py" benchmarks/tiered_table.py --results "$res" --out "$res/tiered.md" --into BENCHMARKS.md \
    --plot benchmarks/plots/tiered.png
fi
