// Expression simplification (Analyzer::simplify, Analyzer::can_prove).
//
// One bottom-up pass: every node sees already-simplified children and applies
// its rules, building results only from simplified parts (so no second pass is
// needed). Signed integer scalar +, -, * go through LinearForm (canonical sums
// of products); division, modulo, min/max and comparisons use constant bounds
// and modular sets from the Analyzer; vector (Ramp/Broadcast) operands are
// handled lane-wise so vectorized index math becomes ramp(base, 1, lanes).
#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <optional>

#include "compute/analyzer.h"
#include "base/error.h"
#include "compute/ir_functor.h"
#include "compute/simplify_cast.h"
#include "compute/simplify_linear.h"

namespace kiln {

namespace {

using Bound = ConstIntBound;

bool finite(const Bound& b) { return b.min_value != Bound::kNegInf && b.max_value != Bound::kPosInf; }

// Constant value of a scalar immediate or a broadcast immediate.
const int64_t* const_value(const Expr& e) { return as_const_int(e); }

// Integer folding of a binary op at the width and signedness of t. A signed
// +, -, * or / whose exact result the type cannot hold is not folded: the
// simplifier never wraps (index arithmetic that needs 64 bits is in i64, see
// storage_flatten; data arithmetic wraps where the backends compute it).
bool fold_int(NodeKind k, DType t, int64_t x, int64_t y, int64_t* r) {
  x = wrap_to_type(t, x);
  y = wrap_to_type(t, y);
  uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
  bool uns = t.is_uint();
  auto lt = [&](int64_t a, int64_t b) { return uns ? static_cast<uint64_t>(a) < static_cast<uint64_t>(b) : a < b; };
  switch (k) {
    case NodeKind::Add:
      *r = static_cast<int64_t>(ux + uy);
      break;
    case NodeKind::Sub:
      *r = static_cast<int64_t>(ux - uy);
      break;
    case NodeKind::Mul:
      *r = static_cast<int64_t>(ux * uy);
      break;
    case NodeKind::Div:
    case NodeKind::FloorDiv:
      if (y == 0) return false;
      if (uns)
        *r = static_cast<int64_t>(ux / uy);
      else if (y == -1)
        *r = static_cast<int64_t>(0 - ux);
      else
        *r = k == NodeKind::Div ? x / y : floordiv_int(x, y);
      break;
    case NodeKind::Mod:
    case NodeKind::FloorMod:
      if (y == 0) return false;
      if (uns)
        *r = static_cast<int64_t>(ux % uy);
      else if (y == -1)
        *r = 0;
      else
        *r = k == NodeKind::Mod ? x % y : floormod_int(x, y);
      break;
    case NodeKind::Min:
      *r = lt(x, y) ? x : y;
      break;
    case NodeKind::Max:
      *r = lt(x, y) ? y : x;
      break;
    case NodeKind::EQ:
      *r = x == y;
      return true;
    case NodeKind::NE:
      *r = x != y;
      return true;
    case NodeKind::LT:
      *r = lt(x, y);
      return true;
    case NodeKind::LE:
      *r = !lt(y, x);
      return true;
    case NodeKind::GT:
      *r = lt(y, x);
      return true;
    case NodeKind::GE:
      *r = !lt(x, y);
      return true;
    case NodeKind::And:
      *r = (x != 0) && (y != 0);
      return true;
    case NodeKind::Or:
      *r = (x != 0) || (y != 0);
      return true;
    default:
      return false;
  }
  if (t.is_int()) {
    // x and y are in range, so the exact result of + - * fits in 128 bits.
    __int128 exact = k == NodeKind::Add   ? static_cast<__int128>(x) + y
                     : k == NodeKind::Sub ? static_cast<__int128>(x) - y
                     : k == NodeKind::Mul ? static_cast<__int128>(x) * y
                     : (k == NodeKind::Div || k == NodeKind::FloorDiv) && y == -1 ? -static_cast<__int128>(x)
                                                                                  : *r;
    Bound tb = type_bound(t);
    if (exact < tb.min_value || exact > tb.max_value) return false;
  }
  *r = wrap_to_type(t, *r);
  return true;
}

// Float folding; only f32 (rounded after the op) and f64.
bool fold_float(NodeKind k, DType t, double x, double y, double* r) {
  bool single = t.code == DType::kFloat && t.bits == 32;
  if (!single && !(t.code == DType::kFloat && t.bits == 64)) return false;
  if (single) {
    float a = static_cast<float>(x), b = static_cast<float>(y), v;
    switch (k) {
      case NodeKind::Add:
        v = a + b;
        break;
      case NodeKind::Sub:
        v = a - b;
        break;
      case NodeKind::Mul:
        v = a * b;
        break;
      case NodeKind::Div:
        v = a / b;
        break;
      case NodeKind::Min:
        v = float_min(a, b);
        break;
      case NodeKind::Max:
        v = float_max(a, b);
        break;
      default:
        return false;
    }
    *r = v;
    return true;
  }
  switch (k) {
    case NodeKind::Add:
      *r = x + y;
      return true;
    case NodeKind::Sub:
      *r = x - y;
      return true;
    case NodeKind::Mul:
      *r = x * y;
      return true;
    case NodeKind::Div:
      *r = x / y;
      return true;
    case NodeKind::Min:
      *r = float_min(x, y);
      return true;
    case NodeKind::Max:
      *r = float_max(x, y);
      return true;
    default:
      return false;
  }
}

bool fold_float_compare(NodeKind k, double x, double y, int64_t* r) {
  switch (k) {
    case NodeKind::EQ:
      *r = x == y;
      return true;
    case NodeKind::NE:
      *r = x != y;
      return true;
    case NodeKind::LT:
      *r = x < y;
      return true;
    case NodeKind::LE:
      *r = x <= y;
      return true;
    case NodeKind::GT:
      *r = x > y;
      return true;
    case NodeKind::GE:
      *r = x >= y;
      return true;
    default:
      return false;
  }
}

bool is_float_imm(const Expr& e, double v) {
  auto* f = e.as<FloatImmNode>();
  return f && f->value == v && std::signbit(f->value) == std::signbit(v);
}

NodeKind negate_comparison(NodeKind k) {
  switch (k) {
    case NodeKind::EQ:
      return NodeKind::NE;
    case NodeKind::NE:
      return NodeKind::EQ;
    case NodeKind::LT:
      return NodeKind::GE;
    case NodeKind::LE:
      return NodeKind::GT;
    case NodeKind::GT:
      return NodeKind::LE;
    case NodeKind::GE:
      return NodeKind::LT;
    default:
      internal_error() << node_kind_name(k);
  }
}

Expr make_ramp(const Expr& base, const Expr& stride, int lanes) {
  if (is_zero(stride)) return BroadcastNode::make(base, lanes);
  return RampNode::make(base, stride, lanes);
}

class ExprSimplifier : public IRMutator {
 public:
  explicit ExprSimplifier(Analyzer* an) : an_(an) {}
  using IRMutator::mutate;

