// softmax over the last axis: y[i, j] = exp(x[i, j] - max_k x[i, k]) /
// sum_k exp(x[i, k] - max_k x[i, k]) for x[M, N] (float types). Scheduled
// by the row template (row_template.h) plus one knob of its own: the
// exponentials stored in a row buffer or recomputed for the output.
#pragma once

#include "kernels/op_registry.h"

namespace kiln {

OpDef softmax_op_def();
OpInstance softmax_define(int64_t M, int64_t N, DType dtype);

}  // namespace kiln
