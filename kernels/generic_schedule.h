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

}  // namespace kiln