  // Applies the rules of binary kind k to simplified operands.
  Expr binary(NodeKind k, const Expr& a, const Expr& b) {
    switch (k) {
      case NodeKind::Add:
      case NodeKind::Sub:
      case NodeKind::Mul:
        return arith(k, a, b);
      case NodeKind::Div:
      case NodeKind::Mod:
      case NodeKind::FloorDiv:
      case NodeKind::FloorMod:
        return division(k, a, b);
      case NodeKind::Min:
      case NodeKind::Max:
        return minmax(k, a, b);
      case NodeKind::And:
      case NodeKind::Or:
        return logic(k, a, b);
      default:
        return compare(k, a, b);
    }
  }

 protected:
  Expr mutate_Var(const VarNode* op, const Expr& self) override {
    if (!(op->dtype.is_int() || op->dtype.is_uint())) return self;
    Bound b = an_->const_int_bound(self);
    if (b.is_const() && finite(b)) return make_const(op->dtype, b.min_value);
    return self;
  }

  Expr mutate_binary(const BinaryNode* op, const Expr&) override {
    return binary(op->kind(), mutate(op->a), mutate(op->b));
  }

  Expr mutate_Not(const NotNode* op, const Expr& self) override {
    Expr a = mutate(op->a);
    if (auto* c = const_value(a)) return make_const(op->dtype, int64_t(*c == 0));
    if (auto* n = a.as<NotNode>()) return n->a;
    if (auto* b = a.as<BroadcastNode>()) return BroadcastNode::make(mutate(NotNode::make(b->value)), b->lanes);
    if (is_comparison_kind(a->kind())) {
      auto* cmp = static_cast<const BinaryNode*>(a.get());
      if (!cmp->a.dtype().is_float()) return make_binary(negate_comparison(a->kind()), cmp->a, cmp->b);
    }
    return a.same_as(op->a) ? self : NotNode::make(a);
  }

