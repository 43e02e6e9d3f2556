// Task extraction: the tuning tasks of a network. Each distinct workload of
// an operator family among the nodes the executor would compile (after the
// graph passes and folding) is one task, weighted by how many nodes run it.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/node_schedules.h"

namespace kiln::graph {

struct ModelTask {
  std::string workload;            // canonical workload string
  int weight = 0;                  // nodes that run it
  double flops = 0;                // of one run
  std::vector<std::string> nodes;  // their names (the first few)
};

// The tasks of `g` on `target` (g is optimized and shape-inferred in place,
// as the executor does for that target), heaviest total FLOPs first. On a
// GPU, nodes that no cuda template takes run generic kernels: no task.
std::vector<ModelTask> extract_tasks(Graph& g, const NodeTarget& target);

}  // namespace kiln::graph
