#include "kernels/conv2d.h"

#include <algorithm>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/conv2d_common.h"
#include "kernels/conv2d_template.h"
#include "kernels/gpu_conv2d_template.h"
#include "kernels/template_util.h"

namespace kiln {

ConvShape conv_shape(const OpInstance& op) {
  ConvShape s{};
  s.N = op.ints.at("N");
  s.C = op.ints.at("C");
  s.H = op.ints.at("H");
  s.W = op.ints.at("W");
  s.K = op.ints.at("K");
  s.R = op.ints.at("R");
  s.S = op.ints.at("S");
  s.stride = op.ints.at("stride");
  s.pad = op.ints.at("pad");
  s.dil = op.ints.at("dilation");
  s.OH = window_out_extent(s.H, s.R, s.stride, s.pad, s.dil);
  s.OW = window_out_extent(s.W, s.S, s.stride, s.pad, s.dil);
  auto flag = [&](const char* name) {
    auto it = op.ints.find(name);
    return it != op.ints.end() ? it->second : 0;
  };
  s.G = std::max<int64_t>(1, flag("groups"));
  s.Cg = s.C / s.G;
  s.Kg = s.K / s.G;
  s.bias = flag("bias") != 0;
  s.act = activation_of(op.ints);
  return s;
}

Tensor pad_input(const Tensor& data, const ConvShape& s, DType dtype) {
  return pad_spatial(data, 2, 3, s.pad, make_zero(dtype));
}

OpInstance conv2d_define(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S, int64_t stride,
                         int64_t pad, int64_t dilation, DType dtype, int64_t groups, bool with_bias,
                         Activation act) {
  OpInstance op;
  op.op = "conv2d";
  op.dtype = dtype;
  op.ints = {{"N", N},           {"C", C},
             {"H", H},           {"W", W},
             {"K", K},           {"R", R},
             {"S", S},           {"stride", stride},
             {"pad", pad},       {"dilation", dilation},
             {"groups", groups}, {"bias", with_bias}};
  set_activation_flags(act, &op.ints);
  check_groups("conv2d", C, K, groups);
  ConvShape s = conv_shape(op);
  user_check(s.OH > 0 && s.OW > 0) << "conv2d: the kernel (" << R << "x" << S << ", dilation " << dilation
                                   << ") does not fit the padded input (" << H + 2 * pad << "x" << W + 2 * pad << ")";
  DType acc = accumulator_type(dtype);
  Tensor data = placeholder({N, C, H, W}, dtype, "data");
  Tensor weight = placeholder({K, s.Cg, R, S}, dtype, "weight");
  Tensor padded = pad_input(data, s, dtype);
  IterVar rc = reduce_axis(static_cast<int>(s.Cg), "rc"), rr = reduce_axis(static_cast<int>(R), "rr"),
          rs = reduce_axis(static_cast<int>(S), "rs");
  const int st = static_cast<int>(stride), dl = static_cast<int>(dilation);
  const int kg = static_cast<int>(s.Kg), cg = static_cast<int>(s.Cg);
  Tensor out = compute(
      {N, K, s.OH, s.OW},
      [&](Var n, Var k, Var oh, Var ow) {
        Expr c = groups > 1 ? floordiv(k, kg) * cg + rc->var : Expr(rc->var);
        return sum(cast(acc, padded(n, c, oh * st + rr->var * dl, ow * st + rs->var * dl)) *
                       cast(acc, weight(k, rc->var, rr->var, rs->var)),
                   {rc, rr, rs});
      },
      "conv", "conv2d");
  op.inputs = {data, weight};
  if (pad > 0) op.parts["data_pad"] = padded;
  if (with_bias || act != Activation::kNone || acc != dtype) {
    Tensor bias;
    if (with_bias) {
      bias = bias_placeholder(K, dtype);
      op.inputs.push_back(bias);
    }
    op.parts["conv2d"] = out;
    Tensor conv = out;
    out = compute(
        {N, K, s.OH, s.OW},
        [&](Var n, Var k, Var oh, Var ow) {
          return conv_epilogue(conv(n, k, oh, ow), with_bias ? &bias : nullptr, k, act, dtype);
        },
        "out", "epilogue");
  }
  op.outputs = {out};
  op.flops = 2.0 * N * K * s.OH * s.OW * s.Cg * R * S;
  return op;
}

ScheduledOp conv2d_schedule(const OpInstance& op, const Conv2dSchedule& cfg) {
  user_check(cfg.kb > 0 && cfg.owb > 0) << "conv2d schedule: tile sizes must be positive";
  ConvShape s = conv_shape(op);
  Conv2dParams p;
  p.tile_k = {(s.K + cfg.kb - 1) / cfg.kb, cfg.kb};
  p.tile_c = {1, s.Cg};
  p.tile_oh = {s.OH, 1, 1};
  p.tile_ow = {(s.OW + cfg.owb - 1) / cfg.owb, cfg.owb};
  p.parallel = cfg.parallel ? 3 : 0;
  return conv2d_template_schedule(op, p);
}

OpDef conv2d_op_def() {
  OpDef d;
  d.name = "conv2d";
  d.size_params = {"N", "C", "H", "W", "K"};
  d.summary =
      "2-D convolution, NCHW data, weights [K, C/groups, R, S], zero padding, optional bias[K] and an activation (relu, relu6, hswish, hsigmoid) fused; "
      "FLOPs: 2 per multiply-add, padding included";
  d.params = {
      {OpParam::kInt, "N", "batch size", "1"},     {OpParam::kInt, "C", "input channels", ""},
      {OpParam::kInt, "H", "input height", ""},    {OpParam::kInt, "W", "input width", ""},
      {OpParam::kInt, "K", "output channels", ""}, {OpParam::kInt, "R", "kernel height", ""},
      {OpParam::kInt, "S", "kernel width", ""},
  };
  for (const OpParam& p : window_params(true)) d.params.push_back(p);
  d.params.push_back(dtype_param());
  d.params.push_back(groups_param());
  for (const OpParam& p : epilogue_params()) d.params.push_back(p);
  d.build = [](const std::map<std::string, int64_t>& p, DType t) {
    return conv2d_define(p.at("N"), p.at("C"), p.at("H"), p.at("W"), p.at("K"), p.at("R"), p.at("S"), p.at("stride"),
                         p.at("pad"), p.at("dilation"), t, p.at("groups"), p.at("bias") != 0,
                         activation_from_flags("conv2d", p, t));
  };
  d.define_space = conv2d_space;
  d.default_config = conv2d_default;
  d.apply_config = conv2d_apply;
  set_gpu_conv2d_template(d);
  return d;
}

}  // namespace kiln