  Expr mutate_Select(const SelectNode* op, const Expr& self) override {
    Expr c = mutate(op->condition);
    Expr t = mutate(op->true_value), f = mutate(op->false_value);
    if (auto* v = const_value(c)) return *v ? t : f;
    if (expr_deep_equal(t, f)) return t;
    if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
    return SelectNode::make(c, t, f);
  }

  Expr mutate_Cast(const CastNode* op, const Expr& self) override {
    Expr v = mutate(op->value);
    Expr r = cast(op->dtype, v);
    auto* c = r.as<CastNode>();
    return c && v.same_as(op->value) && c->value.same_as(v) ? self : r;
  }

  Expr mutate_Load(const LoadNode* op, const Expr& self) override {
    Expr idx = mutate(op->index), pred = mutate(op->predicate);
    if (pred.defined() && is_one(pred)) pred = Expr();
    if (idx.same_as(op->index) && pred.same_as(op->predicate)) return self;
    return LoadNode::make(op->dtype, op->buffer, idx, pred);
  }

  Expr mutate_Ramp(const RampNode* op, const Expr&) override {
    return make_ramp(mutate(op->base), mutate(op->stride), op->lanes);
  }

  Expr mutate_Broadcast(const BroadcastNode* op, const Expr& self) override {
    Expr v = mutate(op->value);
    return v.same_as(op->value) ? self : BroadcastNode::make(v, op->lanes);
  }

  Expr mutate_Let(const LetNode* op, const Expr& self) override {
    Expr value = mutate(op->value);
    if (value.as<IntImmNode>() || value.as<FloatImmNode>() || value.as<VarNode>())
      return mutate(substitute(op->body, {{op->var.node(), value}}));
    Expr body;
    {
      Analyzer::VarScope scope(an_, op->var);
      an_->bind(op->var, value);
      body = mutate(op->body);
    }
    if (!uses_var(body, op->var.node())) return body;
    if (value.same_as(op->value) && body.same_as(op->body)) return self;
    return LetNode::make(op->var, value, body);
  }

  Expr mutate_Reduce(const ReduceNode* op, const Expr& self) override {
    Expr src, cond;
    {
      std::vector<std::unique_ptr<Analyzer::VarScope>> scopes;
      for (auto& ax : op->axes) {
        scopes.push_back(std::make_unique<Analyzer::VarScope>(an_, ax->var));
        an_->bind(ax->var, ax->dom);
      }
      src = mutate(op->source);
      cond = mutate(op->condition);
      while (!scopes.empty()) scopes.pop_back();  // restore in reverse order
    }
    if (cond.defined() && is_one(cond)) cond = Expr();
    if (src.same_as(op->source) && cond.same_as(op->condition)) return self;
    return ReduceNode::make(op->combiner, src, op->axes, cond);
  }

