#!/usr/bin/env bash
# `kiln bench --target cuda` without a GPU: every user error exits 2 with its
# message (no driver, a driver with no GPU, --tune-trials, an op without a
# cuda template, CPU baselines named for a GPU bench and the reverse); with
# the stand-in driver (KILN_TEST_FAKE_LIBCUDA, emulated images) kiln's side
# of a GPU bench runs end to end, checked against the interpreter, with the
# GPU name in the table and a JSON that `kiln report` takes, while the
# cuBLAS and cuDNN plug-ins (which need a real GPU) say why they are left
# out or, when asked for, why they cannot run. Parts that need the stand-in
# or a host C++ compiler are skipped (exit 77) where they are missing.
# Usage: cli_bench_gpu.sh path/to/kiln
set -u
KILN="$1"
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_expect.sh"
export EXPECT_TIMEOUT=600
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT

SUITE="$TMPD/gpu_small.txt"
printf '%s\n' "# kiln's side of a GPU bench on the stand-in" "matmul:M=9,N=12,K=7,bias=1,gelu=1" \
  "conv2d_nhwc:N=1,H=6,W=6,C=4,K=8,R=3,S=3,pad=1,bias=1,relu=1" "softmax:M=4,N=24" >"$SUITE"
NCHWC="$TMPD/nchwc.txt"
printf '%s\n' "matmul:M=4,N=4,K=4" "conv2d_nchwc:N=1,C=8,H=6,W=6,K=8,R=3,S=3,pad=1,cb=4,kb=8" >"$NCHWC"

# The CPU bench refuses GPU baselines.
expect 2 "baseline 'cublas' runs on a GPU: compare with it in \`kiln bench --target cuda\`" -- \
  bench --suite smoke --baselines cublas
expect 2 "neither this CPU nor a cuda target" -- bench --suite smoke --target "llvm -mtriple=aarch64-linux-gnu"
# Checked before any GPU is looked for.
expect 2 "--tune-trials is for CPU benches; for --target cuda tune first with \`kiln tune WORKLOAD --target cuda" -- \
  bench --suite cuda-smoke --target cuda --tune-trials 4 --db "$TMPD/t.db"
expect 2 "line 2: op 'conv2d_nchwc' has no cuda schedule template yet" -- bench --suite "$NCHWC" --target cuda
# No driver (every machine without a GPU).
KILN_LIBCUDA=/nonexistent/libcuda.so.1 expect 2 \
  "kiln bench --target cuda times kernels on a GPU, and the CUDA driver (/nonexistent/libcuda.so.1) was not found" -- \
  bench --suite cuda-smoke --target cuda

if [ -z "${KILN_TEST_FAKE_LIBCUDA:-}" ] || [ ! -f "$KILN_TEST_FAKE_LIBCUDA" ]; then
  skip "the libcuda stand-in (KILN_TEST_FAKE_LIBCUDA) is not built"
  finish cli_bench_gpu
fi
export KILN_LIBCUDA="$KILN_TEST_FAKE_LIBCUDA"
KILN_FAKE_CUDA_DEVICES=0 expect 2 "reports no GPU" -- bench --suite cuda-smoke --target cuda
export KILN_FAKE_CUDA_DEVICES=1
expect 2 "is not the architecture of GPU 0 (kiln fake H100, sm_90)" -- \
  bench --suite "$SUITE" --target "cuda -arch=sm_80"
KILN_FAKE_CUDA_CC=100 expect 2 "GPU 0 (kiln fake H100) is sm_100, an architecture kiln does not support" -- \
  bench --suite "$SUITE" --target cuda
expect 2 "baseline 'onednn' runs on the CPU; kiln bench --target cuda compares with cublas and cudnn" -- \
  bench --suite "$SUITE" --target cuda --baselines onednn
expect 2 "unknown baseline 'mkl' (with --target cuda: cublas, cudnn)" -- \
  bench --suite "$SUITE" --target cuda --baselines mkl
# cuBLAS and cuDNN cannot run on the stand-in: a clear reason, no crash.
for b in cublas cudnn; do
  out=$("$KILN" bench --suite "$SUITE" --target cuda --baselines $b 2>&1)
  rc=$?
  if [ $rc -eq 2 ] && grep -q "baseline '$b' is not available: \(.* needs a GPU\|.* could not initialize\|this kiln has no cu\)" <<<"$out"; then
    ok
  else
    fail "bench --baselines $b on the stand-in -> exit $rc: $(tail -3 <<<"$out")"
  fi
done

if ! command -v c++ >/dev/null && [ -z "${KILN_HOST_CXX:-}" ]; then
  skip "no host C++ compiler for the stand-in's emulated images"
  finish cli_bench_gpu
fi
export KILN_GPU_IMAGE=emulated
out=$("$KILN" bench --suite "$SUITE" --target cuda --rounds 2 --repeat 1 --min-repeat-ms 0 --json "$TMPD/gpu.json" \
  --md "$TMPD/gpu.md" 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -q "GPU kiln fake H100 (sm_90, " <<<"$out" &&
  grep -q "^matmul:.* ok$" <<<"$out" && grep -q "^conv2d_nhwc:.* ok$" <<<"$out" &&
  grep -q "^softmax:.* ok$" <<<"$out" &&
  grep -q "baseline cublas left out: " <<<"$out" && grep -q "baseline cudnn left out: " <<<"$out"; then
  ok
else
  fail "kiln's side of a GPU bench on the stand-in -> exit $rc: $out"
fi
grep -q '"arch": "sm_90"' "$TMPD/gpu.json" && grep -q '"target": "cuda -arch=sm_90"' "$TMPD/gpu.json" &&
  grep -q '"check": "ok"' "$TMPD/gpu.json" && ok || fail "bench JSON: $(head -c 600 "$TMPD/gpu.json")"
grep -q "GPU kiln fake H100" "$TMPD/gpu.md" && ok || fail "bench Markdown: $(head -3 "$TMPD/gpu.md")"
expect 0 "wrote" -- report --bench "$TMPD/gpu.json" --html "$TMPD/report.html"
grep -q "GPU kiln fake H100" "$TMPD/report.html" && ok || fail "the report does not name the GPU"

finish cli_bench_gpu
