#include "kernels/conv2d_winograd_nchwc.h"

#include <algorithm>
#include <sstream>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/conv2d_common.h"
#include "kernels/template_util.h"
#include "kernels/winograd_matrices.h"
#include "kernels/winograd_weight_nchwc.h"

namespace kiln {

namespace {

// The op's stages over its own layouts (see the header).
struct WinogradConv {
  WinogradConvShape s;
  const WinogradMatrices& wm;
  DType dtype;
  Tensor data, weight, padded;

  WinogradConv(const WinogradConvShape& shape, const Tensor& d, const Tensor& w, DType t)
      : s(shape), wm(winograd_matrices(static_cast<int>(shape.m))), dtype(t), data(d), weight(w) {
    padded = pad_to_tiles();
  }

  // The input with `pad` zeros before each spatial extent and as many after
  // as the last tile needs: [N, C/cb, tH m + 2, tW m + 2, cb], or
  // [N, tH m + 2, tW m + 2, C] for NHWC.
  Tensor pad_to_tiles() const {
    const int p = static_cast<int>(s.pad), H = static_cast<int>(s.H), W = static_cast<int>(s.W);
    const int h_dim = s.nhwc ? 1 : 2;
    std::vector<Expr> shape = s.nhwc ? std::vector<Expr>{s.N, s.tH * s.m + 2, s.tW * s.m + 2, s.C}
                                     : std::vector<Expr>{s.N, s.C / s.cb, s.tH * s.m + 2, s.tW * s.m + 2, s.cb};
    return compute(
        shape,
        [&](const std::vector<Var>& v) {
          Expr h = v[h_dim], w = v[h_dim + 1];
          Expr inside = h >= p && h < H + p && w >= p && w < W + p;
          std::vector<Expr> idx(v.begin(), v.end());
          idx[h_dim] = min(max(h - p, 0), H - 1);
          idx[h_dim + 1] = min(max(w - p, 0), W - 1);
          return select(inside, data(idx), make_zero(dtype));
        },
        "data_pad", "pad");
  }

  // Channel ci of block co at padded position (h, w) of image n.
  Expr padded_at(Expr n, Expr co, Expr h, Expr w, Expr ci) const {
    return s.nhwc ? padded(n, h, w, co * static_cast<int>(s.cb) + ci) : padded(n, co, h, w, ci);
  }
  // The transformed weight of point (e, f), input channel (co, ci), output channel (ko, ki).
  Expr weight_at(Expr e, Expr f, Expr ko, Expr co, Expr ci, Expr ki) const {
    return s.nhwc ? weight(e, f, co * static_cast<int>(s.cb) + ci, ko * static_cast<int>(s.kb) + ki)
                  : weight(e, f, ko, co, ci, ki);
  }

  // BT d: the input tile's rows combined, [alpha, alpha(columns), N, tH, tW, C/cb, cb].
  Tensor row_transform() const {
    const int m = static_cast<int>(s.m);
    return compute(
        {s.alpha, s.alpha, s.N, s.tH, s.tW, s.C / s.cb, s.cb},
        [&](const std::vector<Var>& v) {
          return winograd_apply_row(
              wm.BT, v[0], [&](int r) { return padded_at(v[2], v[5], v[3] * m + r, v[4] * m + v[1], v[6]); }, dtype);
        },
        "input_rows", "winograd_input_rows");
  }

  // V = BT d B: [alpha, alpha, N, tH, tW, C/cb, cb].
  Tensor input_transform(const Tensor& rows) const {
    return compute(
        {s.alpha, s.alpha, s.N, s.tH, s.tW, s.C / s.cb, s.cb},
        [&](const std::vector<Var>& v) {
          return winograd_apply_row(
              wm.BT, v[1], [&](int q) { return rows(v[0], q, v[2], v[3], v[4], v[5], v[6]); }, dtype);
        },
        "input_winograd", "winograd_input");
  }

  // M[e, f, n, ko, th, tw, ki] = sum over (co, ci) of V * U.
  Tensor gemm(const Tensor& V, const std::string& name) const {
    IterVar rco = reduce_axis(static_cast<int>(s.C / s.cb), "rco"), rci = reduce_axis(static_cast<int>(s.cb), "rci");
    return compute(
        {s.alpha, s.alpha, s.N, s.K / s.kb, s.tH, s.tW, s.kb},
        [&](const std::vector<Var>& v) {
          return sum(V(v[0], v[1], v[2], v[4], v[5], rco->var, rci->var) *
                         weight_at(v[0], v[1], v[3], rco->var, rci->var, v[6]),
                     {rco, rci});
        },
        name, "winograd_gemm");
  }