 private:
  // ---------------------------------------------------------------- + - *
  Expr arith(NodeKind k, const Expr& a, const Expr& b) {
    DType t = a.dtype();
    if (t.is_vector()) return vector_binary(k, a, b);
    if (t.is_float()) return float_binary(k, a, b);
    const int64_t *ca = const_value(a), *cb = const_value(b);
    int64_t r;
    if (ca && cb && fold_int(k, t, *ca, *cb, &r)) return make_const(t, r);
    if (t.is_int()) {
      LinearForm f = LinearForm::of(a);
      if (k == NodeKind::Mul) {
        if (cb)
          f.scale(*cb);
        else if (ca)
          f = scale_of(b, *ca);
        else
          return MulNode::make(a, b);
      } else {
        f.add_expr(b, k == NodeKind::Add ? 1 : -1);
      }
      if (!f.exact()) return make_binary(k, a, b);  // a coefficient would wrap
      f.merge_div_mod();
      return f.to_expr();
    }
    // Unsigned and bool: identities only.
    if (k == NodeKind::Add && cb && *cb == 0) return a;
    if (k == NodeKind::Add && ca && *ca == 0) return b;
    if (k == NodeKind::Sub && cb && *cb == 0) return a;
    if (k == NodeKind::Sub && expr_deep_equal(a, b)) return make_zero(t);
    if (k == NodeKind::Mul && ((cb && *cb == 0) || (ca && *ca == 0))) return make_zero(t);
    if (k == NodeKind::Mul && cb && *cb == 1) return a;
    if (k == NodeKind::Mul && ca && *ca == 1) return b;
    return make_binary(k, a, b);
  }

  static LinearForm scale_of(const Expr& e, int64_t c) {
    LinearForm f = LinearForm::of(e);
    f.scale(c);
    return f;
  }

  Expr float_binary(NodeKind k, const Expr& a, const Expr& b) {
    auto *fa = a.as<FloatImmNode>(), *fb = b.as<FloatImmNode>();
    double r;
    if (fa && fb && fold_float(k, a.dtype(), fa->value, fb->value, &r)) return make_const(a.dtype(), r);
    switch (k) {
      case NodeKind::Add:
        if (is_float_imm(b, -0.0)) return a;
        if (is_float_imm(a, -0.0)) return b;
        break;
      case NodeKind::Sub:
        if (is_float_imm(b, 0.0)) return a;
        break;
      case NodeKind::Mul:
        if (is_float_imm(b, 1.0)) return a;
        if (is_float_imm(a, 1.0)) return b;
        break;
      case NodeKind::Div:
        if (is_float_imm(b, 1.0)) return a;
        break;
      default:
        break;
    }
    return make_binary(k, a, b);
  }

  // ---------------------------------------------------------------- / % floordiv floormod
  Expr division(NodeKind k, const Expr& a, const Expr& b) {
    DType t = a.dtype();
    if (t.is_vector()) return vector_binary(k, a, b);
    if (t.is_float()) {
      auto *fa = a.as<FloatImmNode>(), *fb = b.as<FloatImmNode>();
      double r;
      if (k == NodeKind::Div && fa && fb && fold_float(k, t, fa->value, fb->value, &r)) return make_const(t, r);
      if (k == NodeKind::Div && is_float_imm(b, 1.0)) return a;
      return make_binary(k, a, b);
    }
    const int64_t *ca = const_value(a), *cb = const_value(b);
    int64_t r;
    if (ca && cb && fold_int(k, t, *ca, *cb, &r)) return make_const(t, r);
    bool is_div = k == NodeKind::Div || k == NodeKind::FloorDiv;
    if (cb && *cb == 1) return is_div ? a : make_zero(t);
    if (t.is_int() && cb && *cb > 0) {
      bool floor_ok = k == NodeKind::FloorDiv || k == NodeKind::FloorMod || an_->const_int_bound(a).min_value >= 0;
      if (floor_ok) return is_div ? floordiv_const(a, *cb) : floormod_const(a, *cb);
    }
    return make_binary(k, a, b);
  }

  // The divisors g of c (1 < g < c) that could split a as g*X + small.
  static std::vector<int64_t> split_candidates(const LinearForm& f, int64_t c) {
    std::vector<int64_t> gs;
    for (auto& t : f.terms()) {
      int64_t g = std::gcd(t.coeff, c);
      if (g > 1 && g < c && std::find(gs.begin(), gs.end(), g) == gs.end()) gs.push_back(g);
    }
    std::sort(gs.rbegin(), gs.rend());
    return gs;
  }

