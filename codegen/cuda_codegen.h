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
#pragma once

#include "codegen/cuda_module.h"
#include "compute/function.h"
#include "schedule/gpu_limits.h"

namespace kiln {

// User errors: anything gpu_kernels() rejects, and element types the
// backend does not handle yet (f16, bf16: not in this version).
CudaSource emit_cuda(const LoweredFunc& f, const GpuLimits& limits);

}  // namespace kiln
