#include "compute/expr.h"

#include <cmath>
#include <limits>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/tensor.h"

namespace kiln {

const char* node_kind_name(NodeKind kind) {
  switch (kind) {
#define KILN_NODE(Name) \
  case NodeKind::Name:  \
    return #Name;
#include "compute/node_kinds.def"
#undef KILN_NODE
  }
  return "?";
}

Expr::Expr(int value) : Expr(IntImmNode::make(DType::i32(), value)) {}
Expr::Expr(int64_t value) : Expr(IntImmNode::make(DType::i64(), value)) {}
Expr::Expr(double value) : Expr(FloatImmNode::make(DType::f64(), value)) {}
Expr::Expr(float value) : Expr(FloatImmNode::make(DType::f32(), value)) {}

Expr IntImmNode::make(DType t, int64_t v) {
  internal_assert(t.is_scalar() && (t.is_int() || t.is_uint())) << t.str();
  return Expr(new IntImmNode(t, v));
}
Expr FloatImmNode::make(DType t, double v) {
  internal_assert(t.is_scalar() && t.is_float()) << t.str();
  return Expr(new FloatImmNode(t, v));
}
Expr StringImmNode::make(std::string v) { return Expr(new StringImmNode(std::move(v))); }

Var::Var(std::string name, DType t) : Expr(Ref<ExprNode>(new VarNode(std::move(name), t, DType()))) {}
Var Var::handle(std::string name, DType elem) { return Var(new VarNode(std::move(name), DType::handle(), elem)); }

static DType binary_result_type(NodeKind k, const Expr& a, const Expr& b) {
  internal_assert(a.defined() && b.defined()) << node_kind_name(k);
  internal_assert(a.dtype() == b.dtype())
      << node_kind_name(k) << " operand types " << a.dtype().str() << " vs " << b.dtype().str();
  if (is_comparison_kind(k) || k == NodeKind::And || k == NodeKind::Or)
    return DType::boolean().with_lanes(a.dtype().lanes);
  return a.dtype();
}

#define KILN_DEFINE_BINARY(Name)                                \
  Expr Name##Node::make(Expr a, Expr b) {                       \
    DType t = binary_result_type(kKind, a, b);                  \
    return Expr(new Name##Node(t, std::move(a), std::move(b))); \
  }
KILN_DEFINE_BINARY(Add)
KILN_DEFINE_BINARY(Sub)
KILN_DEFINE_BINARY(Mul)
KILN_DEFINE_BINARY(Div)
KILN_DEFINE_BINARY(Mod)
KILN_DEFINE_BINARY(FloorDiv)
KILN_DEFINE_BINARY(FloorMod)
KILN_DEFINE_BINARY(Min)
KILN_DEFINE_BINARY(Max)
KILN_DEFINE_BINARY(EQ)
KILN_DEFINE_BINARY(NE)
KILN_DEFINE_BINARY(LT)
KILN_DEFINE_BINARY(LE)
KILN_DEFINE_BINARY(GT)
KILN_DEFINE_BINARY(GE)
KILN_DEFINE_BINARY(And)
KILN_DEFINE_BINARY(Or)
#undef KILN_DEFINE_BINARY

bool is_binary_kind(NodeKind k) { return k >= NodeKind::Add && k <= NodeKind::Or; }
bool is_comparison_kind(NodeKind k) { return k >= NodeKind::EQ && k <= NodeKind::GE; }

Expr make_binary(NodeKind k, Expr a, Expr b) {
  switch (k) {
    case NodeKind::Add:
      return AddNode::make(a, b);
    case NodeKind::Sub:
      return SubNode::make(a, b);
    case NodeKind::Mul:
      return MulNode::make(a, b);
    case NodeKind::Div:
      return DivNode::make(a, b);
    case NodeKind::Mod:
      return ModNode::make(a, b);
    case NodeKind::FloorDiv:
      return FloorDivNode::make(a, b);
    case NodeKind::FloorMod:
      return FloorModNode::make(a, b);
    case NodeKind::Min:
      return MinNode::make(a, b);
    case NodeKind::Max:
      return MaxNode::make(a, b);
    case NodeKind::EQ:
      return EQNode::make(a, b);
    case NodeKind::NE:
      return NENode::make(a, b);
    case NodeKind::LT:
      return LTNode::make(a, b);
    case NodeKind::LE:
      return LENode::make(a, b);
    case NodeKind::GT:
      return GTNode::make(a, b);
    case NodeKind::GE:
      return GENode::make(a, b);
    case NodeKind::And:
      return AndNode::make(a, b);
    case NodeKind::Or:
      return OrNode::make(a, b);
    default:
      internal_error() << "not a binary kind: " << node_kind_name(k);
  }
}

Expr NotNode::make(Expr a) {
  internal_assert(a.dtype().is_bool());
  DType t = a.dtype();
  return Expr(new NotNode(t, std::move(a)));
}

Expr SelectNode::make(Expr c, Expr t, Expr f) {
  internal_assert(c.dtype().is_bool()) << "select condition must be bool, got " << c.dtype().str();
  internal_assert(t.dtype() == f.dtype()) << t.dtype().str() << " vs " << f.dtype().str();
  DType ty = t.dtype();
  return Expr(new SelectNode(ty, std::move(c), std::move(t), std::move(f)));
}

Expr CastNode::make(DType t, Expr v) {
  internal_assert(t.lanes == v.dtype().lanes) << "cast changes lanes";
  return Expr(new CastNode(t, std::move(v)));
}

const char* math_op_name(MathOp op) {
  switch (op) {
    case MathOp::kExp:
      return "exp";
    case MathOp::kLog:
      return "log";
    case MathOp::kSqrt:
      return "sqrt";
    case MathOp::kTanh:
      return "tanh";
    case MathOp::kSigmoid:
      return "sigmoid";
    case MathOp::kErf:
      return "erf";
    case MathOp::kPow:
      return "pow";
    case MathOp::kFabs:
      return "fabs";
    case MathOp::kFloor:
      return "floor";
    case MathOp::kCeil:
      return "ceil";
    case MathOp::kRound:
      return "round";
    case MathOp::kRoundEven:
      return "round_even";
  }
  return "?";
}
int math_op_arity(MathOp op) { return op == MathOp::kPow ? 2 : 1; }

Expr CallNode::make(MathOp op, std::vector<Expr> args) {
  internal_assert(static_cast<int>(args.size()) == math_op_arity(op)) << math_op_name(op);
  DType t = args[0].dtype();
  user_check(t.is_float()) << math_op_name(op) << " needs a floating-point argument, got " << t.str();
  for (auto& a : args) internal_assert(a.dtype() == t);
  return Expr(new CallNode(t, op, std::move(args)));
}

TensorReadNode::TensorReadNode(DType t, Ref<TensorNode> tn, std::vector<Expr> idx)
    : ExprNode(kKind, t), tensor(std::move(tn)), indices(std::move(idx)) {}

Expr TensorReadNode::make(Ref<TensorNode> tensor, std::vector<Expr> idx) {
  Tensor t(tensor);
  user_check(static_cast<int>(idx.size()) == t.ndim())
      << "tensor '" << t.name() << "' has " << t.ndim() << " dimensions but is indexed with " << idx.size();
  for (auto& i : idx) {
    user_check(i.dtype().is_integer() && i.dtype().is_scalar())
        << "index of tensor '" << t.name() << "' must be a scalar integer, got " << i.dtype().str();
  }
  return Expr(new TensorReadNode(t.dtype(), std::move(tensor), std::move(idx)));
}

Expr LoadNode::make(DType t, Var buf, Expr idx, Expr pred) {
  internal_assert(buf.dtype().is_handle());
  internal_assert(t.lanes == idx.dtype().lanes) << "load lanes " << t.lanes << " vs index " << idx.dtype().lanes;
  return Expr(new LoadNode(t, std::move(buf), std::move(idx), std::move(pred)));
}

Expr RampNode::make(Expr base, Expr stride, int lanes) {
  internal_assert(base.dtype().is_scalar() && base.dtype() == stride.dtype() && lanes > 1);
  DType t = base.dtype().with_lanes(lanes);
  return Expr(new RampNode(t, std::move(base), std::move(stride), lanes));
}

Expr BroadcastNode::make(Expr value, int lanes) {
  internal_assert(value.dtype().is_scalar() && lanes > 1);
  DType t = value.dtype().with_lanes(lanes);
  return Expr(new BroadcastNode(t, std::move(value), lanes));
}

Expr LetNode::make(Var v, Expr value, Expr body) {
  DType t = body.dtype();
  return Expr(new LetNode(t, std::move(v), std::move(value), std::move(body)));
}

IterVar IterVar::make(Var v, Range dom, IterKind kind) {
  return IterVar(new IterVarNode(std::move(v), std::move(dom), kind));
}

const char* combiner_name(Combiner c) {
  switch (c) {
    case Combiner::kSum:
      return "sum";
    case Combiner::kMax:
      return "max";
    case Combiner::kMin:
      return "min";
    case Combiner::kProd:
      return "prod";
  }
  return "?";
}

Expr combiner_identity(Combiner c, DType t) {
  switch (c) {
    case Combiner::kSum:
      return make_zero(t);
    case Combiner::kProd:
      return make_const(t, int64_t{1});
    case Combiner::kMax:
      if (t.is_float()) return make_const(t, -std::numeric_limits<double>::infinity());
      if (t.is_uint()) return make_const(t, int64_t{0});
      return make_const(t, t.bits >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (t.bits - 1)));
    case Combiner::kMin:
      if (t.is_float()) return make_const(t, std::numeric_limits<double>::infinity());
      if (t.is_uint()) return make_const(t, t.bits >= 64 ? int64_t{-1} : (int64_t{1} << t.bits) - 1);
      return make_const(t, t.bits >= 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (t.bits - 1)) - 1);
  }
  internal_error();
}

