#include "kernels/winograd_matrices.h"

#include <cmath>

#include "base/error.h"
#include "compute/expr_ops.h"

namespace kiln {

namespace {

// The interpolation points are 0, 1, -1 (and infinity) for F(2, 3) and
// 0, 1, -1, 2, -2 (and infinity) for F(4, 3), with G scaled so that BT
// has integer entries.
WinogradMatrices f2() {
  WinogradMatrices w;
  w.m = 2;
  w.alpha = 4;
  w.AT = {{1, 1, 1, 0}, {0, 1, -1, -1}};
  w.G = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  w.BT = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
  return w;
}

WinogradMatrices f4() {
  WinogradMatrices w;
  w.m = 4;
  w.alpha = 6;
  w.AT = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};
  w.G = {{1.0 / 4, 0, 0},
         {-1.0 / 6, -1.0 / 6, -1.0 / 6},
         {-1.0 / 6, 1.0 / 6, -1.0 / 6},
         {1.0 / 24, 1.0 / 12, 1.0 / 6},
         {1.0 / 24, -1.0 / 12, 1.0 / 6},
         {0, 0, 1}};
  w.BT = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
          {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
  return w;
}

double max_row_sum(const std::vector<std::vector<double>>& mat) {
  double best = 0;
  for (auto& row : mat) {
    double s = 0;
    for (double v : row) s += std::fabs(v);
    best = std::max(best, s);
  }
  return best;
}

}  // namespace

const std::vector<int>& winograd_tile_sizes() {
  static const std::vector<int> sizes{2, 4};
  return sizes;
}

const WinogradMatrices& winograd_matrices(int m) {
  static const WinogradMatrices m2 = f2(), m4 = f4();
  user_check(m == 2 || m == 4) << "Winograd tile size m=" << m << " is not implemented: kiln has F(2x2,3x3) (m=2) and F(4x4,3x3) (m=4)";
  return m == 2 ? m2 : m4;
}

Expr winograd_apply_row(const std::vector<std::vector<double>>& mat, const Expr& row,
                        const std::function<Expr(int)>& term, DType t) {
  auto combine = [&](const std::vector<double>& coef) {
    Expr acc;
    for (size_t j = 0; j < coef.size(); ++j) {
      const double c = coef[j];
      if (c == 0) continue;
      Expr x = term(static_cast<int>(j));
      if (!acc.defined()) {
        acc = c == 1 ? x : c == -1 ? -x : make_const(t, c) * x;
      } else if (c == 1) {
        acc = acc + x;
      } else if (c == -1) {
        acc = acc - x;
      } else {
        acc = acc + make_const(t, c) * x;
      }
    }
    return acc.defined() ? acc : make_zero(t);
  };
  Expr out = combine(mat.back());
  for (size_t i = mat.size() - 1; i-- > 0;) out = select(row == static_cast<int>(i), combine(mat[i]), out);
  return out;
}

Expr winograd_apply_2d(const std::vector<std::vector<double>>& mat, const Expr& row, const Expr& col,
                       const std::function<Expr(int, int)>& term, DType t) {
  return winograd_apply_row(
      mat, row, [&](int i) { return winograd_apply_row(mat, col, [&](int j) { return term(i, j); }, t); }, t);
}

double winograd_error_growth(int m) {
  const WinogradMatrices& w = winograd_matrices(m);
  const double g = max_row_sum(w.AT) * max_row_sum(w.BT) * max_row_sum(w.G);
  return g * g;
}

}  // namespace kiln
