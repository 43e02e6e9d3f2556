// Element-wise ONNX operators: arithmetic with numpy broadcasting,
// activations, Clip and Cast.
#include <cmath>
#include <limits>

#include "graph/onnx_import.h"
#include "graph/onnx_op_util.h"

namespace kiln::graph {

namespace {

using Unary = std::function<Expr(const NodeArgs&, Expr)>;
using Binary = std::function<Expr(Expr, Expr)>;

NodeCompute unary(const NodeArgs& a, const Unary& f, const std::string& tag) {
  Tensor x = input_placeholder(a, 0);
  const std::vector<int64_t> shape = a.shape(0);
  Tensor out = compute_shape(shape, [&](const std::vector<Var>& i) { return f(a, broadcast_read(x, shape, i)); },
                             "out", tag);
  return single_output({x}, out, shape);
}

NodeCompute binary(const NodeArgs& a, const Binary& f) {
  Tensor x = input_placeholder(a, 0), y = input_placeholder(a, 1);
  const std::vector<int64_t> shape = broadcast_shapes(a, a.shape(0), a.shape(1));
  Tensor out = compute_shape(
      shape, [&](const std::vector<Var>& i) { return f(broadcast_read(x, a.shape(0), i), broadcast_read(y, a.shape(1), i)); },
      "out", "elemwise");
  return single_output({x, y}, out, shape);
}

Expr clamp(Expr x, double lo, double hi) {
  const DType t = x.dtype();
  return min(max(x, make_const(t, lo)), make_const(t, hi));
}

// Pow with a constant exponent of 2 or 0.5 (layer norms built from
// primitives) is a multiply or a square root, as exact as pow and faster.
NodeCompute power(const NodeArgs& a) {
  const Value& e = a.input(1);
  // (Only where the exponent cannot broadcast the result to a higher rank.)
  if (e.constant && e.constant->num_elements() == 1 && e.shape.size() <= a.shape(0).size() && a.input(0).dtype.is_float()) {
    const double p = e.constant->get_float(0);
    if (p == 2.0) return unary(a, [](const NodeArgs&, Expr x) { return x * x; }, "elemwise");
    if (p == 1.0) return unary(a, [](const NodeArgs&, Expr x) { return x; }, "elemwise");
    if (p == 0.5) return unary(a, [](const NodeArgs&, Expr x) { return sqrt(x); }, "elemwise");
  }
  // Integer powers go through f64 (exact for the integers a double holds).
  return binary(a, [](Expr x, Expr y) {
    if (x.dtype().is_float()) return pow(x, cast(x.dtype(), y));
    return cast(x.dtype(), pow(cast(DType::f64(), x), cast(DType::f64(), y)));
  });
}

NodeCompute clip(const NodeArgs& a) {
  const DType t = a.input(0).dtype;
  double lo = -std::numeric_limits<double>::infinity(), hi = std::numeric_limits<double>::infinity();
  if (a.opset() < 11) {
    lo = a.attr_float("min", lo);
    hi = a.attr_float("max", hi);
  } else if ((a.has_input(1) && !a.input(1).constant) || (a.has_input(2) && !a.input(2).constant)) {
    // Bounds computed at run time: read as one-element tensors.
    Tensor x = input_placeholder(a, 0);
    Tensor mn = a.has_input(1) ? input_placeholder(a, 1) : Tensor();
    Tensor mx = a.has_input(2) ? input_placeholder(a, 2) : Tensor();
    const std::vector<int64_t> shape = a.shape(0);
    Tensor out = compute_shape(shape, [&](const std::vector<Var>& i) {
      Expr v = broadcast_read(x, shape, i);
      if (mn.defined()) v = max(v, mn(Expr(0)));
      if (mx.defined()) v = min(v, mx(Expr(0)));
      return v;
    }, "out", "elemwise");
    return single_output({x, mn, mx}, out, shape);
  } else {
    if (a.has_input(1)) lo = a.constant_scalar(1, "minimum");
    if (a.has_input(2)) hi = a.constant_scalar(2, "maximum");
  }
  NodeCompute c = unary(
      a,
      [=](const NodeArgs&, Expr x) {
        if (std::isfinite(lo)) x = max(x, make_const(t, lo));
        if (std::isfinite(hi)) x = min(x, make_const(t, hi));
        return x;
      },
      "elemwise");
  return c;
}

NodeCompute cast_op(const NodeArgs& a) {
  const DType to = onnx_dtype(static_cast<int>(a.attr_int("to", 0)), a.what() + " (its 'to')");
  return unary(
      a,
      [to](const NodeArgs&, Expr x) {
        if (x.dtype() == to) return x;
        if (to.is_bool()) return cast(to, select(x != make_zero(x.dtype()), Expr(1), Expr(0)));
        return cast(to, x);
      },
      "elemwise");
}

}  // namespace

void add_elementwise_ops(std::map<std::string, OpBuilder>& ops) {
  ops["Add"] = [](const NodeArgs& a) { return binary(a, [](Expr x, Expr y) { return x + y; }); };
  ops["Sub"] = [](const NodeArgs& a) { return binary(a, [](Expr x, Expr y) { return x - y; }); };
  ops["Mul"] = [](const NodeArgs& a) { return binary(a, [](Expr x, Expr y) { return x * y; }); };
  ops["Div"] = [](const NodeArgs& a) { return binary(a, [](Expr x, Expr y) { return x / y; }); };
  ops["Pow"] = power;
  ops["Clip"] = clip;
  ops["Cast"] = cast_op;

  auto add_unary = [&](const std::string& name, Unary f) {
    ops[name] = [f](const NodeArgs& a) { return unary(a, f, "elemwise"); };
  };
  add_unary("Relu", [](const NodeArgs&, Expr x) { return max(x, make_zero(x.dtype())); });
  add_unary("Sigmoid", [](const NodeArgs&, Expr x) { return sigmoid(x); });
  add_unary("Tanh", [](const NodeArgs&, Expr x) { return tanh(x); });
  add_unary("Exp", [](const NodeArgs&, Expr x) { return exp(x); });
  add_unary("Log", [](const NodeArgs&, Expr x) { return log(x); });
  add_unary("Sqrt", [](const NodeArgs&, Expr x) { return sqrt(x); });
  add_unary("Erf", [](const NodeArgs&, Expr x) { return erf(x); });
  add_unary("Abs", [](const NodeArgs&, Expr x) { return abs(x); });
  add_unary("Neg", [](const NodeArgs&, Expr x) { return -x; });
  add_unary("Floor", [](const NodeArgs&, Expr x) { return floor(x); });
  add_unary("Ceil", [](const NodeArgs&, Expr x) { return ceil(x); });
  add_unary("Reciprocal", [](const NodeArgs&, Expr x) { return make_const(x.dtype(), 1.0) / x; });
  add_unary("HardSigmoid", [](const NodeArgs& a, Expr x) {
    const double alpha = a.attr_float("alpha", 0.2), beta = a.attr_float("beta", 0.5);
    return clamp(x * make_const(x.dtype(), alpha) + make_const(x.dtype(), beta), 0.0, 1.0);
  });
  add_unary("HardSwish", [](const NodeArgs&, Expr x) {
    return x * clamp(x * make_const(x.dtype(), 1.0 / 6.0) + make_const(x.dtype(), 0.5), 0.0, 1.0);
  });
  add_unary("LeakyRelu", [](const NodeArgs& a, Expr x) {
    const double alpha = a.attr_float("alpha", 0.01);
    return select(x >= make_zero(x.dtype()), x, x * make_const(x.dtype(), alpha));
  });
}

}  // namespace kiln::graph