Expr combiner_apply(Combiner c, Expr a, Expr b) {
  switch (c) {
    case Combiner::kSum:
      return AddNode::make(a, b);
    case Combiner::kProd:
      return MulNode::make(a, b);
    case Combiner::kMax:
      return MaxNode::make(a, b);
    case Combiner::kMin:
      return MinNode::make(a, b);
  }
  internal_error();
}

Expr ReduceNode::make(Combiner c, Expr source, std::vector<IterVar> axes, Expr condition) {
  user_check(!axes.empty()) << combiner_name(c) << " reduction needs at least one reduce axis";
  for (auto& a : axes)
    user_check(a->iter_kind == IterKind::kReduce)
        << combiner_name(c) << " reduction over '" << a->var->name << "', which is not a reduce_axis";
  if (condition.defined()) user_check(condition.dtype().is_bool()) << "reduction condition must be a boolean";
  DType t = source.dtype();
  return Expr(new ReduceNode(t, c, std::move(source), std::move(axes), std::move(condition)));
}

Expr make_const(DType t, int64_t v) {
  Expr s = t.element_of().is_float() ? FloatImmNode::make(t.element_of(), static_cast<double>(v))
                                     : IntImmNode::make(t.element_of(), v);
  return t.lanes > 1 ? BroadcastNode::make(s, t.lanes) : s;
}
Expr make_const(DType t, double v) {
  Expr s = t.element_of().is_float() ? FloatImmNode::make(t.element_of(), v)
                                     : IntImmNode::make(t.element_of(), static_cast<int64_t>(v));
  return t.lanes > 1 ? BroadcastNode::make(s, t.lanes) : s;
}
Expr make_zero(DType t) { return make_const(t, int64_t{0}); }

const int64_t* as_const_int(const Expr& e) {
  if (!e.defined()) return nullptr;
  if (auto* i = e.as<IntImmNode>()) return &i->value;
  if (auto* b = e.as<BroadcastNode>()) return as_const_int(b->value);
  return nullptr;
}
bool as_const_int(const Expr& e, int64_t* out) {
  const int64_t* p = as_const_int(e);
  if (p) *out = *p;
  return p != nullptr;
}
bool is_const_int(const Expr& e, int64_t v) {
  const int64_t* p = as_const_int(e);
  return p && *p == v;
}
bool is_zero(const Expr& e) { return is_const_int(e, 0); }
bool is_one(const Expr& e) { return is_const_int(e, 1); }
bool is_zero_bits(const Expr& e) {
  if (auto* b = e.as<BroadcastNode>()) return is_zero_bits(b->value);
  auto* f = e.as<FloatImmNode>();
  return is_zero(e) || (f && f->value == 0.0 && !std::signbit(f->value));
}

}  // namespace kiln
