// The schedule of a tensor expression that no operator template covers
// (element-wise chains, transposes, concatenations, reductions of a
// network's glue): each element-wise stage is inlined into its consumer;
// each remaining stage (the outputs, and reductions) runs at the root with
// its spatial loops fused, split across the cores when there is enough work,
// and vectorized when the innermost run is a whole number of vectors.
#pragma once

#include <vector>

#include "kernels/op_registry.h"

namespace kiln {

ScheduledOp generic_schedule(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                             const CpuInfo& cpu);

// Shared with the cuda generic schedule (kernels/generic_gpu_schedule.h):
// inlines every element-wise stage that is not an output, and returns the
// other stages that are not outputs (the reductions), producers first.
std::vector<Operation> inline_elementwise_stages(Schedule& s, const std::vector<Tensor>& outputs);

}  // namespace kiln
