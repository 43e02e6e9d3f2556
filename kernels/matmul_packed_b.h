// A matmul whose B is constant (a network's weights): packed once, ahead of
// time, into panels of nb columns, as oneDNN's matmul with constant weights
// reorders them once into its blocked layout. The panels are what the GEMM
// template's register tiles read: each k step of a tile loads nb contiguous
// values, and a whole panel is one contiguous stream of K*nb values, with
// no packing inside the timed kernel.
//
//   pack_matmul_b:K,N,nb,trans_b   B [K,N] (or [N,K] with trans_b) to
//                                  PB [ceil(N/nb), K, nb], zero past N;
//                                  with kstep > 1, PB [ceil(N/nb), K/kstep,
//                                  nb, kstep]: the blocked layout the tensor
//                                  instructions read (VNNI and AMX int8: 4
//                                  k values per column, BF16: 2)
//   matmul_packed_b:M,N,K,nb,...   C[M,N] = A . B read from PB, with
//                                  matmul's epilogues and trans_a
//   qmatmul_packed_b:M,N,K,nb,...  qmatmul (u8 . i8, requantized) reading PB
//
// matmul and dense list the pair as their "packed_b" alternative, and
// qmatmul and qdense theirs (kernels/op_registry.h's OpAlternative): bf16
// and int8 in k steps, so that a tensorized kernel packs nothing per call.
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
OpDef qmatmul_packed_b_op_def();

// The "packed_b" alternative of a matmul, dense, qmatmul or qdense `g` (not
// batched): pack_matmul_b on input 1, then matmul_packed_b (qmatmul_packed_b)
// on input 0, the packed panels (and the bias and scale inputs).
std::vector<OpAlternative> packed_b_alternatives(const GemmShape& g, DType dtype);

}  // namespace kiln
