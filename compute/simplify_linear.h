// Internal to the simplifier: the canonical form of signed integer index
// expressions, a sum of (non-affine atom * constant coefficient) terms plus a
// constant. Atoms are already-simplified sub-expressions (variables,
// floordiv/floormod/min/max/loads, products of non-constants...) compared
// structurally. Arithmetic on coefficients wraps to the type's width, which
// keeps the form exact under two's-complement wraparound; exact() tells
// whether any coefficient did wrap (the simplifier then keeps the original
// expression rather than fold it into wrapped constants).
#pragma once

#include <vector>

#include "compute/expr.h"

namespace kiln {

struct LinearTerm {
  Expr atom;
  int64_t coeff;
};

class LinearForm {
 public:
  explicit LinearForm(DType t) : dtype_(t) {}

  // Parses an expression whose operands are already simplified: +, -, and *
  // by a constant are taken apart, anything else is an atom.
  static LinearForm of(const Expr& e);

  void add_atom(const Expr& atom, int64_t coeff);  // merges with a structurally equal atom
  void add(const LinearForm& o, int64_t scale = 1);
  void add_expr(const Expr& e, int64_t scale = 1);  // add(of(e), scale) without the copy
  void add_constant(int64_t c);
  void scale(int64_t c);

  // x / c * c + x % c -> x (and the floordiv / floormod pair), with any
  // common coefficient; floordiv(floormod(x, c1), c) * c + floormod(x, c)
  // -> floormod(x, c1) where c divides c1.
  void merge_div_mod();

  // Rebuilds an expression: positive terms in first-appearance order, then
  // negative ones subtracted, then the constant: ((i*16) + j) - k) + 3.
  Expr to_expr() const;

  DType dtype() const { return dtype_; }
  const std::vector<LinearTerm>& terms() const { return terms_; }
  int64_t constant() const { return constant_; }
  bool is_const() const { return terms_.empty(); }
  bool exact() const { return exact_; }
  void set_constant(int64_t c);

 private:
  DType dtype_;
  std::vector<LinearTerm> terms_;  // non-zero coefficients
  int64_t constant_ = 0;
  bool exact_ = true;  // no coefficient arithmetic wrapped

  int64_t wadd(int64_t a, int64_t b);
  int64_t wmul(int64_t a, int64_t b);
};

}  // namespace kiln
