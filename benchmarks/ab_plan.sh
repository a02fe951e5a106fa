#!/usr/bin/env bash
# Issue #52's A/B: the build and search of commit 9a74618 (before the plan of
# parts) against the plan of parts, on one data set, every profile.
#
#   benchmarks/ab_plan.sh OLD_BIN NEW_BIN DATA_DIR
#   OLD_BIN=... NEW_BIN=... benchmarks/ab_plan.sh DATA_DIR
#
# The second form is how benchmarks/scenarios/ab_plan.toml runs it (python3
# benchmarks/bench.py run benchmarks/scenarios/ab_plan.toml): the scenario
# fixes the data set and the knobs below, the two binaries come from the
# caller's environment.
# DATA_DIR holds base.fbin, query.fbin and gt.ibin (scripts/wordnet.sh 20k).
#   1. Builds every profile with each binary from the same data and the same
#      parameters (defaults, --memory-budget-mb at 20% of the raw vector
#      bytes so gorgeous plans its PQ, --threads 2), into
#      $WORK/{old,new}/PROFILE, and compares the two directories: the same
#      file names, the same sha256 of every file, and manifest.json equal
#      once the new build's `plan` field is deleted (jq 'del(.plan)').
#      Exits 1 after step 1 when anything differs, naming it.
#   2. Searches each old index with the old binary and each new index with
#      the new binary, one search a (profile, L), the two binaries one after
#      the other (the old first in odd rounds, the new first in even ones),
#      ROUNDS rounds; each search at a 20% budget, 2 threads, k = 10, the
#      query set repeated REPEAT times (so a timed pass lasts about a
#      second; recall and reads a query are those of the 1,000 queries).
#      Every search is a JSON line (`stratavec search --json` plus side,
#      profile, round and the sha256 of the neighbours it returned,
#      `--output`) appended to OUT; the build comparison is a line a
#      profile there too.
# benchmarks/tables/ab_plan.py renders OUT's tables into BENCHMARKS.md
# (`python3 benchmarks/bench.py report benchmarks/scenarios/ab_plan.toml`).
#
# Environment: PROFILES (default: all eight), ROUNDS (4), REPEAT (3),
# WORK (.cache/ab-plan/DATASET), OUT (benchmarks/results/ab-plan/DATASET.jsonl,
# overwritten by step 1, appended to by step 2 alone), STEPS ("1 2"), L_<profile> (the L values searched, e.g.
# L_diskann="20 30 50"), and per profile MB_<profile> (its search budget
# in MB, when 20% is below what it needs to open) and REPEAT_<profile>.
set -euo pipefail
cd "$(dirname "$0")/.."

case $# in
  3) old_bin=$1 new_bin=$2 data=$3 ;;
  1)
    # A scenario's argv is fixed: the binaries under test come from here.
    old_bin=${OLD_BIN:?"ab_plan: set OLD_BIN and NEW_BIN (the two stratavec binaries) or give them as arguments"}
    new_bin=${NEW_BIN:?"ab_plan: set NEW_BIN (the new stratavec binary) or give both binaries as arguments"}
    data=$1 ;;
  *)
    echo "usage: $0 OLD_BIN NEW_BIN DATA_DIR, or OLD_BIN=... NEW_BIN=... $0 DATA_DIR" >&2
    exit 2 ;;
esac
old_bin=$(realpath "$old_bin")
new_bin=$(realpath "$new_bin")
data=${data%/}
dataset=$(basename "$data")
profiles=${PROFILES:-diskann starling gorgeous laser pipeann octopus tiered ivf}
rounds=${ROUNDS:-4}
repeat=${REPEAT:-3}
work=${WORK:-.cache/ab-plan/$dataset}
out=${OUT:-benchmarks/results/ab-plan/$dataset.jsonl}
steps=${STEPS:-1 2}
has() { [[ " $steps " == *" $1 "* ]]; }

# recall@10 about 0.90-0.97 at a 20% budget on wordnet-minilm-20k (a sweep
# of the new binary); ivf's L is the clusters probed (raised to k = 10).
default_l() {
  case $1 in
    gorgeous) echo "25 30" ;;
    ivf) echo "10" ;;
    *) echo "30 60" ;;
  esac
}
ls_of() { local v="L_$1"; echo "${!v:-$(default_l "$1")}"; }
# A profile's search budget (MB_<profile>) and query repeats (REPEAT_<profile>).
mb_of() { local v="MB_$1"; echo "${!v:-$budget_mb}"; }
repeat_of() { local v="REPEAT_$1"; echo "${!v:-$repeat}"; }

# 20% of the raw vector bytes, in MB (10^6 bytes), as `bench --memory-fraction 0.2`.
budget_mb=$(python3 - "$data/base.fbin" <<'EOF'
import os, struct, sys
n, d = struct.unpack("<II", open(sys.argv[1], "rb").read(8))
elem = (os.path.getsize(sys.argv[1]) - 8) // (n * d)
print(int(0.2 * n * d * elem) / 1e6)
EOF
)
mkdir -p "$work/old" "$work/new" "$work/ids" "$(dirname "$out")"
# Step 1 starts OUT afresh; step 2 alone appends to it.
if has 1; then : > "$out"; fi
echo "ab_plan: $dataset, budget $budget_mb MB, old $("$old_bin" --version), new $("$new_bin" --version)" >&2

# build_report.json (not an index file: the manifest does not list it)
# without its timings: total_s, peak_rss_bytes and the seconds of each stage.
untimed='walk(if type == "object" then del(.total_s, .peak_rss_bytes)
  | (if has("stages") then .stages |= map(.[:-1]) else . end) else . end)'
