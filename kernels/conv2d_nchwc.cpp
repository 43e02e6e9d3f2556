#include "kernels/conv2d_nchwc.h"

#include <algorithm>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/conv2d_common.h"
#include "kernels/conv2d_template.h"
#include "kernels/template_util.h"
#include "kernels/conv2d_winograd_nchwc.h"

namespace kiln {

namespace {

// The convolution over the op's own layouts and the blocked weights. Its
// taps read the zero-padded data ("data_pad", none without padding), or,
// with `clip`, the data itself where they fall inside it (padding taps
// skipped).
struct NchwcConv {
  Conv2dNchwcShape s;
  Tensor data, padded, weight;
  DType out_type;

  NchwcConv(const Conv2dNchwcShape& shape, const Tensor& d, const Tensor& w, DType dtype, bool clip)
      : s(shape), data(d), weight(w), out_type(dtype) {
    if (!clip) padded = pad_spatial(data, 2, 3, shape.pad, make_zero(dtype));
  }

  // conv[n, ko, oh, ow, ki] = sum over {co, r, s, ci}: data block
  // g*Cg/cb + co of output block ko's group g, times the weights.
  Tensor reduction(DType acc, const std::string& name) const {
    IterVar rco = reduce_axis(static_cast<int>(s.Cg / s.cb), "rco"), rr = reduce_axis(static_cast<int>(s.R), "rr"),
            rs = reduce_axis(static_cast<int>(s.S), "rs"), rci = reduce_axis(static_cast<int>(s.cb), "rci");
    const int blocks_per_group = static_cast<int>(s.Cg / s.cb), blocks_per_out_group = static_cast<int>(s.Kg / s.kb);
    const int st = static_cast<int>(s.stride), dl = static_cast<int>(s.dil);
    return compute(
        {s.N, s.K / s.kb, s.OH, s.OW, s.kb},
        [&](const std::vector<Var>& v) {
          Expr cblock = s.G > 1 ? floordiv(v[1], blocks_per_out_group) * blocks_per_group + rco->var : Expr(rco->var);
          Expr h = v[2] * st + rr->var * dl, w = v[3] * st + rs->var * dl;
          InputTap tap = padded.defined() ? InputTap{h, w, Expr()} : input_tap(h, w, s.pad, s.H, s.W);
          Expr x = (padded.defined() ? padded : data)(v[0], cblock, tap.h, tap.w, rci->var);
          return sum(cast(acc, x) * cast(acc, weight(v[1], rco->var, rr->var, rs->var, rci->var, v[4])),
                     {rco, rr, rs, rci}, tap.inside);
        },
        name, "conv2d_nchwc");
  }