  // AT M: [m, alpha, N, K/kb, tH, tW, kb].
  Tensor output_columns(const Tensor& M) const {
    return compute(
        {s.m, s.alpha, s.N, s.K / s.kb, s.tH, s.tW, s.kb},
        [&](const std::vector<Var>& v) {
          return winograd_apply_row(
              wm.AT, v[0], [&](int e) { return M(e, v[1], v[2], v[3], v[4], v[5], v[6]); }, dtype);
        },
        "output_columns", "winograd_output_columns");
  }

  // out = (AT M A)[oh % m][ow % m] of tile (oh / m, ow / m), then the
  // epilogue: [N, K/kb, OH, OW, kb], or [N, OH, OW, K] for NHWC.
  Tensor output(const Tensor& cols, const Tensor* bias, const std::string& name) const {
    const int m = static_cast<int>(s.m), kb = static_cast<int>(s.kb);
    auto value = [&](Expr n, Expr ko, Expr oh, Expr ow, Expr ki) {
      Expr th = floordiv(oh, m), i = floormod(oh, m), tw = floordiv(ow, m), j = floormod(ow, m);
      Expr y = winograd_apply_row(
          wm.AT, j, [&](int f) { return cols(i, f, n, ko, th, tw, ki); }, dtype);
      return conv_epilogue(y, bias, ko * kb + ki, s.act, dtype);
    };
    if (s.nhwc)
      return compute(
          {s.N, s.OH, s.OW, s.K},
          [&](const std::vector<Var>& v) { return value(v[0], floordiv(v[3], kb), v[1], v[2], floormod(v[3], kb)); },
          name, "winograd_output");
    return compute(
        {s.N, s.K / s.kb, s.OH, s.OW, s.kb},
        [&](const std::vector<Var>& v) { return value(v[0], v[1], v[2], v[3], v[4]); }, name, "winograd_output");
  }
};

}  // namespace

WinogradConvShape winograd_conv_shape(const OpInstance& op) {
  const auto& p = op.ints;
  WinogradConvShape s{};
  s.N = p.at("N");
  s.C = p.at("C");
  s.H = p.at("H");
  s.W = p.at("W");
  s.K = p.at("K");
  s.pad = p.at("pad");
  s.m = p.at("m");
  s.cb = p.at("cb");
  s.kb = p.at("kb");
  s.bias = p.at("bias") != 0;
  s.act = activation_of(p);
  s.nhwc = op.op == "conv2d_winograd_nhwc";
  s.alpha = s.m + 2;
  s.OH = window_out_extent(s.H, 3, 1, s.pad, 1);
  s.OW = window_out_extent(s.W, 3, 1, s.pad, 1);
  s.tH = (s.OH + s.m - 1) / s.m;
  s.tW = (s.OW + s.m - 1) / s.m;
  return s;
}

namespace {

OpInstance define(const std::string& name, const std::map<std::string, int64_t>& params, DType dtype) {
  check_winograd_dtype(name, dtype);
  OpInstance op;
  op.op = name;
  op.dtype = dtype;
  op.ints = params;
  WinogradConvShape s = winograd_conv_shape(op);
  winograd_matrices(static_cast<int>(s.m));  // user_error for a tile size kiln lacks
  check_window(name, s.H, s.W, 3, 3, s.pad, 1);
  check_winograd_blocks(name, s.C, s.K, s.cb, s.kb);
  activation_from_flags(name, params, dtype);
  Tensor data = s.nhwc ? placeholder({s.N, s.H, s.W, s.C}, dtype, "data")
                       : placeholder({s.N, s.C / s.cb, s.H, s.W, s.cb}, dtype, "data");
  Tensor weight = s.nhwc ? placeholder({s.alpha, s.alpha, s.C, s.K}, dtype, "weight_winograd")
                         : placeholder({s.alpha, s.alpha, s.K / s.kb, s.C / s.cb, s.cb, s.kb}, dtype, "weight_winograd");
  op.inputs = {data, weight};
  Tensor bias;
  if (s.bias) {
    bias = bias_placeholder(s.K, dtype);
    op.inputs.push_back(bias);
  }
  WinogradConv w(s, data, weight, dtype);
  Tensor V = w.input_transform(w.row_transform());
  op.parts["input_winograd"] = V;
  Tensor M = w.gemm(V, "gemm");
  op.parts["gemm"] = M;
  op.outputs = {w.output(w.output_columns(M), s.bias ? &bias : nullptr, "out")};
  op.flops = 2.0 * s.N * s.K * s.OH * s.OW * s.C * 9;
  return op;
}

const std::vector<std::vector<int64_t>>& gemm_orders() {
  // Band {0 = e x f, 1 = n, 2 = output-channel blocks, 3 = tile rows, 4 = tile columns}.
  static const std::vector<std::vector<int64_t>> orders{
      {0, 1, 2, 3, 4}, {0, 1, 3, 2, 4}, {1, 0, 2, 3, 4}, {2, 0, 1, 3, 4}};
  return orders;
}

}  // namespace

std::shared_ptr<ConfigSpace> conv2d_winograd_nchwc_space(const OpInstance& op, const CpuInfo& cpu) {
  WinogradConvShape c = winograd_conv_shape(op);
  const int lanes = vector_lanes(cpu, op.dtype);
  auto s = std::make_shared<ConfigSpace>();
  s->define_split_levels("tile_kb", c.K / c.kb, {block_tile_candidates(c.K / c.kb, c.kb, lanes)});
  s->define_split_levels("tile_th", c.tH, {capped_candidates(c.tH, {1, 2, 3, 4})});
  s->define_split_levels("tile_tw", c.tW, {capped_candidates(c.tW, {1, 2, 3, 4, 6, 7, 8, 12, 14, 16})});
  s->define_reorder("gemm_order", gemm_orders());
  s->define_annotate("unroll_ci", c.cb > 1 ? std::vector<std::string>{"none", "unroll"} : std::vector<std::string>{"none"});
  s->define_choice("parallel", {1, 2});
  s->define_choice("gemm_at", {0, 1});
  return s;
}

Config conv2d_winograd_nchwc_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space) {
  WinogradConvShape c = winograd_conv_shape(op);
  const int lanes = vector_lanes(cpu, op.dtype);
  const int64_t per_block = vectors_per_block(c.kb, lanes);
  nlohmann::json j;
  j["tile_kb"] = nearest_split(space, "tile_kb", {std::max<int64_t>(1, 2 / per_block)});
  const int64_t kbi = j["tile_kb"][1].get<int64_t>();
  j["tile_th"] = nearest_split(space, "tile_th", {1});
  j["tile_tw"] = nearest_split(space, "tile_tw", {register_tile_cols(c.tW, kbi * per_block * lanes, cpu, op.dtype)});
  j["gemm_order"] = gemm_orders()[0];
  j["unroll_ci"] = "none";
  j["parallel"] = 1;
  j["gemm_at"] = 0;
  return space.make(j);
}

