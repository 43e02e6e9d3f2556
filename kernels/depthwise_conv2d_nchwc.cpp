#include "kernels/depthwise_conv2d_nchwc.h"

#include <algorithm>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/conv2d_common.h"
#include "kernels/template_util.h"

namespace kiln {

namespace {

// Where the padding border is handled: taps guarded by their bounds (no
// copy), or a zero-padded copy at the root or at band position 1 or 2.
const std::vector<std::string>& border_options() {
  static const std::vector<std::string> options = {"guard", "pad_root", "pad_band1", "pad_band2"};
  return options;
}

// conv (+ bias[c], activation) over the blocked output, channel c = co*cb + ci.
Tensor depthwise_epilogue(const DepthwiseNchwcShape& s, const Tensor& conv, const Tensor* bias, DType out,
                          const std::string& name, const std::string& tag) {
  return blocked_conv_epilogue(conv, bias, s.cb, s.act, out, name, tag);
}

}  // namespace

// The depthwise reduction over the blocked layouts. With `padded` defined
// the taps read it; otherwise they read the data directly, each guarded by
// its bounds (a reduction condition, which loop partitioning can drop from
// the interior).
Tensor depthwise_nchwc_reduction(const DepthwiseNchwcShape& s, const Tensor& data, const Tensor* padded,
                           const Tensor& weight, DType acc, const std::string& name) {
  IterVar rr = reduce_axis(static_cast<int>(s.R), "rr"), rs = reduce_axis(static_cast<int>(s.S), "rs");
  const int st = static_cast<int>(s.stride), st_w = static_cast<int>(s.stride_w), dl = static_cast<int>(s.dil),
            p = static_cast<int>(s.pad);
  return compute(
      {s.N, s.C / s.cb, s.OH, s.OW, s.cb},
      [&](const std::vector<Var>& v) {
        Expr h = v[2] * st + rr->var * dl, w = v[3] * st_w + rs->var * dl;
        Expr wt = cast(acc, weight(v[1], rr->var, rs->var, v[4]));
        if (padded) return sum(cast(acc, (*padded)(v[0], v[1], h, w, v[4])) * wt, {rr, rs});
        if (p == 0) return sum(cast(acc, data(v[0], v[1], h, w, v[4])) * wt, {rr, rs});
        h = h - p;
        w = w - p;
        Expr inside = h >= 0 && h < static_cast<int>(s.H) && w >= 0 && w < static_cast<int>(s.W);
        return sum(cast(acc, data(v[0], v[1], h, w, v[4])) * wt, {rr, rs}, inside);
      },
      name, "depthwise_conv2d_nchwc");
}

DepthwiseNchwcShape depthwise_conv2d_nchwc_shape(const OpInstance& op, const std::string& act_prefix) {
  auto at = [&](const char* n) { return op.ints.at(n); };
  DepthwiseNchwcShape s{};
  s.N = at("N");
  s.C = at("C");
  s.H = at("H");
  s.W = at("W");
  s.R = at("R");
  s.S = at("S");
  s.stride = at("stride");
  auto sw = op.ints.find("stride_w");
  s.stride_w = sw != op.ints.end() && sw->second > 0 ? sw->second : s.stride;
  s.pad = at("pad");
  s.dil = at("dilation");
  s.cb = at("cb");
  s.bias = at("bias") != 0;
  s.act = activation_of(op.ints, act_prefix);
  s.OH = window_out_extent(s.H, s.R, s.stride, s.pad, s.dil);
  s.OW = window_out_extent(s.W, s.S, s.stride_w, s.pad, s.dil);
  return s;
}

OpInstance depthwise_conv2d_nchwc_define(const std::map<std::string, int64_t>& params, DType dtype) {
  OpInstance op;
  op.op = "depthwise_conv2d_nchwc";
  op.dtype = dtype;
  op.ints = params;
  DepthwiseNchwcShape s = depthwise_conv2d_nchwc_shape(op);
  check_window("depthwise_conv2d_nchwc", s.H, s.W, s.R, s.S, s.pad, s.dil);
  check_stride_w("depthwise_conv2d_nchwc", s.stride, params.at("stride_w"));
  user_check(s.C % s.cb == 0) << "depthwise_conv2d_nchwc: the channel block cb=" << s.cb
                              << " must divide the channels (" << s.C << ")";
  activation_from_flags("depthwise_conv2d_nchwc", params, dtype);
  Tensor data = placeholder({s.N, s.C / s.cb, s.H, s.W, s.cb}, dtype, "data");
  Tensor weight = placeholder({s.C / s.cb, s.R, s.S, s.cb}, dtype, "weight");
  op.inputs = {data, weight};
  Tensor bias;
  if (s.bias) {
    bias = bias_placeholder(s.C, dtype);
    op.inputs.push_back(bias);
  }
  Tensor padded = pad_spatial(data, 2, 3, s.pad, make_zero(dtype));
  Tensor conv = depthwise_nchwc_reduction(s, data, &padded, weight, accumulator_type(dtype), "conv");
  Tensor out = conv;
  if (s.bias || s.act != Activation::kNone || conv.dtype() != dtype) {
    op.parts["depthwise_conv2d_nchwc"] = conv;
    out = depthwise_epilogue(s, conv, s.bias ? &bias : nullptr, dtype, "out", "epilogue");
  }
  op.outputs = {out};
  op.flops = 2.0 * s.N * s.C * s.OH * s.OW * s.R * s.S;
  return op;
}

std::shared_ptr<ConfigSpace> depthwise_conv2d_nchwc_space(const OpInstance& op, const CpuInfo&) {
  DepthwiseNchwcShape c = depthwise_conv2d_nchwc_shape(op);
  auto s = std::make_shared<ConfigSpace>();
  s->define_split_levels("tile_oh", c.OH, {capped_candidates(c.OH, {1, 2, 3, 4})});
  s->define_split_levels("tile_ow", c.OW, {row_tile_candidates(c.OW)});
  s->define_reorder("order", channel_band_orders());
  s->define_choice("acc_at", {1, 2, 3});
  s->define_reorder("reduce_order", {{0, 1}, {1, 0}});
  // Knobs without effect on this shape get a single option.
  s->define_annotate("unroll_kw", c.S > 1 ? std::vector<std::string>{"none", "unroll"} : std::vector<std::string>{"none"});
  s->define_choice("parallel", {0, 1, 2, 3});
  s->define_annotate("border", c.pad > 0 ? border_options() : std::vector<std::string>{"none"});
  return s;
}

Config depthwise_conv2d_nchwc_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space) {
  DepthwiseNchwcShape c = depthwise_conv2d_nchwc_shape(op);
  nlohmann::json j;
  j["tile_oh"] = nearest_split(space, "tile_oh", {1});
  // The output columns whose cb-channel accumulators fit the registers.
  j["tile_ow"] = nearest_split(space, "tile_ow", {register_tile_cols(c.OW, c.cb, cpu, accumulator_type(op.dtype))});
  j["order"] = channel_band_orders()[0];
  j["acc_at"] = 3;
  j["reduce_order"] = {0, 1};
  j["unroll_kw"] = c.S > 1 ? "unroll" : "none";
  // Batch, channel blocks and row blocks in parallel: the column loop stays
  // its own loop, so loop partitioning can peel its borders. (With the row
  // loop apart too, LLVM's loop strength reduction took 8 s on a 5x5 layer's
  // peeled rows, for a kernel no faster.)
  j["parallel"] = cpu.num_threads > 1 ? 3 : 0;
  j["border"] = c.pad > 0 ? "guard" : "none";
  return space.make(j);
}

