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
expect 2 "kiln lib needs --db (tuned kernels) or --model (a network)" -- lib --out "$TMPD/out"
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

# A failed kiln lib leaves no output directory behind that it created
# (parents included), for CPU and cuda targets alike, whether it failed
# before creating it (the database) or after (a record's config); a
# directory that existed before stays, with the user's files.
: >"$TMPD/empty_file.db"
cat >"$TMPD/cuda.jsonl" <<'JSONL'
{"workload": "softmax:M=8,N=64,dtype=f32", "op": "softmax", "target": "cuda -arch=sm_90", "config": {"no_such_knob": 1}, "config_index": "0", "samples_ms": [0.1], "error": "none"}
JSONL
"$KILN" import --db "$TMPD/cuda.db" "$TMPD/cuda.jsonl" >/dev/null 2>&1
gone() {
  [ ! -e "$1" ] && ok || fail "the failed kiln lib left $1 behind: $(find "$1" | head -5)"
}
for target in "" "cuda -arch=sm_90"; do
  T=()
  [ -n "$target" ] && T=(--target "$target")
  expect 2 "no tuning database at" -- lib --db "$TMPD/missing.db" --out "$TMPD/libout0" "${T[@]}"
  gone "$TMPD/libout0"
  expect 2 "has no records: tune the workloads first" -- lib --db "$TMPD/empty.db" --out "$TMPD/new/a/b" "${T[@]}"
  gone "$TMPD/new"
  expect 2 "empty_file.db" -- lib --db "$TMPD/empty_file.db" --out "$TMPD/libout0" "${T[@]}"
  gone "$TMPD/libout0"
done
expect 2 "does not fit the op's template any more" -- lib --db "$TMPD/one.db" --out "$TMPD/new/lib"
gone "$TMPD/new"
KILN_GPU_IMAGE=emulated expect 2 "no_such_knob" -- lib --db "$TMPD/cuda.db" --out "$TMPD/new/lib" --target cuda
gone "$TMPD/new"
mkdir -p "$TMPD/mine/sub"
echo keep >"$TMPD/mine/keep.txt"
expect 2 "does not fit the op's template any more" -- lib --db "$TMPD/one.db" --out "$TMPD/mine"
KILN_GPU_IMAGE=emulated expect 2 "no_such_knob" -- lib --db "$TMPD/cuda.db" --out "$TMPD/mine" --target cuda
[ "$(cat "$TMPD/mine/keep.txt" 2>/dev/null)" = keep ] && [ -d "$TMPD/mine/sub" ] &&
  [ "$(ls -A "$TMPD/mine" | sort | tr '\n' ' ')" = "keep.txt sub " ] && ok ||
  fail "a failed kiln lib changed the existing folder: $(ls -A "$TMPD/mine")"

echo "cli_lib: $pass passed, $fails failed"
[ "$fails" -eq 0 ]
