#include "compute/tensor.h"

#include <unordered_set>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/ir_functor.h"

namespace kiln {

std::vector<Expr> ComputeOpNode::output_shape() const {
  std::vector<Expr> s;
  for (auto& iv : axis) s.push_back(iv->dom.extent);
  return s;
}

Tensor::Tensor(Operation op) : Tensor(Ref<TensorNode>(new TensorNode(std::move(op)))) {}

Expr Tensor::operator()(std::vector<Expr> indices) const {
  for (auto& i : indices) {
    user_check(i.defined()) << "undefined index into tensor '" << name() << "'";
    // Plain integer literals are i32; keep every index i32 for uniform index math.
    if (i.dtype() == DType::i64())
      if (auto* imm = i.as<IntImmNode>()) i = make_const(DType::i32(), imm->value);
  }
  return TensorReadNode::make(*this, std::move(indices));
}

static void check_shape(const std::vector<Expr>& shape, const std::string& name) {
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t* v = as_const_int(shape[d]);
    user_check(v != nullptr) << "tensor '" << name << "': dimension " << d << " must be a constant";
    user_check(*v > 0) << "tensor '" << name << "': dimension " << d << " has extent " << *v
                       << ", which must be positive";
  }
}

static std::vector<Expr> as_i32(std::vector<Expr> shape) {
  for (auto& e : shape)
    if (auto* v = as_const_int(e)) e = make_const(DType::i32(), *v);
  return shape;
}

Tensor placeholder(std::vector<Expr> shape, DType dtype, std::string name) {
  check_shape(shape, name);
  return Tensor(Operation(new PlaceholderOpNode(std::move(name), as_i32(std::move(shape)), dtype)));
}

Tensor compute(std::vector<Expr> shape, const ComputeFn& f, std::string name, std::string tag) {
  check_shape(shape, name);
  shape = as_i32(std::move(shape));
  static const char* const kNames[] = {"i", "j", "k", "l", "m", "n", "o", "p"};
  std::vector<IterVar> axis;
  std::vector<Var> vars;
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string vn = d < 8 ? kNames[d] : "ax" + std::to_string(d);
    Var v(name + "." + vn);
    vars.push_back(v);
    axis.push_back(IterVar::make(v, Range(make_zero(DType::i32()), shape[d]), IterKind::kDataPar));
  }
  Expr body = f(vars);
  user_check(body.defined()) << "compute '" << name << "' returned an undefined expression";
  std::vector<IterVar> raxis;
  if (auto* r = body.as<ReduceNode>()) raxis = r->axes;
  // A reduction may only appear at the top of a compute body.
  bool nested_reduce = false;
  post_order_visit(body, [&](const Ref<Object>& n) {
    if (n.get() != body.get() && n->kind() == NodeKind::Reduce) nested_reduce = true;
  });
  user_check(!nested_reduce)
      << "compute '" << name
      << "': a reduction must be the whole body (e.g. sum(...)), not part of a larger expression";
  return Tensor(Operation(new ComputeOpNode(std::move(name), std::move(tag), std::move(axis), std::move(raxis), body)));
}

Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var)>& f, std::string name, std::string tag) {
  user_check(shape.size() == 1) << "compute '" << name << "': a 1-argument function needs a 1-d shape";
  return compute(std::move(shape), ComputeFn([&](const std::vector<Var>& v) { return f(v[0]); }), std::move(name),
                 std::move(tag));
}
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var)>& f, std::string name, std::string tag) {
  user_check(shape.size() == 2) << "compute '" << name << "': a 2-argument function needs a 2-d shape";
  return compute(std::move(shape), ComputeFn([&](const std::vector<Var>& v) { return f(v[0], v[1]); }), std::move(name),
                 std::move(tag));
}
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var, Var)>& f, std::string name,
               std::string tag) {
  user_check(shape.size() == 3) << "compute '" << name << "': a 3-argument function needs a 3-d shape";
  return compute(std::move(shape), ComputeFn([&](const std::vector<Var>& v) { return f(v[0], v[1], v[2]); }),
                 std::move(name), std::move(tag));
}
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var, Var, Var)>& f, std::string name,
               std::string tag) {
  user_check(shape.size() == 4) << "compute '" << name << "': a 4-argument function needs a 4-d shape";
  return compute(std::move(shape), ComputeFn([&](const std::vector<Var>& v) { return f(v[0], v[1], v[2], v[3]); }),
                 std::move(name), std::move(tag));
}

IterVar reduce_axis(Range dom, std::string name) {
  const int64_t* e = as_const_int(dom.extent);
  user_check(e && *e > 0) << "reduce_axis '" << name << "' needs a positive constant extent";
  if (auto* m = as_const_int(dom.min)) dom.min = make_const(DType::i32(), *m);
  dom.extent = make_const(DType::i32(), *e);
  return IterVar::make(Var(name), dom, IterKind::kReduce);
}
IterVar reduce_axis(Expr extent, std::string name) { return reduce_axis(Range(make_zero(DType::i32()), extent), name); }

std::vector<Tensor> input_tensors(const Operation& op) {
  std::vector<Tensor> out;
  auto* c = op.as<ComputeOpNode>();
  if (!c) return out;
  std::unordered_set<const Object*> seen;
  post_order_visit(c->body, [&](const Ref<Object>& n) {
    if (n->kind() != NodeKind::TensorRead) return;
    auto* r = static_cast<const TensorReadNode*>(n.get());
    if (seen.insert(r->tensor->op.get()).second) out.push_back(Tensor(r->tensor));
  });
  return out;
}

std::vector<Operation> post_dfs_order(const std::vector<Tensor>& outputs) {
  std::vector<Operation> order;
  std::unordered_set<const Object*> visited;
  std::function<void(const Operation&)> visit = [&](const Operation& op) {
    if (!visited.insert(op.get()).second) return;
    for (auto& t : input_tensors(op)) visit(t->op);
    order.push_back(op);
  };
  for (auto& t : outputs) visit(t->op);
  return order;
}

}  // namespace kiln
