// Pooling on the blocked NCHW[x]c layout that conv2d_nchwc and
// depthwise_conv2d_nchwc keep activations in, [N, C/cb, H, W, cb]:
//   max_pool2d_nchwc: out[n, co, oh, ow, ci] = max_{r, s} pad(data)[n, co, oh*stride + r, ow*stride + s, ci]
//                     (padding never wins)
//   avg_pool2d_nchwc: the window's sum / (taps inside the input) (padding
//                     excluded from the count; float types only)
//   global_avg_pool2d_nchwc: out[n, co, 0, 0, ci] = sum_{h, w} data[n, co, h, w, ci] / (H*W)
//                     (the squeeze of a squeeze-and-excitation block)
// The same semantics as max_pool2d and avg_pool2d (kernels/pool2d.h).
//
// Their CPU templates put the cb channels of a block in the vector lanes.
// Windowed pooling reduces each ohi x owi x cb output tile in registers
// ("tile_oh", "tile_ow"; window order "reduce_order", width unrolled or
// not: "unroll_kw") at band position "acc_at" of the band {n, co, oho, owo}
// ("order"; its first "parallel" loops fused into the parallel loop); the
// padded input is inlined into the reduction, computed at the root or at a
// band position ("data_at"). The global pool sums each block's plane in
// registers, the width loop split by "unroll_w" (inner part unrolled),
// with "parallel" band loops {n, co} in parallel.
#pragma once

#include <memory>

#include "kernels/op_registry.h"
#include "schedule/config_space.h"

namespace kiln {

OpDef max_pool2d_nchwc_op_def();
OpDef avg_pool2d_nchwc_op_def();
OpDef global_avg_pool2d_nchwc_op_def();

}  // namespace kiln