  // Splits `rest` into g*X + small, with X's coefficients divided by g and
  // small's constant in [0, g). Returns false when X would be empty or small
  // is not provably within [0, g).
  bool split_by(const LinearForm& rest, int64_t g, LinearForm* x, Expr* small_out) {
    DType t = rest.dtype();
    LinearForm small(t);
    x->set_constant(floordiv_int(rest.constant(), g));
    small.set_constant(floormod_int(rest.constant(), g));
    for (auto& term : rest.terms()) {
      if (term.coeff % g == 0)
        x->add_atom(term.atom, term.coeff / g);
      else
        small.add_atom(term.atom, term.coeff);
    }
    if (x->is_const()) return false;
    Expr s = small.to_expr();
    Bound sb = an_->const_int_bound(s);
    if (sb.min_value < 0 || sb.max_value >= g) return false;
    *small_out = s;
    return true;
  }

  // floordiv(a, c) for c > 0, a a simplified signed scalar.
  Expr floordiv_const(const Expr& a, int64_t c) {
    DType t = a.dtype();
    if (c == 1) return a;
    if (auto* fd = a.as<FloorDivNode>()) {
      const int64_t* c1 = const_value(fd->b);
      __int128 prod = c1 ? static_cast<__int128>(*c1) * c : 0;
      if (c1 && *c1 > 0 && prod <= type_bound(t).max_value) return floordiv_const(fd->a, static_cast<int64_t>(prod));
    }
    LinearForm f = LinearForm::of(a);
    if (!f.exact()) return FloorDivNode::make(a, make_const(t, c));
    LinearForm outer(t), rest(t);
    // coeff = q*c + r (truncating, r has coeff's sign): q*atom leaves the division.
    for (auto& term : f.terms()) {
      outer.add_atom(term.atom, term.coeff / c);
      rest.add_atom(term.atom, term.coeff % c);
    }
    outer.set_constant(floordiv_int(f.constant(), c));
    rest.set_constant(floormod_int(f.constant(), c));
    if (rest.is_const()) return outer.to_expr();  // rest in [0, c)
    Expr r = rest.to_expr();
    Bound rb = an_->const_int_bound(r);
    if (finite(rb) && floordiv_int(rb.min_value, c) == floordiv_int(rb.max_value, c)) {
      outer.add_constant(floordiv_int(rb.min_value, c));
      return outer.to_expr();
    }
    for (int64_t g : split_candidates(rest, c)) {
      LinearForm x(t);
      Expr small;
      if (!split_by(rest, g, &x, &small)) continue;
      // floordiv(g*X + small, c) = floordiv(X, c/g) when 0 <= small < g.
      outer.add_expr(floordiv_const(x.to_expr(), c / g));
      outer.merge_div_mod();
      return outer.to_expr();
    }
    outer.add_atom(FloorDivNode::make(r, make_const(t, c)), 1);
    return outer.to_expr();
  }

  // floormod(a, c) for c > 0, a a simplified signed scalar.
  Expr floormod_const(const Expr& a, int64_t c) {
    DType t = a.dtype();
    if (c == 1) return make_zero(t);
    ModularSet ms = an_->modular_set(a);
    if (ms.coeff % c == 0) return make_const(t, floormod_int(ms.base, c));
    if (auto* fm = a.as<FloorModNode>()) {
      const int64_t* c1 = const_value(fm->b);
      if (c1 && *c1 > 0 && *c1 % c == 0) return floormod_const(fm->a, c);
    }
    LinearForm f = LinearForm::of(a);
    if (!f.exact()) return FloorModNode::make(a, make_const(t, c));
    LinearForm rest(t);
    for (auto& term : f.terms()) rest.add_atom(term.atom, term.coeff % c);  // multiples of c vanish
    rest.set_constant(floormod_int(f.constant(), c));
    if (rest.is_const()) return rest.to_expr();
    Expr r = rest.to_expr();
    Bound rb = an_->const_int_bound(r);
    if (finite(rb) && floordiv_int(rb.min_value, c) == floordiv_int(rb.max_value, c)) {
      rest.add_constant(-floordiv_int(rb.min_value, c) * c);
      return rest.to_expr();
    }
    for (int64_t g : split_candidates(rest, c)) {
      LinearForm x(t);
      Expr small;
      if (!split_by(rest, g, &x, &small)) continue;
      // floormod(g*X + small, c) = g*floormod(X, c/g) + small when 0 <= small < g.
      LinearForm out(t);
      out.add_expr(floormod_const(x.to_expr(), c / g), g);
      out.add_expr(small);
      return out.to_expr();
    }
    return FloorModNode::make(r, make_const(t, c));
  }

