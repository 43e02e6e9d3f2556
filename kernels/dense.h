// dense (fully connected): y[N, OUT] = x[N, IN] . W[OUT, IN]^T (+ b[OUT]),
// optional relu or gelu, the weight in its framework layout [OUT, IN].
// Scheduled by the GEMM template (gemm_common.h) as a matmul with a
// transposed B; packing B's panels undoes the transposition.
#pragma once

#include "kernels/op_registry.h"

namespace kiln {

OpDef dense_op_def();

}  // namespace kiln
