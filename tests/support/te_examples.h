// Small tensor-expression graphs shared by schedule tests.
#pragma once

#include "compute/expr_ops.h"
#include "compute/tensor.h"

namespace kiln::testing {

// C[m, n] = sum_k A[m, k] * B[k, n] in f32.
struct PlainMatmul {
  Tensor A, B, C;
  IterVar k;
};

inline PlainMatmul plain_matmul(int m = 16, int n = 16, int kk = 16) {
  PlainMatmul r;
  r.A = placeholder({m, kk}, DType::f32(), "A");
  r.B = placeholder({kk, n}, DType::f32(), "B");
  r.k = reduce_axis(kk, "k");
  r.C = compute(
      {m, n}, [&](Var i, Var j) { return sum(r.A(i, r.k->var) * r.B(r.k->var, j), {r.k}); }, "C");
  return r;
}

}  // namespace kiln::testing
