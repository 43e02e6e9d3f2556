// A matmul whose B is constant (a network's weights): packed once, ahead of
// time, into panels of nb columns, as oneDNN's matmul with constant weights
// reorders them once into its blocked layout. The panels are what the GEMM
// template's register tiles read: each k step of a tile loads nb contiguous
// values, and a whole panel is one contiguous stream of K*nb values, with
// no packing inside the timed kernel.
//
//   pack_matmul_b:K,N,nb,trans_b   B [K,N] (or [N,K] with trans_b) to
//                                  PB [ceil(N/nb), K, nb], zero past N
//   matmul_packed_b:M,N,K,nb,...   C[M,N] = A . B read from PB, with
//                                  matmul's epilogues and trans_a
//
// matmul and dense list the pair as their "packed_b" alternative
// (kernels/op_registry.h's OpAlternative).
#pragma once

#include <vector>

#include "kernels/gemm_common.h"
#include "kernels/op_registry.h"

namespace kiln {

// The panel width the alternatives use: two 16-lane fp32 vectors, the
// register-tile width tuning picks for most matmuls here.
constexpr int64_t kPackedBPanel = 32;

OpDef pack_matmul_b_op_def();
OpDef matmul_packed_b_op_def();

// The "packed_b" alternative of a matmul or dense `g` (not batched):
// pack_matmul_b on input 1, then matmul_packed_b on input 0, the packed
// panels (and input 2, the bias).
std::vector<OpAlternative> packed_b_alternatives(const GemmShape& g, DType dtype);

}  // namespace kiln
