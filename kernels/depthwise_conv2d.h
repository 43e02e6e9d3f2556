// depthwise_conv2d: one filter per channel (channel multiplier 1), NCHW
// data, weights [C, 1, R, S]:
//   out[n, c, oh, ow] = sum_{r, s} pad(data)[n, c, oh*stride + r*dilation,
//                                            ow*stride_w + s*dilation] * W[c, 0, r, s]
// (stride_w: the stride in W where it differs from stride, which MobileNets
// and PP-OCR's (2, 1) downsampling need; stride otherwise)
// then optional + bias[c] and an activation (kernels/activation.h).
//
// Its CPU template vectorizes across channels in the NCHW[x]c layout
// (x = cb = "tile_c"): the padded data is repacked as
// data_pack[N, C/cb, H+2p, W+2p, cb] and the weights as
// weight_pack[C/cb, R, S, cb] (zero past C); each ohi x owi x cb output
// tile accumulates in registers (conv_blocked[N, C/cb, OH, OW, cb]) over
// the taps (order "reduce_order", kernel width unrolled or not:
// "unroll_kw") and is unpacked to NCHW with the epilogue fused (scalar, or
// vectorized along c or ow: "out_vec"). Knobs also: "tile_oh", "tile_ow",
// the order of the band {n, co, oho, owo} ("order"), the accumulator's
// band position ("acc_at"), the band loops fused into the parallel loop
// ("parallel"), where the data pack ("data_at") and weight pack
// ("weight_at") are computed. With "layout" = nchw it packs nothing instead:
// each ohi x owi output tile (owi vectorized along the row) accumulates in
// registers straight from the NCHW data, the border taps guarded and peeled
// off the interior by loop partitioning (the tuner picks either layout).
#pragma once

#include <memory>

#include "kernels/activation.h"
#include "kernels/op_registry.h"
#include "schedule/config_space.h"

namespace kiln {

OpDef depthwise_conv2d_op_def();

// `stride` is the stride in H, and in W too unless `stride_w` > 0.
OpInstance depthwise_conv2d_define(int64_t N, int64_t C, int64_t H, int64_t W, int64_t R, int64_t S, int64_t stride,
                                   int64_t pad, int64_t dilation, bool bias, Activation act, DType dtype,
                                   int64_t stride_w = 0);

std::shared_ptr<ConfigSpace> depthwise_conv2d_space(const OpInstance& op, const CpuInfo& cpu);
Config depthwise_conv2d_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space);
ScheduledOp depthwise_conv2d_apply(const OpInstance& op, const Config& cfg);

}  // namespace kiln
