#include "kernels/conv2d_nhwc.h"

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/conv2d.h"
#include "kernels/conv2d_common.h"
#include "kernels/conv2d_winograd_nchwc.h"
#include "kernels/gpu_conv2d_template.h"
#include "kernels/template_util.h"

namespace kiln {

namespace {

// Band loops: 0 = n, 1 = oho, 2 = owo, 3 = ko.
const std::vector<std::vector<int64_t>>& band_orders() {
  static const std::vector<std::vector<int64_t>> orders = {
      {0, 1, 2, 3},  // all channel blocks of one spatial tile: its input stays in cache
      {0, 3, 1, 2},  // channel blocks outer: the weights of a block stay in cache
      {0, 1, 3, 2},  // rows, then channel blocks, then columns
      {3, 0, 1, 2},  // channel blocks outside the batch
  };
  return orders;
}

// Reduction loops: 0 = r, 1 = s, 2 = c.
const std::vector<std::vector<int64_t>>& reduce_orders() {
  static const std::vector<std::vector<int64_t>> orders = {
      {0, 1, 2},  // taps, then the contiguous channels
      {2, 0, 1},  // channels outermost
      {0, 2, 1},  // kernel width innermost
      {1, 0, 2},  // kernel width outermost
  };
  return orders;
}

}  // namespace

OpInstance conv2d_nhwc_define(int64_t N, int64_t H, int64_t W, int64_t C, int64_t K, int64_t R, int64_t S,
                              int64_t stride, int64_t pad, int64_t dilation, int64_t groups, bool with_bias, Activation act,
                              DType dtype) {
  check_groups("conv2d_nhwc", C, K, groups);
  check_window("conv2d_nhwc", H, W, R, S, pad, dilation);
  OpInstance op;
  op.op = "conv2d_nhwc";
  op.dtype = dtype;
  op.ints = {{"N", N},           {"H", H},
             {"W", W},           {"C", C},
             {"K", K},           {"R", R},
             {"S", S},           {"stride", stride},
             {"pad", pad},       {"dilation", dilation},
             {"groups", groups}, {"bias", with_bias}};
  set_activation_flags(act, &op.ints);
  ConvShape s = conv_shape(op);
  DType acc = accumulator_type(dtype);
  Tensor data = placeholder({N, H, W, C}, dtype, "data");
  Tensor weight = placeholder({R, S, s.Cg, K}, dtype, "weight");
  op.inputs = {data, weight};
  Tensor bias;
  if (with_bias) {
    bias = bias_placeholder(K, dtype);
    op.inputs.push_back(bias);
  }
  Tensor padded = pad_spatial(data, 1, 2, pad, make_zero(dtype));
  if (pad > 0) op.parts["data_pad"] = padded;
  IterVar rr = reduce_axis(static_cast<int>(R), "rr"), rs = reduce_axis(static_cast<int>(S), "rs"),
          rc = reduce_axis(static_cast<int>(s.Cg), "rc");
  const int st = static_cast<int>(stride), dl = static_cast<int>(dilation);
  const int kg = static_cast<int>(s.Kg), cg = static_cast<int>(s.Cg);
  Tensor conv = compute(
      {N, s.OH, s.OW, K},
      [&](Var n, Var oh, Var ow, Var k) {
        Expr c = groups > 1 ? floordiv(k, kg) * cg + rc->var : Expr(rc->var);
        return sum(cast(acc, padded(n, oh * st + rr->var * dl, ow * st + rs->var * dl, c)) *
                       cast(acc, weight(rr->var, rs->var, rc->var, k)),
                   {rr, rs, rc});
      },
      "conv", "conv2d_nhwc");
  Tensor out = conv;
  if (with_bias || act != Activation::kNone || acc != dtype) {
    op.parts["conv2d_nhwc"] = conv;
    out = compute(
        {N, s.OH, s.OW, K},
        [&](Var n, Var oh, Var ow, Var k) {
          return conv_epilogue(conv(n, oh, ow, k), with_bias ? &bias : nullptr, k, act, dtype);
        },
        "out", "epilogue");
  }
  op.outputs = {out};
  op.flops = 2.0 * N * K * s.OH * s.OW * s.Cg * R * S;
  return op;
}

std::shared_ptr<ConfigSpace> conv2d_nhwc_space(const OpInstance& op, const CpuInfo& cpu) {
  ConvShape c = conv_shape(op);
  int lanes = vector_lanes(cpu, accumulator_type(op.dtype));
  auto s = std::make_shared<ConfigSpace>();
  s->define_split_levels("tile_k", c.K,
                         {c.G == 1 ? vector_tile_candidates(c.K, lanes) : group_tile_candidates(c.Kg, lanes)});
  s->define_split_levels("tile_oh", c.OH, {capped_candidates(c.OH, {1, 2, 3, 4})});
  s->define_split_levels("tile_ow", c.OW, {row_tile_candidates(c.OW)});
  s->define_reorder("order", band_orders());
  s->define_choice("acc_at", {1, 2, 3});
  s->define_reorder("reduce_order", reduce_orders());
  s->define_annotate("unroll_kw", {"none", "unroll"});
  s->define_choice("parallel", {0, 1, 2, 3});
  s->define_choice("data_at", {-1, 0, 1, 2});
  s->define_choice("weight_at", {-1, 0});
  s->define_annotate("border", border_options(c.pad), true);  // configs stored before it: pad
  return s;
}

Config conv2d_nhwc_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space) {
  ConvShape c = conv_shape(op);
  DType acc = accumulator_type(op.dtype);
  int lanes = vector_lanes(cpu, acc);
  int64_t kb = c.K % (2 * lanes) == 0 ? 2 * lanes : lanes;
  nlohmann::json j;
  j["tile_k"] = nearest_split(space, "tile_k", {kb});
  kb = j["tile_k"][1].get<int64_t>();
  j["tile_oh"] = nearest_split(space, "tile_oh", {1});
  j["tile_ow"] = nearest_split(space, "tile_ow", {register_tile_cols(c.OW, kb, cpu, acc)});
  j["order"] = band_orders()[0];
  j["acc_at"] = 3;
  j["reduce_order"] = reduce_orders()[0];
  j["unroll_kw"] = "none";
  j["parallel"] = cpu.num_threads > 1 ? 2 : 0;
  j["data_at"] = -1;
  j["weight_at"] = -1;
  j["border"] = "pad";
  return space.make(j);
}