ScheduledOp depthwise_conv2d_nchwc_apply(const OpInstance& op, const Config& cfg) {
  user_check(op.op == "depthwise_conv2d_nchwc")
      << "the depthwise_conv2d_nchwc template cannot schedule op '" << op.op << "'";
  DepthwiseNchwcShape s = depthwise_conv2d_nchwc_shape(op);
  const int64_t ohi = cfg.split("tile_oh")[1], owi = cfg.split("tile_ow")[1];
  const int parallel = static_cast<int>(cfg.choice("parallel"));
  const std::string border = cfg.annotate("border");
  DType acc = accumulator_type(op.dtype);
  const Tensor& data = op.inputs[0];
  const Tensor& weight = op.inputs[1];

  const bool copy = s.pad > 0 && border != "guard";
  Tensor padded = copy ? pad_spatial(data, 2, 3, s.pad, make_zero(op.dtype)) : Tensor();
  Tensor conv_acc = depthwise_nchwc_reduction(s, data, copy ? &padded : nullptr, weight, acc, "conv_acc");
  Tensor out = depthwise_epilogue(s, conv_acc, s.bias ? &op.inputs[2] : nullptr, op.dtype, "conv", "output");

  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& sc = *sch;
  // The accumulator: ohi x owi register tiles of cb channels (the lanes).
  Stage so = sc[out];
  ChannelTiles tiles = schedule_channel_tiles(so, sc[conv_acc], ohi, owi, cfg);
  if (copy) {
    const int at = border == "pad_root" ? -1 : border == "pad_band1" ? 1 : 2;
    place_stage(sc[padded], so, tiles.band, at, tiles.acc_pos, parallel > 0, 4);
  }
  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
}

OpDef depthwise_conv2d_nchwc_op_def() {
  OpDef d;
  d.name = "depthwise_conv2d_nchwc";
  d.size_params = {"N", "C", "H", "W"};
  d.summary =
      "depthwise 2-D convolution (one filter per channel) on the packed NCHW[x]c layout: data [N,C/cb,H,W,cb], "
      "weights [C/cb,R,S,cb], output [N,C/cb,OH,OW,cb], zero padding, optional bias[C] and an activation (relu, relu6, hswish, hsigmoid) fused; FLOPs: 2 "
      "per multiply-add, padding included";
  d.params = {
      int_param("N", "batch size", "1"), int_param("C", "channels (input and output)"),
      int_param("H", "input height"),    int_param("W", "input width"),
      int_param("R", "kernel height"),   int_param("S", "kernel width"),
  };
  for (const OpParam& p : window_params(true)) d.params.push_back(p);
  d.params.push_back(int_param("cb", "channels per block of the data, weight and output layouts (divides C)", "16"));
  d.params.push_back(dtype_param());
  for (const OpParam& p : epilogue_params("1: add bias[C] (one value per channel)")) d.params.push_back(p);
  // After the others: added later, left out of canonical strings at 0.
  d.params.push_back({OpParam::kInt, "stride_w", "stride in W when it differs from the one in H (0: stride)", "0", 0,
                      /*omit_when_default=*/true});
  d.build = [](const std::map<std::string, int64_t>& p, DType t) { return depthwise_conv2d_nchwc_define(p, t); };
  d.define_space = depthwise_conv2d_nchwc_space;
  d.default_config = depthwise_conv2d_nchwc_default;
  d.apply_config = depthwise_conv2d_nchwc_apply;
  return d;
}

}  // namespace kiln