  // ---------------------------------------------------------------- min / max
  Expr minmax(NodeKind k, const Expr& a, const Expr& b) {
    DType t = a.dtype();
    if (t.is_vector()) return vector_binary(k, a, b);
    bool is_min = k == NodeKind::Min;
    if (t.is_float()) {
      auto *fa = a.as<FloatImmNode>(), *fb = b.as<FloatImmNode>();
      double r;
      if (fa && fb && fold_float(k, t, fa->value, fb->value, &r)) return make_const(t, r);
      if (expr_deep_equal(a, b)) return a;
      return make_binary(k, a, b);
    }
    const int64_t *ca = const_value(a), *cb = const_value(b);
    int64_t r;
    if (ca && cb && fold_int(k, t, *ca, *cb, &r)) return make_const(t, r);
    if (expr_deep_equal(a, b)) return a;
    if (std::optional<bool> d = decide_le(a, b)) return (*d == is_min) ? a : b;  // *d: a <= b
    if (std::optional<bool> d = decide_le(b, a)) return (*d == is_min) ? b : a;
    // min(min(x, c1), c2) -> min(x, min(c1, c2))
    if (cb && a->kind() == k) {
      auto* inner = static_cast<const BinaryNode*>(a.get());
      if (const int64_t* c1 = const_value(inner->b)) {
        fold_int(k, t, *c1, *cb, &r);
        return minmax(k, inner->a, make_const(t, r));
      }
    }
    return make_binary(k, a, b);
  }

  // Provably a <= b: returns true; provably a > b: false; else nothing.
  // (Works lane-wise for vectors: the bound covers all lanes.)
  std::optional<bool> decide_le(const Expr& a, const Expr& b) {
    Bound ba = an_->const_int_bound(a), bb = an_->const_int_bound(b);
    if (ba.max_value <= bb.min_value) return true;
    if (ba.min_value > bb.max_value) return false;
    if (a.dtype().element_of().is_int()) {
      Bound d = an_->const_int_bound(arith(NodeKind::Sub, a, b));
      if (d.max_value <= 0) return true;
      if (d.min_value > 0) return false;
    }
    return std::nullopt;
  }

  // ---------------------------------------------------------------- comparisons
  Expr compare(NodeKind k, const Expr& a, const Expr& b) {
    DType t = a.dtype();
    DType rt = DType::boolean().with_lanes(t.lanes);
    if (t.is_vector()) {
      auto *ba = a.as<BroadcastNode>(), *bb = b.as<BroadcastNode>();
      if (ba && bb) return BroadcastNode::make(compare(k, ba->value, bb->value), t.lanes);
    }
    if (t.is_float()) {
      auto *fa = a.as<FloatImmNode>(), *fb = b.as<FloatImmNode>();
      int64_t r;
      if (fa && fb && fold_float_compare(k, fa->value, fb->value, &r)) return make_const(rt, r);
      return make_binary(k, a, b);
    }
    if (t.is_scalar()) {
      const int64_t *ca = const_value(a), *cb = const_value(b);
      int64_t r;
      if (ca && cb && fold_int(k, t, *ca, *cb, &r)) return make_const(rt, r);
    }
    if (t.is_handle()) return make_binary(k, a, b);
    if (std::optional<bool> d = decide_compare(k, a, b)) return make_const(rt, int64_t(*d));
    return make_binary(k, a, b);
  }

