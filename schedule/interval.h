// Symbolic interval arithmetic over index expressions, used by bound
// inference: the range of an expression when some variables range over
// intervals and the others are fixed.
#pragma once

#include <functional>

#include "compute/expr.h"

namespace kiln {

// Inclusive [min, max]; an undefined end means unbounded on that side.
struct Interval {
  Expr min, max;
  static Interval point(const Expr& e) { return {e, e}; }
  static Interval everything() { return {}; }
  bool bounded() const { return min.defined() && max.defined(); }
  bool is_point() const { return bounded() && min.same_as(max); }
};

Interval interval_union(const Interval& a, const Interval& b);

// Looks up a variable: returns true and sets *out when the variable ranges
// over an interval (whose ends may mention other variables, which are looked
// up in turn); returns false when it is fixed (a point).
using VarIntervalFn = std::function<bool(const VarNode*, Interval* out)>;

// The interval that e takes. Affine integer arithmetic, min/max, floordiv and
// floormod by positive constants are exact or tight; anything else that
// depends on a ranging variable gives an unbounded interval.
Interval eval_interval(const Expr& e, const VarIntervalFn& lookup);

}  // namespace kiln
