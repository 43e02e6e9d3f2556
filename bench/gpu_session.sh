#!/usr/bin/env bash
# What to run when a GPU is at hand for a short while: kiln's portable
# bundle (scripts/bundle.sh, which ships the cuBLAS and cuDNN plug-ins)
# checked on every cuda template, then the f16 suites tuned and benched
# against cuBLAS and cuDNN. Each step is time-boxed, and everything it
# writes is archived after each step, so a cut-off run still leaves results.
#
#   bench/gpu_session.sh BUNDLE.tar.xz OUT_DIR
#
# Environment: TRIALS (per workload, default 32), SUITES (default
# "cuda-matmul-f16 cuda-resnet50-f16"), TUNE_S (seconds of tuning per suite,
# default 240), DB_JSONL (records to import first, e.g. an earlier session's
# bench/results/*records*.jsonl.xz). CUDA 13 and cuDNN 9 must be loadable:
# their folders are added to LD_LIBRARY_PATH where found under /usr/local
# and /opt (the CUDA toolkit, pip's nvidia-* wheels).
set -u
[ $# -eq 2 ] || { echo "usage: $0 BUNDLE.tar.xz OUT_DIR" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/gpu_bundle_lib.sh"
gpu_session_start "$1" "$2" || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
cd "$W" || exit 1
if [ -n "${DB_JSONL:-}" ]; then
  case "$DB_JSONL" in *.xz) xz -dc "$DB_JSONL" > in.jsonl ;; *) cp "$DB_JSONL" in.jsonl ;; esac
  "$K" import --db gpu.db in.jsonl
fi

step "correctness of every cuda template on the GPU"
for w in $(grep -v '^#' "$ROOT/bench/suites/cuda-templates.txt"); do
  out=$(timeout 60 "$K" run "$w" --target cuda --check --repeat 3 --min-repeat-ms 10 2>&1)
  echo "$w rc=$? :: $(grep -E "correct|median|error" <<<"$out" | tr '\n' ' ' | head -c 300)"
done | tee correctness.log
save

for suite in ${SUITES:-cuda-matmul-f16 cuda-resnet50-f16}; do
  step "tune $suite (${TRIALS:-32} trials a workload, at most ${TUNE_S:-240} s)"
  # SIGINT: kiln tune stops after the batch in flight, its records kept.
  timeout -s INT -k 15 "${TUNE_S:-240}" "$K" tune $(grep -v '^#' "$ROOT/bench/suites/$suite.txt") --target cuda \
    --db gpu.db --trials "${TRIALS:-32}" --batch 16 --repeat 2 --min-repeat-ms 10 > "tune_$suite.log" 2>&1
  echo "rc=$?"
  save
  step "bench $suite"
  timeout 300 "$K" bench --suite "$ROOT/bench/suites/$suite.txt" --target cuda --db gpu.db --rounds 3 \
    --min-repeat-ms 20 --json "$suite.json" --md "$suite.md" > "bench_$suite.log" 2>&1
  echo "rc=$?"
  grep -E "geomean" "bench_$suite.log"
  save
done
"$K" export --db gpu.db --jsonl records.jsonl && xz -9 records.jsonl
save
step "done: $OUT/results.tgz"