  std::optional<bool> decide_compare(NodeKind k, const Expr& a, const Expr& b) {
    auto yes = [](bool v) { return std::optional<bool>(v); };
    switch (k) {
      case NodeKind::LE:
        return decide_le(a, b);
      case NodeKind::GE:
        return decide_le(b, a);
      case NodeKind::LT:
        if (std::optional<bool> d = decide_le(b, a)) return !*d;
        return std::nullopt;
      case NodeKind::GT:
        if (std::optional<bool> d = decide_le(a, b)) return !*d;
        return std::nullopt;
      case NodeKind::EQ:
      case NodeKind::NE: {
        bool eq = k == NodeKind::EQ;
        if (expr_deep_equal(a, b)) return yes(eq);
        Bound ba = an_->const_int_bound(a), bb = an_->const_int_bound(b);
        if (ba.max_value < bb.min_value || bb.max_value < ba.min_value) return yes(!eq);
        if (ba.is_const() && bb.is_const() && ba.min_value == bb.min_value && finite(ba)) return yes(eq);
        if (a.dtype().element_of().is_int()) {
          Expr d = arith(NodeKind::Sub, a, b);
          Bound bd = an_->const_int_bound(d);
          if (bd.max_value < 0 || bd.min_value > 0) return yes(!eq);
          if (bd.min_value == 0 && bd.max_value == 0) return yes(eq);
          ModularSet ms = an_->modular_set(d);
          if (ms.coeff != 0 && ms.base != 0) return yes(!eq);
        }
        return std::nullopt;
      }
      default:
        return std::nullopt;
    }
  }

  // ---------------------------------------------------------------- && ||
  Expr logic(NodeKind k, const Expr& a, const Expr& b) {
    DType t = a.dtype();
    const int64_t *ca = const_value(a), *cb = const_value(b);
    bool is_and = k == NodeKind::And;
    if (is_and) {
      if ((ca && !*ca) || (cb && !*cb)) return make_zero(t);
      if (ca) return b;
      if (cb) return a;
    } else {
      if ((ca && *ca) || (cb && *cb)) return make_const(t, int64_t{1});
      if (ca) return b;
      if (cb) return a;
    }
    if (expr_deep_equal(a, b)) return a;
    auto *ba = a.as<BroadcastNode>(), *bb = b.as<BroadcastNode>();
    if (ba && bb) return BroadcastNode::make(logic(k, ba->value, bb->value), ba->lanes);
    return make_binary(k, a, b);
  }