ScheduledOp conv2d_nhwc_apply(const OpInstance& op, const Config& cfg) {
  user_check(op.op == "conv2d_nhwc") << "the conv2d_nhwc template cannot schedule op '" << op.op << "'";
  ConvShape s = conv_shape(op);
  const int64_t kb = cfg.split("tile_k")[1], ohi = cfg.split("tile_oh")[1], owi = cfg.split("tile_ow")[1];
  user_check(s.G == 1 || s.Kg % kb == 0) << "conv2d_nhwc template: with groups, tile_k's inner factor (" << kb
                                         << ") must divide the output channels per group (" << s.Kg << ")";
  const std::vector<int64_t>& reduce_order = cfg.reorder("reduce_order");
  const int parallel = static_cast<int>(cfg.choice("parallel"));
  DType acc = accumulator_type(op.dtype);
  const Tensor& data = op.inputs[0];
  const Tensor& weight = op.inputs[1];
  const int64_t KB = (s.K + kb - 1) / kb;
  const int ikb = static_cast<int>(kb), iK = static_cast<int>(s.K);

  // weight_pack[ko, r, s, c, ki] = W[r, s, c, ko*kb + ki], zero past K.
  Tensor wpack = compute(
      {KB, s.R, s.S, s.Cg, kb},
      [&](const std::vector<Var>& v) {
        Expr k = v[0] * ikb + v[4];
        Expr w = weight(v[1], v[2], v[3], s.K % kb ? min(k, iK - 1) : k);
        return s.K % kb ? select(k < iK, w, make_zero(op.dtype)) : w;
      },
      "weight_pack", "pack");
  // "clip": the taps read the data where they fall inside it, no padded copy.
  const bool clip = cfg.annotate("border") == "clip";
  Tensor padded = clip ? Tensor() : pad_spatial(data, 1, 2, s.pad, make_zero(op.dtype));
  IterVar rr = reduce_axis(static_cast<int>(s.R), "rr"), rs = reduce_axis(static_cast<int>(s.S), "rs"),
          rc = reduce_axis(static_cast<int>(s.Cg), "rc");
  const int st = static_cast<int>(s.stride), dl = static_cast<int>(s.dil), icg = static_cast<int>(s.Cg);
  Tensor conv_blocked = compute(
      {s.N, s.OH, s.OW, KB, kb},
      [&](const std::vector<Var>& v) {
        // The group of channel block v[3] (kb divides Kg).
        Expr c = s.G > 1 ? floordiv(v[3], static_cast<int>(s.Kg / kb)) * icg + rc->var : Expr(rc->var);
        Expr h = v[1] * st + rr->var * dl, w = v[2] * st + rs->var * dl;
        InputTap tap = clip ? input_tap(h, w, s.pad, s.H, s.W) : InputTap{h, w, Expr()};
        Expr x = (clip ? data : padded)(v[0], tap.h, tap.w, c);
        return sum(cast(acc, x) * cast(acc, wpack(v[3], rr->var, rs->var, rc->var, v[4])), {rr, rs, rc},
                   tap.inside);
      },
      "conv_blocked", "conv2d_nhwc");
  Tensor out = compute(
      {s.N, s.OH, s.OW, s.K},
      [&](Var n, Var oh, Var ow, Var k) {
        return conv_epilogue(conv_blocked(n, oh, ow, floordiv(k, ikb), floormod(k, ikb)),
                             s.bias ? &op.inputs[2] : nullptr, k, s.act, op.dtype);
      },
      "conv", "unpack");

  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& sc = *sch;
  Stage so = sc[out];
  auto ax = so.axis();
  IterVar oho, ohi_l, owo, owi_l, ko, ki;
  so.split(ax[1], ohi, &oho, &ohi_l);
  so.split(ax[2], owi, &owo, &owi_l);
  so.split(ax[3], kb, &ko, &ki);
  LoopBand band(so, {ax[0], oho, owo, ko}, cfg.reorder("order"), {ohi_l, owi_l, ki}, parallel, true);
  so.vectorize(ki);
  const int acc_pos = std::max(0, std::min(static_cast<int>(cfg.choice("acc_at")), band.size() - 1));

  Stage sb = sc[conv_blocked];
  sb.set_scope(MemScope::kLocal);
  sb.compute_at(so, band.at(acc_pos));
  tile_accumulator(sb, {0, ohi, owi, 0, 0}, reduce_order, 4, cfg.annotate("unroll_kw") == "unroll" ? 1 : -1);

  const int weight_at = static_cast<int>(cfg.choice("weight_at"));
  place_stage(sc[wpack], so, band, weight_at < 0 ? -1 : band.position_of(3), acc_pos, parallel > 0, 4);
  if (!clip && s.pad > 0) place_stage(sc[padded], so, band, static_cast<int>(cfg.choice("data_at")), acc_pos, parallel > 0, -1);
  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
}

