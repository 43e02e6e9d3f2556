// matmul: row-major C[M, N] = A[M, K] . B[K, N] (either operand may be
// stored transposed), optional bias[N] and relu or gelu epilogue. Integer
// inputs (i8, u8, i32) accumulate in i32.
#pragma once

#include "kernels/gemm_common.h"
#include "kernels/op_registry.h"

namespace kiln {

OpDef matmul_op_def();

// The plain definition (the oracle's input).
OpInstance matmul_define(int64_t M, int64_t N, int64_t K, DType dtype, bool bias, bool relu);
OpInstance matmul_define(const GemmShape& g, DType dtype);

// The register-blocked, packed schedule with its few classic parameters:
// B packed into panels of `nb` columns, each (mb x nb) tile of C
// accumulates in registers over K. A point of the template
// (matmul_template.h), kept for tests that pick these parameters directly.
struct MatmulSchedule {
  int64_t mb = 6, nb = 64;  // register tile
  int64_t kb = 0;           // K block for the micro-kernel loop (0 = whole K)
  int64_t k_unroll = 1;     // unroll factor of the innermost k loop
  bool parallel = true;
};
ScheduledOp matmul_schedule(const OpInstance& op, const MatmulSchedule& cfg);

}  // namespace kiln
