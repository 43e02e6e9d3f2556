// Analyzer: variable knowledge, constant-bound analysis and modular-set
// analysis. Simplification is in simplify_expr.cpp.
#include "compute/analyzer.h"

#include <algorithm>
#include <numeric>

#include "base/error.h"

namespace kiln {

// ------------------------------------------------------------------ helpers

int64_t floordiv_int(int64_t a, int64_t b) {
  internal_assert(b != 0);
  if (b == -1) return a == INT64_MIN ? INT64_MIN : -a;  // avoid the one overflowing quotient
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floormod_int(int64_t a, int64_t b) {
  internal_assert(b != 0);
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

int64_t wrap_to_type(DType t, int64_t v) {
  if (t.is_bool()) return v != 0;
  if (t.bits >= 64) return v;
  uint64_t mask = (uint64_t{1} << t.bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (t.is_int() && (u >> (t.bits - 1)) & 1) u |= ~mask;  // sign-extend
  return static_cast<int64_t>(u);
}

ConstIntBound type_bound(DType t) {
  if (t.is_bool()) return {0, 1};
  if (t.is_uint()) {
    if (t.bits >= 64) return {0, ConstIntBound::kPosInf};
    return {0, static_cast<int64_t>((uint64_t{1} << t.bits) - 1)};
  }
  if (t.is_int() && t.bits < 64) return {-(int64_t{1} << (t.bits - 1)), (int64_t{1} << (t.bits - 1)) - 1};
  return ConstIntBound::everything();
}

namespace {

using Bound = ConstIntBound;
constexpr int64_t kNegInf = Bound::kNegInf;
constexpr int64_t kPosInf = Bound::kPosInf;

bool is_inf(int64_t v) { return v == kNegInf || v == kPosInf; }

int64_t clamp128(__int128 v) {
  if (v >= static_cast<__int128>(kPosInf)) return kPosInf;
  if (v <= static_cast<__int128>(kNegInf)) return kNegInf;
  return static_cast<int64_t>(v);
}

// Saturating arithmetic on bound endpoints.
int64_t sat_add(int64_t a, int64_t b) {
  if (is_inf(a)) return a;
  if (is_inf(b)) return b;
  return clamp128(static_cast<__int128>(a) + b);
}
int64_t sat_neg(int64_t a) {
  if (a == kNegInf) return kPosInf;
  if (a == kPosInf) return kNegInf;
  return -a;
}
int64_t sat_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (is_inf(a) || is_inf(b)) return ((a < 0) != (b < 0)) ? kNegInf : kPosInf;
  return clamp128(static_cast<__int128>(a) * b);
}

Bound bound_add(Bound a, Bound b) { return {sat_add(a.min_value, b.min_value), sat_add(a.max_value, b.max_value)}; }
Bound bound_neg(Bound a) { return {sat_neg(a.max_value), sat_neg(a.min_value)}; }
Bound bound_mul(Bound a, Bound b) {
  int64_t c[4] = {sat_mul(a.min_value, b.min_value), sat_mul(a.min_value, b.max_value),
                  sat_mul(a.max_value, b.min_value), sat_mul(a.max_value, b.max_value)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}
Bound bound_union(Bound a, Bound b) { return {std::min(a.min_value, b.min_value), std::max(a.max_value, b.max_value)}; }
Bound bound_intersect(Bound a, Bound b) {
  return {std::max(a.min_value, b.min_value), std::min(a.max_value, b.max_value)};
}

// floordiv of an endpoint by a positive or negative finite constant.
int64_t sat_floordiv(int64_t a, int64_t c) {
  if (is_inf(a)) return (a < 0) == (c < 0) ? kPosInf : kNegInf;
  return floordiv_int(a, c);
}
int64_t sat_truncdiv(int64_t a, int64_t c) {
  if (is_inf(a)) return (a < 0) == (c < 0) ? kPosInf : kNegInf;
  if (c == -1) return a == INT64_MIN ? kPosInf : -a;
  return a / c;
}

}  // namespace

ModularSet::ModularSet(int64_t c, int64_t b) : coeff(c < 0 ? -c : c), base(b) {
  if (coeff != 0) base = floormod_int(base, coeff);
}

// ------------------------------------------------------------------ bindings

void Analyzer::bind(const Var& v, const Range& r) {
  Bound mn = const_int_bound(r.min);
  Bound ext = const_int_bound(r.extent);
  int64_t lo = mn.min_value;
  int64_t hi = sat_add(sat_add(mn.max_value, ext.max_value), -1);
  if (hi < lo) hi = lo;  // an empty range: the scope never runs, any bound will do
  ModularSet mod;
  if (lo == hi) mod = ModularSet(0, lo);
  vars_[v.node()] = VarInfo{v, Bound(lo, hi), mod};
}

void Analyzer::bind(const Var& v, const Expr& value) {
  Bound b = const_int_bound(value);
  ModularSet m = modular_set(value);
  vars_[v.node()] = VarInfo{v, b, m};
}

void Analyzer::constrain(const Var& v, int64_t lo, int64_t hi) {
  auto it = vars_.find(v.node());
  if (it == vars_.end()) it = vars_.emplace(v.node(), VarInfo{v, type_bound(v.dtype()), ModularSet()}).first;
  Bound b = bound_intersect(it->second.bound, Bound(lo, hi));
  if (b.max_value < b.min_value) b.max_value = b.min_value;  // contradiction: unreachable code
  it->second.bound = b;
  if (b.is_const()) it->second.mod = ModularSet(0, b.min_value);
}

void Analyzer::unbind(const Var& v) { vars_.erase(v.node()); }

Analyzer::VarScope::VarScope(Analyzer* a, const Var& v) : analyzer_(a), var_(v) {
  auto it = a->vars_.find(v.node());
  had_ = it != a->vars_.end();
  if (had_) {
    bound_ = it->second.bound;
    mod_ = it->second.mod;
  }
}

Analyzer::VarScope::~VarScope() {
  if (had_)
    analyzer_->vars_[var_.node()] = VarInfo{var_, bound_, mod_};
  else
    analyzer_->vars_.erase(var_.node());
}

// ------------------------------------------------------------------ bounds

class BoundAnalysis {
 public:
  explicit BoundAnalysis(Analyzer* a) : an_(a) {}

  Bound get(const Expr& e) {
    DType t = e.dtype();
    if (!(t.is_int() || t.is_uint())) return Bound::everything();
    Bound b = compute(e);
    // Integer results never leave their type's range (bool included).
    return bound_intersect_or_type(b, t);
  }

 private:
  // The computed bound holds if the operation cannot have wrapped, i.e. when
  // it lies within the type's range; otherwise only the type range is sound.
  static Bound bound_intersect_or_type(Bound b, DType t) {
    Bound tb = type_bound(t);
    if (b.min_value >= tb.min_value && b.max_value <= tb.max_value) return b;
    return tb;
  }

  Bound compute(const Expr& e) {
    switch (e->kind()) {
      case NodeKind::IntImm: {
        int64_t v = e.as<IntImmNode>()->value;
        return {v, v};
      }
      case NodeKind::Var: {
        auto it = an_->vars_.find(e.as<VarNode>());
        if (it != an_->vars_.end()) return it->second.bound;
        return type_bound(e.dtype());
      }
      case NodeKind::Add: {
        auto* op = e.as<AddNode>();
        return bound_add(get(op->a), get(op->b));
      }
      case NodeKind::Sub: {
        auto* op = e.as<SubNode>();
        return bound_add(get(op->a), bound_neg(get(op->b)));
      }
      case NodeKind::Mul: {
        auto* op = e.as<MulNode>();
        return bound_mul(get(op->a), get(op->b));
      }
      case NodeKind::FloorDiv:
      case NodeKind::Div:
        return division(static_cast<const BinaryNode*>(e.get()), e->kind() == NodeKind::FloorDiv);
      case NodeKind::FloorMod:
      case NodeKind::Mod:
        return modulo(static_cast<const BinaryNode*>(e.get()), e->kind() == NodeKind::FloorMod);
      case NodeKind::Min: {
        auto* op = e.as<MinNode>();
        Bound a = get(op->a), b = get(op->b);
        return {std::min(a.min_value, b.min_value), std::min(a.max_value, b.max_value)};
      }
      case NodeKind::Max: {
        auto* op = e.as<MaxNode>();
        Bound a = get(op->a), b = get(op->b);
        return {std::max(a.min_value, b.min_value), std::max(a.max_value, b.max_value)};
      }
      case NodeKind::Select: {
        auto* op = e.as<SelectNode>();
        return bound_union(get(op->true_value), get(op->false_value));
      }
      case NodeKind::Cast: {
        auto* op = e.as<CastNode>();
        DType from = op->value.dtype();
        if (from.is_int() || from.is_uint()) return get(op->value);  // re-checked against the type by get()
        return type_bound(e.dtype());
      }
      case NodeKind::Ramp: {
        auto* op = e.as<RampNode>();
        Bound base = get(op->base), stride = get(op->stride);
        Bound offs = bound_mul(stride, Bound(0, op->lanes - 1));
        return bound_add(base, offs);
      }
      case NodeKind::Broadcast:
        return get(e.as<BroadcastNode>()->value);
      case NodeKind::Let: {
        auto* op = e.as<LetNode>();
        Analyzer::VarScope scope(an_, op->var);
        an_->bind(op->var, op->value);
        return get(op->body);
      }
      default:
        return type_bound(e.dtype());
    }
  }

  Bound division(const BinaryNode* op, bool floor) {
    Bound a = get(op->a), b = get(op->b);
    if (b.is_const() && b.min_value != 0 && !is_inf(b.min_value)) {
      int64_t c = b.min_value;
      int64_t x = floor ? sat_floordiv(a.min_value, c) : sat_truncdiv(a.min_value, c);
      int64_t y = floor ? sat_floordiv(a.max_value, c) : sat_truncdiv(a.max_value, c);
      return {std::min(x, y), std::max(x, y)};
    }
    bool divisor_sign_known = b.min_value > 0 || b.max_value < 0;
    bool finite = !is_inf(a.min_value) && !is_inf(a.max_value) && !is_inf(b.min_value) && !is_inf(b.max_value);
    if (divisor_sign_known && finite) {
      int64_t c[4];
      int n = 0;
      for (int64_t x : {a.min_value, a.max_value})
        for (int64_t y : {b.min_value, b.max_value}) c[n++] = floor ? sat_floordiv(x, y) : sat_truncdiv(x, y);
      return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
    }
    return Bound::everything();
  }

  Bound modulo(const BinaryNode* op, bool floor) {
    Bound a = get(op->a), b = get(op->b);
    if (b.min_value > 0) {
      int64_t cmax = b.max_value;  // |result| < cmax
      if (a.min_value >= 0 && a.max_value < b.min_value) return a;
      if (b.is_const() && !is_inf(a.min_value) && !is_inf(a.max_value) &&
          floordiv_int(a.min_value, b.min_value) == floordiv_int(a.max_value, b.min_value)) {
        if (floor || a.min_value >= 0)
          return {floormod_int(a.min_value, b.min_value), floormod_int(a.max_value, b.min_value)};
      }
      int64_t hi = sat_add(cmax, -1);
      if (floor) return {0, hi};
      if (a.min_value >= 0) return {0, std::min(hi, a.max_value)};
      if (a.max_value <= 0) return {std::max(sat_neg(hi), a.min_value), 0};
      return {sat_neg(hi), hi};
    }
    if (b.max_value < 0 && floor) return {sat_add(b.min_value, 1), 0};
    return Bound::everything();
  }

  Analyzer* an_;
};

ConstIntBound Analyzer::const_int_bound(const Expr& e) {
  internal_assert(e.defined());
  return BoundAnalysis(this).get(e);
}

// ------------------------------------------------------------------ modular sets

class ModularAnalysis {
 public:
  explicit ModularAnalysis(Analyzer* a) : an_(a) {}

  ModularSet get(const Expr& e) {
    DType t = e.dtype();
    if (!(t.is_int() || t.is_uint()) || t.is_bool()) return ModularSet::everything();
    switch (e->kind()) {
      case NodeKind::IntImm:
        return ModularSet(0, e.as<IntImmNode>()->value);
      case NodeKind::Var: {
        auto it = an_->vars_.find(e.as<VarNode>());
        return it == an_->vars_.end() ? ModularSet::everything() : it->second.mod;
      }
      case NodeKind::Add: {
        auto* op = e.as<AddNode>();
        return add(get(op->a), get(op->b), 1);
      }
      case NodeKind::Sub: {
        auto* op = e.as<SubNode>();
        return add(get(op->a), get(op->b), -1);
      }
      case NodeKind::Mul: {
        auto* op = e.as<MulNode>();
        return mul(get(op->a), get(op->b));
      }
      case NodeKind::FloorDiv:
      case NodeKind::Div: {
        auto* op = static_cast<const BinaryNode*>(e.get());
        if (e->kind() == NodeKind::Div && an_->const_int_bound(op->a).min_value < 0) return ModularSet::everything();
        const int64_t* c = as_const_int(op->b);
        if (!c || *c <= 0) return ModularSet::everything();
        ModularSet a = get(op->a);
        if (a.coeff % *c != 0) return ModularSet::everything();
        return ModularSet(a.coeff / *c, floordiv_int(a.base, *c));
      }
      case NodeKind::FloorMod:
      case NodeKind::Mod: {
        auto* op = static_cast<const BinaryNode*>(e.get());
        if (e->kind() == NodeKind::Mod && an_->const_int_bound(op->a).min_value < 0) return ModularSet::everything();
        const int64_t* c = as_const_int(op->b);
        if (!c || *c <= 0) return ModularSet::everything();
        ModularSet a = get(op->a);
        if (a.coeff == 0) return ModularSet(0, floormod_int(a.base, *c));
        int64_t g = std::gcd(a.coeff, *c);
        return ModularSet(g, a.base);
      }
      case NodeKind::Min:
      case NodeKind::Max: {
        auto* op = static_cast<const BinaryNode*>(e.get());
        return join(get(op->a), get(op->b));
      }
      case NodeKind::Select: {
        auto* op = e.as<SelectNode>();
        return join(get(op->true_value), get(op->false_value));
      }
      case NodeKind::Cast: {
        auto* op = e.as<CastNode>();
        DType from = op->value.dtype();
        // A widening integer cast keeps the value.
        if ((from.is_int() || from.is_uint()) && !from.is_bool() && from.bits <= t.bits &&
            (from.is_int() == t.is_int() || from.bits < t.bits))
          return get(op->value);
        return ModularSet::everything();
      }
      case NodeKind::Ramp: {
        auto* op = e.as<RampNode>();
        ModularSet b = get(op->base), s = get(op->stride);
        return ModularSet(std::gcd(std::gcd(b.coeff, s.coeff), s.base), b.base);
      }
      case NodeKind::Broadcast:
        return get(e.as<BroadcastNode>()->value);
      case NodeKind::Let: {
        auto* op = e.as<LetNode>();
        Analyzer::VarScope scope(an_, op->var);
        an_->bind(op->var, op->value);
        return get(op->body);
      }
      default:
        return ModularSet::everything();
    }
  }

 private:
  static ModularSet add(ModularSet a, ModularSet b, int64_t sign) {
    __int128 base = static_cast<__int128>(a.base) + sign * static_cast<__int128>(b.base);
    if (base > INT64_MAX || base < INT64_MIN) return ModularSet::everything();
    return ModularSet(std::gcd(a.coeff, b.coeff), static_cast<int64_t>(base));
  }
  static ModularSet mul(ModularSet a, ModularSet b) {
    __int128 c1 = static_cast<__int128>(a.coeff) * b.coeff;
    __int128 c2 = static_cast<__int128>(a.coeff) * b.base;
    __int128 c3 = static_cast<__int128>(b.coeff) * a.base;
    __int128 bb = static_cast<__int128>(a.base) * b.base;
    for (__int128 v : {c1, c2, c3, bb})
      if (v > INT64_MAX || v < INT64_MIN) return ModularSet::everything();
    int64_t g = std::gcd(std::gcd(static_cast<int64_t>(c1), static_cast<int64_t>(c2)), static_cast<int64_t>(c3));
    return ModularSet(g, static_cast<int64_t>(bb));
  }
  static ModularSet join(ModularSet a, ModularSet b) {
    __int128 d = static_cast<__int128>(a.base) - b.base;
    if (d > INT64_MAX || d < INT64_MIN) return ModularSet::everything();
    int64_t g = std::gcd(std::gcd(a.coeff, b.coeff), static_cast<int64_t>(d));
    return ModularSet(g, a.base);
  }

  Analyzer* an_;
};

ModularSet Analyzer::modular_set(const Expr& e) {
  internal_assert(e.defined());
  return ModularAnalysis(this).get(e);
}

}  // namespace kiln
