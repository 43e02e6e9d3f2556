#!/usr/bin/env bash
# Convergence with and without seeding from neighbouring shapes (issue 17,
# part 3), leave-one-out over the seven 3x3 convolutions of resnet50:
#   1. tune all seven into a base database (BASE_TRIALS each);
#   2. for each layer L, a database with the six others' records only, then
#      tune L for TRIALS with the default --neighbor-seeds 4 and, from the
#      same database, with --neighbor-seeds 0 (transfer data from the
#      neighbours in both: only the seeds differ);
#   3. print, per layer, the trial at which each run first reached 95% of
#      the layer's final best (the best of its three runs), as recorded and
#      as re-timed in one session (bench/neighbor_seeding_reach.js: records
#      minutes apart differ by the machine's drift).
# Neighbours share stride: the 4 stride-1 layers seed each other, as do the
# 3 stride-2 ones. With VARIANTS=1 (the default) the stride-1 layers are
# measured as the Winograd tasks that `kiln bench` picks for them (F2 and F4,
# conv2d_winograd_nchwc; neighbours share the tile size) instead of their
# direct kernels; VARIANTS=0 measures the seven direct kernels. About 25
# minutes on 2 cores (5 more to re-time); pause other work.
#
#   bench/neighbor_seeding.sh [BUILD_DIR]      (default: build)
#   BASE_TRIALS=128 TRIALS=64 BATCH=16 SEED=0 (the tuner's random seed) VARIANTS=1
set -euo pipefail
cd "$(dirname "$0")/.."
KILN="${1:-build}/kiln"
BASE_TRIALS="${BASE_TRIALS:-128}" TRIALS="${TRIALS:-64}" BATCH="${BATCH:-16}" SEED="${SEED:-0}"
VARIANTS="${VARIANTS:-1}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mapfile -t LAYERS < <(grep -v '^#' bench/suites/resnet50.txt | grep 'R=3,S=3')
[ "${#LAYERS[@]}" -eq 7 ] || { echo "expected 7 3x3 layers in resnet50.txt, found ${#LAYERS[@]}" >&2; exit 1; }
if [ "$VARIANTS" = 1 ]; then
  # conv2d_nchwc:N=..,C=..,H=..,W=..,K=..,R=3,S=3,stride=1,pad=P,dilation=1,cb=..,kb=..,dtype=f32
  # -> conv2d_winograd_nchwc:N=..,C=..,H=..,W=..,K=..,pad=P,m=M,cb=..,kb=..,dtype=f32
  TASKS=()
  for w in "${LAYERS[@]}"; do
    case "$w" in
      *stride=1,*)
        for m in 2 4; do
          TASKS+=("$(echo "$w" | sed -E "s/^conv2d_nchwc:/conv2d_winograd_nchwc:/; s/,R=3,S=3,stride=1//; s/,dilation=1//; s/(pad=[0-9]+)/\\1,m=$m/")")
        done ;;
      *) TASKS+=("$w") ;;
    esac
  done
  LAYERS=("${TASKS[@]}")
fi


start=$(date +%s)
echo "base: ${#LAYERS[@]} tasks x $BASE_TRIALS trials"
CANON=()
for w in "${LAYERS[@]}"; do
  out=$("$KILN" tune "$w" --trials "$BASE_TRIALS" --batch "$BATCH" --seed "$SEED" --db "$TMP/base.db" --json 2>/dev/null)
  CANON+=("$(node -e 'console.log(JSON.parse(process.argv[1]).workload)' "$out")")
  node -e 'const j = JSON.parse(process.argv[1]); console.log(`  ${j.workload}: ${j.best_gflops.toFixed(1)} GFLOP/s`)' \
    "$out"
done
"$KILN" export --db "$TMP/base.db" --jsonl "$TMP/base.jsonl" 2>/dev/null

printf '\n%-72s | %s\n' "" "as recorded                              | re-timed in one session"
printf '%-72s | %8s %8s %8s %6s %6s | %8s %8s %8s %6s %6s %4s\n' "task" "final" "seeded" "unseed." "s.95%" "u.95%" \
  "final" "seeded" "unseed." "s.95%" "u.95%" "n"
for i in "${!LAYERS[@]}"; do
  w=${LAYERS[$i]} cw=${CANON[$i]}
  grep -vF "\"workload\":\"$cw\"" "$TMP/base.jsonl" > "$TMP/others.jsonl" || true
  for mode in seeded unseeded; do
    rm -f "$TMP/$mode.db"*
    "$KILN" import "$TMP/others.jsonl" --db "$TMP/$mode.db" >/dev/null 2>&1
    seeds=4
    [ "$mode" = unseeded ] && seeds=0
    "$KILN" tune "$w" --trials "$TRIALS" --batch "$BATCH" --seed "$SEED" --neighbor-seeds "$seeds" --db "$TMP/$mode.db" \
      >/dev/null 2>&1
    "$KILN" export --db "$TMP/$mode.db" --jsonl "$TMP/$mode.jsonl" 2>/dev/null
  done
  figures=$(node bench/neighbor_seeding_reach.js "$KILN" "$cw" "$TMP/base.jsonl" "$TMP/seeded.jsonl" "$TMP/unseeded.jsonl")
  field() { node -e 'const j = JSON.parse(process.argv[1]); const v = process.argv[2].split(".").reduce((o, k) => o[k], j);
    console.log(typeof v === "number" && !Number.isInteger(v) ? v.toFixed(1) : v)' "$figures" "$1"; }
  printf '%-72s | %8s %8s %8s %6s %6s | %8s %8s %8s %6s %6s %4s\n' "$cw" \
    "$(field recorded.final_gflops)" "$(field recorded.best.seeded)" "$(field recorded.best.unseeded)" \
    "$(field recorded.reach.seeded)" "$(field recorded.reach.unseeded)" \
    "$(field retimed.final_gflops)" "$(field retimed.best.seeded)" "$(field retimed.best.unseeded)" \
    "$(field retimed.reach.seeded)" "$(field retimed.reach.unseeded)" "$(field n)"
done
echo "(as recorded: final is the best GFLOP/s of the task's base, seeded and unseeded runs, seeded/unseeded each"
echo " run's best, s.95%/u.95% the trial at which the run of $TRIALS trials first reached 95% of final, - if never."
echo " Re-timed: the n configs within 80% of the best record timed again with kiln run, in turn, twice, the same"
echo " figures from those times, 0 for a run with none of them: bench/neighbor_seeding_reach.js)"
echo "total: $(( $(date +%s) - start )) s"
