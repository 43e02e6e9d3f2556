#include "graph/onnx_ops.h"

#include <algorithm>

#include "base/error.h"
#include "graph/onnx_op_util.h"

namespace kiln::graph {

const Value& NodeArgs::input(int i) const {
  if (!has_input(i)) fail("needs input " + std::to_string(i) + ", which the model leaves out");
  return g_.values[static_cast<size_t>(n_.inputs[static_cast<size_t>(i)])];
}

const HostTensor& NodeArgs::constant(int i, const std::string& role) const {
  const Value& v = input(i);
  if (!v.constant)
    fail("takes its " + role + " from tensor '" + v.name +
         "', which kiln cannot compute before the network runs (it must be a constant or follow from shapes)");
  return *v.constant;
}

std::vector<int64_t> NodeArgs::constant_ints(int i, const std::string& role) const {
  const HostTensor& t = constant(i, role);
  if (!t.dtype.is_integer()) fail("takes its " + role + " as " + t.dtype.str() + " values, not integers");
  std::vector<int64_t> out;
  for (int64_t k = 0; k < t.num_elements(); ++k) out.push_back(t.get_int(k));
  return out;
}

double NodeArgs::constant_scalar(int i, const std::string& role) const {
  const HostTensor& t = constant(i, role);
  if (t.num_elements() != 1) fail("takes its " + role + " as one value, not " + std::to_string(t.num_elements()));
  return t.get_float(0);
}

int64_t NodeArgs::attr_int(const std::string& name, int64_t dflt) const {
  auto it = n_.attrs.find(name);
  if (it == n_.attrs.end()) return dflt;
  if (auto* v = std::get_if<int64_t>(&it->second)) return *v;
  fail("has attribute '" + name + "' of the wrong type (an integer expected)");
}

double NodeArgs::attr_float(const std::string& name, double dflt) const {
  auto it = n_.attrs.find(name);
  if (it == n_.attrs.end()) return dflt;
  if (auto* v = std::get_if<double>(&it->second)) return *v;
  if (auto* v = std::get_if<int64_t>(&it->second)) return static_cast<double>(*v);
  fail("has attribute '" + name + "' of the wrong type (a float expected)");
}

std::string NodeArgs::attr_str(const std::string& name, const std::string& dflt) const {
  auto it = n_.attrs.find(name);
  if (it == n_.attrs.end()) return dflt;
  if (auto* v = std::get_if<std::string>(&it->second)) return *v;
  fail("has attribute '" + name + "' of the wrong type (a string expected)");
}

std::vector<int64_t> NodeArgs::attr_ints(const std::string& name, const std::vector<int64_t>& dflt) const {
  auto it = n_.attrs.find(name);
  if (it == n_.attrs.end()) return dflt;
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  fail("has attribute '" + name + "' of the wrong type (a list of integers expected)");
}

int NodeArgs::axis(int64_t a, int rank) const {
  if (a < -rank || a >= std::max(rank, 1))
    fail("has axis " + std::to_string(a) + ", outside a tensor of rank " + std::to_string(rank));
  return static_cast<int>(a < 0 ? a + rank : a);
}

void NodeArgs::check_within(const std::string& what, const std::vector<int64_t>& values, int64_t lo, int64_t hi) const {
  for (int64_t v : values)
    if (v < lo || v > hi)
      fail("has " + what + " " + std::to_string(v) + ", outside [" + std::to_string(lo) + ", " + std::to_string(hi) +
           "]");
}

void NodeArgs::fail(const std::string& message) const {
  user_error() << what() << " " << message;
  throw;  // unreachable: user_error throws
}

std::vector<Expr> te_shape(const std::vector<int64_t>& shape) {
  if (shape.empty()) return {Expr(1)};
  std::vector<Expr> s;
  for (int64_t d : shape) s.push_back(Expr(d));
  return s;
}

namespace {

// Placeholders are named by position, not by the ONNX tensor, so that
// nodes computing the same thing on different tensors lower to the same
// kernel (the executor compiles it once).
std::string tensor_name(size_t i) { return "in" + std::to_string(i); }

}  // namespace

Tensor input_placeholder(const NodeArgs& a, int i) {
  const Value& v = a.input(i);
  const auto& given = a.given().tensors;
  if (static_cast<size_t>(i) < given.size() && given[static_cast<size_t>(i)].defined()) return given[static_cast<size_t>(i)];
  for (int64_t d : v.shape)
    if (d == 0) a.fail("reads tensor '" + v.name + "' of shape " + shape_str(v.shape) + ": kiln computes no empty tensors");
  return placeholder(te_shape(v.shape), v.dtype, a.given().prefix + tensor_name(static_cast<size_t>(i)));
}

std::vector<int64_t> broadcast_shapes(const NodeArgs& a, const std::vector<int64_t>& x,
                                      const std::vector<int64_t>& y) {
  const size_t r = std::max(x.size(), y.size());
  std::vector<int64_t> out(r);
  for (size_t k = 0; k < r; ++k) {
    const int64_t dx = k < r - x.size() ? 1 : x[k - (r - x.size())];
    const int64_t dy = k < r - y.size() ? 1 : y[k - (r - y.size())];
    if (dx != dy && dx != 1 && dy != 1)
      a.fail("cannot broadcast shapes " + shape_str(x) + " and " + shape_str(y));
    out[k] = dx == 1 ? dy : dx;
  }
  return out;
}

Expr broadcast_read(const Tensor& t, const std::vector<int64_t>& shape, const std::vector<Var>& idx) {
  if (shape.empty()) return t(Expr(0));
  std::vector<Expr> at;
  const size_t off = idx.size() - shape.size();
  for (size_t k = 0; k < shape.size(); ++k) at.push_back(shape[k] == 1 ? Expr(0) : Expr(idx[off + k]));
  return t(at);
}

Tensor compute_shape(const std::vector<int64_t>& shape, const std::function<Expr(const std::vector<Var>&)>& f,
                     const std::string& name, const std::string& tag) {
  if (shape.empty()) return compute({Expr(1)}, [&](const std::vector<Var>&) { return f({}); }, name, tag);
  return compute(te_shape(shape), f, name, tag);
}

Expr flat_index(const std::vector<Expr>& idx, const std::vector<int64_t>& shape) {
  Expr flat = Expr(0);
  for (size_t k = 0; k < shape.size(); ++k) flat = flat * Expr(shape[k]) + idx[k];
  return flat;
}

std::vector<Expr> unflatten(const Expr& flat, const std::vector<int64_t>& shape) {
  if (shape.empty()) return {Expr(0)};
  std::vector<Expr> idx(shape.size());
  int64_t stride = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    Expr q = stride == 1 ? flat : floordiv(flat, Expr(stride));
    idx[k] = k == 0 ? q : floormod(q, Expr(shape[k]));
    stride *= shape[k];
  }
  return idx;
}