ScheduledOp conv2d_winograd_nchwc_apply(const OpInstance& op, const Config& cfg) {
  user_check(op.op == "conv2d_winograd_nchwc" || op.op == "conv2d_winograd_nhwc")
      << "the Winograd convolution template cannot schedule op '" << op.op << "'";
  WinogradConvShape s = winograd_conv_shape(op);
  const int64_t kbi = cfg.split("tile_kb")[1], thi = cfg.split("tile_th")[1], twi = cfg.split("tile_tw")[1];
  WinogradConv w(s, op.inputs[0], op.inputs[1], op.dtype);
  Tensor rows = w.row_transform();
  Tensor V = w.input_transform(rows);
  Tensor acc = w.gemm(V, "gemm_acc");
  Tensor M = compute(
      acc.shape(), [&](const std::vector<Var>& v) { return acc(std::vector<Expr>(v.begin(), v.end())); }, "gemm",
      "winograd_gemm_store");
  Tensor cols = w.output_columns(M);
  Tensor out = w.output(cols, s.bias ? &op.inputs[2] : nullptr, "out");

  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& sc = *sch;

  // The padded input and the input transform at the root, rows of tiles in
  // parallel; each channel block's alpha x alpha tile is transformed in
  // registers, its rows first.
  {
    Stage sp = sc[w.padded];
    auto ax = sp.axis();
    sp.parallel(sp.fuse(ax[0], ax[1]));
    if (s.nhwc) {
      IterVar co, ci;
      sp.split(ax[3], s.cb, &co, &ci);
      sp.vectorize(ci);
    } else {
      sp.vectorize(ax[4]);
    }
    Stage sv = sc[V];
    auto v = sv.axis();  // e, f, n, th, tw, co, ci
    sv.reorder({v[2], v[3], v[4], v[5], v[0], v[1], v[6]});
    sv.parallel(sv.fuse(v[2], v[3]));
    sv.unroll(v[0]);
    sv.unroll(v[1]);
    sv.vectorize(v[6]);
    Stage sr = sc[rows];
    sr.set_scope(MemScope::kLocal);
    sr.compute_at(sv, v[5]);
    auto r = sr.axis();
    sr.reorder({r[2], r[3], r[4], r[5], r[0], r[1], r[6]});
    sr.unroll(r[0]);
    sr.unroll(r[1]);
    sr.vectorize(r[6]);
  }
  const bool fused = cfg.choice("gemm_at") == 1;
  const int parallel = static_cast<int>(cfg.choice("parallel"));
  // The batched GEMM's register tiles: kbi channel blocks x thi x twi tiles,
  // accumulated over (co, ci).
  auto tile_gemm = [&](Stage sm, const IterVar& at) {
    Stage sa = sc[acc];
    sa.set_scope(MemScope::kLocal);
    sa.compute_at(sm, at);
    tile_accumulator(sa, {0, 0, 0, kbi, thi, twi, 0}, {0, 1}, 6, cfg.annotate("unroll_ci") == "unroll" ? 1 : -1);
  };
  Stage so = sc[out];
  // n, ko, oh, ow, ki (NHWC: k split into ko, ki)
  std::vector<IterVar> oax = so.axis();
  if (s.nhwc) {
    IterVar ko, ki;
    so.split(oax[3], s.kb, &ko, &ki);
    oax = {oax[0], ko, oax[1], oax[2], ki};
  }
  IterVar oht, ohi, owt, owi;
  so.split(oax[2], s.m, &oht, &ohi);
  so.split(oax[3], s.m, &owt, &owi);
  if (!fused) {
    // M at the root: its band in the config's order, its first loops in parallel.
    Stage sm = sc[M];
    auto ax = sm.axis();  // e, f, n, ko, th, tw, ki
    IterVar ef = sm.fuse(ax[0], ax[1]);
    IterVar kbo, kbi_l, tho, thi_l, two, twi_l;
    sm.split(ax[3], kbi, &kbo, &kbi_l);
    sm.split(ax[4], thi, &tho, &thi_l);
    sm.split(ax[5], twi, &two, &twi_l);
    LoopBand band(sm, {ef, ax[2], kbo, tho, two}, cfg.reorder("gemm_order"), {kbi_l, thi_l, twi_l, ax[6]}, parallel,
                  true);
    sm.vectorize(ax[6]);
    tile_gemm(sm, band.at(band.size() - 1));
    so.reorder({oax[0], oax[1], oht, owt, ohi, owi, oax[4]});
    so.parallel(so.fuse(oax[0], oax[1]));
  } else {
    // M computed per (kbi channel blocks, thi tile rows) of the output, in a
    // local buffer the output transform reads at once: M never goes to memory.
    IterVar kbo, kbl, thb, thl;
    so.split(oax[1], kbi, &kbo, &kbl);
    so.split(oht, thi, &thb, &thl);
    so.reorder({oax[0], kbo, thb, kbl, thl, owt, ohi, owi, oax[4]});
    IterVar outer = parallel >= 2 ? so.fuse({oax[0], kbo, thb}) : so.fuse(oax[0], kbo);
    so.parallel(outer);
    Stage sm = sc[M];
    sm.set_scope(MemScope::kLocal);
    sm.compute_at(so, parallel >= 2 ? outer : thb);
    auto ax = sm.axis();  // e, f, n, ko, th, tw, ki (ko: kbi blocks, th: thi rows here)
    IterVar ef = sm.fuse(ax[0], ax[1]);
    IterVar two, twi_l;
    sm.split(ax[5], twi, &two, &twi_l);
    sm.reorder({ef, ax[2], two, ax[3], ax[4], twi_l, ax[6]});
    sm.vectorize(ax[6]);
    tile_gemm(sm, two);
  }
  // The output transform: m x m outputs per tile, unrolled.
  so.unroll(ohi);
  so.unroll(owi);
  so.vectorize(oax[4]);
  Stage sc_cols = sc[cols];
  sc_cols.set_scope(MemScope::kLocal);
  sc_cols.compute_at(so, owt);
  auto c = sc_cols.axis();  // i, f, n, ko, th, tw, ki
  sc_cols.unroll(c[0]);
  sc_cols.unroll(c[1]);
  sc_cols.vectorize(c[6]);
  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
}

