#!/usr/bin/env bash
# Regenerates BENCHMARKS.md from scratch with one command:
#   1. builds the CLI (release),
#   2. sets up the plotting venv (benchmarks/.venvs/plot, pinned by requirements-plot.txt),
#   3. makes the real wordnet-minilm set (scripts/wordnet.sh full),
#   4. runs `stratavec bench` on it: stratavec + the peers (whose venvs the bench
#      command creates on demand with benchmarks/peers/setup_venvs.sh),
#   5. with --with-pca, makes the 96-d PCA set and benchmarks stratavec on it,
#   6. plots (benchmarks/plots/, committed) and writes BENCHMARKS.md at the repo root.
# The bench times every system round-robin (each round: all systems at one L,
# then the next L; ROUNDS, default 5: two runs' min-max ranges of 3 rounds
# miss each other 10% of the time even when nothing changed, of 5 rounds
# 0.8%), each pass repeating the queries for at least 1 s, and probes the
# device before, between and after the rounds (burst and 20 s sustained). Raw rows, one a system,
# L and round, go to benchmarks/results/NAME.jsonl and are committed:
# `python3 benchmarks/report.py --from benchmarks/results/NAME.jsonl`
# re-derives the report from them. The log goes beside them (git-ignored).
# On this 2-vCPU machine a run takes about 15 minutes with indexes built
# (peer builds ~4 min, stratavec ~1.5 min, +8 min the first time the data
# set is made). Run it with nothing else on the machine: timings are the
# point.
#
# Options:
#   --with-pca        also the PCA-96 set (stratavec only)
#   --peers LIST      peers to run (default diskannpy,diskannpy-rust,hnswlib; "" for none)
#   --rebuild         rebuild every index even when a matching one exists
#   --report-only     measure nothing: re-plot and re-report the existing results
#   --twice [PAUSE]   run the bench a second time PAUSE seconds (default 180)
#                     after the first, into NAME-second.jsonl; the report sets
#                     the two runs' ratio ranges side by side
#   --quick           smoke test on the 20k subset with hnswlib only; writes
#                     benchmarks/results/BENCHMARKS-quick.md and its plots under
#                     benchmarks/results/plots-quick/, leaving BENCHMARKS.md alone
set -euo pipefail
cd "$(dirname "$0")/.."

with_pca=0 rebuild=() report_only=0 quick=0 twice=0 pause=180
peers=diskannpy,diskannpy-rust,hnswlib peers_given=0
args=("$@")
while [ $# -gt 0 ]; do
  case "$1" in
    --with-pca) with_pca=1 ;;
    --peers) peers=${2?--peers needs a list}; peers_given=1; shift ;;
    --peers=*) peers=${1#--peers=}; peers_given=1 ;;
    --rebuild) rebuild=(--rebuild) ;;
    --report-only) report_only=1 ;;
    --quick) quick=1 ;;
    --twice) twice=1
      if [[ "${2:-}" =~ ^[0-9]+$ ]]; then pause=$2; shift; fi ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_all.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

results=benchmarks/results
plots=benchmarks/plots
out_md=BENCHMARKS.md
which=full
if [ "$quick" = 1 ]; then
  which=20k
  [ "$peers_given" = 1 ] || peers=hnswlib
  plots=$results/plots-quick
  out_md=$results/BENCHMARKS-quick.md
fi
mkdir -p "$results" "$plots"
log=$results/run_all.log
[ "$report_only" = 1 ] && log=$results/run_all-report-only.log  # keep the measuring run's log
exec > >(tee "$log") 2>&1

t0=$(date +%s)
step() { echo; echo "=== [$(( $(date +%s) - t0 )) s] $*"; }
bin=${CARGO_TARGET_DIR:-target}/release/stratavec  # where cargo puts it (CARGO_TARGET_DIR respected)
py=benchmarks/.venvs/plot/bin/python
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit+uncommitted changes"

step "1. build the CLI (release)"
command -v cargo >/dev/null || { echo "run_all.sh: cargo not found (install Rust)" >&2; exit 1; }
cargo build --release -p stratavec-cli

