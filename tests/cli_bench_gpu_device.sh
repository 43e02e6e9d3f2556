#!/usr/bin/env bash
# `kiln bench --target cuda` on a real NVIDIA GPU against cuBLAS and cuDNN:
# the cuda-smoke suite, every contender's output checked against kiln's
# reference interpreter (exit 1 on a mismatch), both baselines present and
# covering every workload they claim (no "n/a" cell), the GPU named in the
# table, and the JSON accepted by `kiln report`. Skipped (exit 77) where
# there is no driver, no GPU, no NVRTC, or no cuBLAS / cuDNN plug-in.
# Usage: cli_bench_gpu_device.sh path/to/kiln
set -u
KILN="$1"
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_expect.sh"
export EXPECT_TIMEOUT=600
unset KILN_LIBCUDA KILN_GPU_IMAGE
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT

if ! out=$("$KILN" run softmax:M=4,N=32 --target cuda --repeat 1 --min-repeat-ms 0 2>&1); then
  if grep -q "the CUDA driver .* was not found\|reports no GPU\|NVRTC .* was not found" <<<"$out"; then
    skip "no GPU here: $(head -c 200 <<<"$out")"
    finish cli_bench_gpu_device
  fi
fi
for b in cublas cudnn; do
  out=$("$KILN" bench --suite cuda-smoke --target cuda --baselines $b --rounds 1 --repeat 1 --min-repeat-ms 0 2>&1)
  if grep -q "this kiln has no cu" <<<"$out"; then
    skip "no $b plug-in in this build: $(grep -o "this kiln has no.*" <<<"$out" | head -c 300)"
    finish cli_bench_gpu_device
  fi
done

out=$("$KILN" bench --suite cuda-smoke --target cuda --baselines cublas,cudnn --rounds 3 --min-repeat-ms 20 \
  --json "$TMPD/smoke.json" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] && ok || fail "kiln bench --suite cuda-smoke --target cuda exited $rc"
grep -q "^suite cuda-smoke, .*, GPU .* (sm_" <<<"$out" && ok || fail "the table does not name the GPU"
grep -q "cuBLAS" <<<"$out" && grep -q "cuDNN" <<<"$out" && ok || fail "a baseline column is missing"
grep -q "geomean kiln/cuBLAS: " <<<"$out" && grep -q "geomean kiln/cuDNN: " <<<"$out" && ok ||
  fail "a geomean is missing"
if grep -q " n/a " <<<"$out"; then fail "a baseline could not run a workload it claims"; else ok; fi
if grep -q "WRONG\|differs" <<<"$out"; then fail "an output differs from the reference"; else ok; fi
expect 0 "wrote" -- report --bench "$TMPD/smoke.json" --html "$TMPD/report.html"

finish cli_bench_gpu_device