std::vector<OpAlternative> winograd_alternatives(const WinogradLayer& l, DType dtype) {
  if (!dtype.is_float() || dtype.bits < 32) return {};
  const std::string layout = l.nhwc ? "nhwc" : "nchwc";
  std::vector<OpAlternative> out;
  for (int m : winograd_tile_sizes()) {
    std::ostringstream weight, conv;
    weight << "winograd_weight_" << layout << ":C=" << l.C << ",K=" << l.K << ",m=" << m;
    if (!l.nhwc) weight << ",cb=" << l.cb << ",kb=" << l.kb;
    weight << ",dtype=" << dtype.str();
    conv << "conv2d_winograd_" << layout << ":N=" << l.N << ",C=" << l.C << ",H=" << l.H << ",W=" << l.W
         << ",K=" << l.K << ",pad=" << l.pad << ",m=" << m << ",cb=" << l.cb << ",kb=" << l.kb
         << ",dtype=" << dtype.str() << ",bias=" << l.bias;
    if (l.act != Activation::kNone) conv << "," << activation_flag(l.act) << "=1";
    OpAlternative a;
    a.name = "winograd_f" + std::to_string(m);
    a.prepare = {UnfusedStep{weight.str(), {1}}};
    a.kernel.workload = conv.str();
    a.kernel.inputs = {0, -1};
    if (l.bias) a.kernel.inputs.push_back(2);
    out.push_back(a);
  }
  return out;
}

