#include "kernels/conv2d_nchwc_bf16.h"

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/activation.h"
#include "kernels/conv2d_common.h"
#include "kernels/dot_conv2d_nchwc.h"
#include "kernels/tensor_intrinsics.h"

namespace kiln {

namespace {

// f32 sums (+ bias[k]), the activation, rounded to bf16; k = ko*kb + ki.
Tensor bf16_epilogue(const Conv2dNchwcShape& s, const Tensor& sums, const OpInstance& op, const std::string& name) {
  const Tensor* bias = s.bias ? &op.inputs[2] : nullptr;
  const int kb = static_cast<int>(s.kb);
  return compute(
      sums.shape(),
      [&](const std::vector<Var>& v) {
        Expr e = sums(std::vector<Expr>(v.begin(), v.end()));
        if (bias) e = e + cast(DType::f32(), (*bias)(v[1] * kb + v[4]));
        return cast(DType::bf16(), apply_activation(e, s.act));
      },
      name, "epilogue");
}

const DotConvKind& bf16_kind() {
  static const DotConvKind k{"conv2d_nchwc_bf16",
                             2,
                             DType::bf16(),
                             DType::bf16(),
                             DType::f32(),
                             "bf16",
                             [](const CpuInfo& cpu) { return cpu.avx512_bf16; },
                             x86_bf16_dot_16x2,
                             bf16_epilogue,
                             [](const CpuInfo& cpu) { return cpu.amx_bf16; }};
  return k;
}

OpInstance bf16_define(const std::map<std::string, int64_t>& params, DType) {
  OpInstance op;
  op.op = "conv2d_nchwc_bf16";
  op.dtype = DType::bf16();
  op.ints = params;
  const Conv2dNchwcShape s = conv2d_nchwc_shape(op);
  activation_from_flags("conv2d_nchwc_bf16", params, DType::bf16());
  dot_conv_inputs(bf16_kind(), s, &op);
  if (s.bias) op.inputs.push_back(placeholder({s.K}, DType::bf16(), "bias"));
  dot_conv_define(bf16_kind(), &op);
  return op;
}

}  // namespace

OpDef conv2d_nchwc_bf16_op_def() {
  OpDef d;
  d.name = "conv2d_nchwc_bf16";
  d.size_params = {"N", "C", "H", "W", "K"};
  d.summary =
      "bf16 2-D convolution on NCHW[x]c: data [N,C/cb,H,W,cb], weights in AVX512-BF16's blocks "
      "[K/kb,C/groups/cb,R,S,cb/2,kb,2], summed in f32, + bias[K] (bf16) and an activation, rounded to bf16 into "
      "out [N,K/kb,OH,OW,kb]; FLOPs: 2 per multiply-add, padding included";
  d.params = {
      int_param("N", "batch size", "1"), int_param("C", "input channels"),  int_param("H", "input height"),
      int_param("W", "input width"),     int_param("K", "output channels"), int_param("R", "kernel height"),
      int_param("S", "kernel width"),
  };
  for (const OpParam& p : window_params(true)) d.params.push_back(p);
  d.params.push_back(int_param("cb", "input channels per block (even, dividing C/groups)", "16"));
  d.params.push_back(int_param("kb", "output channels per block (divides K/groups)", "16"));
  d.params.push_back(groups_param());
  for (const OpParam& p : epilogue_params()) d.params.push_back(p);
  d.build = bf16_define;
  d.alternatives = flat_alternative;
  d.define_space = [](const OpInstance& op, const CpuInfo& cpu) { return dot_conv_space(bf16_kind(), op, cpu); };
  d.default_config = [](const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space) {
    return dot_conv_default(bf16_kind(), op, cpu, space);
  };
  d.apply_config = [](const OpInstance& op, const Config& cfg) { return dot_conv_apply(bf16_kind(), op, cfg); };
  return d;
}

}  // namespace kiln
