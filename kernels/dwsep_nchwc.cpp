#include "kernels/dwsep_nchwc.h"

#include <algorithm>
#include <sstream>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/conv2d_common.h"
#include "kernels/template_util.h"

namespace kiln {

namespace {

const char* kOp = "dwsep_nchwc";

// The tensors of the block: the depthwise tile "dw" (epilogue applied) and
// the pointwise output, from the data read padded or guarded.
struct DwsepTensors {
  Tensor padded, dw_acc, dw, pw_acc, out;
};

// `padded_copy`: the depthwise taps read a zero-padded copy of the data
// (a stage "data_pad"); else they read the data, each guarded by its bounds
// (a reduction condition), which loop partitioning can drop from the
// interior. `with_epilogue`: the pointwise output gets its own epilogue
// stage "out" even without bias or activation (the template keeps its
// accumulator local).
DwsepTensors dwsep_tensors(const DwsepShape& s, const std::vector<Tensor>& in, bool padded_copy, bool with_epilogue) {
  const Tensor& data = in[0];
  const Tensor& dw_weight = in[1];
  const Tensor& pw_weight = in[2];
  const Tensor* dw_bias = s.bias ? &in[3] : nullptr;
  const Tensor* pw_bias = s.bias ? &in[4] : nullptr;
  DwsepTensors t;
  if (padded_copy) t.padded = pad_spatial(data, 2, 3, s.pad, make_zero(data.dtype()));
  t.dw_acc = depthwise_nchwc_reduction(s, data, padded_copy ? &t.padded : nullptr, dw_weight, data.dtype(), "dw_acc");
  const int icb = static_cast<int>(s.cb);
  t.dw = blocked_conv_epilogue(t.dw_acc, dw_bias, s.cb, s.act, data.dtype(), "dw", "depthwise_epilogue");
  IterVar rco = reduce_axis(static_cast<int>(s.C / s.cb), "rco"), rci = reduce_axis(icb, "rci");
  t.pw_acc = compute(
      {s.N, s.K / s.kb, s.OH, s.OW, s.kb},
      [&](const std::vector<Var>& v) {
        return sum(t.dw(v[0], rco->var, v[2], v[3], rci->var) * pw_weight(v[1], rco->var, 0, 0, rci->var, v[4]),
                   {rco, rci});
      },
      "pw_acc", kOp);
  t.out = t.pw_acc;
  if (with_epilogue || s.bias || s.pw_act != Activation::kNone)
    t.out = blocked_conv_epilogue(t.pw_acc, pw_bias, s.kb, s.pw_act, data.dtype(), "out", "epilogue");
  return t;
}

std::string flags_text(const DwsepShape& s, Activation act) {
  std::string t = s.bias ? ",bias=1" : "";
  if (act != Activation::kNone) t += std::string(",") + activation_flag(act) + "=1";
  return t;
}

}  // namespace

DwsepShape dwsep_nchwc_shape(const OpInstance& op) {
  DwsepShape s{};
  static_cast<DepthwiseNchwcShape&>(s) = depthwise_conv2d_nchwc_shape(op, "dw_");
  s.K = op.ints.at("K");
  s.kb = op.ints.at("kb");
  s.pw_act = activation_of(op.ints);
  return s;
}

std::pair<std::string, std::string> dwsep_nchwc_halves(const OpInstance& op) {
  const DwsepShape s = dwsep_nchwc_shape(op);
  const std::string t = ",dtype=" + op.dtype.str();
  std::ostringstream dw, pw;
  dw << "depthwise_conv2d_nchwc:N=" << s.N << ",C=" << s.C << ",H=" << s.H << ",W=" << s.W << ",R=" << s.R
     << ",S=" << s.S << ",stride=" << s.stride << ",pad=" << s.pad << ",dilation=" << s.dil << ",cb=" << s.cb << t
     << flags_text(s, s.act);
  pw << "conv2d_nchwc:N=" << s.N << ",C=" << s.C << ",H=" << s.OH << ",W=" << s.OW << ",K=" << s.K
     << ",R=1,S=1,cb=" << s.cb << ",kb=" << s.kb << t << flags_text(s, s.pw_act);
  return {dw.str(), pw.str()};
}

namespace {

OpInstance dwsep_define(const std::map<std::string, int64_t>& params, DType dtype) {
  OpInstance op;
  op.op = kOp;
  op.dtype = dtype;
  op.ints = params;
  user_check(dtype.is_float()) << kOp << ": the block computes in floating point, not " << dtype.str();
  activation_from_flags(kOp, params, dtype, "dw_");
  activation_from_flags(kOp, params, dtype);
  const DwsepShape s = dwsep_nchwc_shape(op);
  check_window(kOp, s.H, s.W, s.R, s.S, s.pad, s.dil);
  user_check(s.C % s.cb == 0) << kOp << ": the channel block cb=" << s.cb << " must divide the input channels (" << s.C
                              << ")";
  user_check(s.K % s.kb == 0) << kOp << ": the output channel block kb=" << s.kb
                              << " must divide the output channels (" << s.K << ")";
  op.inputs = {placeholder({s.N, s.C / s.cb, s.H, s.W, s.cb}, dtype, "data"),
               placeholder({s.C / s.cb, s.R, s.S, s.cb}, dtype, "dw_weight"),
               placeholder({s.K / s.kb, s.C / s.cb, 1, 1, s.cb, s.kb}, dtype, "pw_weight")};
  if (s.bias) {
    op.inputs.push_back(placeholder({s.C}, dtype, "dw_bias"));
    op.inputs.push_back(placeholder({s.K}, dtype, "pw_bias"));
  }
  DwsepTensors t = dwsep_tensors(s, op.inputs, true, false);
  if (s.pad > 0) op.parts["data_pad"] = t.padded;
  op.parts["dw"] = t.dw;
  op.outputs = {t.out};
  op.flops = 2.0 * s.N * s.C * s.OH * s.OW * s.R * s.S + 2.0 * s.N * s.K * s.OH * s.OW * s.C;
  return op;
}

std::shared_ptr<ConfigSpace> dwsep_space(const OpInstance& op, const CpuInfo& cpu) {
  const DwsepShape c = dwsep_nchwc_shape(op);
  const int lanes = vector_lanes(cpu, op.dtype);
  auto s = std::make_shared<ConfigSpace>();
  s->define_split_levels("tile_oh", c.OH, {capped_candidates(c.OH, {1, 2})});
  s->define_split_levels("tile_ow", c.OW, {row_tile_candidates(c.OW)});
  s->define_split_levels("tile_kb", c.K / c.kb, {block_tile_candidates(c.K / c.kb, c.kb, lanes)});
  s->define_annotate("dw_at", {"cols", "rows"});
  s->define_choice("parallel", {0, 1, 2});
  s->define_annotate("unroll_ci", {"none", "unroll"});
  s->define_annotate("unroll_kw", c.S > 1 ? std::vector<std::string>{"none", "unroll"} : std::vector<std::string>{"none"});
  s->define_annotate("border", c.pad > 0 ? std::vector<std::string>{"guard", "pad_root"} : std::vector<std::string>{"none"});
  return s;
}

Config dwsep_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space) {
  const DwsepShape c = dwsep_nchwc_shape(op);
  const int lanes = vector_lanes(cpu, op.dtype);
  const int64_t per_block = vectors_per_block(c.kb, lanes);
  nlohmann::json j;
  j["tile_kb"] = nearest_split(space, "tile_kb", {std::max<int64_t>(1, 2 / per_block)});
  const int64_t kbi = j["tile_kb"][1].get<int64_t>();
  j["tile_oh"] = nearest_split(space, "tile_oh", {1});
  j["tile_ow"] = nearest_split(space, "tile_ow", {register_tile_cols(c.OW, kbi * per_block * lanes, cpu, op.dtype)});
  j["dw_at"] = "cols";
  j["parallel"] = cpu.num_threads > 1 ? 2 : 0;
  j["unroll_ci"] = "none";
  j["unroll_kw"] = c.S > 1 ? "unroll" : "none";
  j["border"] = c.pad > 0 ? "guard" : "none";
  return space.make(j);
}

ScheduledOp dwsep_apply(const OpInstance& op, const Config& cfg) {
  user_check(op.op == kOp) << "the dwsep_nchwc template cannot schedule op '" << op.op << "'";
  const DwsepShape s = dwsep_nchwc_shape(op);
  const int64_t ohi = cfg.split("tile_oh")[1], owi = cfg.split("tile_ow")[1], kbi = cfg.split("tile_kb")[1];
  const int parallel = static_cast<int>(cfg.choice("parallel"));
  const bool copy = s.pad > 0 && cfg.annotate("border") == "pad_root";
  DwsepTensors t = dwsep_tensors(s, op.inputs, copy, true);

  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{t.out});
  Schedule& sc = *sch;
  Stage so = sc[t.out];
  auto ax = so.axis();
  IterVar kbo, kbi_l, oho, ohi_l, owo, owi_l;
  so.split(ax[1], kbi, &kbo, &kbi_l);
  so.split(ax[2], ohi, &oho, &ohi_l);
  so.split(ax[3], owi, &owo, &owi_l);
  // Band {n, oho, owo, kbo}: the depthwise tile of a row band or column tile
  // is computed once, then every output channel block reads it.
  LoopBand band(so, {ax[0], oho, owo, kbo}, {0, 1, 2, 3}, {kbi_l, ohi_l, owi_l, ax[4]}, parallel, true);
  so.vectorize(ax[4]);

