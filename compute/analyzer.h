// Arithmetic analysis of integer index expressions: constant bounds, modular
// sets (expr = coeff*k + base, for vector alignment), simplification and
// proving, under what is known about variables (loop ranges, let values).
//
//   Analyzer an;
//   an.bind(i, Range(0, 16));                 // i in [0, 16)
//   an.can_prove(i < 16);                     // true
//   an.simplify(floordiv(i.outer*16 + i, 16)) // i.outer
//
// Simplification assumes index arithmetic does not overflow (the bound- and
// division-based rules reason over mathematical integers); constants fold with
// wraparound to their type's width. Floating-point expressions are only
// folded when every operand is an immediate (plus the exact identities x*1,
// x/1, x + -0.0, x - 0.0). The rules themselves live in simplify_expr.cpp.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "compute/expr.h"

namespace kiln {

// Inclusive integer interval; the sentinels stand for -inf / +inf.
struct ConstIntBound {
  static constexpr int64_t kNegInf = INT64_MIN;
  static constexpr int64_t kPosInf = INT64_MAX;
  int64_t min_value = kNegInf;
  int64_t max_value = kPosInf;

  ConstIntBound() = default;
  ConstIntBound(int64_t lo, int64_t hi) : min_value(lo), max_value(hi) {}
  static ConstIntBound everything() { return {}; }
  bool is_const() const { return min_value == max_value; }
  bool operator==(const ConstIntBound& o) const { return min_value == o.min_value && max_value == o.max_value; }
};

// The set { coeff*k + base : k integer }. coeff == 0: exactly `base`;
// otherwise 0 <= base < coeff. {1, 0} is "any integer".
struct ModularSet {
  int64_t coeff = 1;
  int64_t base = 0;

  ModularSet() = default;
  ModularSet(int64_t c, int64_t b);  // normalizes
  static ModularSet everything() { return {}; }
  bool operator==(const ModularSet& o) const { return coeff == o.coeff && base == o.base; }
};

class Analyzer {
 public:
  Analyzer() = default;

  // v ranges over [r.min, r.min + r.extent). min and extent may use other
  // bound variables; only their constant bounds are kept. Replaces any
  // earlier binding of v.
  void bind(const Var& v, const Range& r);
  // v is let-bound to `value` (bounds and modular set of v are value's).
  void bind(const Var& v, const Expr& value);
  // Intersects what is known about v's value with [lo, hi] (e.g. under a
  // guard `if (v < 10)`).
  void constrain(const Var& v, int64_t lo, int64_t hi);
  // Forgets everything about v.
  void unbind(const Var& v);

  Expr simplify(const Expr& e);
  // True only when cond (a bool) is provably true for all bound values.
  bool can_prove(const Expr& cond);
  // For a vector, the bound over all lanes. Non-integer expressions get
  // everything(); integer leaves with no information get their type's range.
  ConstIntBound const_int_bound(const Expr& e);
  // For a vector, a set containing every lane.
  ModularSet modular_set(const Expr& e);

  // Saves what is known about v and restores it on destruction; wrap a bind()
  // that only holds within a scope (a loop body, a let body).
  class VarScope {
   public:
    VarScope(Analyzer* a, const Var& v);
    ~VarScope();
    VarScope(const VarScope&) = delete;
    VarScope& operator=(const VarScope&) = delete;

   private:
    Analyzer* analyzer_;
    Var var_;
    bool had_;
    ConstIntBound bound_;
    ModularSet mod_;
  };

 private:
  struct VarInfo {
    Var var;  // keeps the node alive while it is a key
    ConstIntBound bound;
    ModularSet mod;
  };
  std::unordered_map<const VarNode*, VarInfo> vars_;
  friend class BoundAnalysis;
  friend class ModularAnalysis;
};

// Structural equality: same node kinds, types and children; variables,
// buffers, tensors and reduce axes compare by identity.
bool expr_deep_equal(const Expr& a, const Expr& b);

// Integer helpers shared by the analyses (b != 0).
int64_t floordiv_int(int64_t a, int64_t b);
int64_t floormod_int(int64_t a, int64_t b);
// Wraps v to the width of the integer type t (sign-extends for signed types;
// bool becomes 0/1).
int64_t wrap_to_type(DType t, int64_t v);
// The value range of an integer type as a bound (bool: [0, 1]).
ConstIntBound type_bound(DType t);

}  // namespace kiln
