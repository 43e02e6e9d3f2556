#include "kernels/qconv2d_nchwc.h"

#include <algorithm>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/conv2d_common.h"
#include "kernels/conv2d_nchwc.h"
#include "kernels/conv2d_template.h"
#include "kernels/dot_conv2d_nchwc.h"
#include "kernels/quantize.h"
#include "kernels/template_util.h"
#include "kernels/tensor_intrinsics.h"

namespace kiln {

namespace {

// sum (+ bias[k]) requantized by scale[k], channel k = ko*kb + ki; bias and
// scale are the inputs after data and weight.
Tensor qconv_epilogue(const Conv2dNchwcShape& s, const Tensor& sums, const OpInstance& op, const std::string& name) {
  const Tensor* bias = s.bias ? &op.inputs[2] : nullptr;
  const Tensor* scale = op.dtype != DType::i32() ? &op.inputs[s.bias ? 3 : 2] : nullptr;
  const int kb = static_cast<int>(s.kb);
  const DType out = op.dtype;
  return compute(
      sums.shape(),
      [&](const std::vector<Var>& v) {
        Expr k = v[1] * kb + v[4];
        Expr e = sums(std::vector<Expr>(v.begin(), v.end()));
        if (bias) e = e + (*bias)(k);
        return requantize(e, scale ? (*scale)(k) : Expr(), out, s.act == Activation::kRelu);
      },
      name, "requantize");
}

// u8 x i8 into i32, 4 input channels per VNNI step.
const DotConvKind& qconv_kind() {
  static const DotConvKind k{"qconv2d_nchwc",
                             4,
                             DType::u8(),
                             DType::i8(),
                             DType::i32(),
                             "vnni",
                             [](const CpuInfo& cpu) { return cpu.avx512_vnni; },
                             x86_vnni_dot_16x4,
                             qconv_epilogue,
                             [](const CpuInfo& cpu) { return cpu.amx_int8; }};
  return k;
}

OpInstance qconv_define(const std::map<std::string, int64_t>& params, DType out) {
  OpInstance op;
  op.op = "qconv2d_nchwc";
  op.dtype = out;
  op.ints = params;
  const Conv2dNchwcShape s = conv2d_nchwc_shape(op);
  check_quantized_output("qconv2d_nchwc", out);
  dot_conv_inputs(qconv_kind(), s, &op);
  if (s.bias) op.inputs.push_back(placeholder({s.K}, DType::i32(), "bias"));
  if (out != DType::i32()) op.inputs.push_back(placeholder({s.K}, DType::f32(), "scale"));
  dot_conv_define(qconv_kind(), &op);
  return op;
}

}  // namespace

OpDef qconv2d_nchwc_op_def() {
  OpDef d;
  d.name = "qconv2d_nchwc";
  d.size_params = {"N", "C", "H", "W", "K"};
  d.summary =
      "int8 2-D convolution on NCHW[x]c: u8 data [N,C/cb,H,W,cb], i8 weights [K/kb,C/groups/cb,R,S,cb/4,kb,4], "
      "summed in i32, + bias[K] (i32), requantized by scale[K] into out [N,K/kb,OH,OW,kb] (u8, i8, f32 or i32); "
      "FLOPs: 2 per multiply-add, padding included";
  d.params = {
      int_param("N", "batch size", "1"), int_param("C", "input channels"),  int_param("H", "input height"),
      int_param("W", "input width"),     int_param("K", "output channels"), int_param("R", "kernel height"),
      int_param("S", "kernel width"),
  };
  for (const OpParam& p : window_params(true)) d.params.push_back(p);
  d.params.push_back(int_param("cb", "input channels per block (a multiple of 4 dividing C/groups)", "16"));
  d.params.push_back(int_param("kb", "output channels per block (divides K/groups)", "16"));
  d.params.push_back(groups_param());
  d.params.push_back({OpParam::kFlag, "bias", "1: add an i32 bias[K] to the sums", "0"});
  d.params.push_back({OpParam::kFlag, "relu", "1: clamp the result at 0", "0"});
  d.params.push_back(quantized_out_param());
  d.build = qconv_define;
  d.alternatives = flat_alternative;
  d.define_space = [](const OpInstance& op, const CpuInfo& cpu) { return dot_conv_space(qconv_kind(), op, cpu); };
  d.default_config = [](const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space) {
    return dot_conv_default(qconv_kind(), op, cpu, space);
  };
  d.apply_config = [](const OpInstance& op, const Config& cfg) { return dot_conv_apply(qconv_kind(), op, cfg); };
  return d;
}

}  // namespace kiln
