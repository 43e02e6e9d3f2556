// Expression nodes.
//
// Arithmetic semantics (stated once, relied on by the simplifier, the
// interpreter and codegen):
//   Div / Mod      : C semantics, truncation toward zero (like C's / and %);
//                    for floats Div is IEEE division and Mod is fmod.
//   FloorDiv/Mod   : rounding toward negative infinity; the result of FloorMod
//                    has the sign of the divisor. Index arithmetic produced by
//                    schedules (split, fuse) uses these.
//   Integer + - *  : wrap around modulo 2^bits (two's complement) on data;
//                    index arithmetic never overflows (buffers are smaller
//                    than the index type's range), which codegen relies on.
//                    Integer division by zero is undefined: guard it (a
//                    select evaluates only the chosen branch).
//   Select         : evaluates only the chosen branch, so a branch may hold
//                    a load or a division that is only valid when chosen.
//   Min / Max      : for floats, NaN if either operand is NaN (so relu(NaN)
//                    is NaN, as in NumPy and PyTorch); otherwise the smaller
//                    (larger) operand, the first one on ties (float_min /
//                    float_max below are the reference).
// Comparisons and And/Or/Not produce bool (u1) with the lanes of the operands.
#pragma once

#include <string>
#include <vector>

#include "compute/dtype.h"
#include "compute/object.h"

namespace kiln {

// Min and Max of floating-point values as stated above.
template <class T>
T float_min(T x, T y) {
  if (x != x) return x;
  if (y != y) return y;
  return y < x ? y : x;
}
template <class T>
T float_max(T x, T y) {
  if (x != x) return x;
  if (y != y) return y;
  return x < y ? y : x;
}

class ExprNode : public Object {
 public:
  ExprNode(NodeKind k, DType t) : Object(k), dtype(t) {}
  const DType dtype;
};

class Expr : public Ref<ExprNode> {
 public:
  using Ref<ExprNode>::Ref;
  Expr() = default;
  Expr(const Ref<ExprNode>& r) : Ref<ExprNode>(r) {}  // NOLINT
  Expr(int value);                                    // NOLINT: i32 immediate
  Expr(int64_t value);                                // NOLINT: i64 immediate
  Expr(double value);                                 // NOLINT: f64 immediate
  Expr(float value);                                  // NOLINT: f32 immediate
  DType dtype() const { return get()->dtype; }
};

class IterVarNode;
class TensorNode;

// ---- leaves ----------------------------------------------------------------

class IntImmNode : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::IntImm;
  IntImmNode(DType t, int64_t v) : ExprNode(kKind, t), value(v) {}
  const int64_t value;
  static Expr make(DType t, int64_t v);
};

class FloatImmNode : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::FloatImm;
  FloatImmNode(DType t, double v) : ExprNode(kKind, t), value(v) {}
  const double value;
  static Expr make(DType t, double v);
};

// Only used as an argument of Call (e.g. the name of an extern) and in attrs.
class StringImmNode : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::StringImm;
  explicit StringImmNode(std::string v) : ExprNode(kKind, DType::handle()), value(std::move(v)) {}
  const std::string value;
  static Expr make(std::string v);
};

// A variable is identified by its node, never by its name. A handle variable
// (a buffer pointer after flattening) records the element type it points to.
class VarNode : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::Var;
  VarNode(std::string n, DType t, DType pointee) : ExprNode(kKind, t), name(std::move(n)), pointee(pointee) {}
  const std::string name;
  const DType pointee;  // element type when dtype is a handle
};

class Var : public Expr {
 public:
  Var() = default;
  explicit Var(std::string name, DType t = DType::i32());
  explicit Var(const VarNode* n) : Expr(Ref<ExprNode>(n)) {}
  // A buffer pointer variable pointing to elements of type `elem`.
  static Var handle(std::string name, DType elem);
  const VarNode* operator->() const { return static_cast<const VarNode*>(get()); }
  const VarNode* node() const { return static_cast<const VarNode*>(get()); }
};

