#!/usr/bin/env bash
# End-to-end checks of the kiln executable: exit codes and messages.
# Usage: cli_end_to_end.sh path/to/kiln
set -u
KILN="$1"
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_expect.sh"


expect 2 "expected NAME=VALUE, got 'M1024'" -- run matmul:M1024
expect 2 "unknown op 'gemm'" -- run gemm:M=1,N=1,K=1
expect 2 "missing parameter K" -- lower matmul:M=4,N=4
expect 2 "unknown option '-mfoo'" -- run matmul:M=4,N=4,K=4 --target "llvm -mfoo=bar"
expect 2 "is not this machine's" -- run matmul:M=4,N=4,K=4 --target "llvm -mtriple=aarch64-linux-gnu"
expect 2 "" -- run
expect 0 '"correct":true' -- run matmul:M=5,N=7,K=3 --check --json --repeat 2 --min-repeat-ms 1
expect 0 '"correct":true' -- run conv2d:N=1,C=3,H=9,W=9,K=4,R=3,S=3,stride=2,pad=1 --check --json --repeat 2 --min-repeat-ms 1
expect 0 '"samples_ms":[' -- run elemwise:M=33,N=17 --check --json --repeat 3 --min-repeat-ms 1
expect 0 'func kiln_conv2d' -- lower conv2d:C=4,H=8,W=8,K=8,R=3,S=3,pad=1
expect 0 'define' -- source matmul:M=8,N=8,K=8 --llvm
expect 0 'vfmadd' -- source matmul:M=8,N=32,K=8 --target "llvm -mtriple=x86_64-linux-gnu -mcpu=znver3 -mattr=+avx512f" --asm
expect 0 'fmla' -- source matmul:M=8,N=32,K=8 --target "llvm -mtriple=aarch64-linux-gnu" --asm
expect 0 'stride' -- ops

# --json output must parse and carry the documented keys.
json=$("$KILN" run matmul:M=6,N=5,K=4 --check --json --repeat 2 --min-repeat-ms 1)
for key in workload target correct gflops median_ms samples_ms; do
  if ! python3 -c "import json,sys; d=json.loads(sys.argv[1]); assert '$key' in d" "$json" 2>/dev/null; then
    echo "FAIL: --json lacks '$key': $json"; fails=$((fails + 1))
  else
    pass=$((pass + 1))
  fi
done

# Tuning end to end: a short job, then a job killed with SIGKILL and started
# again, which must continue without re-measuring and lose no record.
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT
W=matmul:M=24,N=40,K=16
expect 0 '"best_gflops"' -- tune "$W" --trials 8 --batch 4 --db "$TMPD/a.db" --json --min-repeat-ms 1 --repeat 1
expect 0 'records 8, errors 0' -- show --db "$TMPD/a.db"
expect 2 "no tunable template" -- tune elemwise:M=4,N=4 --trials 4 --db "$TMPD/a.db"
expect 2 "--trials" -- tune "$W" --db "$TMPD/a.db"
expect 2 "unknown tuner 'best' (expected xgb, random or grid)" -- tune "$W" --trials 4 --db "$TMPD/a.db" --tuner best
expect 2 "no tuning database at" -- show --db "$TMPD/missing.db"
# A GPU record's kernel resources (registers, spills, shared memory) are
# stored with it and shown with the best config.
"$KILN" export --db "$TMPD/a.db" --jsonl "$TMPD/a.jsonl" >/dev/null
python3 - "$TMPD/a.jsonl" "$TMPD/gpu.jsonl" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).readline())
r["target"] = "cuda -arch=sm_90"
r["resources"] = [{"kernel": "kiln_matmul_kernel0", "registers": 72, "spill_store_bytes": 8,
                   "spill_load_bytes": 4, "shared_bytes": 4096}]
