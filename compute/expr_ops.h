// Operator overloads and builders for expressions. These promote operand
// types (int immediates adopt the other side's type; int op float -> float),
// broadcast scalars against vectors, and fold constants, so templates can
// write `A(i, k) * B(k, j)` or `i * 16 + j` naturally.
#pragma once

#include "compute/expr.h"

namespace kiln {

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator-(Expr a);
// C division / modulo (truncating) on integers; IEEE division on floats.
Expr operator/(Expr a, Expr b);
Expr operator%(Expr a, Expr b);
Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);

Expr select(Expr cond, Expr t, Expr f);
Expr cast(DType t, Expr v);
Expr exp(Expr x);
Expr log(Expr x);
Expr sqrt(Expr x);
Expr tanh(Expr x);
Expr sigmoid(Expr x);
Expr erf(Expr x);
Expr pow(Expr x, Expr y);
Expr abs(Expr x);  // fabs for floats, |x| via select for integers
Expr floor(Expr x);
Expr ceil(Expr x);
// Rounds to the nearest integer, halfway cases to even (C nearbyint in the
// default rounding mode): what requantization rounds with.
Expr round_even(Expr x);

// Reductions over `axes` (created with reduce_axis), optionally conditioned.
Expr sum(Expr source, std::vector<IterVar> axes, Expr condition = Expr());
Expr max_reduce(Expr source, std::vector<IterVar> axes, Expr condition = Expr());
Expr min_reduce(Expr source, std::vector<IterVar> axes, Expr condition = Expr());

// Brings two operands to a common type (used by the operators above).
void promote_binary(Expr* a, Expr* b);

}  // namespace kiln
