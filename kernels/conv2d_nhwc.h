// conv2d_nhwc: 2-D convolution on NHWC data with HWIO weights:
//   out[n, oh, ow, k] = sum_{r, s, c < C/groups} pad(data)[n, oh*stride + r*dilation,
//                          ow*stride + s*dilation, g*C/groups + c] * W[r, s, c, k]
// (g = k / (K/groups)), then optional + bias[k] and relu.
//
// Its CPU template: weights packed as weight_pack[K/kb, R, S, C/groups, kb]
// (zero past K); each ohi x owi x kb output tile accumulates in registers
// (conv_blocked[N, OH, OW, K/kb, kb], kb vectorized) over the reduction
// (loop order "reduce_order", kernel width unrolled or not: "unroll_kw"),
// and is written out with the epilogue fused. Knobs: "tile_k" (kb; inside
// a group when groups > 1), "tile_oh", "tile_ow", the order of the band
// {n, oho, owo, ko} ("order"), the accumulator's band position ("acc_at"),
// the band loops fused into the parallel loop ("parallel"), where the
// padded data ("data_at") and the weight pack ("weight_at") are computed.
#pragma once

#include <memory>

#include "kernels/activation.h"
#include "kernels/op_registry.h"
#include "schedule/config_space.h"

namespace kiln {

OpDef conv2d_nhwc_op_def();

OpInstance conv2d_nhwc_define(int64_t N, int64_t H, int64_t W, int64_t C, int64_t K, int64_t R, int64_t S,
                              int64_t stride, int64_t pad, int64_t dilation, int64_t groups, bool bias, Activation act,
                              DType dtype);

std::shared_ptr<ConfigSpace> conv2d_nhwc_space(const OpInstance& op, const CpuInfo& cpu);
Config conv2d_nhwc_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space);
ScheduledOp conv2d_nhwc_apply(const OpInstance& op, const Config& cfg);

}  // namespace kiln
