#include "graph/shape_inference.h"

#include "base/error.h"

namespace kiln::graph {

namespace {

// The same elements under another shape (the tensor expression computes a
// scalar as [1], and a MatMul's operand may be read as a matrix).
HostTensor reshaped(HostTensor t, const std::vector<int64_t>& shape) {
  t.shape = shape;
  return t;
}

// Folding runs the interpreter; past this many output elements a node is
// left to the compiled network instead.
constexpr int64_t kMaxFoldElements = 1 << 22;

}  // namespace

InferredGraph infer_and_fold(Graph& g) {
  InferredGraph out;
  for (const Node& n : g.nodes) {
    NodeCompute c = node_compute(g, n);
    bool all_constant = true;
    std::vector<std::pair<Tensor, HostTensor>> feeds;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      if (!c.inputs[i].defined()) continue;
      const Value& v = g.values[static_cast<size_t>(n.inputs[i])];
      if (!v.constant) {
        all_constant = false;
        continue;
      }
      feeds.emplace_back(c.inputs[i], reshaped(*v.constant, static_shape(c.inputs[i])));
    }
    int64_t elements = 0;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      Value& v = g.values[static_cast<size_t>(n.outputs[k])];
      v.shape = c.output_shapes[k];
      v.dtype = c.outputs[k].dtype();
      v.shape_known = true;
      elements += v.num_elements();
    }
    const bool fold = (all_constant || c.shape_only) && elements <= kMaxFoldElements;
    // Inferring a graph again (after graph/layout_planning.h) keeps what
    // folded the first time.
    bool folded_before = true;
    for (int v : n.outputs) {
      const Value& val = g.values[static_cast<size_t>(v)];
      folded_before = folded_before && val.constant && val.constant->shape == val.shape;
    }
    if (fold && !folded_before) {
      std::vector<HostTensor> results = interpret(c.outputs, feeds);
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        Value& v = g.values[static_cast<size_t>(n.outputs[k])];
        v.constant = reshaped(std::move(results[k]), v.shape);
      }
    }
    out.folded.push_back(fold);
    out.computes.push_back(std::move(c));
  }
  return out;
}

}  // namespace kiln::graph
