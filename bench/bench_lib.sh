#!/usr/bin/env bash
# Issue 6 acceptance: builds a kernel library from a tuning database
# (`kiln lib --all`) and times every tuned f32 matmul/conv2d kernel called
# through the linked library (bench/programs/bench_lib.c, static archive) against the
# same kernel inside kiln (`kiln run WORKLOAD --db DB`), alternating the two
# in the same run. Prints the library's NAME.json summary, each measurement
# (the C program's JSON output and kiln run's), and per workload the best
# median GFLOP/s of each side over the rounds and their ratio.
#
#   bench/bench_lib.sh DB [ROUNDS]       (default 3 rounds; KILN=path/to/kiln)
# REPEAT (default 10) and MIN_REPEAT_MS (default 100) set the timing protocol
# of both sides (kiln run's defaults).
set -euo pipefail
cd "$(dirname "$0")/.."
DB=${1:?usage: bench/bench_lib.sh DB [ROUNDS]}
ROUNDS=${2:-3}
KILN=${KILN:-build/kiln}
REPEAT=${REPEAT:-10}
MIN_REPEAT_MS=${MIN_REPEAT_MS:-100}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

"$KILN" lib --db "$DB" --out "$TMP/lib" --name benchlib --all
cc -std=c11 -O2 -I "$TMP/lib" bench/programs/bench_lib.c "$TMP/lib/libbenchlib.a" -lpthread -lm -o "$TMP/bench_lib"

python3 - "$KILN" "$DB" "$ROUNDS" "$TMP/lib/benchlib.json" "$TMP/bench_lib" "$REPEAT" "$MIN_REPEAT_MS" <<'PY'
import json, subprocess, sys
kiln, db, rounds, lib_json, bench = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
timing = ["--repeat", sys.argv[6], "--min-repeat-ms", sys.argv[7]]
lib = json.load(open(lib_json))
print("library for", lib["target"])
rows = []
for k in lib["kernels"]:
    w = k["workload"]
    op, params = w.split(":", 1)
    p = dict(kv.split("=") for kv in params.split(","))
    if p.get("dtype") != "f32" or k["dispatcher"] not in ("benchlib_matmul_f32", "benchlib_conv2d_f32"):
        print("skipping", w, "(only f32 matmul and conv2d dispatchers are timed)")
        continue
    names = ["M", "N", "K"] if op == "matmul" else ["N", "C", "H", "W", "K", "R", "S", "stride", "pad", "dilation"]
    print(f"\n{w}: {k['entry']}, tuned {k['gflops']:.1f} GFLOP/s (record {k['record']['id']})")
    lib_best = kiln_best = 0.0
    for r in range(rounds):
        out = subprocess.run([bench] + timing + [op] + [p[n] for n in names], capture_output=True, text=True, check=True).stdout
        print("  library:", out.strip())
        lib_best = max(lib_best, json.loads(out)["gflops"])
        out = subprocess.run([kiln, "run", w, "--db", db, "--json", "--check"] + timing, capture_output=True, text=True,
                             check=True).stdout
        j = json.loads(out)
        print(f"  kiln run: gflops {j['gflops']:.3f}, best {j['gflops_best']:.3f}, correct {j.get('correct')},"
              f" config from {j['config_source']}")
        kiln_best = max(kiln_best, j["gflops"])
    rows.append((w, lib_best, kiln_best))
print("\nworkload | library GFLOP/s | kiln run GFLOP/s | library / kiln")
for w, a, b in rows:
    print(f"{w} | {a:.1f} | {b:.1f} | {a / b:.3f}")
PY
