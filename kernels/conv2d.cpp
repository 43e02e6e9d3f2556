#include "kernels/conv2d.h"

#include "compute/error.h"
#include "compute/expr_ops.h"

namespace kiln {

namespace {

DType accumulator_type(DType t) { return t.is_float() ? t : DType::i32(); }

struct ConvShape {
  int64_t N, C, H, W, K, R, S, stride, pad, dil, OH, OW;
};

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

// Zero-padded input (the data itself when pad == 0).
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

}  // namespace

OpInstance conv2d_define(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S, int64_t stride,
                         int64_t pad, int64_t dilation, DType dtype) {
  OpInstance op;
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

Conv2dSchedule conv2d_default_config(const OpInstance& op, const CpuInfo& cpu) {
  ConvShape s = conv_shape(op);
  int lanes = std::max(1, cpu.vector_bits / accumulator_type(op.dtype).bits);
  Conv2dSchedule cfg;
  cfg.kb = s.K % (2 * lanes) == 0 ? 2 * lanes : lanes;
  if (s.K < cfg.kb) cfg.kb = s.K;
  // Widest column block (at most 14) that divides OW and keeps the
  // accumulator tile within 28 vector registers.
  int64_t regs_per_col = (cfg.kb + lanes - 1) / lanes;
  cfg.owb = 1;
  for (int64_t b = std::min<int64_t>(14, s.OW); b >= 1; --b)
    if (s.OW % b == 0 && b * regs_per_col <= 28) {
      cfg.owb = b;
      break;
    }
  if (cfg.owb < 4) cfg.owb = std::min<int64_t>(s.OW, std::max<int64_t>(1, 28 / regs_per_col));
  cfg.parallel = cpu.num_threads > 1;
  return cfg;
}

ScheduledOp conv2d_schedule(const OpInstance& op, const Conv2dSchedule& cfg) {
  user_check(cfg.kb > 0 && cfg.owb > 0) << "conv2d schedule: tile sizes must be positive";
  ConvShape s = conv_shape(op);
  DType acc = accumulator_type(op.dtype);
  const Tensor& data = op.inputs[0];
  const Tensor& weight = op.inputs[1];
  const int kb = static_cast<int>(cfg.kb);
  int64_t kblocks = (s.K + kb - 1) / kb;
  Tensor padded = pad_input(data, s, op.dtype);
  Tensor wpack = compute(
      {kblocks, s.C, s.R, s.S, cfg.kb},
      [&](const std::vector<Var>& v) {
        Expr k = v[0] * kb + v[4];
        Expr w = weight(min(k, static_cast<int>(s.K - 1)), v[1], v[2], v[3]);
        return s.K % kb == 0 ? w : select(k < static_cast<int>(s.K), w, make_zero(op.dtype));
      },
      "weight_pack", "pack");
  IterVar rc = reduce_axis(static_cast<int>(s.C), "rc"), rr = reduce_axis(static_cast<int>(s.R), "rr"),
          rs = reduce_axis(static_cast<int>(s.S), "rs");
  const int st = static_cast<int>(s.stride), dl = static_cast<int>(s.dil);
  Tensor conv_blocked = compute(
      {s.N, kblocks, s.OH, s.OW, cfg.kb},
      [&](const std::vector<Var>& v) {
        return sum(cast(acc, padded(v[0], rc->var, v[2] * st + rr->var * dl, v[3] * st + rs->var * dl)) *
                       cast(acc, wpack(v[1], rc->var, rr->var, rs->var, v[4])),
                   {rc, rr, rs});
      },
      "conv_blocked", "conv2d");
  Tensor out = compute(
      {s.N, s.K, s.OH, s.OW},
      [&](Var n, Var k, Var oh, Var ow) { return conv_blocked(n, floordiv(k, kb), oh, ow, floormod(k, kb)); }, "conv",
      "unpack");

  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& sc = *sch;
  if (s.pad > 0) {
    Stage sp = sc[padded];
    IterVar f = sp.fuse(sp.axis()[0], sp.axis()[1]);
    if (cfg.parallel) sp.parallel(f);
  }
  Stage sw = sc[wpack];
  sw.vectorize(sw.axis()[4]);

  Stage so = sc[out];
  auto ax = so.axis();
  IterVar ko, ki, owo, owi;
  so.split(ax[1], cfg.kb, &ko, &ki);
  so.split(ax[3], cfg.owb, &owo, &owi);
  so.reorder({ax[0], ko, ax[2], owo, owi, ki});
  IterVar outer = so.fuse({ax[0], ko, ax[2]});
  if (cfg.parallel) so.parallel(outer);

  Stage sb = sc[conv_blocked];
  sb.set_scope(MemScope::kLocal);
  sb.compute_at(so, owo);
  auto bx = sb.axis();
  auto br = sb.reduce_axis();
  sb.reorder({bx[0], bx[1], bx[2], br[0], br[1], br[2], bx[3], bx[4]});
  sb.unroll(bx[3]);
  sb.vectorize(bx[4]);
  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
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
  d.hand_schedule = [](const OpInstance& op, const CpuInfo& cpu) {
    return conv2d_schedule(op, conv2d_default_config(op, cpu));
  };
  return d;
}

}  // namespace kiln
