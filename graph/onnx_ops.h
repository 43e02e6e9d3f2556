// What each ONNX operator computes, as kiln tensor expressions. The same
// definition serves constant folding (the reference interpreter evaluates
// it), the executor (kiln compiles it) and ONNX's conformance tests.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compute/tensor.h"
#include "graph/graph.h"
#include "kernels/op_registry.h"

namespace kiln::graph {

struct NodeCompute {
  // Per node input: the placeholder its contents are read through, or an
  // undefined Tensor where the node reads none of them (an input left out,
  // or one only needed at compile time, such as Reshape's shape). A
  // placeholder may have a different shape with the same elements.
  std::vector<Tensor> inputs;
  // Per node output: the tensor computing it (same elements as the ONNX
  // output; rank-0 outputs are computed as shape [1]).
  std::vector<Tensor> outputs;
  // The ONNX shapes and element types of the outputs.
  std::vector<std::vector<int64_t>> output_shapes;
  // Set when a kiln operator family computes the node (a tunable task):
  // `op` is built from `op.canonical`, its inputs are `inputs` in order.
  std::optional<OpInstance> op;
  // Set for nodes whose output is the input's bytes unchanged (Reshape,
  // Flatten, Squeeze, Unsqueeze, Identity): the executor aliases the input.
  bool is_view = false;
  // Set for nodes whose output depends only on input shapes (Shape).
  bool shape_only = false;
};

// What a node's inputs are read through: by default placeholders named
// `prefix` + "in" + index; a defined tensor in `tensors` replaces input i
// (the executor fuses an element-wise producer into its consumer so).
struct NodeInputs {
  std::vector<Tensor> tensors;
  std::string prefix;
};

// The node's computation. user_error naming the node and the opset when kiln
// does not support its operator or an attribute value, or when an input it
// needs at compile time (a shape, slice bounds) is not constant.
NodeCompute node_compute(const Graph& g, const Node& n, const NodeInputs& given = {});

// The extents of a tensor expression whose shape is static (every node's is).
std::vector<int64_t> static_shape(const Tensor& t);

// The ONNX operators kiln imports, sorted.
std::vector<std::string> supported_onnx_ops();

}  // namespace kiln::graph
