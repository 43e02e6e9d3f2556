// winograd_weight_nchwc: the weight transform of conv2d_winograd_nchwc,
// done once, ahead of time, as a network packs its weights into the
// blocked layout once at load time:
//   weight [K/kb, C/cb, 3, 3, cb, kb]  (conv2d_nchwc's blocked 3x3 weights)
//   out    [alpha, alpha, K/kb, C/cb, cb, kb],  alpha = m + 2
//   out[e, f, ko, co, ci, ki] = sum_{r, s} G[e][r] G[f][s] weight[ko, co, r, s, ci, ki]
// (kernels/winograd_matrices.h). One hand schedule: the (ko, co) blocks in
// parallel, the alpha x alpha outputs unrolled, kb vectorized.
#pragma once

#include "kernels/op_registry.h"

namespace kiln {

OpDef winograd_weight_nchwc_op_def();
// The same for conv2d_winograd_nhwc: HWIO weights [3, 3, C, K] to
// [alpha, alpha, C, K].
OpDef winograd_weight_nhwc_op_def();

// Floating-point types only: the transforms have fractional entries.
void check_winograd_dtype(const std::string& op, DType dtype);
// user_error unless cb divides C and kb divides K.
void check_winograd_blocks(const std::string& op, int64_t C, int64_t K, int64_t cb, int64_t kb);

}  // namespace kiln
