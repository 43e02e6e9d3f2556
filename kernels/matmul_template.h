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
// Every config of the space lowers to a correct kernel.
#pragma once

#include <memory>

#include "kernels/op_registry.h"
#include "schedule/config_space.h"

namespace kiln {

// A config's values, decoded (also what the legacy MatmulSchedule maps to).
struct MatmulParams {
  std::vector<int64_t> tile_y{1, 1, 1}, tile_x{1, 1, 1}, tile_k{1, 1};
  std::vector<int64_t> order{0, 1, 2, 3};  // permutation of band {yo, xo, ym, xm}
  int acc_at = 3;                          // band position the accumulator is computed at
  bool k_outer = false;                    // ko outside the accumulator's register-tile loops
  int pack_b = 0;                          // -2: no packing, -1: root, else band position
  int64_t unroll_k = 1;                    // unrolled k steps
  bool unroll_y = true;                    // unroll the register tile's rows
  int parallel = 1;                        // band loops fused into the parallel loop
};

std::shared_ptr<ConfigSpace> matmul_space(const OpInstance& op, const CpuInfo& cpu);
// The hand-tuned point of the space (6 x 4-vector register tile, B packed
// per panel, parallel over panels).
Config matmul_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space);
MatmulParams matmul_decode(const Config& cfg);
ScheduledOp matmul_apply(const OpInstance& op, const Config& cfg);
ScheduledOp matmul_template_schedule(const OpInstance& op, const MatmulParams& p);

}  // namespace kiln
