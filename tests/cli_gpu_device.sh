#!/usr/bin/env bash
# kiln on a real NVIDIA GPU: `kiln run --target cuda --check` compiles with
# NVRTC, runs on GPU 0 through the CUDA driver and checks against the
# interpreter. Skipped (exit 77) where there is no driver, no GPU or no NVRTC.
# Usage: cli_gpu_device.sh path/to/kiln
set -u
KILN="$1"
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_expect.sh"
export EXPECT_TIMEOUT=300
unset KILN_LIBCUDA

if ! out=$("$KILN" run softmax:M=4,N=32 --target cuda --repeat 1 --min-repeat-ms 0 2>&1); then
  if grep -q "the CUDA driver .* was not found\|reports no GPU\|NVRTC .* was not found" <<<"$out"; then
    skip "no GPU here: $(head -c 200 <<<"$out")"
    finish cli_gpu_device
  fi
fi

# One workload of every cuda template (bench/suites/cuda-templates.txt).
for W in $(grep -v '^#' "$(dirname "${BASH_SOURCE[0]}")/../bench/suites/cuda-templates.txt"); do
  expect 0 "correct: yes" -- run "$W" --target cuda --check --repeat 3 --min-repeat-ms 10
done
expect 0 '"device":' -- run matmul:M=64,N=64,K=64 --target cuda --json --repeat 1 --min-repeat-ms 0

finish cli_gpu_device
