#include "compute/expr_ops.h"

#include <cmath>
#include <cstdint>

#include "base/error.h"

namespace kiln {

namespace {

bool fits_type(DType t, int64_t v) {
  if (t.is_bool()) return v == 0 || v == 1;
  if (t.bits >= 64) return !t.is_uint() || v >= 0;
  if (t.is_uint()) return v >= 0 && v < (int64_t{1} << t.bits);
  return v >= -(int64_t{1} << (t.bits - 1)) && v < (int64_t{1} << (t.bits - 1));
}

bool is_imm(const Expr& e) { return e.as<IntImmNode>() || e.as<FloatImmNode>(); }

// Re-types an immediate to t (keeping its value).
Expr retype_imm(const Expr& e, DType t) {
  if (auto* i = e.as<IntImmNode>()) return make_const(t, i->value);
  if (auto* f = e.as<FloatImmNode>()) return make_const(t, f->value);
  internal_error();
}

}  // namespace

void promote_binary(Expr* a, Expr* b) {
  internal_assert(a->defined() && b->defined()) << "operand of an undefined expression";
  DType ta = a->dtype(), tb = b->dtype();
  if (ta == tb) return;
  // Immediates adopt the other operand's element type.
  // An immediate adopts the other operand's element type unless that would
  // drop its fraction (float literal against an integer operand).
  if (is_imm(*a) && !is_imm(*b) && (tb.is_float() || !ta.is_float())) {
    *a = retype_imm(*a, tb.element_of());
  } else if (is_imm(*b) && !is_imm(*a) && (ta.is_float() || !tb.is_float())) {
    *b = retype_imm(*b, ta.element_of());
  } else if (ta.element_of() != tb.element_of()) {
    // Two non-immediates (or two immediates) of different types: widen.
    DType ea = ta.element_of(), eb = tb.element_of();
    DType target;
    if (ea.is_float() != eb.is_float())
      target = ea.is_float() ? ea : eb;
    else
      target = ea.bits >= eb.bits ? ea : eb;
    if (ea != target) *a = cast(target.with_lanes(ta.lanes), *a);
    if (eb != target) *b = cast(target.with_lanes(tb.lanes), *b);
  }
  ta = a->dtype();
  tb = b->dtype();
  if (ta.lanes != tb.lanes) {
    if (ta.lanes == 1)
      *a = BroadcastNode::make(*a, tb.lanes);
    else if (tb.lanes == 1)
      *b = BroadcastNode::make(*b, ta.lanes);
    else
      internal_error() << "lane mismatch " << ta.str() << " vs " << tb.str();
  }
}

namespace {

template <class FInt, class FFloat>
Expr fold_or_make(NodeKind k, Expr a, Expr b, FInt fi, FFloat ff) {
  promote_binary(&a, &b);
  auto* ia = a.as<IntImmNode>();
  auto* ib = b.as<IntImmNode>();
  if (ia && ib) {
    int64_t r;
    // Folds only what the type holds exactly: constant folding never wraps.
    if (fi(ia->value, ib->value, &r) && (is_comparison_kind(k) || fits_type(a.dtype(), r)))
      return is_comparison_kind(k) ? make_const(DType::boolean(), r) : make_const(a.dtype(), r);
  }
  auto* fa = a.as<FloatImmNode>();
  auto* fb = b.as<FloatImmNode>();
  if (fa && fb) {
    double r;
    if (ff(fa->value, fb->value, &r))
      return is_comparison_kind(k) ? make_const(DType::boolean(), int64_t(r != 0)) : make_const(a.dtype(), r);
  }
  return make_binary(k, a, b);
}

int64_t floordiv_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floormod_i(int64_t a, int64_t b) { return a - floordiv_i(a, b) * b; }

}  // namespace

Expr operator+(Expr a, Expr b) {
  promote_binary(&a, &b);
  if (is_zero(b) && !b.dtype().is_float()) return a;
  if (is_zero(a) && !a.dtype().is_float()) return b;
  return fold_or_make(
      NodeKind::Add, a, b,
      [](int64_t x, int64_t y, int64_t* r) {
        return !__builtin_add_overflow(x, y, r);
      },
      [](double x, double y, double* r) {
        *r = x + y;
        return true;
      });
}
Expr operator-(Expr a, Expr b) {
  promote_binary(&a, &b);
  if (is_zero(b) && !b.dtype().is_float()) return a;
  return fold_or_make(
      NodeKind::Sub, a, b,
      [](int64_t x, int64_t y, int64_t* r) {
        return !__builtin_sub_overflow(x, y, r);
      },
      [](double x, double y, double* r) {
        *r = x - y;
        return true;
      });
}
Expr operator*(Expr a, Expr b) {
  promote_binary(&a, &b);
  if (!a.dtype().is_float()) {
    if (is_one(b)) return a;
    if (is_one(a)) return b;
    if (is_zero(a) || is_zero(b)) return make_zero(a.dtype());
  }
  return fold_or_make(
      NodeKind::Mul, a, b,
      [](int64_t x, int64_t y, int64_t* r) {
        return !__builtin_mul_overflow(x, y, r);
      },
      [](double x, double y, double* r) {
        *r = x * y;
        return true;
      });
}
Expr operator-(Expr a) { return make_zero(a.dtype()) - a; }
Expr operator/(Expr a, Expr b) {
  promote_binary(&a, &b);
  if (!a.dtype().is_float() && is_one(b)) return a;
  return fold_or_make(
      NodeKind::Div, a, b,
      [](int64_t x, int64_t y, int64_t* r) {
        if (y == 0 || (y == -1 && x == INT64_MIN)) return false;
        *r = x / y;
        return true;
      },
      [](double x, double y, double* r) {
        *r = x / y;
        return true;
      });
}
Expr operator%(Expr a, Expr b) {
  promote_binary(&a, &b);
  return fold_or_make(
      NodeKind::Mod, a, b,
      [](int64_t x, int64_t y, int64_t* r) {
        if (y == 0 || (y == -1 && x == INT64_MIN)) return false;
        *r = x % y;
        return true;
      },
      [](double x, double y, double* r) {
        *r = std::fmod(x, y);
        return true;
      });
}
Expr floordiv(Expr a, Expr b) {
  promote_binary(&a, &b);
  if (is_one(b)) return a;
  return fold_or_make(
      NodeKind::FloorDiv, a, b,
      [](int64_t x, int64_t y, int64_t* r) {
        if (y == 0 || (y == -1 && x == INT64_MIN)) return false;
        *r = floordiv_i(x, y);
        return true;
      },
      [](double x, double y, double* r) {
        *r = std::floor(x / y);
        return true;
      });
}
Expr floormod(Expr a, Expr b) {
  promote_binary(&a, &b);
  if (is_one(b)) return make_zero(a.dtype());
  return fold_or_make(
      NodeKind::FloorMod, a, b,
      [](int64_t x, int64_t y, int64_t* r) {
        if (y == 0 || (y == -1 && x == INT64_MIN)) return false;
        *r = floormod_i(x, y);
        return true;
      },
      [](double x, double y, double* r) {
        *r = x - std::floor(x / y) * y;
        return true;
      });
}
Expr min(Expr a, Expr b) {
  return fold_or_make(
      NodeKind::Min, a, b,
      [](int64_t x, int64_t y, int64_t* r) {
        *r = std::min(x, y);
        return true;
      },
      [](double x, double y, double* r) {
        *r = float_min(x, y);
        return true;
      });
}
Expr max(Expr a, Expr b) {
  return fold_or_make(
      NodeKind::Max, a, b,
      [](int64_t x, int64_t y, int64_t* r) {
        *r = std::max(x, y);
        return true;
      },
      [](double x, double y, double* r) {
        *r = float_max(x, y);
        return true;
      });
}

#define KILN_CMP(op, Kind)                     \
  Expr operator op(Expr a, Expr b) {           \
    return fold_or_make(                       \
        NodeKind::Kind, a, b,                  \
        [](int64_t x, int64_t y, int64_t* r) { \
          *r = x op y;                         \
          return true;                         \
        },                                     \
        [](double x, double y, double* r) {    \
          *r = x op y;                         \
          return true;                         \
        });                                    \
  }
KILN_CMP(==, EQ)
KILN_CMP(!=, NE)
KILN_CMP(<, LT)
KILN_CMP(<=, LE)
KILN_CMP(>, GT)
KILN_CMP(>=, GE)
#undef KILN_CMP

Expr operator&&(Expr a, Expr b) {
  user_check(a.dtype().is_bool() && b.dtype().is_bool()) << "'&&' needs boolean operands";
  if (is_one(a)) return b;
  if (is_one(b)) return a;
  if (is_zero(a) || is_zero(b)) return make_zero(a.dtype().lanes > b.dtype().lanes ? a.dtype() : b.dtype());
  promote_binary(&a, &b);
  return AndNode::make(a, b);
}
Expr operator||(Expr a, Expr b) {
  user_check(a.dtype().is_bool() && b.dtype().is_bool()) << "'||' needs boolean operands";
  if (is_zero(a)) return b;
  if (is_zero(b)) return a;
  promote_binary(&a, &b);
  return OrNode::make(a, b);
}
Expr operator!(Expr a) {
  user_check(a.dtype().is_bool()) << "'!' needs a boolean operand";
  if (auto* c = as_const_int(a)) return make_const(a.dtype(), int64_t(*c == 0));
  return NotNode::make(a);
}

Expr select(Expr cond, Expr t, Expr f) {
  user_check(cond.dtype().is_bool()) << "select condition must be boolean, got " << cond.dtype().str();
  promote_binary(&t, &f);
  if (is_one(cond)) return t;
  if (is_zero(cond)) return f;
  if (cond.dtype().lanes == 1 && t.dtype().lanes > 1) cond = BroadcastNode::make(cond, t.dtype().lanes);
  return SelectNode::make(cond, t, f);
}

Expr cast(DType t, Expr v) {
  if (v.dtype() == t) return v;
  if (t.lanes == 1 && v.dtype().lanes == 1) {
    if (auto* i = v.as<IntImmNode>()) {
      if (!t.is_float()) return make_const(t, i->value);
      return make_const(t, static_cast<double>(i->value));
    }
    if (auto* f = v.as<FloatImmNode>()) {
      if (t.is_float()) return make_const(t, f->value);
    }
  }
  return CastNode::make(t, v);
}

static Expr math1(MathOp op, Expr x) { return CallNode::make(op, {std::move(x)}); }
Expr exp(Expr x) { return math1(MathOp::kExp, x); }
Expr log(Expr x) { return math1(MathOp::kLog, x); }
Expr sqrt(Expr x) { return math1(MathOp::kSqrt, x); }
Expr tanh(Expr x) { return math1(MathOp::kTanh, x); }
Expr sigmoid(Expr x) { return math1(MathOp::kSigmoid, x); }
Expr erf(Expr x) { return math1(MathOp::kErf, x); }
Expr floor(Expr x) { return math1(MathOp::kFloor, x); }
Expr ceil(Expr x) { return math1(MathOp::kCeil, x); }
Expr round_even(Expr x) { return math1(MathOp::kRoundEven, x); }
Expr pow(Expr x, Expr y) {
  promote_binary(&x, &y);
  return CallNode::make(MathOp::kPow, {x, y});
}
Expr abs(Expr x) {
  if (x.dtype().is_float()) return math1(MathOp::kFabs, x);
  if (x.dtype().is_uint()) return x;
  return select(x < make_zero(x.dtype()), -x, x);
}

Expr sum(Expr source, std::vector<IterVar> axes, Expr condition) {
  return ReduceNode::make(Combiner::kSum, std::move(source), std::move(axes), std::move(condition));
}
Expr max_reduce(Expr source, std::vector<IterVar> axes, Expr condition) {
  return ReduceNode::make(Combiner::kMax, std::move(source), std::move(axes), std::move(condition));
}
Expr min_reduce(Expr source, std::vector<IterVar> axes, Expr condition) {
  return ReduceNode::make(Combiner::kMin, std::move(source), std::move(axes), std::move(condition));
}

}  // namespace kiln