open(sys.argv[2], "w").write(json.dumps(r) + "\n")
PY
expect 0 "imported 1" -- import --db "$TMPD/g.db" "$TMPD/gpu.jsonl"
expect 0 "kernel kiln_matmul_kernel0: 72 registers, 8 bytes spill stores, 4 bytes spill loads, 4096 bytes shared memory" -- show --db "$TMPD/g.db"
W2=matmul:M=40,N=48,K=24
"$KILN" tune "$W2" --trials 200 --batch 4 --db "$TMPD/k.db" --min-repeat-ms 1 --repeat 1 >/dev/null 2>&1 &
job=$!
for _ in $(seq 100); do
  n=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from records').fetchone()[0])" "$TMPD/k.db" 2>/dev/null || echo 0)
  [ "${n:-0}" -ge 8 ] && break
  sleep 0.2
done
kill -9 "$job" 2>/dev/null; wait "$job" 2>/dev/null
before=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from records').fetchone()[0])" "$TMPD/k.db")
expect 0 "trials 24 (" -- tune "$W2" --trials 24 --batch 4 --db "$TMPD/k.db" --min-repeat-ms 1 --repeat 1
read -r total distinct < <(python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(*c.execute('select count(*), count(distinct config_index) from records').fetchone())" "$TMPD/k.db")
if [ "$before" -ge 8 ] && [ "$before" -le 24 ] && [ "$total" -eq 24 ] && [ "$distinct" -eq 24 ]; then
  pass=$((pass + 1))
else
  echo "FAIL: resume after kill: $before records before, $total after ($distinct distinct), want 24 distinct"
  fails=$((fails + 1))
fi
expect 0 '"config_source":"database"' -- run "$W2" --db "$TMPD/k.db" --check --json --repeat 1 --min-repeat-ms 1
expect 2 "line 1" -- import --db "$TMPD/k.db" /etc/hostname
# --config: knobs over the database's best or the template's default.
expect 0 '"unroll_y":"none"' -- run "$W2" --db "$TMPD/k.db" --config '{"unroll_y":"none"}' --check --json --repeat 1 --min-repeat-ms 1
expect 0 '"config_source":"given"' -- run conv2d:C=4,H=8,W=8,K=8,R=3,S=3,pad=1 --config '{"border":"clip"}' --check --json --repeat 1 --min-repeat-ms 1
expect 0 'if (' -- lower conv2d:C=4,H=8,W=8,K=8,R=3,S=3,pad=1 --config '{"border":"clip"}'
expect 2 "config is not valid JSON" -- lower conv2d:C=4,H=8,W=8,K=8,R=3,S=3,pad=1 --config '{border'
expect 2 "a config must be a JSON object" -- source conv2d:C=4,H=8,W=8,K=8,R=3,S=3,pad=1 --config '[1]'
expect 2 "config space has no knob named 'bordr'" -- run conv2d:C=4,H=8,W=8,K=8,R=3,S=3,pad=1 --config '{"bordr":"clip"}'
expect 2 "is not an option of knob 'border'" -- run conv2d:C=4,H=8,W=8,K=8,R=3,S=3 --config '{"border":"clip"}'
expect 2 "takes no config" -- run elemwise:M=4,N=4 --config '{}'

# --variants: a 3x3 convolution and its two Winograd kernels share 8 trials
# (2 each, the 2 left to the leader).
W3=conv2d_nchwc:C=16,H=8,W=7,K=16,R=3,S=3,pad=1
expect 0 "fastest variant of" -- tune "$W3" --variants --trials 8 --batch 2 --db "$TMPD/v.db" --min-repeat-ms 1 --repeat 1
read -r tasks total < <(python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(*c.execute('select count(distinct workload_id), count(*) from records').fetchone())" "$TMPD/v.db")
if [ "$tasks" -eq 3 ] && [ "$total" -eq 8 ]; then
  pass=$((pass + 1))
else
  echo "FAIL: --variants: $tasks tasks and $total records, want 3 and 8"
  fails=$((fails + 1))
fi

echo "$pass passed, $fails failed"
[ "$fails" -eq 0 ]
