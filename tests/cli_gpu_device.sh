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

# Every cuda template, the tensor-core ones in f16 and bf16 too. The f16
# convolutions declare more than 24 KiB of shared memory: kiln once passed
# that again as dynamic shared memory, which a GPU refuses past 48 KiB.
for W in "softmax:M=1536,N=128" "layer_norm:M=128,N=768" "matmul:M=37,N=45,K=19,bias=1,relu=1" \
         "matmul:M=1024,N=1024,K=1024" "dense:N=16,IN=768,OUT=3072,bias=1,gelu=1" \
         "matmul:M=512,N=512,K=512,dtype=f16" "matmul:M=256,N=256,K=256,dtype=bf16,bias=1,gelu=1" \
         "batch_matmul:B=12,M=128,N=128,K=64,trans_b=1,dtype=f16" \
         "conv2d_nhwc:N=1,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1,dtype=f16" \
         "conv2d_nhwc:N=2,H=17,W=13,C=24,K=40,R=3,S=3,stride=2,pad=1,dtype=bf16,bias=1,relu=1" \
         "conv2d:N=2,C=5,H=9,W=11,K=7,R=3,S=3,stride=2,pad=1,bias=1,relu=1" \
         "depthwise_conv2d:C=32,H=28,W=28,R=3,S=3,pad=1,bias=1,relu6=1" \
         "avg_pool2d:N=2,C=3,H=13,W=11,R=3,S=3,stride=2,pad=1"; do
  expect 0 "correct: yes" -- run "$W" --target cuda --check --repeat 3 --min-repeat-ms 10
done
expect 0 '"device":' -- run matmul:M=64,N=64,K=64 --target cuda --json --repeat 1 --min-repeat-ms 0

finish cli_gpu_device