  // The pointwise accumulator: kbi blocks x ohi x owi columns in registers.
  Stage pw = sc[t.pw_acc];
  pw.set_scope(MemScope::kLocal);
  pw.compute_at(so, band.at(3));
  tile_accumulator(pw, {0, kbi, ohi, owi, 0}, {0, 1}, 4, cfg.annotate("unroll_ci") == "unroll" ? 1 : -1,
                   /*channels_axis=*/1);

  // The depthwise tile, all channel blocks, in a buffer the pointwise reads.
  Stage dw = sc[t.dw];
  dw.compute_at(so, band.at(cfg.annotate("dw_at") == "rows" ? 1 : 2));
  auto dax = dw.axis();
  dw.vectorize(dax[4]);
  // Its accumulator: one channel block's columns in registers over the taps.
  Stage da = sc[t.dw_acc];
  da.set_scope(MemScope::kLocal);
  da.compute_at(dw, dax[1]);
  tile_accumulator(da, {0, 0, 0, owi, 0}, {0, 1}, 4, cfg.annotate("unroll_kw") == "unroll" ? 1 : -1);
  if (copy) place_stage(sc[t.padded], so, band, -1, 0, parallel > 0, 4);
  std::vector<Tensor> args = op.inputs;
  args.push_back(t.out);
  return ScheduledOp{sch, args};
}

}  // namespace

