// depthwise_conv2d_nchwc: the depthwise convolution (one filter per channel)
// on the blocked NCHW[x]c layout that conv2d_nchwc keeps activations in, so
// that a depthwise-separable block runs without a layout change:
//   data   [N, C/cb, H, W, cb]        (channel c = co*cb + ci)
//   weight [C/cb, R, S, cb]
//   out    [N, C/cb, OH, OW, cb]
//   out[n, co, oh, ow, ci] = sum_{r, s} pad(data)[n, co, oh*stride + r*dilation,
//                                                 ow*stride_w + s*dilation, ci] * weight[co, r, s, ci]
// then optional + bias[c] and an activation (kernels/activation.h). cb must
// divide C. stride_w is stride unless the workload gives one of its own (as
// depthwise_conv2d's: PP-OCR's (2, 1) strides).
//
// Its CPU template puts the cb channels of a block in the vector lanes and
// blocks output rows and columns in registers: each ohi x owi x cb tile
// accumulates over the taps (order "reduce_order", kernel width unrolled or
// not: "unroll_kw") and is written with the epilogue fused. The padding
// border ("border") is either a zero-padded copy of the data computed at
// the root or inside the band ("pad", where: "data_at"), or no copy at all
// ("guard"): each tap is guarded by its bounds and loop partitioning peels
// the border rows and columns off, so the interior runs unguarded. Knobs
// also: "tile_oh" ([oho, ohi]), "tile_ow" ([owo, owi]), the order of the
// band {n, co, oho, owo} ("order"), the accumulator's band position
// ("acc_at") and the band loops fused into the parallel loop ("parallel").
#pragma once

#include <map>
#include <memory>
#include <string>

#include "kernels/activation.h"
#include "kernels/op_registry.h"
#include "schedule/config_space.h"

namespace kiln {

OpDef depthwise_conv2d_nchwc_op_def();

struct DepthwiseNchwcShape {
  int64_t N, C, H, W, R, S, stride, stride_w, pad, dil, OH, OW, cb;
  bool bias;
  Activation act;
};
// `act_prefix` names the activation's flags ("dw_" in dwsep_nchwc).
DepthwiseNchwcShape depthwise_conv2d_nchwc_shape(const OpInstance& op, const std::string& act_prefix = "");

// The depthwise reduction over the blocked layouts, in `acc`: with `padded`
// (a zero-padded copy of the data) the taps read it; otherwise they read
// the data, each guarded by its bounds (a reduction condition that loop
// partitioning can drop from the interior). Also the first half of
// dwsep_nchwc.
Tensor depthwise_nchwc_reduction(const DepthwiseNchwcShape& s, const Tensor& data, const Tensor* padded,
                                 const Tensor& weight, DType acc, const std::string& name);

// The op from its parameters (the workload's, defaults filled in).
OpInstance depthwise_conv2d_nchwc_define(const std::map<std::string, int64_t>& params, DType dtype);

std::shared_ptr<ConfigSpace> depthwise_conv2d_nchwc_space(const OpInstance& op, const CpuInfo& cpu);
Config depthwise_conv2d_nchwc_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space);
ScheduledOp depthwise_conv2d_nchwc_apply(const OpInstance& op, const Config& cfg);

}  // namespace kiln
