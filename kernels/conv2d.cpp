#include "kernels/conv2d.h"

#include "compute/error.h"
#include "compute/expr_ops.h"
#include "kernels/conv2d_template.h"
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
  s.OH = (s.H + 2 * s.pad - s.dil * (s.R - 1) - 1) / s.stride + 1;
  s.OW = (s.W + 2 * s.pad - s.dil * (s.S - 1) - 1) / s.stride + 1;
  return s;
}

Tensor pad_input(const Tensor& data, const ConvShape& s, DType dtype) {
  if (s.pad == 0) return data;
  const int p = static_cast<int>(s.pad);
  return compute(
      {s.N, s.C, s.H + 2 * s.pad, s.W + 2 * s.pad},
      [&](Var n, Var c, Var h, Var w) {
        Expr inside = h >= p && h < static_cast<int>(s.H + p) && w >= p && w < static_cast<int>(s.W + p);
        Expr hh = min(max(h - p, 0), static_cast<int>(s.H - 1)), ww = min(max(w - p, 0), static_cast<int>(s.W - 1));
        return select(inside, data(n, c, hh, ww), make_zero(dtype));
      },
      "data_pad", "pad");
}

OpInstance conv2d_define(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S, int64_t stride,
                         int64_t pad, int64_t dilation, DType dtype) {
  OpInstance op;
  op.op = "conv2d";
  op.dtype = dtype;
  op.ints = {{"N", N}, {"C", C}, {"H", H},           {"W", W},     {"K", K},
             {"R", R}, {"S", S}, {"stride", stride}, {"pad", pad}, {"dilation", dilation}};
  ConvShape s = conv_shape(op);
  user_check(s.OH > 0 && s.OW > 0) << "conv2d: the kernel (" << R << "x" << S << ", dilation " << dilation
                                   << ") does not fit the padded input (" << H + 2 * pad << "x" << W + 2 * pad << ")";
  DType acc = accumulator_type(dtype);
  Tensor data = placeholder({N, C, H, W}, dtype, "data");
  Tensor weight = placeholder({K, C, R, S}, dtype, "weight");
  Tensor padded = pad_input(data, s, dtype);
  IterVar rc = reduce_axis(static_cast<int>(C), "rc"), rr = reduce_axis(static_cast<int>(R), "rr"),
          rs = reduce_axis(static_cast<int>(S), "rs");
  const int st = static_cast<int>(stride), dl = static_cast<int>(dilation);
  Tensor out = compute(
      {N, K, s.OH, s.OW},
      [&](Var n, Var k, Var oh, Var ow) {
        return sum(cast(acc, padded(n, rc->var, oh * st + rr->var * dl, ow * st + rs->var * dl)) *
                       cast(acc, weight(k, rc->var, rr->var, rs->var)),
                   {rc, rr, rs});
      },
      "conv", "conv2d");
  op.inputs = {data, weight};
  op.outputs = {out};
  op.flops = 2.0 * N * K * s.OH * s.OW * C * R * S;
  return op;
}

ScheduledOp conv2d_schedule(const OpInstance& op, const Conv2dSchedule& cfg) {
  user_check(cfg.kb > 0 && cfg.owb > 0) << "conv2d schedule: tile sizes must be positive";
  ConvShape s = conv_shape(op);
  Conv2dParams p;
  p.tile_k = {(s.K + cfg.kb - 1) / cfg.kb, cfg.kb};
  p.tile_c = {1, s.C};
  p.tile_oh = {s.OH, 1, 1};
  p.tile_ow = {(s.OW + cfg.owb - 1) / cfg.owb, cfg.owb};
  p.parallel = cfg.parallel ? 3 : 0;
  return conv2d_template_schedule(op, p);
}

OpDef conv2d_op_def() {
  OpDef d;
  d.name = "conv2d";
  d.summary = "2-D convolution, NCHW data, KCRS weights, zero padding";
  d.params = {
      {OpParam::kInt, "N", "batch size", "1"},
      {OpParam::kInt, "C", "input channels", ""},
      {OpParam::kInt, "H", "input height", ""},
      {OpParam::kInt, "W", "input width", ""},
      {OpParam::kInt, "K", "output channels", ""},
      {OpParam::kInt, "R", "kernel height", ""},
      {OpParam::kInt, "S", "kernel width", ""},
      {OpParam::kInt, "stride", "stride in H and W", "1"},
      {OpParam::kInt, "pad", "zero padding on each side of H and W", "0", 0},
      {OpParam::kInt, "dilation", "spacing between kernel taps", "1"},
      {OpParam::kDType, "dtype", "element type (f32, f64, i8, u8, i32; integers accumulate in i32)", "f32"},
  };
  d.build = [](const std::map<std::string, int64_t>& p, DType t) {
    return conv2d_define(p.at("N"), p.at("C"), p.at("H"), p.at("W"), p.at("K"), p.at("R"), p.at("S"), p.at("stride"),
                         p.at("pad"), p.at("dilation"), t);
  };
  d.define_space = conv2d_space;
  d.default_config = conv2d_default;
  d.apply_config = conv2d_apply;
  d.hand_schedule = [](const OpInstance& op, const CpuInfo& cpu) {
    auto space = conv2d_space(op, cpu);
    return conv2d_apply(op, conv2d_default(op, cpu, *space));
  };
  return d;
}

}  // namespace kiln
