// The convolutions on NCHW[x]c whose weights come in the blocks of a CPU
// dot-product instruction: `steps` input channels innermost, then the
// output channel block (oneDNN's OIhw4i16o4i for int8, OIhw8i16o2i for
// bf16):
//   data   [N, C/cb, H, W, cb]                      (zero padding)
//   weight [K/kb, C/groups/cb, R, S, cb/steps, kb, steps]
//   sum[n, ko, oh, ow, ki] = sum_{co, r, s, ci} acc(pad(data)[n, block,
//       oh*stride + r*dilation, ow*stride + s*dilation, ci]) *
//       acc(weight[ko, co, r, s, ci/steps, ki, ci%steps])
// followed by the op's own epilogue. Shared by qconv2d_nchwc (u8 x i8 into
// i32, VNNI) and conv2d_nchwc_bf16 (bf16 into f32, AVX512-BF16).
//
// The CPU template is conv2d_nchwc's (register tiles of kbi blocks x ohi
// rows x owi columns accumulated over the reduction, the zero-padded data
// placed by "data_at", or the taps on padding skipped: "border" "clip"),
// plus a "tensorize" knob where the CPU has the
// instruction and kb is a multiple of 16: each register tile's 16 channels
// x `steps` input channels become one instruction call. Where the CPU has
// AMX, the input channel block is one AMX k tile (cb = 16 x steps: 64 for
// int8, 32 for bf16), kb is a multiple of 32 and the convolution is not
// grouped, the knob also offers "amx": each register tile's rows of output
// pixels x 32 output channels become one AMX call (x86_amx_conv) over the
// whole reduction (input channel blocks, kernel rows and columns), which
// starts from zeroed tiles.
#pragma once

#include <functional>
#include <string>

#include "kernels/conv2d_nchwc.h"
#include "kernels/op_registry.h"

namespace kiln {

struct DotConvKind {
  std::string op;        // the op's name
  int64_t steps;         // input channels per instruction step
  DType data, weight, acc;
  std::string tensorize;  // the knob's label of the tensorized schedule ("vnni", "bf16")
  std::function<bool(const CpuInfo&)> has_instruction;
  std::function<TensorIntrin()> intrinsic;
  // The output from the sums: the op's epilogue over its inputs after data
  // and weight (bias, scales).
  std::function<Tensor(const Conv2dNchwcShape&, const Tensor& sums, const OpInstance& op, const std::string& name)>
      epilogue;
  // Whether the CPU has the kind's AMX tile products (x86_amx_conv).
  std::function<bool(const CpuInfo&)> has_amx = [](const CpuInfo&) { return false; };
};

// The op's checks of cb, kb, groups and window (user errors), then its
// data and weight placeholders (inputs 0 and 1).
void dot_conv_inputs(const DotConvKind& k, const Conv2dNchwcShape& s, OpInstance* op);
// The sums over the zero-padded data (or the data, without padding); with
// `clip`, `padded` is the unpadded data and the taps on padding are skipped
// (a condition on the reduction).
Tensor dot_conv_sums(const DotConvKind& k, const Conv2dNchwcShape& s, const Tensor& padded, const Tensor& weight,
                     const std::string& name, bool clip = false);
// The op's TE: sums, then the kind's epilogue (inputs already set).
void dot_conv_define(const DotConvKind& k, OpInstance* op);

std::shared_ptr<ConfigSpace> dot_conv_space(const DotConvKind& k, const OpInstance& op, const CpuInfo& cpu);
Config dot_conv_default(const DotConvKind& k, const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space);
ScheduledOp dot_conv_apply(const DotConvKind& k, const OpInstance& op, const Config& cfg);

}  // namespace kiln
