// The reference interpreter's evaluator (compute/interpreter_eval.h):
// compiles a compute operation's body to typed nodes and evaluates them,
// either over the whole output or at single points on demand.
#include "compute/interpreter_eval.h"

// The oracle rounds after every operation: a*b+c must never become an FMA,
// whatever -march the project is built with.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cmath>
#include <memory>
#include <sstream>

#include "base/error.h"
#include "compute/interpreter_scalar.h"

namespace kiln {
namespace interp {

namespace {

Num num_of(DType t) {
  if (t.is_bool()) return Num::kBool;
  if (t.is_int()) return Num::kSigned;
  if (t.is_uint()) return Num::kUnsigned;
  if (t.code == DType::kBFloat) return Num::kBF16;
  if (t.code == DType::kFloat && t.bits == 16) return Num::kF16;
  if (t.code == DType::kFloat && t.bits == 32) return Num::kF32;
  if (t.code == DType::kFloat && t.bits == 64) return Num::kF64;
  user_error() << "the reference interpreter does not support " << t.str() << " values";
}

bool is_floating(Num n) { return n == Num::kF32 || n == Num::kF64 || n == Num::kF16 || n == Num::kBF16; }

// Rounds a value to the precision of a floating type.
double round_to(Num n, double v) {
  switch (n) {
    case Num::kF32:
      return static_cast<float>(v);
    case Num::kF16:
      return float_from_f16_bits(f16_bits_from_float(static_cast<float>(v)));
    case Num::kBF16:
      return float_from_bf16_bits(bf16_bits_from_float(static_cast<float>(v)));
    default:
      return v;
  }
}

int64_t const_extent(const Expr& e, const std::string& what) {
  const int64_t* v = as_const_int(e);
  user_check(v != nullptr) << what << " must have a constant extent to be interpreted";
  return *v;
}

int64_t compare(NodeKind k, Num num, Val a, Val b) {
  if (is_floating(num)) {
    double x = a.f, y = b.f;
    switch (k) {
      case NodeKind::EQ:
        return x == y;
      case NodeKind::NE:
        return x != y;
      case NodeKind::LT:
        return x < y;
      case NodeKind::LE:
        return x <= y;
      case NodeKind::GT:
        return x > y;
      default:
        return x >= y;
    }
  }
  if (num == Num::kUnsigned) {
    uint64_t x = static_cast<uint64_t>(a.i), y = static_cast<uint64_t>(b.i);
    switch (k) {
      case NodeKind::EQ:
        return x == y;
      case NodeKind::NE:
        return x != y;
      case NodeKind::LT:
        return x < y;
      case NodeKind::LE:
        return x <= y;
      case NodeKind::GT:
        return x > y;
      default:
        return x >= y;
    }
  }
  int64_t x = a.i, y = b.i;
  switch (k) {
    case NodeKind::EQ:
      return x == y;
    case NodeKind::NE:
      return x != y;
    case NodeKind::LT:
      return x < y;
    case NodeKind::LE:
      return x <= y;
    case NodeKind::GT:
      return x > y;
    default:
      return x >= y;
  }
}

Val cast(const Type& to, const Type& from, Val v) {
  Val r;
  if (is_floating(from.num)) {
    if (is_floating(to.num))
      r.f = round_to(to.num, v.f);
    else if (to.num == Num::kBool)
      r.i = v.f != 0;
    else
      r.i = float_to_int(to.dtype, v.f);
    return r;
  }
  if (!is_floating(to.num)) {
    r.i = wrap_int(to.dtype, v.i);
    return r;
  }
  bool u64 = from.num == Num::kUnsigned && from.dtype.bits >= 64;
  if (to.num == Num::kF64) {
    r.f = u64 ? static_cast<double>(static_cast<uint64_t>(v.i)) : static_cast<double>(v.i);
  } else {
    // Convert straight to float (one rounding), then to the 16-bit format if needed.
    float f = u64 ? static_cast<float>(static_cast<uint64_t>(v.i)) : static_cast<float>(v.i);
    r.f = round_to(to.num, f);
  }
  return r;
}

}  // namespace

std::string index_str(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

std::vector<int64_t> const_shape(const OperationNode& op) {
  std::vector<int64_t> s;
  for (auto& e : op.output_shape()) s.push_back(const_extent(e, "tensor '" + op.name + "'"));
  return s;
}

// ------------------------------------------------------------------ compile

// Binds a variable to a slot for the lexical scope of a Let or Reduce.
class OpEvaluator::ScopedSlot {
 public:
  ScopedSlot(OpEvaluator* ev, const VarNode* v, int slot) : ev_(ev), v_(v) {
    auto it = ev->slots_.find(v);
    had_ = it != ev->slots_.end();
    if (had_) old_ = it->second;
    ev->slots_[v] = slot;
  }
  ~ScopedSlot() {
    if (had_)
      ev_->slots_[v_] = old_;
    else
      ev_->slots_.erase(v_);
  }
  ScopedSlot(const ScopedSlot&) = delete;
  ScopedSlot& operator=(const ScopedSlot&) = delete;

 private:
  OpEvaluator* ev_;
  const VarNode* v_;
  bool had_;
  int old_ = -1;
};

OpEvaluator::OpEvaluator(const ComputeOpNode* op, const SourceTable& sources) : op_(op), sources_(&sources) {
  shape_ = const_shape(*op);
  for (auto& iv : op->axis) {
    axis_slots_.push_back(new_slot());
    slots_[iv->var.node()] = axis_slots_.back();
    const int64_t* m = as_const_int(iv->dom.min);
    axis_mins_.push_back(m ? *m : 0);
  }
  root_ = compile(op->body);
  floating_ = is_floating(nodes_[static_cast<size_t>(root_)].type.num);
  sources_ = nullptr;
  slots_.clear();
}

int OpEvaluator::new_slot() {
  env_.push_back(Val{});
  return static_cast<int>(env_.size()) - 1;
}

Type OpEvaluator::type_of(DType t) const {
  user_check(t.is_scalar()) << "compute '" << op_->name << "': the reference interpreter evaluates scalar "
                            << "expressions, got a " << t.str() << " value";
  return Type{t, num_of(t)};
}

int OpEvaluator::add_node(CNode n) {
  nodes_.push_back(std::move(n));
  return static_cast<int>(nodes_.size()) - 1;
}

int OpEvaluator::compile(const Expr& e) {
  internal_assert(e.defined());
  CNode n;
  n.kind = e->kind();
  n.type = type_of(e.dtype());
  switch (e->kind()) {
    case NodeKind::IntImm:
      n.imm.i = wrap_int(e.dtype(), e.as<IntImmNode>()->value);
      break;
    case NodeKind::FloatImm:
      n.imm.f = round_to(n.type.num, e.as<FloatImmNode>()->value);
      break;
    case NodeKind::Var: {
      auto it = slots_.find(e.as<VarNode>());
      user_check(it != slots_.end()) << "compute '" << op_->name << "' uses variable '" << e.as<VarNode>()->name
                                     << "', which is not one of its axes, reduce axes or let variables";
      n.slot = it->second;
      break;
    }
    case NodeKind::Not:
      n.a = compile(e.as<NotNode>()->a);
      break;
    case NodeKind::Select: {
      auto* op = e.as<SelectNode>();
      n.a = compile(op->condition);
      n.b = compile(op->true_value);
      n.c = compile(op->false_value);
      break;
    }
    case NodeKind::Cast: {
      auto* op = e.as<CastNode>();
      n.arg = type_of(op->value.dtype());
      n.a = compile(op->value);
      break;
    }
    case NodeKind::Call: {
      auto* op = e.as<CallNode>();
      n.math = op->op;
      for (auto& x : op->args) n.kids.push_back(compile(x));
      break;
    }
    case NodeKind::TensorRead:
      return compile_read(e.as<TensorReadNode>(), std::move(n));
    case NodeKind::Let: {
      auto* op = e.as<LetNode>();
      n.a = compile(op->value);
      n.slot = new_slot();
      ScopedSlot bind(this, op->var.node(), n.slot);
      n.b = compile(op->body);
      break;
    }
    case NodeKind::Reduce:
      return compile_reduce(e.as<ReduceNode>(), std::move(n));
    default: {
      user_check(is_binary_kind(e->kind()))
          << "compute '" << op_->name << "': the reference interpreter cannot evaluate a " << node_kind_name(e->kind())
          << " node (it evaluates tensor expressions, not lowered IR)";
      auto* op = static_cast<const BinaryNode*>(e.get());
      n.arg = type_of(op->a.dtype());
      n.a = compile(op->a);
      n.b = compile(op->b);
      break;
    }
  }
  return add_node(std::move(n));
}

int OpEvaluator::compile_read(const TensorReadNode* op, CNode n) {
  auto it = sources_->find(op->tensor->op.get());
  internal_assert(it != sources_->end()) << "'" << op->tensor->op->name << "' read before it was computed";
  n.read = static_cast<int>(reads_.size());
  reads_.push_back(it->second);
  for (auto& i : op->indices) n.kids.push_back(compile(i));
  return add_node(std::move(n));
}

int OpEvaluator::compile_reduce(const ReduceNode* op, CNode n) {
  n.combiner = op->combiner;
  std::vector<std::unique_ptr<ScopedSlot>> scopes;
  for (auto& ax : op->axes) {
    int mn = compile(ax->dom.min), ext = compile(ax->dom.extent);
    int slot = new_slot();
    scopes.push_back(std::make_unique<ScopedSlot>(this, ax->var.node(), slot));
    n.kids.insert(n.kids.end(), {slot, mn, ext});
  }
  n.a = compile(op->source);
  if (op->condition.defined()) n.b = compile(op->condition);
  while (!scopes.empty()) scopes.pop_back();
  n.imm = eval(compile(combiner_identity(op->combiner, op->dtype)));
  return add_node(std::move(n));
}

// ------------------------------------------------------------------ drivers

void OpEvaluator::run(HostTensor* out) {
  size_t n = axis_slots_.size();
  internal_assert(out->shape == shape_) << op_->name;
  std::vector<int64_t> idx(n, 0);
  int64_t total = out->num_elements();
  for (int64_t flat = 0; flat < total; ++flat) {
    for (size_t d = 0; d < n; ++d) env_[static_cast<size_t>(axis_slots_[d])].i = axis_mins_[d] + idx[d];
    Val v = eval(root_);
    if (floating_)
      out->set_float(flat, v.f);
    else
      out->set_int(flat, v.i);
    for (size_t d = n; d-- > 0;) {  // row-major increment
      if (++idx[d] < shape_[d]) break;
      idx[d] = 0;
    }
  }
}

void OpEvaluator::set_axes(int64_t flat) {
  for (size_t d = axis_slots_.size(); d-- > 0;) {
    env_[static_cast<size_t>(axis_slots_[d])].i = axis_mins_[d] + flat % shape_[d];
    flat /= shape_[d];
  }
}

Val OpEvaluator::value_at(int64_t flat) {
  auto it = memo_.find(flat);
  if (it != memo_.end()) return it->second;
  set_axes(flat);
  Val v = eval(root_);
  // What run() stores and a reader gets back: the value rounded to the
  // storage format (f16/bf16/f32) or wrapped to the integer width.
  const Type& t = nodes_[static_cast<size_t>(root_)].type;
  if (floating_)
    v.f = round_to(t.num, v.f);
  else
    v.i = wrap_int(t.dtype, v.i);
  memo_.emplace(flat, v);
  return v;
}

// ------------------------------------------------------------------ evaluation

Val OpEvaluator::eval(int index) {
  const CNode& n = nodes_[static_cast<size_t>(index)];
  Val r;
  switch (n.kind) {
    case NodeKind::IntImm:
    case NodeKind::FloatImm:
      return n.imm;
    case NodeKind::Var:
      return env_[static_cast<size_t>(n.slot)];
    case NodeKind::Add:
    case NodeKind::Sub:
    case NodeKind::Mul:
    case NodeKind::Div:
    case NodeKind::Mod:
    case NodeKind::FloorDiv:
    case NodeKind::FloorMod:
    case NodeKind::Min:
    case NodeKind::Max:
      return arith(n.kind, n.type, eval(n.a), eval(n.b));
    case NodeKind::EQ:
    case NodeKind::NE:
    case NodeKind::LT:
    case NodeKind::LE:
    case NodeKind::GT:
    case NodeKind::GE:
      r.i = compare(n.kind, n.arg.num, eval(n.a), eval(n.b));
      return r;
    case NodeKind::And:
      r.i = eval(n.a).i && eval(n.b).i;
      return r;
    case NodeKind::Or:
      r.i = eval(n.a).i || eval(n.b).i;
      return r;
    case NodeKind::Not:
      r.i = !eval(n.a).i;
      return r;
    case NodeKind::Select:
      return eval(n.a).i ? eval(n.b) : eval(n.c);
    case NodeKind::Cast:
      return cast(n.type, n.arg, eval(n.a));
    case NodeKind::Call:
      return math(n);
    case NodeKind::TensorRead:
      return read(n);
    case NodeKind::Let:
      env_[static_cast<size_t>(n.slot)] = eval(n.a);
      return eval(n.b);
    case NodeKind::Reduce: {
      Val acc = n.imm;
      reduce(n, 0, &acc);
      return acc;
    }
    default:
      internal_error() << node_kind_name(n.kind);
  }
}

Val OpEvaluator::arith(NodeKind k, const Type& t, Val va, Val vb) const {
  Val r;
  if (t.num == Num::kF64) {
    double x = va.f, y = vb.f;
    switch (k) {
      case NodeKind::Add:
        r.f = x + y;
        break;
      case NodeKind::Sub:
        r.f = x - y;
        break;
      case NodeKind::Mul:
        r.f = x * y;
        break;
      case NodeKind::Div:
        r.f = x / y;
        break;
      case NodeKind::Mod:
        r.f = std::fmod(x, y);
        break;
      case NodeKind::FloorDiv:
        r.f = std::floor(x / y);
        break;
      case NodeKind::FloorMod:
        r.f = x - std::floor(x / y) * y;
        break;
      case NodeKind::Min:
        r.f = float_min(x, y);
        break;
      case NodeKind::Max:
        r.f = float_max(x, y);
        break;
      default:
        internal_error();
    }
    return r;
  }
  if (is_floating(t.num)) {  // f32, and f16/bf16 computed in float
    float x = static_cast<float>(va.f), y = static_cast<float>(vb.f), v;
    switch (k) {
      case NodeKind::Add:
        v = x + y;
        break;
      case NodeKind::Sub:
        v = x - y;
        break;
      case NodeKind::Mul:
        v = x * y;
        break;
      case NodeKind::Div:
        v = x / y;
        break;
      case NodeKind::Mod:
        v = std::fmod(x, y);
        break;
      case NodeKind::FloorDiv:
        v = std::floor(x / y);
        break;
      case NodeKind::FloorMod: {
        float q = std::floor(x / y);
        float p = q * y;
        v = x - p;
        break;
      }
      case NodeKind::Min:
        v = float_min(x, y);
        break;
      case NodeKind::Max:
        v = float_max(x, y);
        break;
      default:
        internal_error();
    }
    r.f = v;
    return r;
  }
  int64_t x = va.i, y = vb.i;
  uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
  bool uns = t.num != Num::kSigned;
  bool is_div = k == NodeKind::Div || k == NodeKind::Mod || k == NodeKind::FloorDiv || k == NodeKind::FloorMod;
  user_check(!is_div || y != 0) << "compute '" << op_->name << "': integer division by zero";
  int64_t v;
  switch (k) {
    case NodeKind::Add:
      v = static_cast<int64_t>(ux + uy);
      break;
    case NodeKind::Sub:
      v = static_cast<int64_t>(ux - uy);
      break;
    case NodeKind::Mul:
      v = static_cast<int64_t>(ux * uy);
      break;
    case NodeKind::Div:
    case NodeKind::FloorDiv:
      if (uns)
        v = static_cast<int64_t>(ux / uy);
      else if (y == -1)
        v = static_cast<int64_t>(0 - ux);  // wraps like the hardware (no int64 UB)
      else if (k == NodeKind::Div)
        v = x / y;
      else
        v = x / y - ((x % y != 0) && ((x < 0) != (y < 0)));
      break;
    case NodeKind::Mod:
    case NodeKind::FloorMod:
      if (uns)
        v = static_cast<int64_t>(ux % uy);
      else if (y == -1)
        v = 0;
      else {
        v = x % y;
        if (k == NodeKind::FloorMod && v != 0 && ((v < 0) != (y < 0))) v += y;
      }
      break;
    case NodeKind::Min:
      v = (uns ? uy < ux : y < x) ? y : x;
      break;
    case NodeKind::Max:
      v = (uns ? ux < uy : x < y) ? y : x;
      break;
    default:
      internal_error();
  }
  r.i = wrap_int(t.dtype, v);
  return r;
}

Val OpEvaluator::math(const CNode& n) {
  Val r{};
  Val x = eval(n.kids[0]);
  Val y = n.kids.size() > 1 ? eval(n.kids[1]) : Val{};
  if (n.type.num == Num::kF64) {
    double a = x.f;
    switch (n.math) {
      case MathOp::kExp:
        r.f = std::exp(a);
        break;
      case MathOp::kLog:
        r.f = std::log(a);
        break;
      case MathOp::kSqrt:
        r.f = std::sqrt(a);
        break;
      case MathOp::kTanh:
        r.f = std::tanh(a);
        break;
      case MathOp::kSigmoid:
        r.f = 1.0 / (1.0 + std::exp(-a));
        break;
      case MathOp::kErf:
        r.f = std::erf(a);
        break;
      case MathOp::kPow:
        r.f = std::pow(a, y.f);
        break;
      case MathOp::kFabs:
        r.f = std::fabs(a);
        break;
      case MathOp::kFloor:
        r.f = std::floor(a);
        break;
      case MathOp::kCeil:
        r.f = std::ceil(a);
        break;
      case MathOp::kRound:
        r.f = std::round(a);
        break;
      case MathOp::kRoundEven:
        r.f = std::nearbyint(a);  // the default rounding mode: halfway cases to even
        break;
    }
    return r;
  }
  float a = static_cast<float>(x.f), v = 0;
  switch (n.math) {
    case MathOp::kExp:
      v = std::exp(a);
      break;
    case MathOp::kLog:
      v = std::log(a);
      break;
    case MathOp::kSqrt:
      v = std::sqrt(a);
      break;
    case MathOp::kTanh:
      v = std::tanh(a);
      break;
    case MathOp::kSigmoid: {
      float e = std::exp(-a);
      float d = 1.0f + e;
      v = 1.0f / d;
      break;
    }
    case MathOp::kErf:
      v = std::erf(a);
      break;
    case MathOp::kPow:
      v = std::pow(a, static_cast<float>(y.f));
      break;
    case MathOp::kFabs:
      v = std::fabs(a);
      break;
    case MathOp::kFloor:
      v = std::floor(a);
      break;
    case MathOp::kCeil:
      v = std::ceil(a);
      break;
    case MathOp::kRound:
      v = std::round(a);
      break;
    case MathOp::kRoundEven:
      v = std::nearbyint(a);
      break;
  }
  r.f = v;
  return r;
}

Val OpEvaluator::read(const CNode& n) {
  const TensorSource& src = reads_[static_cast<size_t>(n.read)];
  int64_t flat = 0;
  bool inside = true;
  for (size_t d = 0; d < n.kids.size(); ++d) {
    int64_t i = eval(n.kids[d]).i;
    inside &= i >= 0 && i < src.shape[d];
    flat = flat * src.shape[d] + i;
  }
  if (!inside) {
    std::vector<int64_t> idx;
    for (int k : n.kids) idx.push_back(eval(k).i);
    user_error() << "compute '" << op_->name << "' reads '" << src.name << "' at " << index_str(idx)
                 << ", outside its shape " << index_str(src.shape);
  }
  if (src.producer) return src.producer->value_at(flat);
  Val r;
  if (is_floating(n.type.num))
    r.f = src.data->get_float(flat);
  else
    r.i = src.data->get_int(flat);
  return r;
}

void OpEvaluator::reduce(const CNode& n, size_t axis, Val* acc) {
  if (3 * axis == n.kids.size()) {
    if (n.b >= 0 && !eval(n.b).i) return;
    Val v = eval(n.a);
    NodeKind k = NodeKind::Add;
    switch (n.combiner) {
      case Combiner::kSum:
        k = NodeKind::Add;
        break;
      case Combiner::kProd:
        k = NodeKind::Mul;
        break;
      case Combiner::kMax:
        k = NodeKind::Max;
        break;
      case Combiner::kMin:
        k = NodeKind::Min;
        break;
    }
    *acc = arith(k, n.type, *acc, v);
    return;
  }
  size_t slot = static_cast<size_t>(n.kids[3 * axis]);
  int64_t lo = eval(n.kids[3 * axis + 1]).i, ext = eval(n.kids[3 * axis + 2]).i;
  for (int64_t v = lo; v < lo + ext; ++v) {
    env_[slot].i = v;
    reduce(n, axis + 1, acc);
  }
}

}  // namespace interp
}  // namespace kiln
