#include "kernels/qconv2d_nchwc.h"

#include <algorithm>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/conv2d_common.h"
#include "kernels/conv2d_nchwc.h"
#include "kernels/conv2d_template.h"
#include "kernels/quantize.h"
#include "kernels/template_util.h"
#include "kernels/tensor_intrinsics.h"

namespace kiln {

namespace {

// Input channels per VNNI step and output channels per call.
constexpr int64_t kSteps = 4;
constexpr int64_t kLanes = 16;

// The i32 sums over the (zero-)padded u8 data and the blocked i8 weights.
Tensor qconv_sums(const Conv2dNchwcShape& s, const Tensor& padded, const Tensor& weight, const std::string& name) {
  IterVar rco = reduce_axis(static_cast<int>(s.Cg / s.cb), "rco"), rr = reduce_axis(static_cast<int>(s.R), "rr"),
          rs = reduce_axis(static_cast<int>(s.S), "rs"), rci = reduce_axis(static_cast<int>(s.cb), "rci");
  const int blocks_per_group = static_cast<int>(s.Cg / s.cb), blocks_per_out_group = static_cast<int>(s.Kg / s.kb);
  const int st = static_cast<int>(s.stride), dl = static_cast<int>(s.dil), steps = static_cast<int>(kSteps);
  const DType i32 = DType::i32();
  return compute(
      {s.N, s.K / s.kb, s.OH, s.OW, s.kb},
      [&](const std::vector<Var>& v) {
        Expr cblock = s.G > 1 ? floordiv(v[1], blocks_per_out_group) * blocks_per_group + rco->var : Expr(rco->var);
        Expr x = padded(v[0], cblock, v[2] * st + rr->var * dl, v[3] * st + rs->var * dl, rci->var);
        Expr w = weight(v[1], rco->var, rr->var, rs->var, floordiv(rci->var, steps), v[4], floormod(rci->var, steps));
        return sum(cast(i32, x) * cast(i32, w), {rco, rr, rs, rci});
      },
      name, "qconv2d_nchwc");
}

// sum (+ bias[k]) requantized by scale[k], channel k = ko*kb + ki.
Tensor qconv_epilogue(const Conv2dNchwcShape& s, const Tensor& sums, const Tensor* bias, const Tensor* scale,
                      DType out, const std::string& name) {
  const int kb = static_cast<int>(s.kb);
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

bool vnni_offered(const Conv2dNchwcShape& s, const CpuInfo& cpu) { return cpu.avx512_vnni && s.kb % kLanes == 0; }

OpInstance qconv_define(const std::map<std::string, int64_t>& params, DType out) {
  OpInstance op;
  op.op = "qconv2d_nchwc";
  op.dtype = out;
  op.ints = params;
  const Conv2dNchwcShape s = conv2d_nchwc_shape(op);
  check_quantized_output("qconv2d_nchwc", out);
  check_groups("qconv2d_nchwc", s.C, s.K, s.G);
  check_window("qconv2d_nchwc", s.H, s.W, s.R, s.S, s.pad, s.dil);
  user_check(s.cb > 0 && s.cb % kSteps == 0 && s.Cg % s.cb == 0)
      << "qconv2d_nchwc: the input channel block cb=" << s.cb
      << " must be a multiple of 4 (the weights hold 4 input channels innermost) dividing the input channels per "
         "group ("
      << s.Cg << ")";
  user_check(s.kb > 0 && s.Kg % s.kb == 0) << "qconv2d_nchwc: the output channel block kb=" << s.kb
                                           << " must divide the output channels per group (" << s.Kg << ")";
  Tensor data = placeholder({s.N, s.C / s.cb, s.H, s.W, s.cb}, DType::u8(), "data");
  Tensor weight = placeholder({s.K / s.kb, s.Cg / s.cb, s.R, s.S, s.cb / kSteps, s.kb, kSteps}, DType::i8(), "weight");
  op.inputs = {data, weight};
  Tensor bias, scale;
  if (s.bias) {
    bias = placeholder({s.K}, DType::i32(), "bias");
    op.inputs.push_back(bias);
  }
  if (out != DType::i32()) {
    scale = placeholder({s.K}, DType::f32(), "scale");
    op.inputs.push_back(scale);
  }
  Tensor padded = pad_spatial(data, 2, 3, s.pad, make_zero(DType::u8()));
  Tensor sums = qconv_sums(s, padded, weight, "conv");
  op.parts["qconv2d_nchwc"] = sums;
  op.outputs = {qconv_epilogue(s, sums, s.bias ? &bias : nullptr, scale.defined() ? &scale : nullptr, out, "out")};
  op.flops = 2.0 * s.N * s.K * s.OH * s.OW * s.Cg * s.R * s.S;
  return op;
}

std::shared_ptr<ConfigSpace> qconv_space(const OpInstance& op, const CpuInfo& cpu) {
  const Conv2dNchwcShape c = conv2d_nchwc_shape(op);
  auto s = nchwc_tile_space(c, vector_lanes(cpu, DType::i32()));
  if (vnni_offered(c, cpu)) s->define_annotate("tensorize", {"none", "vnni"});
  return s;
}

Config qconv_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space) {
  const Conv2dNchwcShape c = conv2d_nchwc_shape(op);
  nlohmann::json j = nchwc_tile_default(c, DType::i32(), cpu, space);
  if (vnni_offered(c, cpu)) j["tensorize"] = "vnni";
  return space.make(j);
}

ScheduledOp qconv_apply(const OpInstance& op, const Config& cfg) {
  user_check(op.op == "qconv2d_nchwc") << "the qconv2d_nchwc template cannot schedule op '" << op.op << "'";
  const Conv2dNchwcShape s = conv2d_nchwc_shape(op);
  const int64_t kbi = cfg.split("tile_kb")[1];
  const std::vector<int64_t>& toh = cfg.split("tile_oh");
  const int64_t ohm = toh[1], ohi = toh[2], owi = cfg.split("tile_ow")[1];
  const int parallel = static_cast<int>(cfg.choice("parallel"));
  bool tensorized = false;
  if (cfg.space())
    for (const Knob& k : cfg.space()->knobs())
      if (k.name == "tensorize") tensorized = cfg.annotate("tensorize") == "vnni";
  user_check(!tensorized || s.kb % kLanes == 0)
      << "qconv2d_nchwc template: tensorize=vnni needs output channel blocks of a multiple of 16, got kb=" << s.kb;
  const Tensor& data = op.inputs[0];
  const Tensor& weight = op.inputs[1];
  const Tensor* bias = s.bias ? &op.inputs[2] : nullptr;
  const Tensor* scale = op.dtype != DType::i32() ? &op.inputs[s.bias ? 3 : 2] : nullptr;

  Tensor padded = pad_spatial(data, 2, 3, s.pad, make_zero(DType::u8()));
  Tensor sums = qconv_sums(s, padded, weight, "conv_acc");
  Tensor out = qconv_epilogue(s, sums, bias, scale, op.dtype, "conv");

  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& sc = *sch;
  Stage so = sc[out];
  const ChannelTiles tiles = tile_nchwc_output(so, kbi, ohm, ohi, owi, cfg);
  const LoopBand& band = tiles.band;
  const int acc_pos = tiles.acc_pos;

  // The accumulator: register tiles of kbi blocks x ohi x owi, kb lanes each.
  Stage sb = sc[sums];
  sb.set_scope(MemScope::kLocal);
  sb.compute_at(so, band.at(acc_pos));
  const int unroll_reduce = cfg.annotate("unroll_kw") == "unroll" ? 2 : -1;
  if (!tensorized) {
    tile_accumulator(sb, {0, kbi, ohi, owi, 0}, cfg.reorder("reduce_order"), 4, unroll_reduce);
  } else {
    // As tile_accumulator, with each 16 channels x 4 input channels below
    // the tile's loops one vpdpbusd: the outer parts, the reduction (its
    // input channels in steps of 4), the tile (unrolled), the 16-channel
    // groups of a block (unrolled), then the call's two loops.
    auto bx = sb.axis();
    auto br = sb.reduce_axis();
    IterVar ko, ki, oh_o, oh_i, ow_o, ow_i, k16o, k16i, cq, c4;
    sb.split(bx[1], kbi, &ko, &ki);
    sb.split(bx[2], ohi, &oh_o, &oh_i);
    sb.split(bx[3], owi, &ow_o, &ow_i);
    sb.split(bx[4], kLanes, &k16o, &k16i);
    sb.split(br[3], kSteps, &cq, &c4);
    const IterVar red[4] = {br[0], br[1], br[2], cq};
    std::vector<IterVar> order{bx[0], ko, oh_o, ow_o};
    for (int64_t r : cfg.reorder("reduce_order")) order.push_back(red[r]);
    for (const IterVar& iv : {ki, oh_i, ow_i, k16o, k16i, c4}) order.push_back(iv);
    sb.reorder(order);
    for (const IterVar& iv : {ki, oh_i, ow_i, k16o}) sb.unroll(iv);
    if (unroll_reduce >= 0) sb.unroll(br[2]);
    sb.tensorize(k16i, x86_vnni_dot_16x4());
  }
  if (s.pad > 0)
    place_stage(sc[padded], so, band, static_cast<int>(cfg.choice("data_at")), acc_pos, parallel > 0, 4);
  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
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
  d.define_space = qconv_space;
  d.default_config = qconv_default;
  d.apply_config = qconv_apply;
  return d;
}

}  // namespace kiln