  // conv (+ bias[k], activation) over the blocked output, channel k = ko*kb + ki.
  Tensor epilogue(const Tensor& conv, const Tensor* bias, const std::string& name, const std::string& tag) const {
    return blocked_conv_epilogue(conv, bias, s.kb, s.act, out_type, name, tag);
  }
};

}  // namespace

Conv2dNchwcShape conv2d_nchwc_shape(const OpInstance& op) {
  const auto& p = op.ints;
  Conv2dNchwcShape s{};
  s.N = p.at("N");
  s.C = p.at("C");
  s.H = p.at("H");
  s.W = p.at("W");
  s.K = p.at("K");
  s.R = p.at("R");
  s.S = p.at("S");
  s.stride = p.at("stride");
  s.pad = p.at("pad");
  s.dil = p.at("dilation");
  s.cb = p.at("cb");
  s.kb = p.at("kb");
  s.G = std::max<int64_t>(1, p.at("groups"));
  s.bias = p.at("bias") != 0;
  s.act = activation_of(p);
  s.Cg = s.C / s.G;
  s.Kg = s.K / s.G;
  s.OH = window_out_extent(s.H, s.R, s.stride, s.pad, s.dil);
  s.OW = window_out_extent(s.W, s.S, s.stride, s.pad, s.dil);
  return s;
}

Conv2dNchwcShape unit_stride_shape(const Conv2dNchwcShape& s) {
  Conv2dNchwcShape u = s;
  u.H = s.OH;
  u.W = s.OW;
  u.stride = 1;
  return u;
}

NchwcRead nchwc_read(const OpInstance& op, const Config& cfg) {
  NchwcRead r{conv2d_nchwc_shape(op), op.inputs[0], Tensor()};
  if (cfg.has("unit_stride") && cfg.annotate("unit_stride") == "dense") {
    r.dense = dense_spatial(r.data, 2, 3, r.shape.stride, r.shape.OH, r.shape.OW);
    r.data = r.dense;
    r.shape = unit_stride_shape(r.shape);
  }
  return r;
}

OpInstance conv2d_nchwc_define(const std::map<std::string, int64_t>& params, DType dtype) {
  OpInstance op;
  op.op = "conv2d_nchwc";
  op.dtype = dtype;
  op.ints = params;
  Conv2dNchwcShape s = conv2d_nchwc_shape(op);
  check_groups("conv2d_nchwc", s.C, s.K, s.G);
  check_window("conv2d_nchwc", s.H, s.W, s.R, s.S, s.pad, s.dil);
  user_check(s.cb > 0 && s.Cg % s.cb == 0) << "conv2d_nchwc: the input channel block cb=" << s.cb
                                           << " must divide the input channels per group (" << s.Cg << ")";
  user_check(s.kb > 0 && s.Kg % s.kb == 0) << "conv2d_nchwc: the output channel block kb=" << s.kb
                                           << " must divide the output channels per group (" << s.Kg << ")";
  activation_from_flags("conv2d_nchwc", params, dtype);
  Tensor data = placeholder({s.N, s.C / s.cb, s.H, s.W, s.cb}, dtype, "data");
  Tensor weight = placeholder({s.K / s.kb, s.Cg / s.cb, s.R, s.S, s.cb, s.kb}, dtype, "weight");
  op.inputs = {data, weight};
  Tensor bias;
  if (s.bias) {
    bias = bias_placeholder(s.K, dtype);
    op.inputs.push_back(bias);
  }
  NchwcConv conv2d(s, data, weight, dtype, false);
  Tensor conv = conv2d.reduction(accumulator_type(dtype), "conv");
  Tensor out = conv;
  if (s.bias || s.act != Activation::kNone || conv.dtype() != dtype) {
    op.parts["conv2d_nchwc"] = conv;
    out = conv2d.epilogue(conv, s.bias ? &bias : nullptr, "out", "epilogue");
  }
  op.outputs = {out};
  op.flops = 2.0 * s.N * s.K * s.OH * s.OW * s.Cg * s.R * s.S;
  return op;
}

std::shared_ptr<ConfigSpace> nchwc_tile_space(const Conv2dNchwcShape& c, int lanes) {
  auto s = std::make_shared<ConfigSpace>();
  s->define_split_levels("tile_kb", c.K / c.kb, {block_tile_candidates(c.K / c.kb, c.kb, lanes)});
  s->define_split_levels("tile_oh", c.OH, {block_candidates(c.OH, c.OH), capped_candidates(c.OH, conv2d_tile_rows())});
  s->define_split_levels("tile_ow", c.OW, {row_tile_candidates(c.OW)});
  s->define_reorder("order", conv2d_band_orders());
  s->define_choice("acc_at", {1, 2, 3, 4});
  s->define_reorder("reduce_order", conv2d_reduce_orders());
  // Knobs without effect on this shape get a single option.
  s->define_annotate("unroll_kw",
                     c.S > 1 ? std::vector<std::string>{"none", "unroll"} : std::vector<std::string>{"none"});
  s->define_choice("parallel", {0, 1, 2, 3});
  // Where the input's copy (padded, or dense: "unit_stride") is computed.
  const bool copied = c.pad > 0 || unit_stride_offered(c.R, c.S, c.stride, c.pad);
  s->define_choice("data_at", copied ? std::vector<int64_t>{-1, 0, 1, 2} : std::vector<int64_t>{-1});
  return s;
}

std::shared_ptr<ConfigSpace> conv2d_nchwc_space(const OpInstance& op, const CpuInfo& cpu) {
  Conv2dNchwcShape c = conv2d_nchwc_shape(op);
  auto s = nchwc_tile_space(c, vector_lanes(cpu, accumulator_type(op.dtype)));
  s->define_annotate("border", border_options(c.pad), true);  // configs stored before it: pad
  s->define_annotate("unit_stride", unit_stride_options(c.R, c.S, c.stride, c.pad), true);
  // Prefetch the data and weights the outermost reduction loop's iteration
  // this many ahead reads (0: none).
  s->define_choice("prefetch", {0, 1, 2}, /*added_later=*/true);
  s->set_refine("prefetch");  // swept on the search's best configs
  return s;
}

nlohmann::json nchwc_tile_default(const Conv2dNchwcShape& c, DType acc, const CpuInfo& cpu, const ConfigSpace& space) {
  const int lanes = vector_lanes(cpu, acc);
  // Two vector registers of output channels per register tile (oneDNN's choice on AVX-512).
  const int64_t per_block = vectors_per_block(c.kb, lanes);
  nlohmann::json j;
  j["tile_kb"] = nearest_split(space, "tile_kb", {std::max<int64_t>(1, 2 / per_block)});
  const int64_t kbi = j["tile_kb"][1].get<int64_t>();
  j["tile_oh"] = nearest_split(space, "tile_oh", {1, 1});
  // The columns that fit the registers, counting each block's registers.
  j["tile_ow"] = nearest_split(space, "tile_ow", {register_tile_cols(c.OW, kbi * per_block * lanes, cpu, acc)});
  j["order"] = conv2d_band_orders()[0];
  j["acc_at"] = 4;
  j["reduce_order"] = conv2d_reduce_orders()[0];
  j["unroll_kw"] = "none";
  j["parallel"] = cpu.num_threads > 1 ? 3 : 0;
  j["data_at"] = -1;
  return j;
}

Config conv2d_nchwc_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space) {
  const Conv2dNchwcShape c = conv2d_nchwc_shape(op);
  const DType acc = accumulator_type(op.dtype);
  nlohmann::json j = nchwc_tile_default(c, acc, cpu, space);
  // Narrow images (7 columns in a tile of 2 blocks fills 14 of the 28
  // accumulator registers): more rows per register tile. The last row tile
  // is then partial, and its guard costs a branch per tap unless the row
  // tiles run in serial loops, outside the parallel one (over channel tiles),
  // which loop partitioning peels.
  const int64_t kbi = j["tile_kb"][1].get<int64_t>(), owi = j["tile_ow"][1].get<int64_t>();
  const int64_t regs_per_col = kbi * vectors_per_block(c.kb, vector_lanes(cpu, acc));
  const int64_t ohi = std::min<int64_t>(c.OH, accumulator_registers(cpu) / (regs_per_col * owi));
  const int64_t channel_tasks = c.N * ((c.K / c.kb + kbi - 1) / kbi);
  if (ohi > 1 && (c.OH % ohi == 0 || channel_tasks >= 4 * cpu.num_threads)) {
    j["tile_oh"] = nearest_split(space, "tile_oh", {1, ohi});
    if (c.OH % ohi != 0) j["parallel"] = 2;
  }
  // Padding taps clipped off the border tiles' reductions rather than a
  // padded copy: 1.13-1.38x on the resnet50 3x3 layers, 7x7 to 56x56 (Intel
  // Xeon, 2026-11-28).
  j["border"] = c.pad > 0 ? "clip" : "pad";
  // A strided 1x1 layer whose input outgrows a core's L2 (1 MiB on the
  // Zen machines) reads a dense copy made once, before: 1.40x on the
  // resnet50 layer from 56x56 (3.2 MB), 1.05x from 28x28 (1.6 MB), 0.97x
  // from 14x14 (0.8 MB) at default tiles (Intel Xeon, 2026-11-28).
  const double input_bytes = static_cast<double>(c.N * c.C * c.H * c.W) * op.dtype.bytes();
  if (unit_stride_offered(c.R, c.S, c.stride, c.pad) && input_bytes > (1 << 20)) {
    j["unit_stride"] = "dense";
    j["data_at"] = -1;
  }
  return space.make(j);
}

