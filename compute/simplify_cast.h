// Internal to the simplifier: cast(to, v) of an already simplified v.
// Folds immediates (integers wrap to the target, as a conversion does;
// floats only where the C conversion is defined), pushes casts into
// broadcasts, and, with the analyzer's bounds, drops an exact narrow-then-
// wide cast pair and keeps a widened index ramp a ramp when no lane can wrap.
#pragma once

#include "compute/expr.h"

namespace kiln {

class Analyzer;

Expr simplify_cast(Analyzer* an, DType to, const Expr& v);

}  // namespace kiln
