// max_pool2d and avg_pool2d over R x S windows of NCHW data:
//   max: out[n, c, oh, ow] = max_{r, s} pad(data)[n, c, oh*stride + r, ow*stride + s]
//        (padding never wins: it holds the type's lowest value)
//   avg: out[n, c, oh, ow] = sum_{r, s} data[...] / (taps inside the input)
//        (padding excluded from the count, as oneDNN's
//        pooling_avg_exclude_padding; float types only)
// The padding must be smaller than the window, so that every window holds
// an input element.
//
// Their CPU template vectorizes along the output row: each ci x ohi x owi
// output tile ("tile_c", "tile_oh", "tile_ow"; owi vectorized) is reduced
// in registers over the window (order "reduce_order", window width
// unrolled or not: "unroll_kw"), computed at band position "acc_at" of the
// band {n, co, oho, owo} (order "order"; its first "parallel" loops fused
// into the parallel loop); the padded input is inlined into the reduction,
// computed at the root or at a band position ("data_at").
#pragma once

#include <memory>

#include "kernels/op_registry.h"
#include "kernels/template_util.h"
#include "schedule/config_space.h"

namespace kiln {

OpDef max_pool2d_op_def();
OpDef avg_pool2d_op_def();

// `average`: avg_pool2d, else max_pool2d.
OpInstance pool2d_define(bool average, int64_t N, int64_t C, int64_t H, int64_t W, int64_t R, int64_t S, int64_t stride,
                         int64_t pad, DType dtype);

// Shared with the blocked pools (pool2d_nchwc.h). The register-tile
// accumulator of a pool op: its window sum (avg, the part "acc") or a local
// copy of its max reduction (the output then copies it out).
Tensor pool_accumulator(Schedule& sc, const OpInstance& op);
// Where the op's padded input ("data_pad", if any) is computed: inlined
// into the reduction (config "data_at" = -2), at the root (-1) or at that
// band position (at most acc_pos), `vec_axis` vectorized (-1: none).
void place_pool_padding(Schedule& sc, const OpInstance& op, const Config& cfg, Stage out, const LoopBand& band,
                        int acc_pos, int vec_axis);

std::shared_ptr<ConfigSpace> pool2d_space(const OpInstance& op, const CpuInfo& cpu);
Config pool2d_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space);
ScheduledOp pool2d_apply(const OpInstance& op, const Config& cfg);

}  // namespace kiln
