#!/usr/bin/env bash
# `kiln lib` from the command line: usage errors and user errors exit 2 with
# a message (building real libraries is covered by tests/test_lib_build.cpp).
# Usage: cli_lib.sh path/to/kiln
set -u
KILN="$1"
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_expect.sh"
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT


# An empty database, and one with a single record (its config is not a
# point of the template: fine for every error before lowering).
: >"$TMPD/empty.jsonl"
"$KILN" import --db "$TMPD/empty.db" "$TMPD/empty.jsonl" >/dev/null 2>&1
cat >"$TMPD/one.jsonl" <<'JSONL'
{"workload": "matmul:M=8,N=8,K=8,dtype=f32,bias=0,relu=0", "op": "matmul", "target": "llvm -mtriple=x86_64-linux-gnu", "config": {"no_such_knob": 1}, "config_index": "0", "samples_ms": [0.1], "error": "none"}
JSONL
"$KILN" import --db "$TMPD/one.db" "$TMPD/one.jsonl" >/dev/null 2>&1
touch "$TMPD/a_file"

expect 0 "--workloads" -- lib --help
expect 2 "--db is required" -- lib --out "$TMPD/out"
expect 2 "--out is required" -- lib --db "$TMPD/one.db"
expect 2 "excludes" -- lib --db "$TMPD/one.db" --out "$TMPD/out" --all --workloads matmul:M=8,N=8,K=8
expect 2 "no tuning database at" -- lib --db "$TMPD/missing.db" --out "$TMPD/out"
expect 2 "has no records: tune the workloads first" -- lib --db "$TMPD/empty.db" --out "$TMPD/out"
expect 2 "unknown op 'gemm'" -- lib --db "$TMPD/one.db" --out "$TMPD/out" --workloads gemm:M=1,N=1,K=1
expect 2 "kiln lib supports matmul" -- lib --db "$TMPD/one.db" --out "$TMPD/out" --workloads elemwise:M=4,N=4
expect 2 "has no error-free record of 'matmul:M=9,N=9,K=9" -- lib --db "$TMPD/one.db" --out "$TMPD/out" --workloads matmul:M=9,N=9,K=9
expect 2 "does not fit the op's template any more" -- lib --db "$TMPD/one.db" --out "$TMPD/out" --all
expect 2 "cannot create the output directory" -- lib --db "$TMPD/one.db" --out "$TMPD/a_file/lib"
expect 2 "unknown option '-mfoo'" -- lib --db "$TMPD/one.db" --out "$TMPD/out" --target "llvm -mfoo=bar"
expect 2 "has no cuda records" -- lib --db "$TMPD/one.db" --out "$TMPD/out" --target "cuda -arch=sm_90"
expect 2 "must be a C identifier" -- lib --db "$TMPD/one.db" --out "$TMPD/out" --name "my-lib"

echo "cli_lib: $pass passed, $fails failed"
[ "$fails" -eq 0 ]
