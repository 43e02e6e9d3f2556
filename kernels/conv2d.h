// conv2d, NCHW data and KCRS weights:
//   out[n, k, oh, ow] = sum_{c, r, s} pad(data)[n, c, oh*stride + r*dilation,
//                                               ow*stride + s*dilation] * W[k, c, r, s]
// with zero padding `pad` on both sides of H and W. With groups > 1 the
// channels split into `groups` independent convolutions: W is
// [K, C/groups, R, S] and output channel k reads input channels
// [g*C/groups, (g+1)*C/groups) of its group g = k / (K/groups). Optional
// fused epilogue: + bias[k], then an activation (kernels/activation.h).
#pragma once

#include "kernels/activation.h"
#include "kernels/op_registry.h"

namespace kiln {

OpDef conv2d_op_def();

OpInstance conv2d_define(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S, int64_t stride,
                         int64_t pad, int64_t dilation, DType dtype, int64_t groups = 1, bool bias = false,
                         Activation act = Activation::kNone);

// The resolved shape of a built conv2d or conv2d_nhwc op (OH, OW: output height, width;
// G groups of Cg input and Kg output channels).
struct ConvShape {
  int64_t N, C, H, W, K, R, S, stride, pad, dil, OH, OW;
  int64_t G = 1, Cg = 0, Kg = 0;
  bool bias = false;
  Activation act = Activation::kNone;
};
ConvShape conv_shape(const OpInstance& op);
// The zero-padded input (the data itself when pad == 0).
Tensor pad_input(const Tensor& data, const ConvShape& s, DType dtype);

// The NCHW schedule with its few classic parameters: weights packed as
// [K/kb, C, R, S, kb]; each (owb x kb) output tile accumulates in registers
// in an NCHW[kb]c layout and is copied out to NCHW. A point of the template
// (conv2d_template.h), kept for tests that pick these parameters directly.
struct Conv2dSchedule {
  int64_t kb = 32;   // output channels per tile (vectorized)
  int64_t owb = 14;  // output columns per tile (unrolled)
  bool parallel = true;
};
ScheduledOp conv2d_schedule(const OpInstance& op, const Conv2dSchedule& cfg);

}  // namespace kiln
