// The rewrites a network gets before it is compiled for a target, in their
// order: graph/passes.h (MatMul weights packed on CPUs only), the upsampling
// ConvTransposes as matrix products (graph/conv_transpose_gemm.h), then on
// CPUs the blocked layouts (graph/layout_planning.h). The executor and task
// extraction both run this, so that the tuner sees the executor's kernels.
#pragma once

#include "graph/graph.h"
#include "graph/node_schedules.h"
#include "graph/passes.h"

namespace kiln::graph {

PassStats rewrite_for_target(Graph& g, const NodeTarget& target, bool plan_layouts = true);

}  // namespace kiln::graph
