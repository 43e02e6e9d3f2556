#include "graph/target_passes.h"

#include "graph/conv_transpose_gemm.h"
#include "graph/layout_planning.h"

namespace kiln::graph {

PassStats rewrite_for_target(Graph& g, const NodeTarget& target, bool plan_layouts) {
  // Packed weights and blocked layouts are the CPU templates' layouts.
  PassStats stats = optimize(g, !target.cuda());
  conv_transpose_as_gemm(g, &stats);
  if (plan_layouts && !target.cuda()) graph::plan_layouts(g, &stats);
  return stats;
}

}  // namespace kiln::graph
