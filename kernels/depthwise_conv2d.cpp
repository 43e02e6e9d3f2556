#include "kernels/depthwise_conv2d.h"

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/conv2d_common.h"
#include "kernels/gpu_depthwise_template.h"
#include "kernels/template_util.h"

namespace kiln {

namespace {

// stride is the stride in H; stride_w the one in W (the op's stride_w
// parameter, or stride when that is 0).
struct DwShape {
  int64_t N, C, H, W, R, S, stride, stride_w, pad, dil, OH, OW;
  bool bias;
  Activation act;
};

DwShape dw_shape(const OpInstance& op) {
  auto at = [&](const char* n) { return op.ints.at(n); };
  auto sw = op.ints.find("stride_w");
  const int64_t stride_w = sw != op.ints.end() && sw->second > 0 ? sw->second : at("stride");
  DwShape s{at("N"),  at("C"),   at("H"),        at("W"), at("R"), at("S"),         at("stride"),
            stride_w, at("pad"), at("dilation"), 0,       0,       at("bias") != 0, activation_of(op.ints)};
  s.OH = window_out_extent(s.H, s.R, s.stride, s.pad, s.dil);
  s.OW = window_out_extent(s.W, s.S, s.stride_w, s.pad, s.dil);
  return s;
}

}  // namespace

OpInstance depthwise_conv2d_define(int64_t N, int64_t C, int64_t H, int64_t W, int64_t R, int64_t S, int64_t stride,
                                   int64_t pad, int64_t dilation, bool with_bias, Activation act, DType dtype,
                                   int64_t stride_w) {
  check_window("depthwise_conv2d", H, W, R, S, pad, dilation);
  OpInstance op;
  op.op = "depthwise_conv2d";
  op.dtype = dtype;
  op.ints = {{"N", N},
             {"C", C},
             {"H", H},
             {"W", W},
             {"R", R},
             {"S", S},
             {"stride", stride},
             {"pad", pad},
             {"dilation", dilation},
             {"bias", with_bias}};
  if (stride_w > 0 && stride_w != stride) op.ints["stride_w"] = stride_w;
  set_activation_flags(act, &op.ints);
  DwShape s = dw_shape(op);
  DType acc = accumulator_type(dtype);
  Tensor data = placeholder({N, C, H, W}, dtype, "data");
  Tensor weight = placeholder({C, 1, R, S}, dtype, "weight");
  op.inputs = {data, weight};
  Tensor bias;
  if (with_bias) {
    bias = bias_placeholder(C, dtype);
    op.inputs.push_back(bias);
  }
  Tensor padded = pad_spatial(data, 2, 3, pad, make_zero(dtype));
  if (pad > 0) op.parts["data_pad"] = padded;
  IterVar rr = reduce_axis(static_cast<int>(R), "rr"), rs = reduce_axis(static_cast<int>(S), "rs");
  const int st = static_cast<int>(s.stride), st_w = static_cast<int>(s.stride_w), dl = static_cast<int>(dilation);
  Tensor conv = compute(
      {N, C, s.OH, s.OW},
      [&](Var n, Var c, Var oh, Var ow) {
        return sum(cast(acc, padded(n, c, oh * st + rr->var * dl, ow * st_w + rs->var * dl)) *
                       cast(acc, weight(c, 0, rr->var, rs->var)),
                   {rr, rs});
      },
      "conv", "depthwise_conv2d");
  Tensor out = conv;
  if (with_bias || act != Activation::kNone || acc != dtype) {
    op.parts["depthwise_conv2d"] = conv;
    out = compute(
        {N, C, s.OH, s.OW},
        [&](Var n, Var c, Var oh, Var ow) {
          return conv_epilogue(conv(n, c, oh, ow), with_bias ? &bias : nullptr, c, act, dtype);
        },
        "out", "epilogue");
  }
  op.outputs = {out};
  op.flops = 2.0 * N * C * s.OH * s.OW * R * S;
  return op;
}

std::shared_ptr<ConfigSpace> depthwise_conv2d_space(const OpInstance& op, const CpuInfo& cpu) {
  DwShape c = dw_shape(op);
  int lanes = vector_lanes(cpu, accumulator_type(op.dtype));
  std::vector<int64_t> cb = vector_tile_candidates(c.C, lanes);
  cb.insert(cb.begin(), 1);  // scalar channels: the whole row tile works on one channel
  auto s = std::make_shared<ConfigSpace>();
  s->define_split_levels("tile_c", c.C, {capped_candidates(c.C, cb)});
  s->define_split_levels("tile_oh", c.OH, {capped_candidates(c.OH, {1, 2, 3, 4})});
  s->define_split_levels("tile_ow", c.OW, {row_tile_candidates(c.OW)});
  s->define_reorder("order", channel_band_orders());
  s->define_choice("acc_at", {1, 2, 3});
  s->define_reorder("reduce_order", {{0, 1}, {1, 0}});
  s->define_annotate("unroll_kw", {"none", "unroll"});
  s->define_choice("parallel", {0, 1, 2, 3});
  s->define_choice("data_at", {-1, 1, 2, 3});
  s->define_choice("weight_at", {-1, 0});
  s->define_annotate("out_vec", {"none", "c", "ow"});
  // "blocked": the packed NCHW[x]c path above; "nchw": no packing, the output
  // row vectorized and the border taps guarded (peeled by loop partitioning).
  s->define_annotate("layout", {"blocked", "nchw"}, true);  // configs stored before it: blocked
  return s;
}

Config depthwise_conv2d_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space) {
  DwShape c = dw_shape(op);
  DType acc = accumulator_type(op.dtype);
  nlohmann::json j;
  j["tile_c"] = nearest_split(space, "tile_c", {vector_lanes(cpu, acc)});
  j["tile_oh"] = nearest_split(space, "tile_oh", {1});
  j["tile_ow"] = nearest_split(space, "tile_ow", {register_tile_cols(c.OW, j["tile_c"][1].get<int64_t>(), cpu, acc)});
  j["order"] = channel_band_orders()[0];
  j["acc_at"] = 3;
  j["reduce_order"] = {0, 1};
  j["unroll_kw"] = "unroll";
  j["parallel"] = cpu.num_threads > 1 ? 2 : 0;
  // The packed rows a channel block needs, just before its use.
  j["data_at"] = 1;
  j["weight_at"] = -1;
  j["out_vec"] = "none";
  j["layout"] = "blocked";
  return space.make(j);
}

