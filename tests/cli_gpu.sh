#!/usr/bin/env bash
# The cuda target from the command line: CUDA C from `kiln source`, PTX and
# resource use with --ptx (skipped without NVRTC), `kiln run --emulate
# --check` on the CPU (skipped without a host C++ compiler), and each user
# error exits 2 with its message.
# Usage: cli_gpu.sh path/to/kiln
set -u
KILN="$1"
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_expect.sh"
export EXPECT_TIMEOUT=300

W="matmul:M=37,N=45,K=19,bias=1,relu=1"
POOL="avg_pool2d:N=2,C=3,H=13,W=11,R=3,S=3,stride=2,pad=1"
DW="depthwise_conv2d:C=5,H=13,W=17,R=3,S=3,pad=1,bias=1,relu6=1"
CONV="conv2d:N=2,C=5,H=9,W=11,K=7,R=3,S=3,stride=2,pad=1,bias=1,relu=1"
CONV_NHWC="conv2d_nhwc:H=10,W=7,C=6,K=9,R=3,S=3,pad=1,relu6=1"
expect 0 'extern "C" __global__ void __launch_bounds__(' -- source "$W" --target cuda
expect 0 "__syncthreads();" -- source "$W" --target "cuda -arch=sm_80"
expect 0 'kiln_avg_pool2d_kernel0(const float* __restrict__ data' -- source "$POOL" --target cuda
expect 0 "__shared__" -- source "$DW" --target cuda
expect 0 "data_pad_shared" -- source "$CONV" --target cuda
expect 0 'kiln_conv2d_nhwc_kernel0(const float* __restrict__ data' -- source "$CONV_NHWC" --target cuda
expect 2 "unknown CUDA architecture 'sm_61'" -- source "$W" --target "cuda -arch=sm_61"
expect 2 "op 'conv2d_nchwc' has no cuda schedule template yet" -- source "conv2d_nchwc:C=16,H=8,W=8,K=16,R=3,S=3" \
  --target cuda
expect 0 "kiln_allreduce<kiln_max_op" -- source softmax:M=1536,N=128 --target cuda
expect 2 "tile_k" -- source matmul:M=64,N=64,K=8 --target cuda --config '{"tile_k":[1,3]}'
expect 2 "--llvm and --asm are for llvm targets" -- source "$W" --target cuda --asm
expect 2 "--ptx is for cuda targets" -- source "$W" --ptx
# Without a driver (as on every machine without a GPU), kiln run says so.
export KILN_LIBCUDA=/nonexistent/libcuda.so.1
expect 2 "the CUDA driver (/nonexistent/libcuda.so.1) was not found" -- run "$W" --target cuda
expect 2 "--emulate runs its CUDA C on this CPU instead" -- run "$W" --target cuda
expect 2 "measures candidates on a GPU, and the CUDA driver (/nonexistent/libcuda.so.1) was not found" -- \
  tune "$W" --target cuda --trials 4 --db "$(mktemp -u).db"