namespace {

OpDef winograd_op_def(const std::string& name, const std::string& summary) {
  OpDef d;
  d.name = name;
  d.size_params = {"N", "C", "H", "W", "K"};
  d.summary = summary;
  const bool nhwc = name == "conv2d_winograd_nhwc";
  const std::string blocks = nhwc ? " of the kernel's internal blocking" : "";
  d.params = {
      int_param("N", "batch size", "1"),
      int_param("C", "input channels"),
      int_param("H", "input height"),
      int_param("W", "input width"),
      int_param("K", "output channels"),
      {OpParam::kInt, "pad", "zero padding on each side of H and W", "1", 0},
      int_param("m", "Winograd output tile: 2 for F(2x2,3x3), 4 for F(4x4,3x3)", "4"),
      int_param("cb", "input channels per block" + blocks + " (divides C)", "16"),
      int_param("kb", "output channels per block" + blocks + " (divides K)", "16"),
      dtype_param(),
  };
  for (const OpParam& p : epilogue_params()) d.params.push_back(p);
  d.build = [name](const std::map<std::string, int64_t>& p, DType t) { return define(name, p, t); };
  d.define_space = conv2d_winograd_nchwc_space;
  d.default_config = conv2d_winograd_nchwc_default;
  d.apply_config = conv2d_winograd_nchwc_apply;
  return d;
}

}  // namespace

OpDef conv2d_winograd_nchwc_op_def() {
  return winograd_op_def(
      "conv2d_winograd_nchwc",
      "3x3 stride-1 convolution on the packed NCHW[x]c layout by Winograd's F(m x m, 3 x 3), weights transformed "
      "ahead of time (winograd_weight_nchwc): data [N,C/cb,H,W,cb], weights [m+2,m+2,K/kb,C/cb,cb,kb], output "
      "[N,K/kb,OH,OW,kb]; optional bias[K] and activation fused; FLOPs: the direct convolution's");
}

OpDef conv2d_winograd_nhwc_op_def() {
  return winograd_op_def(
      "conv2d_winograd_nhwc",
      "3x3 stride-1 convolution on NHWC by Winograd's F(m x m, 3 x 3), weights transformed ahead of time "
      "(winograd_weight_nhwc): data [N,H,W,C], weights [m+2,m+2,C,K], output [N,OH,OW,K]; cb and kb block the "
      "channels inside the kernel; optional bias[K] and activation fused; FLOPs: the direct convolution's");
}

}  // namespace kiln