namespace {

// The "nchw" layout: the convolution straight on NCHW, no packed copy. Each
// ohi x owi output tile (owi vectorized along the row) accumulates in
// registers over the taps, each tap guarded by its bounds.
ScheduledOp depthwise_nchw_apply(const OpInstance& op, const DwShape& s, const Config& cfg) {
  const int64_t ohi = cfg.split("tile_oh")[1], owi = cfg.split("tile_ow")[1];
  const int parallel = static_cast<int>(cfg.choice("parallel"));
  DType acc = accumulator_type(op.dtype);
  const Tensor& data = op.inputs[0];
  const Tensor& weight = op.inputs[1];
  IterVar rr = reduce_axis(static_cast<int>(s.R), "rr"), rs = reduce_axis(static_cast<int>(s.S), "rs");
  const int st = static_cast<int>(s.stride), st_w = static_cast<int>(s.stride_w), dl = static_cast<int>(s.dil),
            p = static_cast<int>(s.pad);
  Tensor conv_acc = compute(
      {s.N, s.C, s.OH, s.OW},
      [&](Var n, Var c, Var oh, Var ow) {
        Expr h = oh * st + rr->var * dl - p, w = ow * st_w + rs->var * dl - p;
        Expr x = cast(acc, data(n, c, h, w)) * cast(acc, weight(c, 0, rr->var, rs->var));
        if (p == 0) return sum(x, {rr, rs});
        return sum(x, {rr, rs}, h >= 0 && h < static_cast<int>(s.H) && w >= 0 && w < static_cast<int>(s.W));
      },
      "conv_acc", "depthwise_conv2d");
  Tensor out = compute(
      {s.N, s.C, s.OH, s.OW},
      [&](Var n, Var c, Var oh, Var ow) {
        return conv_epilogue(conv_acc(n, c, oh, ow), s.bias ? &op.inputs[2] : nullptr, c, s.act, op.dtype);
      },
      "conv", "output");
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& sc = *sch;
  Stage so = sc[out];
  auto ax = so.axis();
  IterVar oho, ohi_l, owo, owi_l;
  so.split(ax[2], ohi, &oho, &ohi_l);
  so.split(ax[3], owi, &owo, &owi_l);
  LoopBand band(so, {ax[0], ax[1], oho, owo}, cfg.reorder("order"), {ohi_l, owi_l}, parallel, true);
  so.vectorize(owi_l);
  const int acc_pos = std::max(0, std::min(static_cast<int>(cfg.choice("acc_at")), band.size() - 1));
  Stage sb = sc[conv_acc];
  sb.set_scope(MemScope::kLocal);
  sb.compute_at(so, band.at(acc_pos));
  tile_accumulator(sb, {0, 0, ohi, owi}, cfg.reorder("reduce_order"), 3,
                   cfg.annotate("unroll_kw") == "unroll" ? 1 : -1);
  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
}

}  // namespace

