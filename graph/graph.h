// kiln's graph layer: a network as operator nodes over tensors with static
// shapes, what `kiln run-model` imports from an ONNX file
// (graph/onnx_import.h), gives shapes and constants to
// (graph/shape_inference.h) and runs (graph/executor.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "compute/dtype.h"
#include "compute/interpreter.h"

namespace kiln::graph {

// A tensor of the graph. Its shape is static once shape inference ran;
// `constant` holds its contents when they are known before the network runs
// (weights, Constant nodes, shape arithmetic folded at compile time).
struct Value {
  std::string name;
  DType dtype = DType::f32();
  std::vector<int64_t> shape;
  bool shape_known = false;
  std::optional<HostTensor> constant;
  int64_t num_elements() const;
  int64_t bytes() const;
};

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>, HostTensor>;

struct Node {
  std::string op_type;  // ONNX operator name, "Conv"
  std::string name;     // the node's name in the model ("node #i" when it has none)
  std::vector<int> inputs;   // value ids; -1 for an optional input left out
  std::vector<int> outputs;  // value ids
  std::map<std::string, AttrValue> attrs;
};

struct Graph {
  std::vector<Value> values;
  std::vector<Node> nodes;    // in execution order (producers first)
  std::vector<int> inputs;    // values the caller supplies
  std::vector<int> outputs;   // values the network returns
  int opset = 0;              // version of the default ONNX domain
  std::string source;         // file it came from, for messages

  int add_value(Value v);
  // The id of the value called `name`, or -1.
  int find_value(const std::string& name) const;
  // "Conv node 'conv_1' (opset 9)": how messages name a node.
  std::string describe(const Node& n) const;
};

// "1x3x48x192" -> {1, 3, 48, 192}; user_error naming `what` on anything
// else (empty, a zero or negative extent, a stray character).
std::vector<int64_t> parse_shape(const std::string& text, const std::string& what);
std::string shape_str(const std::vector<int64_t>& shape);

// The most elements a tensor of a network may have (4 TiB of f32): far
// past any machine, and small enough that sizes and window arithmetic on
// them stay within int64.
constexpr int64_t kMaxTensorElements = int64_t{1} << 40;
// The largest kernel extent, stride, dilation or pad a window may have, for
// the same reason.
constexpr int64_t kMaxWindowValue = (int64_t{1} << 31) - 1;
// The number of elements of `shape`; user_error naming `what` when an
// extent is negative or the count passes kMaxTensorElements (a damaged or
// hostile model may claim any shape: nothing overflows on the way).
int64_t checked_elements(const std::vector<int64_t>& shape, const std::string& what);

}  // namespace kiln::graph