unset KILN_LIBCUDA
# A driver with no GPU (the test stand-in for libcuda.so.1, told to report none).
if [ -n "${KILN_TEST_FAKE_LIBCUDA:-}" ] && [ -f "$KILN_TEST_FAKE_LIBCUDA" ]; then
  export KILN_LIBCUDA="$KILN_TEST_FAKE_LIBCUDA" KILN_FAKE_CUDA_DEVICES=0
  expect 2 "reports no GPU" -- run "$W" --target cuda
  # The target's default arch falls back to sm_90 without a GPU.
  expect 0 "for sm_90, 1 kernel" -- source "$W" --target cuda
  # A driver error (the stand-in runs no real cubin) fails the run cleanly.
  export KILN_FAKE_CUDA_DEVICES=1
  if "$KILN" source "$W" --target cuda --ptx >/dev/null 2>&1; then
    expect 1 "the GPU failed: cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE" -- run "$W" --target cuda
  fi
  # A GPU of an architecture kiln does not support: said so (with what kiln
  # supports), not as a mismatch with the sm_90 that plain cuda falls back to.
  out=$(KILN_FAKE_CUDA_CC=100 "$KILN" run softmax:M=4,N=8 --target cuda 2>&1)
  rc=$?
  if [ $rc -eq 2 ] && ! grep -q "is not the architecture" <<<"$out" && grep -qF \
    "GPU 0 (kiln fake H100) is sm_100, an architecture kiln does not support (kiln supports sm_70, sm_72, sm_75" \
    <<<"$out" && grep -qF "kiln run WORKLOAD --target cuda --emulate --check" <<<"$out"; then
    ok
  else
    fail "kiln run on an sm_100 GPU -> exit $rc: $out"
  fi
  DB="$(mktemp -u).db"
  KILN_FAKE_CUDA_CC=100 expect 2 "is sm_100, an architecture kiln does not support" -- \
    tune softmax:M=8,N=32 --target cuda --trials 2 --db "$DB"
  # A target of another architecture than the local GPU's: kiln tune refuses
  # it up front, as kiln run does, before the database is opened.
  MISMATCH="target 'cuda -arch=sm_90' is not the architecture of GPU 0 (kiln fake H100, sm_80); give --target \"cuda -arch=sm_80\""
  KILN_FAKE_CUDA_CC=80 expect 2 "$MISMATCH" -- tune softmax:M=8,N=32 --target "cuda -arch=sm_90" --trials 2 --db "$DB"
  [ ! -e "$DB" ] && ok || fail "the refused tune created $DB"
  KILN_FAKE_CUDA_CC=80 expect 2 "$MISMATCH" -- run softmax:M=4,N=8 --target "cuda -arch=sm_90"
  # Tuning on the stand-in: parallel builds of GPU artifacts (emulated
  # images), measured by a worker process through the driver API.
  if command -v c++ >/dev/null || [ -n "${KILN_HOST_CXX:-}" ]; then
    KILN_FAKE_CUDA_CC=80 KILN_GPU_IMAGE=emulated expect 0 "trials 2 (2 new), errors 0" -- \
      tune softmax:M=8,N=32 --target "cuda -arch=sm_80" --trials 2 --db "$DB"
    rm -f "$DB"
    # No hint to `kiln probe` (which measures CPUs) for a cuda target.
    out=$(KILN_GPU_IMAGE=emulated "$KILN" tune softmax:M=8,N=64 --target cuda --trials 6 --db "$DB" 2>&1)
    rc=$?
    if [ $rc -eq 0 ] && grep -qF "trials 6 (6 new), errors 0" <<<"$out" && ! grep -q "kiln probe" <<<"$out"; then
      ok
    else
      fail "kiln tune --target cuda on the stand-in -> exit $rc: $out"
    fi
    expect 0 "correct: yes" -- run softmax:M=8,N=64 --target cuda --db "$DB" --emulate --check --repeat 1 \
      --min-repeat-ms 0
    rm -f "$DB"
    # Tensor cores: an f16 GEMM tunes with mma configs among the trials and
    # its best config runs correctly (emulated ldmatrix and mma.sync).
    KILN_FAKE_CUDA_CC=80 KILN_GPU_IMAGE=emulated expect 0 "trials 3 (3 new), errors 0" -- \
      tune matmul:M=32,N=32,K=32,dtype=f16 --target "cuda -arch=sm_80" --trials 3 --db "$DB"
    expect 0 "correct: yes" -- run matmul:M=32,N=32,K=32,dtype=f16 --target "cuda -arch=sm_80" --emulate --check \
      --repeat 1 --min-repeat-ms 0
    rm -f "$DB"
  fi
  unset KILN_LIBCUDA KILN_FAKE_CUDA_DEVICES
else
  skip "the libcuda stand-in (KILN_TEST_FAKE_LIBCUDA) is not built"
fi
expect 2 "--emulate is for cuda targets" -- run "$W" --emulate

# KILN_NVRTC names the one NVRTC to use: one that does not load is an error
# naming it, not a quiet fallback to another.
KILN_NVRTC=/nonexistent/libnvrtc.so expect 2 \
  "NVRTC: KILN_NVRTC=/nonexistent/libnvrtc.so could not be loaded (/nonexistent/libnvrtc.so: cannot open" -- \
  source "$W" --target cuda --ptx

if out=$("$KILN" source "$W" --target cuda --ptx 2>&1); then
  grep -q "registers" <<<"$out" && grep -q ".entry kiln_matmul_kernel0" <<<"$out" && ok || fail "--ptx: $out"
elif grep -q "NVRTC (libnvrtc.so from the CUDA toolkit) was not found" <<<"$out"; then
  skip "NVRTC is not installed"
else
  fail "kiln source --ptx: $out"
fi

if command -v c++ >/dev/null || [ -n "${KILN_HOST_CXX:-}" ]; then
  expect 0 "correct: yes" -- run "$W" --target cuda --emulate --check --repeat 1 --min-repeat-ms 0
  expect 0 '"emulated":true' -- run dense:N=3,IN=29,OUT=31,bias=1,gelu=1 --target cuda --emulate --check --json \
    --repeat 1 --min-repeat-ms 0
  expect 0 "correct: yes" -- run layer_norm:M=5,N=131 --target cuda --emulate --check --repeat 1 --min-repeat-ms 0
  expect 0 "correct: yes" -- run "$POOL" --target cuda --emulate --check --repeat 1 --min-repeat-ms 0
  expect 0 "correct: yes" -- run "$DW" --target cuda --emulate --check --repeat 1 --min-repeat-ms 0
  expect 0 "correct: yes" -- run "$CONV" --target cuda --emulate --check --repeat 1 --min-repeat-ms 0
  expect 0 "correct: yes" -- run "$CONV_NHWC" --target cuda --emulate --check --repeat 1 --min-repeat-ms 0
else
  skip "no host C++ compiler for the emulation"
fi

finish cli_gpu