ScheduledOp depthwise_conv2d_apply(const OpInstance& op, const Config& cfg) {
  user_check(op.op == "depthwise_conv2d") << "the depthwise_conv2d template cannot schedule op '" << op.op << "'";
  DwShape s = dw_shape(op);
  if (cfg.annotate("layout") == "nchw") return depthwise_nchw_apply(op, s, cfg);
  const int64_t cb = cfg.split("tile_c")[1], ohi = cfg.split("tile_oh")[1], owi = cfg.split("tile_ow")[1];
  const int parallel = static_cast<int>(cfg.choice("parallel"));
  const std::string out_vec = cfg.annotate("out_vec");
  DType acc = accumulator_type(op.dtype);
  const Tensor& data = op.inputs[0];
  const Tensor& weight = op.inputs[1];
  const int64_t CB = (s.C + cb - 1) / cb;
  const int icb = static_cast<int>(cb), iC = static_cast<int>(s.C);

  // data_pack[n, co, h, w, ci] = pad(data)[n, co*cb + ci, h, w], zero past C.
  Tensor dpack = pack_nchwc(data, 1, cb, s.pad, op.dtype);
  // weight_pack[co, r, s, ci] = W[co*cb + ci, 0, r, s], zero past C.
  Tensor wpack = compute(
      {CB, s.R, s.S, cb},
      [&](const std::vector<Var>& v) {
        Expr c = v[0] * icb + v[3];
        Expr w = weight(s.C % cb ? min(c, iC - 1) : c, 0, v[1], v[2]);
        return s.C % cb ? select(c < iC, w, make_zero(op.dtype)) : w;
      },
      "weight_pack", "pack");
  IterVar rr = reduce_axis(static_cast<int>(s.R), "rr"), rs = reduce_axis(static_cast<int>(s.S), "rs");
  const int st = static_cast<int>(s.stride), st_w = static_cast<int>(s.stride_w), dl = static_cast<int>(s.dil);
  Tensor conv_blocked = compute(
      {s.N, CB, s.OH, s.OW, cb},
      [&](const std::vector<Var>& v) {
        Expr x = dpack(v[0], v[1], v[2] * st + rr->var * dl, v[3] * st_w + rs->var * dl, v[4]);
        return sum(cast(acc, x) * cast(acc, wpack(v[1], rr->var, rs->var, v[4])), {rr, rs});
      },
      "conv_blocked", "depthwise_conv2d");
  Tensor out = compute(
      {s.N, s.C, s.OH, s.OW},
      [&](Var n, Var c, Var oh, Var ow) {
        return conv_epilogue(conv_blocked(n, floordiv(c, icb), oh, ow, floormod(c, icb)),
                             s.bias ? &op.inputs[2] : nullptr, c, s.act, op.dtype);
      },
      "conv", "unpack");

  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& sc = *sch;
  Stage so = sc[out];
  auto ax = so.axis();
  IterVar co, ci, oho, ohi_l, owo, owi_l;
  so.split(ax[1], cb, &co, &ci);
  so.split(ax[2], ohi, &oho, &ohi_l);
  so.split(ax[3], owi, &owo, &owi_l);
  const bool vec_ow = out_vec == "ow";
  std::vector<IterVar> inner = vec_ow ? std::vector<IterVar>{ci, ohi_l, owi_l} : std::vector<IterVar>{ohi_l, owi_l, ci};
  LoopBand band(so, {ax[0], co, oho, owo}, cfg.reorder("order"), inner, parallel, true);
  if (vec_ow) so.vectorize(owi_l);
  if (out_vec == "c") so.vectorize(ci);
  const int acc_pos = std::max(0, std::min(static_cast<int>(cfg.choice("acc_at")), band.size() - 1));

  Stage sb = sc[conv_blocked];
  sb.set_scope(MemScope::kLocal);
  sb.compute_at(so, band.at(acc_pos));
  tile_accumulator(sb, {0, 0, ohi, owi, 0}, cfg.reorder("reduce_order"), 4,
                   cfg.annotate("unroll_kw") == "unroll" ? 1 : -1);
  const int weight_at = static_cast<int>(cfg.choice("weight_at"));
  place_stage(sc[wpack], so, band, weight_at < 0 ? -1 : band.position_of(1), acc_pos, parallel > 0, 3);
  place_stage(sc[dpack], so, band, static_cast<int>(cfg.choice("data_at")), acc_pos, parallel > 0, 4);
  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
}

