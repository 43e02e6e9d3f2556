// The cuda counterpart of kernels/generic_schedule.h: the schedule of a
// network's glue (element-wise chains, transposes, concatenations,
// reductions, resizes) on a GPU. Element-wise stages are inlined into their
// consumer; each remaining stage (the outputs, and reductions) is one kernel
// with one thread per output element: its spatial axes fused and split into
// blockIdx.x x threadIdx.x (a warp's lanes on adjacent elements, so that
// element-wise kernels coalesce), its reduction run serially by that thread.
#pragma once

#include <vector>

#include "compute/tensor.h"
#include "kernels/op_registry.h"
#include "schedule/gpu_limits.h"

namespace kiln {

// Threads per block of the generic kernels (fewer when the output is smaller).
constexpr int64_t kGenericGpuThreads = 256;

ScheduledOp generic_gpu_schedule(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                                 const GpuLimits& gpu);

}  // namespace kiln
