// The transform matrices of Winograd's minimal filtering algorithm F(m, 3)
// (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks",
// 2016), and the tensor-expression pieces that apply them. For a tile of
// alpha = m + 2 inputs d and 3 taps g, the m outputs of the correlation
// y[i] = sum_r d[i + r] g[r] are
//   y = AT [(G g) . (BT d)]            (. : element-wise product)
// and in two dimensions Y = AT [(G g GT) . (BT d B)] A. F(2, 3) multiplies
// 16 times per 2x2 output tile instead of 36 (2.25x fewer), F(4, 3) 36
// times per 4x4 tile instead of 144 (4x fewer); the price is rounding
// error, which grows with the entries of the matrices (winograd_error_growth).
#pragma once

#include <functional>
#include <vector>

#include "compute/expr.h"

namespace kiln {

struct WinogradMatrices {
  int m = 0;      // outputs per tile and dimension
  int r = 3;      // taps
  int alpha = 0;  // inputs per tile and dimension: m + r - 1
  std::vector<std::vector<double>> AT;  // m x alpha: output transform
  std::vector<std::vector<double>> G;   // alpha x r: weight transform
  std::vector<std::vector<double>> BT;  // alpha x alpha: input transform
};

// The tile sizes kiln implements.
const std::vector<int>& winograd_tile_sizes();
// F(m, 3) for m = 2 or 4; user_error otherwise.
const WinogradMatrices& winograd_matrices(int m);

// Row `row` of matrix `mat` applied to the column vector term(0..cols-1):
// sum_j mat[row][j] * term(j), as a chain of selects on `row` (one
// alternative per row), the zero coefficients left out and the +-1 ones
// as additions and subtractions. When `row` is a constant (an unrolled
// loop) the simplifier folds the chain to one alternative.
Expr winograd_apply_row(const std::vector<std::vector<double>>& mat, const Expr& row,
                        const std::function<Expr(int)>& term, DType t);

// The 2-D transform mat X matT at (row, col) of the r x r tile term(i, j)
// (r = mat's columns): rows combined by mat[row], then columns by mat[col].
Expr winograd_apply_2d(const std::vector<std::vector<double>>& mat, const Expr& row, const Expr& col,
                       const std::function<Expr(int, int)>& term, DType t);

// A bound on how much the 2-D transforms magnify fp rounding: with
// a = max_i sum_e |AT[i][e]|, b = max_e sum_j |BT[e][j]|, g = max_e sum_j |G[e][j]|,
// an output of C channels differs from the exact convolution by at most
// about (a * b * g)^2 * C * u * max|d| * max|w| times a small constant
// (u: the unit roundoff). (a b g)^2 is 81 for F(2, 3) and 36100 for F(4, 3).
double winograd_error_growth(int m);

}  // namespace kiln