ScheduledOp conv2d_nchwc_apply(const OpInstance& op, const Config& cfg) {
  user_check(op.op == "conv2d_nchwc") << "the conv2d_nchwc template cannot schedule op '" << op.op << "'";
  Conv2dNchwcShape s = conv2d_nchwc_shape(op);
  const int64_t kbi = cfg.split("tile_kb")[1];
  const std::vector<int64_t>& toh = cfg.split("tile_oh");
  const int64_t ohm = toh[1], ohi = toh[2], owi = cfg.split("tile_ow")[1];
  const int parallel = static_cast<int>(cfg.choice("parallel"));
  DType acc = accumulator_type(op.dtype);
  const Tensor& weight = op.inputs[1];

  // "dense": the strided pixels copied into data_dense, read as a 1x1
  // stride-1 layer over the output's extent.
  const NchwcRead read = nchwc_read(op, cfg);
  const Tensor& dense = read.dense;
  NchwcConv conv2d(read.shape, read.data, weight, op.dtype, cfg.annotate("border") == "clip");
  Tensor conv_acc = conv2d.reduction(acc, "conv_acc");
  Tensor out = conv2d.epilogue(conv_acc, s.bias ? &op.inputs[2] : nullptr, "conv", "output");

  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& sc = *sch;
  Stage so = sc[out];
  const ChannelTiles tiles = tile_nchwc_output(so, kbi, ohm, ohi, owi, cfg);
  const LoopBand& band = tiles.band;
  const int acc_pos = tiles.acc_pos;

  // The accumulator: register tiles of kbi blocks x ohi x owi, kb lanes each.
  Stage sb = sc[conv_acc];
  sb.set_scope(MemScope::kLocal);
  sb.compute_at(so, band.at(acc_pos));
  tile_accumulator(sb, {0, kbi, ohi, owi, 0}, cfg.reorder("reduce_order"), 4,
                   cfg.annotate("unroll_kw") == "unroll" ? 2 : -1, /*channels_axis=*/1);
  if (conv2d.padded.defined() && s.pad > 0)
    place_stage(sc[conv2d.padded], so, band, static_cast<int>(cfg.choice("data_at")), acc_pos, parallel > 0, 4);
  if (dense.defined())
    place_stage(sc[dense], so, band, static_cast<int>(cfg.choice("data_at")), acc_pos, parallel > 0, 4);
  if (cfg.has("prefetch") && cfg.choice("prefetch") > 0) {
    IterVar outer_reduce;
    for (const IterVar& iv : sb.leaf_iter_vars())
      if (iv->iter_kind == IterKind::kReduce) {
        outer_reduce = iv;
        break;
      }
    for (const Tensor& in : input_tensors(sc.current_op(conv_acc)))
      sb.prefetch(in, outer_reduce, static_cast<int>(cfg.choice("prefetch")));
  }
  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
}