# The files of an index directory: a sha256 each, manifest.json's without
# its plan, build_report.json's without its timings.
digest() {
  local dir=$1
  for f in $(cd "$dir" && ls | sort); do
    if [ "$f" = manifest.json ]; then
      echo "$f $(jq -S 'del(.plan)' "$dir/$f" | sha256sum | cut -d' ' -f1) (without plan)"
    elif [ "$f" = build_report.json ]; then
      echo "$f $(jq -S "$untimed" "$dir/$f" | sha256sum | cut -d' ' -f1) (without timings)"
    else
      echo "$f $(sha256sum < "$dir/$f" | cut -d' ' -f1)"
    fi
  done
}

differ=0
if has 1; then
  for p in $profiles; do
    for side in old new; do
      bin=${side}_bin
      dir=$work/$side/$p
      if [ ! -f "$dir/manifest.json" ]; then
        t0=$(date +%s.%N)
        nice -n 5 "${!bin}" build "$data/base.fbin" "$dir" --profile "$p" \
          --memory-budget-mb "$budget_mb" --threads 2 --json > "$work/$side/$p.build.json"
        t1=$(date +%s.%N)
        echo "$t0 $t1" | awk '{printf "%.1f\n", $2 - $1}' > "$work/$side/$p.build_s"
      fi
    done
    a=$(digest "$work/old/$p")
    b=$(digest "$work/new/$p")
    same=true
    if [ "$a" != "$b" ]; then
      same=false
      differ=1
      echo "ab_plan: $p: the builds differ:" >&2
      diff <(echo "$a") <(echo "$b") >&2 || true
      diff <(jq -S 'del(.plan)' "$work/old/$p/manifest.json") \
        <(jq -S 'del(.plan)' "$work/new/$p/manifest.json") >&2 || true
      diff <(jq -S "$untimed" "$work/old/$p/build_report.json") \
        <(jq -S "$untimed" "$work/new/$p/build_report.json") >&2 || true
    else
      echo "ab_plan: $p: identical ($(echo "$a" | awk '{print $1}' | tr '\n' ' '))" >&2
    fi
    jq -nc --arg p "$p" --arg ds "$dataset" --argjson same "$same" \
      --arg a "$a" --arg b "$b" --arg plan "$(jq -c '.plan' "$work/new/$p/manifest.json")" \
      --arg ta "$(cat "$work/old/$p.build_s" 2>/dev/null || echo null)" \
      --arg tb "$(cat "$work/new/$p.build_s" 2>/dev/null || echo null)" \
      '{kind: "build", dataset: $ds, profile: $p, identical: $same,
        old_files: ($a | split("\n")), new_files: ($b | split("\n")),
        new_plan: ($plan | fromjson), old_build_s: ($ta | fromjson), new_build_s: ($tb | fromjson)}' >> "$out"
  done
  if [ $differ = 1 ]; then
    echo "ab_plan: builds differ (above); stopping before the searches" >&2
    exit 1
  fi
fi

if has 2; then
  # The query set and its ground truth repeated R times, in $work/query-xR.
  queries() {
    local q=$work/query-x$1
    if [ ! -f "$q/gt.ibin" ]; then
      mkdir -p "$q"
      python3 - "$data" "$q" "$1" <<'EOF2'
import struct, sys
src, dst, r = sys.argv[1], sys.argv[2], int(sys.argv[3])
qb = open(f"{src}/query.fbin", "rb").read()
n, d = struct.unpack("<II", qb[:8])
open(f"{dst}/query.fbin", "wb").write(struct.pack("<II", n * r, d) + qb[8:] * r)
g = open(f"{src}/gt.ibin", "rb").read()
nq, k = struct.unpack("<II", g[:8])
b = nq * k * 4
assert len(g) == 8 + 2 * b, "gt.ibin: ids then distances"
open(f"{dst}/gt.ibin", "wb").write(struct.pack("<II", nq * r, k) + g[8:8 + b] * r + g[8 + b:] * r)
EOF2
    fi
    echo "$q"
  }
  for r in $(seq 1 "$rounds"); do
    if (( r % 2 )); then order="old new"; else order="new old"; fi
    for p in $profiles; do
      rep=$(repeat_of "$p")
      q=$(queries "$rep")
      for l in $(ls_of "$p"); do
        for side in $order; do
          bin=${side}_bin
          ids=$work/ids/$side-$p-L$l-r$r.npy
          row=$("${!bin}" search "$work/$side/$p" "$q/query.fbin" --gt "$q/gt.ibin" -k 10 -L "$l" \
            --memory-budget-mb "$(mb_of "$p")" --threads 2 --json --output "$ids")
          echo "$row" | jq -c --arg side "$side" --arg p "$p" --arg ds "$dataset" \
            --argjson r "$r" --argjson rep "$rep" --argjson mb "$(mb_of "$p")" --arg ids "$(sha256sum < "$ids" | cut -d' ' -f1)" \
            '{kind: "search", dataset: $ds, profile: $p, side: $side, round: $r, query_repeats: $rep, memory_budget_mb: $mb, ids_sha256: $ids} + .' >> "$out"
          echo "$row" | jq -r --arg s "round $r $p $side" '"\($s) L=\(.L) recall=\(.recall) reads=\(.reads_per_query) qps=\(.qps|floor)"' >&2
        done
      done
    done
  done
fi
