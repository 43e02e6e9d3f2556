// qconv2d_nchwc: the int8 convolution on the packed NCHW[x]c layout, as
// oneDNN's u8 x s8 convolution computes it, weights in the blocked layout
// VNNI reads (oneDNN's OIhw4i16o4i family: 4 input channels innermost,
// then the output channel block):
//   data   [N, C/cb, H, W, cb]                          u8 (zero padding)
//   weight [K/kb, C/groups/cb, R, S, cb/4, kb, 4]        i8 (input channel ci
//          of a block at [.., ci/4, .., ci%4])
//   out    [N, K/kb, OH, OW, kb]                         the "out" type
//   sum[n, ko, oh, ow, ki] = sum_{co, r, s, ci} i32(pad(data)[n, block,
//       oh*stride + r*dilation, ow*stride + s*dilation, ci]) * i32(weight[ko, co, r, s, ci/4, ki, ci%4])
// then + bias[k] (i32) and requantization by scale[k] (kernels/quantize.h)
// into u8 / i8 (relu: clamped at 0), f32 or i32, k = ko*kb + ki. cb is a
// multiple of 4 dividing C/groups; kb divides K/groups. Inputs: data,
// weight, [bias], [scale].
//
// Its CPU template is conv2d_nchwc's (register tiles of kbi blocks x ohi
// rows x owi columns accumulated in i32 over the reduction, the data's
// zero-padded copy placed by "data_at"), plus a "tensorize" knob where
// the CPU has AVX512-VNNI and kb is a multiple of 16: each register tile's
// 16 channels x 4 input channels become one vpdpbusd (kernels/tensor_intrinsics.h);
// with AMX-INT8, cb = 64, kb a multiple of 32 and no groups, also "amx"
// (one AMX call per 32 output channels of a tile's pixels over the whole
// reduction; kernels/dot_conv2d_nchwc.h).
#pragma once

#include "kernels/op_registry.h"

namespace kiln {

OpDef qconv2d_nchwc_op_def();

}  // namespace kiln