std::vector<OpAlternative> conv2d_nchwc_alternatives(const OpInstance& op) {
  Conv2dNchwcShape s = conv2d_nchwc_shape(op);
  if (s.R != 3 || s.S != 3 || s.stride != 1 || s.dil != 1 || s.G != 1) return flat_alternative(op);
  return winograd_alternatives(WinogradLayer{false, s.N, s.C, s.H, s.W, s.K, s.pad, s.cb, s.kb, s.bias, s.act},
                               op.dtype);
}

OpDef conv2d_nchwc_op_def() {
  OpDef d;
  d.name = "conv2d_nchwc";
  d.size_params = {"N", "C", "H", "W", "K"};
  d.summary =
      "2-D convolution on the packed NCHW[x]c layout: data [N,C/cb,H,W,cb], weights [K/kb,C/groups/cb,R,S,cb,kb], "
      "output [N,K/kb,OH,OW,kb], zero padding, optional bias[K] and an activation (relu, relu6, hswish, hsigmoid) fused; FLOPs: 2 per multiply-add, "
      "padding included";
  d.params = {
      int_param("N", "batch size", "1"), int_param("C", "input channels"),  int_param("H", "input height"),
      int_param("W", "input width"),     int_param("K", "output channels"), int_param("R", "kernel height"),
      int_param("S", "kernel width"),
  };
  for (const OpParam& p : window_params(true)) d.params.push_back(p);
  d.params.push_back(
      int_param("cb", "input channels per block of the data and weight layouts (divides C/groups)", "16"));
  d.params.push_back(
      int_param("kb", "output channels per block of the weight and output layouts (divides K/groups)", "16"));
  d.params.push_back(dtype_param());
  d.params.push_back(groups_param());
  for (const OpParam& p : epilogue_params()) d.params.push_back(p);
  d.build = [](const std::map<std::string, int64_t>& p, DType t) { return conv2d_nchwc_define(p, t); };
  d.alternatives = conv2d_nchwc_alternatives;
  d.define_space = conv2d_nchwc_space;
  d.default_config = conv2d_nchwc_default;
  d.apply_config = conv2d_nchwc_apply;
  return d;
}

}  // namespace kiln