step "2. plotting venv (benchmarks/.venvs/plot)"
req=benchmarks/requirements-plot.txt
stamp=benchmarks/.venvs/plot/.stamp
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ ! -x "$py" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  rm -rf benchmarks/.venvs/plot
  python3 -m venv benchmarks/.venvs/plot
  "$py" -m pip install -q --disable-pip-version-check -r "$req"
  echo "$want" > "$stamp"
else
  echo "up to date ($req unchanged)"
fi

# The bench runs, as run_all.sh executes them (quoted in BENCHMARKS.md).
common=(--threads 2 --memory-fraction 0.2 --rounds "${ROUNDS:-5}")
files=() datadirs=() ran=()
bench() {  # bench DATA_DIR OUT_JSONL PEERS [more bench options]
  local cmd=("$bin" bench --data "$1" --work .cache/bench --out "$2")
  [ -n "$3" ] && cmd+=(--peers "$3")
  cmd+=("${common[@]}" "${rebuild[@]}" "${@:4}")
  ran+=("${cmd[*]}")
  if [ "$report_only" = 1 ]; then
    [ -f "$2" ] || { echo "run_all.sh: --report-only but $2 does not exist" >&2; exit 1; }
    echo "(--report-only) using $2"
  else
    echo "+ ${cmd[*]}"
    "${cmd[@]}"
  fi
  files+=("$2")
  datadirs+=(--data "$1")
}

step "3. data: wordnet-minilm ($which)"
if [ "$report_only" = 1 ]; then  # where scripts/wordnet.sh puts it
  data=${STRATAVEC_DATA:-${STRATAVEC_DATA_HOME:-$HOME/.cache/stratavec}}/wordnet-minilm
  if [ "$which" = 20k ]; then data=$data-20k; fi
elif ! data=$(scripts/wordnet.sh "$which"); then
  echo "run_all.sh: scripts/wordnet.sh $which failed (it makes the set with scripts/datasets/make.py)" >&2
  exit 1
fi
echo "data set: $data"
name=$(basename "$data")

step "4. bench $name: stratavec${peers:+ + $peers}"
bench "$data" "$results/$name.jsonl" "$peers"
second=()
if [ "$twice" = 1 ]; then
  if [ "$report_only" = 0 ]; then
    step "4b. pause ${pause} s, then the same bench again"
    sleep "$pause"
  fi
  bench "$data" "$results/$name-second.jsonl" "$peers"
  # The second run is reported beside the first, not as more curves.
  files=("${files[@]:0:${#files[@]}-1}") datadirs=("${datadirs[@]:0:${#datadirs[@]}-2}")
  second=(--second "$results/$name-second.jsonl")
fi

if [ "$with_pca" = 1 ]; then
  step "5. data: $name-pca96, and bench it (stratavec only)"
  pca=.cache/$name-pca96
  [ "$report_only" = 1 ] || "$py" benchmarks/datasets/pca.py --src "$data" --dims 96 --out "$pca" --stratavec "$bin"
  # 20% of 96-d vectors is 76.8 B each: 48-byte PQ codes plus the fixed I/O
  # buffers fit at full scale (116,707 vectors) but not on the 20k subset.
  pq=(); [ "$quick" = 1 ] && pq=(--pq-bytes 32)
  bench "$pca" "$results/$name-pca96.jsonl" "" "${pq[@]}"
fi

step "6. plots ($plots) and $out_md"
suffix="stratavec $commit"
"$py" benchmarks/plot.py "${files[@]}" --out-dir "$plots" --title-suffix "$suffix"
quoted=""
[ ${#args[@]} -gt 0 ] && quoted=$(printf ' %q' "${args[@]}")
command="benchmarks/run_all.sh$quoted
# stratavec commit $commit; it ran:"
for c in "${ran[@]}"; do command+=$'\n'"$c"; done
command+=$'\n'"$py benchmarks/plot.py ${files[*]} --out-dir $plots --title-suffix '$suffix'"
command+=$'\n'"python3 benchmarks/report.py --from ${files[*]} ${second[*]} --plots-dir $plots --out $out_md ${datadirs[*]}"
python3 benchmarks/report.py "${files[@]}" "${second[@]}" --plots-dir "$plots" --out "$out_md" "${datadirs[@]}" \
  --command "$command"

step "done in $(( $(date +%s) - t0 )) s: $out_md, plots in $plots/, raw rows in ${files[*]}, log $log"
