// Tensors and the operations that produce them: placeholders (inputs) and
// compute operations defined by an expression over index variables.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "compute/expr.h"

namespace kiln {

class OperationNode : public Object {
 public:
  OperationNode(NodeKind k, std::string n, std::string t) : Object(k), name(std::move(n)), tag(std::move(t)) {}
  const std::string name;
  const std::string tag;  // free-form, e.g. "matmul", "pad", "elemwise"
  virtual std::vector<Expr> output_shape() const = 0;
  virtual DType output_dtype() const = 0;
};

using Operation = Ref<OperationNode>;

class PlaceholderOpNode : public OperationNode {
 public:
  static constexpr NodeKind kKind = NodeKind::PlaceholderOp;
  PlaceholderOpNode(std::string n, std::vector<Expr> s, DType t)
      : OperationNode(kKind, std::move(n), "placeholder"), shape(std::move(s)), dtype(t) {}
  const std::vector<Expr> shape;
  const DType dtype;
  std::vector<Expr> output_shape() const override { return shape; }
  DType output_dtype() const override { return dtype; }
};

// out[axis...] = body, where body may be a Reduce over reduce_axis.
class ComputeOpNode : public OperationNode {
 public:
  static constexpr NodeKind kKind = NodeKind::ComputeOp;
  ComputeOpNode(std::string n, std::string t, std::vector<IterVar> ax, std::vector<IterVar> rax, Expr b)
      : OperationNode(kKind, std::move(n), std::move(t)),
        axis(std::move(ax)),
        reduce_axis(std::move(rax)),
        body(std::move(b)) {}
  const std::vector<IterVar> axis;
  const std::vector<IterVar> reduce_axis;
  const Expr body;
  std::vector<Expr> output_shape() const override;
  DType output_dtype() const override { return body.dtype(); }
};

// The output of an operation. Two Tensor handles are the same tensor when
// they name the same op (identity is by op, not by the handle node).
class TensorNode : public Object {
 public:
  static constexpr NodeKind kKind = NodeKind::Tensor;
  explicit TensorNode(Operation o) : Object(kKind), op(std::move(o)) {}
  const Operation op;
};

class Tensor : public Ref<TensorNode> {
 public:
  using Ref<TensorNode>::Ref;
  Tensor() = default;
  Tensor(const Ref<TensorNode>& r) : Ref<TensorNode>(r) {}  // NOLINT
  explicit Tensor(Operation op);

  const std::string& name() const { return get()->op->name; }
  std::vector<Expr> shape() const { return get()->op->output_shape(); }
  int ndim() const { return static_cast<int>(shape().size()); }
  DType dtype() const { return get()->op->output_dtype(); }
  const Operation& op() const { return get()->op; }

  // Element read; the number of indices must equal ndim (user_error otherwise).
  Expr operator()(std::vector<Expr> indices) const;
  template <class... Args>
  Expr operator()(Args... args) const {
    return (*this)(std::vector<Expr>{Expr(args)...});
  }
  bool same_tensor(const Tensor& o) const { return get()->op == o.get()->op; }
};

struct TensorHash {
  size_t operator()(const Tensor& t) const { return std::hash<const void*>()(t->op.get()); }
};
struct TensorEq {
  bool operator()(const Tensor& a, const Tensor& b) const { return a.same_tensor(b); }
};

// An input tensor.
Tensor placeholder(std::vector<Expr> shape, DType dtype, std::string name);

using ComputeFn = std::function<Expr(const std::vector<Var>&)>;
// out[i...] = f(i...) for i in shape. `f` may return a reduction built with
// sum/max_reduce/min_reduce over axes from reduce_axis().
Tensor compute(std::vector<Expr> shape, const ComputeFn& f, std::string name, std::string tag = "");
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var)>& f, std::string name, std::string tag = "");
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var)>& f, std::string name, std::string tag = "");
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var, Var)>& f, std::string name,
               std::string tag = "");
Tensor compute(std::vector<Expr> shape, const std::function<Expr(Var, Var, Var, Var)>& f, std::string name,
               std::string tag = "");

// A reduction axis over [min, min + extent).
IterVar reduce_axis(Range dom, std::string name);
IterVar reduce_axis(Expr extent, std::string name);

// The tensors an expression reads (in first-use order, deduplicated).
std::vector<Tensor> input_tensors(const Operation& op);

// Every operation reachable from `outputs`, producers before consumers.
std::vector<Operation> post_dfs_order(const std::vector<Tensor>& outputs);

}  // namespace kiln
