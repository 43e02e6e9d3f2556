#include "schedule/interval.h"

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/ir_functor.h"

namespace kiln {

Interval interval_union(const Interval& a, const Interval& b) {
  Interval r;
  if (a.min.defined() && b.min.defined()) r.min = a.min.same_as(b.min) ? a.min : min(a.min, b.min);
  if (a.max.defined() && b.max.defined()) r.max = a.max.same_as(b.max) ? a.max : max(a.max, b.max);
  return r;
}

namespace {

class IntervalEval {
 public:
  explicit IntervalEval(const VarIntervalFn& f) : lookup_(f) {}

  Interval eval(const Expr& e, int depth = 0) {
    internal_assert(depth < 64) << "interval evaluation recursion too deep";
    if (!depends_on_range(e)) return Interval::point(e);
    switch (e->kind()) {
      case NodeKind::Var: {
        Interval iv;
        lookup_(e.as<VarNode>(), &iv);
        Interval r;
        if (iv.min.defined()) r.min = eval(iv.min, depth + 1).min;
        if (iv.max.defined()) r.max = eval(iv.max, depth + 1).max;
        return r;
      }
      case NodeKind::Add: {
        auto* op = e.as<AddNode>();
        Interval a = eval(op->a, depth), b = eval(op->b, depth);
        return {both(a.min, b.min, [](Expr x, Expr y) { return x + y; }),
                both(a.max, b.max, [](Expr x, Expr y) { return x + y; })};
      }
      case NodeKind::Sub: {
        auto* op = e.as<SubNode>();
        Interval a = eval(op->a, depth), b = eval(op->b, depth);
        return {both(a.min, b.max, [](Expr x, Expr y) { return x - y; }),
                both(a.max, b.min, [](Expr x, Expr y) { return x - y; })};
      }
      case NodeKind::Mul: {
        auto* op = e.as<MulNode>();
        Expr var_side = op->a, c = op->b;
        if (!as_const_int(c)) std::swap(var_side, c);
        const int64_t* k = as_const_int(c);
        if (!k) return {};
        Interval a = eval(var_side, depth);
        Interval r{a.min.defined() ? a.min * c : Expr(), a.max.defined() ? a.max * c : Expr()};
        if (*k < 0) std::swap(r.min, r.max);
        return r;
      }
      case NodeKind::FloorDiv:
      case NodeKind::Div: {
        auto* op = static_cast<const BinaryNode*>(e.get());
        const int64_t* k = as_const_int(op->b);
        if (!k || *k <= 0) return {};
        Interval a = eval(op->a, depth);
        // Monotone non-decreasing for a positive divisor (C division only for
        // non-negative numerators, which index math guarantees).
        return {a.min.defined() ? floordiv(a.min, op->b) : Expr(), a.max.defined() ? floordiv(a.max, op->b) : Expr()};
      }
      case NodeKind::FloorMod:
      case NodeKind::Mod: {
        auto* op = static_cast<const BinaryNode*>(e.get());
        const int64_t* k = as_const_int(op->b);
        if (!k || *k <= 0) return {};
        return {make_zero(e.dtype()), make_const(e.dtype(), *k - 1)};
      }
      case NodeKind::Min: {
        auto* op = e.as<MinNode>();
        Interval a = eval(op->a, depth), b = eval(op->b, depth);
        Interval r;
        if (a.min.defined() && b.min.defined()) r.min = min(a.min, b.min);
        if (a.max.defined() && b.max.defined())
          r.max = min(a.max, b.max);
        else
          r.max = a.max.defined() ? a.max : b.max;
        return r;
      }
      case NodeKind::Max: {
        auto* op = e.as<MaxNode>();
        Interval a = eval(op->a, depth), b = eval(op->b, depth);
        Interval r;
        if (a.max.defined() && b.max.defined()) r.max = max(a.max, b.max);
        if (a.min.defined() && b.min.defined())
          r.min = max(a.min, b.min);
        else
          r.min = a.min.defined() ? a.min : b.min;
        return r;
      }
      case NodeKind::Select: {
        auto* op = e.as<SelectNode>();
        return interval_union(eval(op->true_value, depth), eval(op->false_value, depth));
      }
      case NodeKind::Cast: {
        auto* op = e.as<CastNode>();
        if (!op->dtype.is_integer() || !op->value.dtype().is_integer()) return {};
        Interval a = eval(op->value, depth);
        return {a.min.defined() ? cast(op->dtype, a.min) : Expr(), a.max.defined() ? cast(op->dtype, a.max) : Expr()};
      }
      default:
        return {};
    }
  }

 private:
  template <class F>
  static Expr both(const Expr& a, const Expr& b, F f) {
    return a.defined() && b.defined() ? f(a, b) : Expr();
  }

  bool depends_on_range(const Expr& e) {
    bool dep = false;
    post_order_visit(e, [&](const Ref<Object>& n) {
      if (dep || n->kind() != NodeKind::Var) return;
      Interval iv;
      dep = lookup_(static_cast<const VarNode*>(n.get()), &iv);
    });
    return dep;
  }

  const VarIntervalFn& lookup_;
};

}  // namespace

Interval eval_interval(const Expr& e, const VarIntervalFn& lookup) { return IntervalEval(lookup).eval(e); }

}  // namespace kiln
