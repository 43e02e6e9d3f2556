// conv2d_nchwc_bf16: the bf16 convolution on the packed NCHW[x]c layout,
// as oneDNN's bf16 convolution computes it, weights in the blocked layout
// AVX512-BF16 reads (oneDNN's OIhw8i16o2i family: input channel pairs
// innermost, then the output channel block):
//   data   [N, C/cb, H, W, cb]                       bf16 (zero padding)
//   weight [K/kb, C/groups/cb, R, S, cb/2, kb, 2]     bf16 (input channel ci
//          of a block at [.., ci/2, .., ci%2])
//   out    [N, K/kb, OH, OW, kb]                      bf16
//   sum = sum_{co, r, s, ci} f32(pad(data)[...]) * f32(weight[...]) in f32,
// then + f32(bias[k]) (bf16 bias) and the activation, rounded to bf16 once
// (to nearest even). cb is even and divides C/groups; kb divides K/groups.
// Inputs: data, weight, [bias].
//
// Its CPU template is kernels/dot_conv2d_nchwc.h's with the tensorize knob
// "bf16" (vdpbf16ps, 16 output channels x 2 input channels per call) where
// the CPU has AVX512-BF16 and kb is a multiple of 16, and "amx" (AMX-BF16,
// cb = 32, kb a multiple of 32, no groups: one tdpbf16ps call per 32
// output channels of a tile's pixels over the whole reduction). The
// instructions sum each pair in its own order and rounding (compute/hw_instructions.h), so
// tensorized results differ from the interpreter's f32 loop in the last
// bits, as any reordered f32 sum does.
#pragma once

#include "kernels/op_registry.h"

namespace kiln {

OpDef conv2d_nchwc_bf16_op_def();

}  // namespace kiln
