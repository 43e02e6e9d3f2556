// The CUDA C backend: a function lowered with lower_gpu() -> CUDA C source,
// one extern "C" __global__ kernel per kernel nest (schedule/gpu_kernels.h),
// with its launch dimensions.
//
// The source is meant to be read (`kiln source WORKLOAD --target cuda`):
// loops stay loops, buffers keep their stage names, each thread-bound loop
// becomes its thread index (guarded when it is shorter than the block).
// Vector code (a vectorized axis) uses float2/float4 where the access is
// contiguous and provably aligned, and is written lane by lane otherwise.
// Arithmetic follows compute/expr.h: floor division and NaN-propagating
// min/max come from small helpers printed ahead of the kernels.
//
// f16 and bf16 are storage types: global and shared memory hold their 16-bit
// patterns (kiln_half, kiln_bfloat16), registers hold f32. A load converts,
// a store rounds to nearest even, arithmetic and reductions run in f32 (as
// the interpreter computes them), a cast to f16/bf16 rounds the value, and a
// copy between 16-bit memories moves the bits. Two or four adjacent,
// aligned elements move as one 4- or 8-byte access (half2-style).
//
// Tensor-core fragments (warp scope) are the exception: each lane declares
// 1/32 of a fragment buffer as 16-bit patterns (or f32 accumulators), and
// only the tensor-core instructions of compute/hw_instructions.h touch
// them, printed as calls of the mma prelude (codegen/cuda_mma_prelude.h);
// an element access to a fragment, an operand in the wrong memory or a
// target before sm_80 is a user error.
#pragma once

#include "codegen/cuda_module.h"
#include "compute/function.h"
#include "schedule/gpu_limits.h"

namespace kiln {

// User errors: anything gpu_kernels() rejects, and element types the
// backend does not handle (f8, f128 and the like).
CudaSource emit_cuda(const LoweredFunc& f, const GpuLimits& limits);

}  // namespace kiln