OpDef depthwise_conv2d_op_def() {
  OpDef d;
  d.name = "depthwise_conv2d";
  d.size_params = {"N", "C", "H", "W"};
  d.summary =
      "depthwise 2-D convolution (one filter per channel), NCHW data, weights [C,1,R,S], zero padding, optional "
      "bias[C] and an activation (relu, relu6, hswish, hsigmoid) fused; FLOPs: 2 per multiply-add, padding included";
  d.params = {
      int_param("N", "batch size", "1"), int_param("C", "channels (input and output)"),
      int_param("H", "input height"),    int_param("W", "input width"),
      int_param("R", "kernel height"),   int_param("S", "kernel width"),
  };
  for (const OpParam& p : window_params(true)) d.params.push_back(p);
  d.params.push_back(dtype_param());
  for (const OpParam& p : epilogue_params("1: add bias[C] (one value per channel)")) d.params.push_back(p);
  // After the others: added later, left out of canonical strings at 0.
  d.params.push_back({OpParam::kInt, "stride_w", "stride in W when it differs from the one in H (0: stride)", "0", 0,
                      /*omit_when_default=*/true});
  d.build = [](const std::map<std::string, int64_t>& p, DType t) {
    check_stride_w("depthwise_conv2d", p.at("stride"), p.at("stride_w"));
    return depthwise_conv2d_define(p.at("N"), p.at("C"), p.at("H"), p.at("W"), p.at("R"), p.at("S"), p.at("stride"),
                                   p.at("pad"), p.at("dilation"), p.at("bias") != 0,
                                   activation_from_flags("depthwise_conv2d", p, t), t, p.at("stride_w"));
  };
  d.define_space = depthwise_conv2d_space;
  d.default_config = depthwise_conv2d_default;
  d.apply_config = depthwise_conv2d_apply;
  set_gpu_depthwise_template(d);
  return d;
}

}  // namespace kiln