// ---- binary operators ---------------------------------------------------------

class BinaryNode : public ExprNode {
 public:
  BinaryNode(NodeKind k, DType t, Expr a, Expr b) : ExprNode(k, t), a(std::move(a)), b(std::move(b)) {}
  const Expr a, b;
};

#define KILN_DECLARE_BINARY(Name)                                                             \
  class Name##Node : public BinaryNode {                                                      \
   public:                                                                                    \
    static constexpr NodeKind kKind = NodeKind::Name;                                         \
    Name##Node(DType t, Expr a, Expr b) : BinaryNode(kKind, t, std::move(a), std::move(b)) {} \
    /* Builds without folding; operands must already have matching types. */                  \
    static Expr make(Expr a, Expr b);                                                         \
  };
KILN_DECLARE_BINARY(Add)
KILN_DECLARE_BINARY(Sub)
KILN_DECLARE_BINARY(Mul)
KILN_DECLARE_BINARY(Div)
KILN_DECLARE_BINARY(Mod)
KILN_DECLARE_BINARY(FloorDiv)
KILN_DECLARE_BINARY(FloorMod)
KILN_DECLARE_BINARY(Min)
KILN_DECLARE_BINARY(Max)
KILN_DECLARE_BINARY(EQ)
KILN_DECLARE_BINARY(NE)
KILN_DECLARE_BINARY(LT)
KILN_DECLARE_BINARY(LE)
KILN_DECLARE_BINARY(GT)
KILN_DECLARE_BINARY(GE)
KILN_DECLARE_BINARY(And)
KILN_DECLARE_BINARY(Or)
#undef KILN_DECLARE_BINARY

bool is_binary_kind(NodeKind k);
bool is_comparison_kind(NodeKind k);
// Rebuilds a binary node of kind k (Add..Or) from new operands.
Expr make_binary(NodeKind k, Expr a, Expr b);

class NotNode : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::Not;
  NotNode(DType t, Expr a) : ExprNode(kKind, t), a(std::move(a)) {}
  const Expr a;
  static Expr make(Expr a);
};

class SelectNode : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::Select;
  SelectNode(DType t, Expr c, Expr tv, Expr fv)
      : ExprNode(kKind, t), condition(std::move(c)), true_value(std::move(tv)), false_value(std::move(fv)) {}
  const Expr condition, true_value, false_value;
  static Expr make(Expr c, Expr t, Expr f);
};

class CastNode : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::Cast;
  CastNode(DType t, Expr v) : ExprNode(kKind, t), value(std::move(v)) {}
  const Expr value;
  static Expr make(DType t, Expr v);
};

// Pure math intrinsics. Elementwise over lanes.
enum class MathOp : uint8_t { kExp, kLog, kSqrt, kTanh, kSigmoid, kErf, kPow, kFabs, kFloor, kCeil, kRound, kRoundEven };
const char* math_op_name(MathOp op);
int math_op_arity(MathOp op);

class CallNode : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::Call;
  CallNode(DType t, MathOp op, std::vector<Expr> args) : ExprNode(kKind, t), op(op), args(std::move(args)) {}
  const MathOp op;
  const std::vector<Expr> args;
  static Expr make(MathOp op, std::vector<Expr> args);
};

// Read of a tensor element with one index per dimension (before flattening).
class TensorReadNode : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::TensorRead;
  TensorReadNode(DType t, Ref<TensorNode> tensor, std::vector<Expr> idx);
  const Ref<TensorNode> tensor;
  const std::vector<Expr> indices;
  static Expr make(Ref<TensorNode> tensor, std::vector<Expr> idx);
};

