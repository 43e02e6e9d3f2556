#!/usr/bin/env bash
# Throughput of one tuning job on a 2-server loopback device pool against the
# local runner, same machine, same run: trials per second of each and their
# ratio. Starts a tracker and two `kiln serve` on 127.0.0.1, tunes the same
# workload with the same tuner and seed twice (local, then --pool), and
# prints both figures. A benchmark, not a test: run it on a quiet machine.
#
# Usage: bench/pool_throughput.sh path/to/kiln [WORKLOAD] [TRIALS] [BATCH]
#   defaults: matmul:M=128,N=128,K=128, 64 trials, batch 16
# Knobs (environment): TUNER (default random), REPEAT (3), MIN_REPEAT_MS (20).
set -euo pipefail
KILN="${1:?usage: pool_throughput.sh path/to/kiln [WORKLOAD] [TRIALS] [BATCH]}"
WORKLOAD="${2:-matmul:M=128,N=128,K=128}"
TRIALS="${3:-64}"
BATCH="${4:-16}"
TUNER="${TUNER:-random}"
REPEAT="${REPEAT:-3}"
MIN_REPEAT_MS="${MIN_REPEAT_MS:-20}"

TMPD=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$TMPD"
}
trap cleanup EXIT
export KILN_TOKEN="bench-$$"

wait_for() {  # wait_for FILE PATTERN SECONDS
  local i
  for ((i = 0; i < $3 * 20; i++)); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "pool_throughput: timed out waiting for '$2' in $1" >&2
  cat "${1%.out}.log" >&2 || true
  exit 1
}

"$KILN" tracker --listen 127.0.0.1:0 >"$TMPD/tracker.out" 2>"$TMPD/tracker.log" &
pids+=("$!")
wait_for "$TMPD/tracker.out" "listening on" 20
TRACKER=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$TMPD/tracker.out")
for s in s1 s2; do
  "$KILN" serve --tracker "$TRACKER" --key bench --listen 127.0.0.1:0 >"$TMPD/$s.out" 2>"$TMPD/$s.log" &
  pids+=("$!")
  wait_for "$TMPD/$s.out" "serving on" 20
done

common=(tune "$WORKLOAD" --trials "$TRIALS" --batch "$BATCH" --tuner "$TUNER" --seed 1 --json
        --repeat "$REPEAT" --min-repeat-ms "$MIN_REPEAT_MS")

run() {  # run NAME EXTRA-ARGS...: prints "trials seconds wall_seconds best_gflops"
  local name="$1"
  shift
  local t0 t1
  t0=$(date +%s.%N)
  "$KILN" "${common[@]}" --db "$TMPD/$name.db" "$@" >"$TMPD/$name.json" 2>"$TMPD/$name.err"
  t1=$(date +%s.%N)
  python3 - "$TMPD/$name.json" "$t0" "$t1" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
print(d["new_trials"], d["seconds"]["total"], float(sys.argv[3]) - float(sys.argv[2]), d["best_gflops"], d["errors"])
PY
}

read -r lt ls lw lg le < <(run local)
read -r pt ps pw pg pe < <(run pool --pool "$TRACKER" --key bench)

python3 - "$WORKLOAD" "$lt" "$ls" "$lw" "$lg" "$le" "$pt" "$ps" "$pw" "$pg" "$pe" <<'PY'
import sys
w = sys.argv[1]
lt, ls, lw, lg, le, pt, ps, pw, pg, pe = map(float, sys.argv[2:])
print(f"pool throughput, {w}, {int(lt)} trials each")
print(f"  local runner:             {lt / ls:7.2f} trials/s  (tuning loop {ls:.1f} s, process {lw:.1f} s, "
      f"best {lg:.1f} GFLOP/s, {int(le)} errors)")
print(f"  pool, 2 loopback servers: {pt / ps:7.2f} trials/s  (tuning loop {ps:.1f} s, process {pw:.1f} s, "
      f"best {pg:.1f} GFLOP/s, {int(pe)} errors)")
print(f"  pool / local: {(pt / ps) / (lt / ls):.2f}x")
PY
