// batch_matmul: out[b, M, N] = A[b, M, K] . B[b, K, N] for every b (either
// operand may be stored transposed per batch). Scheduled by the GEMM
// template (gemm_common.h): the batch loop leads the parallel loop and each
// batch is tiled as matmul.
#pragma once

#include "kernels/op_registry.h"

namespace kiln {

OpDef batch_matmul_op_def();

}  // namespace kiln