  // ---------------------------------------------------------------- vectors
  Expr vector_binary(NodeKind k, const Expr& a, const Expr& b) {
    DType t = a.dtype();
    int lanes = t.lanes;
    auto *ba = a.as<BroadcastNode>(), *bb = b.as<BroadcastNode>();
    if (ba && bb) return BroadcastNode::make(binary(k, ba->value, bb->value), lanes);
    if (!t.element_of().is_int()) {
      if (t.is_float() && k == NodeKind::Mul) {
        if (bb && is_float_imm(bb->value, 1.0)) return a;
        if (ba && is_float_imm(ba->value, 1.0)) return b;
      }
      return make_binary(k, a, b);
    }
    auto *ra = a.as<RampNode>(), *rb = b.as<RampNode>();
    const int64_t* cb = bb ? const_value(bb->value) : nullptr;
    const int64_t* ca = ba ? const_value(ba->value) : nullptr;
    switch (k) {
      case NodeKind::Add:
        if (ra && rb) return make_ramp(arith(k, ra->base, rb->base), arith(k, ra->stride, rb->stride), lanes);
        if (ra && bb) return make_ramp(arith(k, ra->base, bb->value), ra->stride, lanes);
        if (ba && rb) return make_ramp(arith(k, ba->value, rb->base), rb->stride, lanes);
        if (cb && *cb == 0) return a;
        if (ca && *ca == 0) return b;
        break;
      case NodeKind::Sub:
        if (ra && rb) return make_ramp(arith(k, ra->base, rb->base), arith(k, ra->stride, rb->stride), lanes);
        if (ra && bb) return make_ramp(arith(k, ra->base, bb->value), ra->stride, lanes);
        if (ba && rb)
          return make_ramp(arith(k, ba->value, rb->base), arith(k, make_zero(rb->stride.dtype()), rb->stride), lanes);
        if (cb && *cb == 0) return a;
        break;
      case NodeKind::Mul:
        if (ra && bb) return make_ramp(arith(k, ra->base, bb->value), arith(k, ra->stride, bb->value), lanes);
        if (ba && rb) return make_ramp(arith(k, ba->value, rb->base), arith(k, ba->value, rb->stride), lanes);
        if ((cb && *cb == 0) || (ca && *ca == 0)) return make_zero(t);
        if (cb && *cb == 1) return a;
        if (ca && *ca == 1) return b;
        break;
      case NodeKind::Div:
      case NodeKind::Mod:
      case NodeKind::FloorDiv:
      case NodeKind::FloorMod: {
        if (ra && cb && *cb > 0) {
          bool floor_ok = k == NodeKind::FloorDiv || k == NodeKind::FloorMod || an_->const_int_bound(a).min_value >= 0;
          if (floor_ok) {
            if (Expr r = ramp_division(k == NodeKind::Div || k == NodeKind::FloorDiv, ra, *cb); r.defined()) return r;
          }
        }
        if (cb && *cb == 1) return (k == NodeKind::Div || k == NodeKind::FloorDiv) ? a : make_zero(t);
        break;
      }
      case NodeKind::Min:
      case NodeKind::Max: {
        bool is_min = k == NodeKind::Min;
        if (std::optional<bool> d = decide_le(a, b)) return (*d == is_min) ? a : b;
        if (std::optional<bool> d = decide_le(b, a)) return (*d == is_min) ? b : a;
        break;
      }
      default:
        break;
    }
    return make_binary(k, a, b);
  }

  // floordiv / floormod of ramp(base, stride, lanes) by a constant c > 0.
  Expr ramp_division(bool is_div, const RampNode* ramp, int64_t c) {
    const int64_t* s = const_value(ramp->stride);
    if (!s) return Expr();
    int lanes = ramp->lanes;
    if (*s % c == 0) {
      // Every lane is in a block c*s/c further on: the quotient is a ramp, the remainder constant.
      if (is_div) return make_ramp(floordiv_const(ramp->base, c), make_const(ramp->stride.dtype(), *s / c), lanes);
      return BroadcastNode::make(floormod_const(ramp->base, c), lanes);
    }
    if (*s > 0) {
      // All lanes in the same block of c: quotient constant, remainder a ramp.
      Expr rem = floormod_const(ramp->base, c);
      Bound rb = an_->const_int_bound(rem);
      __int128 last = static_cast<__int128>(rb.max_value) + static_cast<__int128>(*s) * (lanes - 1);
      if (rb.min_value >= 0 && rb.max_value != Bound::kPosInf && last < c) {
        if (is_div) return BroadcastNode::make(floordiv_const(ramp->base, c), lanes);
        return RampNode::make(rem, ramp->stride, lanes);
      }
    }
    return Expr();
  }

  // ---------------------------------------------------------------- casts
  Expr cast(DType to, const Expr& v) { return simplify_cast(an_, to, v); }

  Analyzer* an_;
};

}  // namespace

Expr Analyzer::simplify(const Expr& e) {
  if (!e.defined()) return e;
  Expr r = ExprSimplifier(this).mutate(e);
  internal_assert(r.dtype() == e.dtype())
      << "simplify changed the type " << e.dtype().str() << " -> " << r.dtype().str();
  return expr_deep_equal(r, e) ? e : r;
}

bool Analyzer::can_prove(const Expr& cond) {
  internal_assert(cond.dtype().is_bool()) << "can_prove needs a boolean, got " << cond.dtype().str();
  return is_one(simplify(cond));
}

}  // namespace kiln