NodeCompute single_output(std::vector<Tensor> inputs, Tensor out, std::vector<int64_t> shape) {
  NodeCompute c;
  c.inputs = std::move(inputs);
  c.outputs = {std::move(out)};
  c.output_shapes = {std::move(shape)};
  return c;
}

namespace {

const std::map<std::string, OpBuilder>& op_table() {
  static const std::map<std::string, OpBuilder> table = [] {
    std::map<std::string, OpBuilder> ops;
    add_elementwise_ops(ops);
    add_shape_ops(ops);
    add_nn_ops(ops);
    add_layout_ops(ops);
    return ops;
  }();
  return table;
}

}  // namespace

NodeCompute node_compute(const Graph& g, const Node& n, const NodeInputs& given) {
  auto it = op_table().find(n.op_type);
  if (it == op_table().end()) {
    user_error() << "kiln does not support operator " << n.op_type << " (node '" << n.name << "', opset " << g.opset
                 << ", in " << g.source << "); supported: " << [] {
                      std::string s;
                      for (auto& name : supported_onnx_ops()) s += (s.empty() ? "" : " ") + name;
                      return s;
                    }();
  }
  NodeArgs args(g, n, given);
  NodeCompute c = it->second(args);
  internal_assert(c.outputs.size() == c.output_shapes.size()) << n.op_type << ": outputs and shapes differ";
  for (size_t k = 0; k < c.output_shapes.size(); ++k)
    checked_elements(c.output_shapes[k], g.describe(n) + " in " + g.source + ": its output " + std::to_string(k));
  if (c.outputs.size() < n.outputs.size())
    args.fail("has " + std::to_string(n.outputs.size()) + " outputs; kiln computes only the first " +
              std::to_string(c.outputs.size()));
  c.inputs.resize(n.inputs.size());
  return c;
}

std::vector<int64_t> static_shape(const Tensor& t) {
  std::vector<int64_t> s;
  for (const Expr& e : t.shape()) {
    const auto* imm = e.as<IntImmNode>();
    internal_assert(imm) << "tensor " << t.name() << " has a symbolic extent";
    s.push_back(imm->value);
  }
  return s;
}

std::vector<std::string> supported_onnx_ops() {
  std::vector<std::string> names;
  for (auto& [name, b] : op_table())
    if (name.rfind("kiln.", 0) != 0) names.push_back(name);  // kiln's own nodes, inserted by passes
  return names;
}

}  // namespace kiln::graph
