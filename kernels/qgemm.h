// Quantized GEMMs, as oneDNN's int8 matmul and inner product compute them:
//   qmatmul: out[M, N] from A[M, K] (u8) . B[K, N] (i8)
//   qdense:  y[N, OUT] from x[N, IN] (u8) . W[OUT, IN]^T (i8)
// The products are summed in i32 (wrapping), an i32 bias[cols] is added,
// and the sums are requantized by a per-column f32 scale[cols] into the
// output type `out`:
//   u8, i8  round_even(f32(sum) * scale) saturated to the type (relu: at 0)
//   f32     f32(sum) * scale (relu: max 0)
//   i32     the sums (relu: max 0), no scale input.
// Inputs in order: A, B, [bias], [scale]. Scheduled by the GEMM template
// (gemm_common.h); on CPUs with AVX512-VNNI its tensorize knob computes the
// register tile with vpdpbusd, B packed in 16 x 4 blocks.
#pragma once

#include "kernels/op_registry.h"

namespace kiln {

OpDef qmatmul_op_def();
OpDef qdense_op_def();

}  // namespace kiln