OpDef dwsep_nchwc_op_def() {
  OpDef d;
  d.name = kOp;
  d.size_params = {"N", "C", "H", "W", "K"};
  d.summary =
      "depthwise-separable block in one kernel on the packed NCHW[x]c layout: depthwise RxS (dw_weight "
      "[C/cb,R,S,cb], + dw_bias[C], dw_ activation) then pointwise 1x1 C->K (pw_weight [K/kb,C/cb,1,1,cb,kb], + "
      "pw_bias[K], activation); data [N,C/cb,H,W,cb], output [N,K/kb,OH,OW,kb]; the depthwise output never goes "
      "to memory; FLOPs: 2 per multiply-add of both, padding included";
  d.params = {
      int_param("N", "batch size", "1"), int_param("C", "input channels (the depthwise channels)"),
      int_param("H", "input height"),    int_param("W", "input width"),
      int_param("K", "output channels"), int_param("R", "depthwise kernel height"),
      int_param("S", "depthwise kernel width"),
  };
  for (const OpParam& p : window_params(true)) d.params.push_back(p);
  d.params.push_back(int_param("cb", "channels per block of the data and depthwise layouts (divides C)", "16"));
  d.params.push_back(int_param("kb", "output channels per block of the pointwise weight and output (divides K)", "16"));
  d.params.push_back(dtype_param());
  d.params.back().meaning = "element type (f32, f64)";
  std::vector<OpParam> epilogue =
      epilogue_params("1: add dw_bias[C] to the depthwise and pw_bias[K] to the pointwise result");
  for (const OpParam& p : epilogue) d.params.push_back(p);
  for (size_t i = 1; i < epilogue.size(); ++i) {
    OpParam q = epilogue[i];
    q.name = "dw_" + q.name;
    q.meaning += " (the depthwise result)";
    d.params.push_back(q);
  }
  d.build = [](const std::map<std::string, int64_t>& p, DType t) { return dwsep_define(p, t); };
  d.define_space = dwsep_space;
  d.default_config = dwsep_default;
  d.apply_config = dwsep_apply;
  d.unfused = [](const OpInstance& op) {
    auto [dw, pw] = dwsep_nchwc_halves(op);
    const bool bias = op.ints.at("bias") != 0;
    return std::vector<UnfusedStep>{{dw, bias ? std::vector<int>{0, 1, 3} : std::vector<int>{0, 1}},
                                    {pw, bias ? std::vector<int>{-1, 2, 4} : std::vector<int>{-1, 2}}};
  };
  return d;
}

}  // namespace kiln
