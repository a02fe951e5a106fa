#!/usr/bin/env bash
# A 4-segment collection of wordnet-minilm on Ray, served over HTTP
# (issue #24), end to end on this machine:
#   1. makes the data (scripts/wordnet.sh full, or 20k when given),
#   2. builds the collection with build_collection_ray on a local Ray
#      cluster (skipped when it is already there),
#   3. serves it on 127.0.0.1 (python -m stratavec.serve),
#   4. runs benchmarks/collection_client.py: recall@10 and QPS, searching
#      every segment and then only the 2 nearest (k-means probe),
#   5. shuts the server and its Ray cluster down.
#
#   scripts/serve-collection.sh [full|20k]
#
# Settings (environment): PARTITION (kmeans|range, default kmeans),
# BUDGET_MB (total RAM budget of the 4 segments, default 64), COMPLEXITY
# (search list a segment, default 64), CPUS (Ray CPUs, default all),
# STRATAVEC_VENV (default .cache/venv-py, made and filled when absent).
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-full}
partition=${PARTITION:-kmeans}
budget=${BUDGET_MB:-64}
complexity=${COMPLEXITY:-64}
cpus=${CPUS:-$(nproc)}
venv=${STRATAVEC_VENV:-.cache/venv-py}
step() { printf '\n== %s\n' "$*" >&2; }

step "data: wordnet-minilm $which"
data=$(scripts/wordnet.sh "$which") || {
  echo "serve-collection: no data (scripts/wordnet.sh $which failed; see its message above)" >&2
  exit 3
}

step "python venv ($venv) with ray[serve] and the extension"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check \
  maturin==1.16.0 numpy pytest pyarrow 'ray[serve]==2.60.0'
VIRTUAL_ENV="$PWD/$venv" "$venv/bin/maturin" develop --release -q -m python/Cargo.toml
py="$PWD/$venv/bin/python"
export RAY_USAGE_STATS_ENABLED=0

coll=".cache/collections/wordnet-minilm-$which-$partition-4seg"
if [ -f "$coll/collection.json" ]; then
  step "collection: $coll (already built)"
else
  step "collection: building $coll (4 segments, $partition) on a local Ray cluster ($cpus CPUs)"
  mkdir -p "$(dirname "$coll")"
  "$py" - "$data/base.fbin" "$coll" "$partition" "$budget" "$cpus" <<'EOF'
import json, sys
from stratavec.ray_collection import build_collection_ray, init_local_ray, shutdown_ray

base, coll, partition, budget, cpus = sys.argv[1:]
init_local_ray(num_cpus=int(cpus), object_store_memory=200 * 2**20, log_to_driver=False)  # 127.0.0.1 only
try:
    r = build_collection_ray(base, coll, segments=4, partition=partition, memory_budget_mb=float(budget))
finally:
    shutdown_ray()
print(f"built {coll}: {r['n']} vectors, segments {r['segments']}, partition {r['partition_s']:.1f} s, "
      f"builds {r['build_s']:.1f} s ({r['threads_per_segment']} threads a segment), commit {r['commit_s']:.1f} s",
      file=sys.stderr)
EOF
fi

port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"
log=$(mktemp -t stratavec-serve.XXXXXX.log)
step "serving $coll at $url (log: $log)"
"$py" -m stratavec.serve "$coll" --host 127.0.0.1 --port "$port" --memory-budget-mb "$budget" \
  --num-cpus "$cpus" --object-store-mb 200 >"$log" 2>&1 &
server=$!
stop_server() {
  if kill -0 "$server" 2>/dev/null; then
    kill -INT "$server" 2>/dev/null || true
    for _ in $(seq 60); do kill -0 "$server" 2>/dev/null || break; sleep 1; done
    kill -0 "$server" 2>/dev/null && kill -KILL "$server" 2>/dev/null || true
  fi
  wait "$server" 2>/dev/null || true
}
trap stop_server EXIT

# The server prints its "serving ..." line once GET /health answers 200.
for _ in $(seq 300); do
  grep -q '^serving ' "$log" && break
  kill -0 "$server" 2>/dev/null || { echo "serve-collection: the server exited:" >&2; tail -20 "$log" >&2; exit 1; }
  sleep 1
done
grep -q '^serving ' "$log" || { echo "serve-collection: the server did not come up in 300 s:" >&2; tail -20 "$log" >&2; exit 1; }

step "client: every segment (complexity $complexity)"
"$py" benchmarks/collection_client.py "$url" --queries "$data/query.fbin" --gt "$data/gt.ibin" \
  --k 10 --complexity "$complexity"
if [ "$partition" = kmeans ]; then
  step "client: the 2 nearest segments of each query (probe 2)"
  "$py" benchmarks/collection_client.py "$url" --queries "$data/query.fbin" --gt "$data/gt.ibin" \
    --k 10 --complexity "$complexity" --probe 2
fi
"$py" -c 'import json, sys, urllib.request; s = json.load(urllib.request.urlopen(sys.argv[1] + "/stats"))["collection"]; print("server: %d queries, fan-out+wait %.2f s, merge %.3f s, actor failures %d" % (s["queries"], s["fanout_wait_s"], s["merge_s"], s["actor_failures"]))' "$url"

step "shutting down"
stop_server
trap - EXIT
rm -f "$log"
