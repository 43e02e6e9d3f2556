// The tunable CPU schedule template of matmul and its ConfigSpace.
//
// Loop structure (knobs in quotes):
//   out stage: i -> [yo, ym, yi] ("tile_y"), j -> [xo, xm, xi] ("tile_x");
//     the band {yo, xo, ym, xm} in one of a few orders ("order"), its first
//     "parallel" loops fused into one parallel loop, then yi, xi
//     (xi vectorized);
//   accumulator (cache_write of C, local): computed at band position
//     "acc_at"; splits its block into yi x xi register tiles, reduces over
//     k -> [ko, ki] ("tile_k") either inside each register tile or with ko
//     outside the tile loops ("k_outer": the block then stays in cache, not
//     in registers); ki unrolled by "unroll_k", the tile rows unrolled or
//     not ("unroll_y"), the tile columns vectorized;
//   B packed into panels PB[N/xi, K, xi] ("pack_b": none, at the root, or at
//     a band position, clamped to enclose the accumulator).
//   with trans_b only, "reduce_vector": 0 (the above), or dot products
//     along k per output element in vectors of that many lanes (no
//     packing; for few rows).
// Every config of the space lowers to a correct kernel. The machinery
// lives in gemm_common.h (shared with batch_matmul and dense); trans_a and
// gelu change the graph, not the space.
#pragma once

#include <memory>

#include "kernels/gemm_common.h"
#include "kernels/op_registry.h"
#include "schedule/config_space.h"

namespace kiln {

// The GEMM a built matmul computes (flags missing from op.ints are 0).
GemmShape matmul_gemm_shape(const OpInstance& op);
std::shared_ptr<ConfigSpace> matmul_space(const OpInstance& op, const CpuInfo& cpu);
// The hand-tuned point of the space (6 x 4-vector register tile, B packed
// per panel, parallel over panels).
Config matmul_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space);
MatmulParams matmul_decode(const Config& cfg);
ScheduledOp matmul_apply(const OpInstance& op, const Config& cfg);
ScheduledOp matmul_template_schedule(const OpInstance& op, const MatmulParams& p);

}  // namespace kiln
