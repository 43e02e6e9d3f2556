// layer_norm over the last axis: y[i, j] = (x[i, j] - mean_i) /
// sqrt(var_i + 1e-5) * gamma[j] + beta[j] for x[M, N] (float types), the
// mean and (biased) variance over row i, computed in two passes. Scheduled
// by the row template (row_template.h).
#pragma once

#include "kernels/op_registry.h"

namespace kiln {

OpDef layer_norm_op_def();
OpInstance layer_norm_define(int64_t M, int64_t N, DType dtype);

}  // namespace kiln
