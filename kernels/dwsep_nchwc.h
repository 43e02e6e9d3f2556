// dwsep_nchwc: a depthwise-separable block in one kernel, on the blocked
// NCHW[x]c layout: a depthwise R x S convolution (one filter per channel,
// + bias[c] and its activation) followed by a pointwise 1x1 convolution
// from C to K channels (+ bias[k] and its activation):
//   data      [N, C/cb, H, W, cb]
//   dw_weight [C/cb, R, S, cb]              (as depthwise_conv2d_nchwc)
//   pw_weight [K/kb, C/cb, 1, 1, cb, kb]    (as conv2d_nchwc with R = S = 1)
//   out       [N, K/kb, OH, OW, kb]
//   dw[n, co, oh, ow, ci] = act_dw(sum_{r, s} pad(data)[n, co, oh*stride + r*dilation,
//                                  ow*stride + s*dilation, ci] * dw_weight[co, r, s, ci] + dw_bias[c])
//   out[n, ko, oh, ow, ki] = act(sum_{co, ci} dw[n, co, oh, ow, ci] * pw_weight[ko, co, 0, 0, ci, ki] + pw_bias[k])
// The flag "bias" adds both biases (batch norm folded into each
// convolution); dw_relu, dw_relu6, dw_hswish, dw_hsigmoid pick the
// depthwise activation, relu, relu6, hswish, hsigmoid the pointwise one
// (kernels/activation.h). The result is the same as depthwise_conv2d_nchwc
// then conv2d_nchwc (R = S = 1, kb) on its output.
//
// Its CPU template never writes the depthwise output to memory: for each
// tile of output rows and columns (and all C channels) it computes the
// depthwise tile into a small buffer (L1-sized: C x ohi x owi floats, or
// whole rows with "dw_at" = rows), channel blocks in the vector lanes and
// columns in registers, then runs the pointwise convolution over it:
// kbi output blocks x ohi x owi columns accumulate in registers over the C
// channels. Knobs: "tile_oh" ([oho, ohi]), "tile_ow" ([owo, owi]),
// "tile_kb" ([kbo, kbi]), "dw_at" (the depthwise tile per column tile or
// per row band), "parallel" (band loops {n, oho} in the parallel loop) and
// "border" (guarded depthwise taps, peeled by loop partitioning, or a
// zero-padded copy of the data at the root).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "kernels/activation.h"
#include "kernels/depthwise_conv2d_nchwc.h"
#include "kernels/op_registry.h"
#include "schedule/config_space.h"

namespace kiln {

OpDef dwsep_nchwc_op_def();

// The depthwise half's shape (its `act`: the dw_ flags), plus the pointwise
// half's output channels, block and activation.
struct DwsepShape : DepthwiseNchwcShape {
  int64_t K, kb;
  Activation pw_act;
};
DwsepShape dwsep_nchwc_shape(const OpInstance& op);

// The workloads of the block's two halves as separate ops: the
// depthwise_conv2d_nchwc and the conv2d_nchwc (1x1) it is equivalent to.
std::pair<std::string, std::string> dwsep_nchwc_halves(const OpInstance& op);

}  // namespace kiln
