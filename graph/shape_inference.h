// Static shapes for every tensor of a graph, and constant folding: a node
// whose inputs are all known before the network runs (weights, Constant
// nodes, shape arithmetic such as Shape -> Slice -> Concat -> Reshape) is
// evaluated once by the reference interpreter on its tensor expression.
#pragma once

#include <vector>

#include "graph/graph.h"
#include "graph/onnx_ops.h"

namespace kiln::graph {

struct InferredGraph {
  // Per node of the graph, its computation (graph/onnx_ops.h).
  std::vector<NodeCompute> computes;
  // Per node: whether all its outputs are constants (nothing to run).
  std::vector<bool> folded;
};

// Fills in the shape and element type of every value of `g` and the
// contents of those that fold. user_error as node_compute() does.
InferredGraph infer_and_fold(Graph& g);

}  // namespace kiln::graph
