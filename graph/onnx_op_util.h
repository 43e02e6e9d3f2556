// Shared by the definitions of ONNX operators (graph/onnx_ops_*.cpp).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compute/expr_ops.h"
#include "graph/onnx_ops.h"

namespace kiln::graph {

// A node with accessors for its inputs and attributes; every failure is a
// user_error naming the node.
class NodeArgs {
 public:
  NodeArgs(const Graph& g, const Node& n, const NodeInputs& given) : g_(g), n_(n), given_(given) {}
  const NodeInputs& given() const { return given_; }
  const Node& node() const { return n_; }
  int opset() const { return g_.opset; }
  std::string what() const { return g_.describe(n_); }

  int num_inputs() const { return static_cast<int>(n_.inputs.size()); }
  bool has_input(int i) const { return i < num_inputs() && n_.inputs[static_cast<size_t>(i)] >= 0; }
  const Value& input(int i) const;  // user_error when left out
  const std::vector<int64_t>& shape(int i) const { return input(i).shape; }
  int rank(int i) const { return static_cast<int>(shape(i).size()); }
  // Its contents, which must be known at compile time (`role` names it).
  const HostTensor& constant(int i, const std::string& role) const;
  std::vector<int64_t> constant_ints(int i, const std::string& role) const;
  double constant_scalar(int i, const std::string& role) const;

  bool has_attr(const std::string& name) const { return n_.attrs.count(name) > 0; }
  int64_t attr_int(const std::string& name, int64_t dflt) const;
  double attr_float(const std::string& name, double dflt) const;
  std::string attr_str(const std::string& name, const std::string& dflt) const;
  std::vector<int64_t> attr_ints(const std::string& name, const std::vector<int64_t>& dflt) const;

  // An axis in [-rank, rank) made non-negative.
  int axis(int64_t a, int rank) const;
  // user_error unless every value lies in [lo, hi]: window attributes (a
  // damaged or hostile model may give any) before arithmetic on them.
  void check_within(const std::string& what, const std::vector<int64_t>& values, int64_t lo, int64_t hi) const;
  [[noreturn]] void fail(const std::string& message) const;

 private:
  const Graph& g_;
  const Node& n_;
  const NodeInputs& given_;
};

// Index variables as the expressions a tensor read takes.
inline std::vector<Expr> ex(const std::vector<Var>& vars) { return std::vector<Expr>(vars.begin(), vars.end()); }

// The shape kiln computes a tensor of ONNX shape `shape` with ([1] for a scalar).
std::vector<Expr> te_shape(const std::vector<int64_t>& shape);
// A placeholder for node input i with its ONNX shape.
Tensor input_placeholder(const NodeArgs& a, int i);

// Numpy-style broadcast of two shapes; user_error when they do not broadcast.
std::vector<int64_t> broadcast_shapes(const NodeArgs& a, const std::vector<int64_t>& x, const std::vector<int64_t>& y);
// Reads `t` (ONNX shape `shape`) at the output index `idx` it broadcasts to.
Expr broadcast_read(const Tensor& t, const std::vector<int64_t>& shape, const std::vector<Var>& idx);

// A compute over the ONNX shape `shape` (a scalar is computed as [1]; its
// index vector is then empty).
Tensor compute_shape(const std::vector<int64_t>& shape, const std::function<Expr(const std::vector<Var>&)>& f,
                     const std::string& name, const std::string& tag = "");

// The row-major flat index of `idx` in `shape`, and back.
Expr flat_index(const std::vector<Expr>& idx, const std::vector<int64_t>& shape);
std::vector<Expr> unflatten(const Expr& flat, const std::vector<int64_t>& shape);

// A node computed by one output tensor over its inputs' placeholders.
NodeCompute single_output(std::vector<Tensor> inputs, Tensor out, std::vector<int64_t> shape);

// The node as kiln operator `workload`, when the op accepts it (it may
// refuse a shape, e.g. padding as large as the window); nullopt otherwise.
std::optional<NodeCompute> as_registry_op(const std::string& workload, const std::vector<int64_t>& out_shape);
// A node computed by kiln operator `op` (its inputs in order, its first output).
NodeCompute op_compute(OpInstance op, const std::vector<int64_t>& out_shape);

using OpBuilder = std::function<NodeCompute(const NodeArgs&)>;
void add_elementwise_ops(std::map<std::string, OpBuilder>& ops);
void add_shape_ops(std::map<std::string, OpBuilder>& ops);
void add_nn_ops(std::map<std::string, OpBuilder>& ops);
void add_layout_ops(std::map<std::string, OpBuilder>& ops);

}  // namespace kiln::graph
