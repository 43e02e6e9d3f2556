#!/usr/bin/env bash
# Search efficiency (issue 3 acceptance): for each workload and seed, random
# search with 400 trials against the xgb tuner with 150; prints, per seed,
# the best GFLOP/s random reached in 400 and the trial at which xgb reached
# it, and writes best-so-far curves to bench/results/search_curves.csv
# (plot with scripts/plot_curves.py). Takes about an hour on 2 cores.
#
#   bench/search_efficiency.sh [SEEDS...]        (default: 1 2 3)
set -euo pipefail
cd "$(dirname "$0")/.."
KILN=build/kiln
OUT=bench/results
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT"
SEEDS=("$@")
[ ${#SEEDS[@]} -gt 0 ] || SEEDS=(1 2 3)
WORKLOADS=(matmul:M=1024,N=1024,K=1024 conv2d:N=1,C=128,H=28,W=28,K=128,R=3,S=3,stride=1,pad=1)

specs=()
for seed in "${SEEDS[@]}"; do
  for tuner in random xgb; do
    trials=400
    batch=32
    [ "$tuner" = xgb ] && trials=150 && batch=16
    db="$TMP/${tuner}_${seed}.db"
    for w in "${WORKLOADS[@]}"; do
      "$KILN" tune "$w" --tuner "$tuner" --trials "$trials" --batch "$batch" --seed "$seed" --db "$db" --json
    done
    "$KILN" export --db "$db" --jsonl "$TMP/${tuner}_${seed}.jsonl"
    specs+=("${tuner}_seed${seed}=$TMP/${tuner}_${seed}.jsonl")
  done
done
python3 scripts/tuning_curves.py "$OUT/search_curves.csv" "${specs[@]}"
python3 - "$OUT/search_curves.csv" <<'PY'
import csv, sys
from collections import defaultdict
c = defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    c[(r["workload"], r["label"])].append(float(r["best_gflops"]))
print(f"{'workload':58} {'seed':>4} {'random@400':>10} {'xgb@150':>8} {'xgb trials to match':>20}")
for (w, label), curve in sorted(c.items()):
    if not label.startswith("random"):
        continue
    seed = label.split("seed")[1]
    target = curve[-1]
    x = c.get((w, "xgb_seed" + seed), [])
    hit = next((i + 1 for i, g in enumerate(x) if g >= target), None)
    print(f"{w[:58]:58} {seed:>4} {target:10.1f} {(x[-1] if x else 0):8.1f} {str(hit) if hit else 'not reached':>20}")
PY