// A 3x3 stride-1 undilated ungrouped layer's Winograd alternatives, the
// channels blocked inside the kernel by the widest power of two up to 16
// that divides them; a 1x1 layer's flat alternative.
std::vector<OpAlternative> conv2d_nhwc_alternatives(const OpInstance& op) {
  const auto& p = op.ints;
  if (p.at("R") != 3 || p.at("S") != 3 || p.at("stride") != 1 || p.at("dilation") != 1 ||
      std::max<int64_t>(1, p.at("groups")) != 1)
    return flat_alternative(op);
  auto block = [](int64_t channels) {
    int64_t b = 16;
    while (channels % b) b /= 2;
    return b;
  };
  return winograd_alternatives(WinogradLayer{true, p.at("N"), p.at("C"), p.at("H"), p.at("W"), p.at("K"),
                                             p.at("pad"), block(p.at("C")), block(p.at("K")), p.at("bias") != 0,
                                             activation_of(p)},
                               op.dtype);
}

OpDef conv2d_nhwc_op_def() {
  OpDef d;
  d.name = "conv2d_nhwc";
  d.size_params = {"N", "C", "H", "W", "K"};
  d.summary =
      "2-D convolution, NHWC data [N,H,W,C], HWIO weights [R,S,C/groups,K], output [N,OH,OW,K], zero padding, "
      "optional bias[K] and an activation (relu, relu6, hswish, hsigmoid) fused; FLOPs: 2 per multiply-add, padding included";
  d.params = {
      int_param("N", "batch size", "1"), int_param("H", "input height"),    int_param("W", "input width"),
      int_param("C", "input channels"),  int_param("K", "output channels"), int_param("R", "kernel height"),
      int_param("S", "kernel width"),
  };
  for (const OpParam& p : window_params(true)) d.params.push_back(p);
  d.params.push_back(dtype_param());
  d.params.push_back(groups_param());
  for (const OpParam& p : epilogue_params()) d.params.push_back(p);
  d.build = [](const std::map<std::string, int64_t>& p, DType t) {
    return conv2d_nhwc_define(p.at("N"), p.at("H"), p.at("W"), p.at("C"), p.at("K"), p.at("R"), p.at("S"),
                              p.at("stride"), p.at("pad"), p.at("dilation"), p.at("groups"), p.at("bias") != 0,
                              activation_from_flags("conv2d_nhwc", p, t), t);
  };
  d.alternatives = conv2d_nhwc_alternatives;
  d.define_space = conv2d_nhwc_space;
  d.default_config = conv2d_nhwc_default;
  d.apply_config = conv2d_nhwc_apply;
  set_gpu_conv2d_template(d);
  return d;
}

}  // namespace kiln