// Load of element(s) at a flat index from a buffer pointer (after flattening).
// A vector index (Ramp) loads a vector; dtype lanes equal index lanes.
// `predicate` (optional, bool with the same lanes) masks lanes off.
class LoadNode : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::Load;
  LoadNode(DType t, Var buf, Expr idx, Expr pred)
      : ExprNode(kKind, t), buffer(std::move(buf)), index(std::move(idx)), predicate(std::move(pred)) {}
  const Var buffer;
  const Expr index;
  const Expr predicate;
  static Expr make(DType t, Var buf, Expr idx, Expr pred = Expr());
};

class RampNode : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::Ramp;
  RampNode(DType t, Expr b, Expr s, int l) : ExprNode(kKind, t), base(std::move(b)), stride(std::move(s)), lanes(l) {}
  const Expr base, stride;
  const int lanes;
  static Expr make(Expr base, Expr stride, int lanes);
};

class BroadcastNode : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::Broadcast;
  BroadcastNode(DType t, Expr v, int l) : ExprNode(kKind, t), value(std::move(v)), lanes(l) {}
  const Expr value;
  const int lanes;
  static Expr make(Expr value, int lanes);
};

class LetNode : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::Let;
  LetNode(DType t, Var v, Expr val, Expr b)
      : ExprNode(kKind, t), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  const Var var;
  const Expr value, body;
  static Expr make(Var v, Expr value, Expr body);
};

// ---- iteration variables ------------------------------------------------------

struct Range {
  Expr min, extent;
  Range() = default;
  Range(Expr min, Expr extent) : min(std::move(min)), extent(std::move(extent)) {}
  static Range from_min_extent(Expr min, Expr extent) { return Range(std::move(min), std::move(extent)); }
};

enum class IterKind : uint8_t { kDataPar, kReduce, kOpaque };

class IterVarNode : public Object {
 public:
  static constexpr NodeKind kKind = NodeKind::IterVar;
  IterVarNode(Var v, Range d, IterKind k) : Object(kKind), var(std::move(v)), dom(std::move(d)), iter_kind(k) {}
  const Var var;
  const Range dom;  // may be undefined for leaf vars created by schedules before bound inference
  const IterKind iter_kind;
};

class IterVar : public Ref<IterVarNode> {
 public:
  using Ref<IterVarNode>::Ref;
  IterVar() = default;
  IterVar(const Ref<IterVarNode>& r) : Ref<IterVarNode>(r) {}  // NOLINT
  static IterVar make(Var v, Range dom, IterKind kind);
};

// ---- reduction ------------------------------------------------------------------

enum class Combiner : uint8_t { kSum, kMax, kMin, kProd };
const char* combiner_name(Combiner c);
// The identity element of the combiner for type t (0, -inf/lowest, +inf/max, 1).
Expr combiner_identity(Combiner c, DType t);
// combine(a, b) as an expression.
Expr combiner_apply(Combiner c, Expr a, Expr b);

// A commutative reduction of `source` over `axes` (reduce IterVars), counting
// only points where `condition` holds (undefined = always).
class ReduceNode : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::Reduce;
  ReduceNode(DType t, Combiner c, Expr src, std::vector<IterVar> ax, Expr cond)
      : ExprNode(kKind, t), combiner(c), source(std::move(src)), axes(std::move(ax)), condition(std::move(cond)) {}
  const Combiner combiner;
  const Expr source;
  const std::vector<IterVar> axes;
  const Expr condition;
  static Expr make(Combiner c, Expr source, std::vector<IterVar> axes, Expr condition = Expr());
};

// ---- helpers ------------------------------------------------------------------------

Expr make_const(DType t, int64_t v);
Expr make_const(DType t, double v);
Expr make_zero(DType t);
// Constant value of an integer immediate (through a Broadcast), if it is one.
bool as_const_int(const Expr& e, int64_t* out);
const int64_t* as_const_int(const Expr& e);
bool is_const_int(const Expr& e, int64_t v);
bool is_zero(const Expr& e);
bool is_one(const Expr& e);
// An integer 0 or a float +0.0 (through a Broadcast): a constant whose
// bits are all zero, as memory filled with zero bytes reads.
bool is_zero_bits(const Expr& e);

}  // namespace kiln
