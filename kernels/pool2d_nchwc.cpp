#include "kernels/pool2d_nchwc.h"

#include <algorithm>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/conv2d_common.h"
#include "kernels/pool2d.h"
#include "kernels/template_util.h"

namespace kiln {

namespace {

struct PoolShape {
  int64_t N, C, H, W, R, S, stride, pad, cb, OH, OW;
};

PoolShape pool_shape(const OpInstance& op) {
  auto at = [&](const char* n) {
    auto it = op.ints.find(n);
    return it == op.ints.end() ? int64_t{0} : it->second;
  };
  PoolShape s{at("N"), at("C"), at("H"), at("W"), at("R"), at("S"), at("stride"), at("pad"), at("cb"), 1, 1};
  if (op.op != "global_avg_pool2d_nchwc") {
    s.OH = window_out_extent(s.H, s.R, s.stride, s.pad, 1);
    s.OW = window_out_extent(s.W, s.S, s.stride, s.pad, 1);
  }
  return s;
}

void check_block(const std::string& op, int64_t C, int64_t cb) {
  user_check(C % cb == 0) << op << ": the channel block cb=" << cb << " must divide the channels (" << C << ")";
}

OpInstance window_pool_define(bool average, const std::map<std::string, int64_t>& params, DType dtype) {
  const std::string name = average ? "avg_pool2d_nchwc" : "max_pool2d_nchwc";
  OpInstance op;
  op.op = name;
  op.dtype = dtype;
  op.ints = params;
  const PoolShape s = pool_shape(op);
  check_window(name, s.H, s.W, s.R, s.S, s.pad, 1);
  check_block(name, s.C, s.cb);
  user_check(s.pad < s.R && s.pad < s.S) << name << ": the padding (" << s.pad << ") must be smaller than the window ("
                                         << s.R << "x" << s.S << ")";
  user_check(!average || dtype.is_float()) << name << ": averages need a float type, got " << dtype.str();
  Tensor data = placeholder({s.N, s.C / s.cb, s.H, s.W, s.cb}, dtype, "data");
  Tensor padded =
      pad_spatial(data, 2, 3, s.pad, average ? make_zero(dtype) : combiner_identity(Combiner::kMax, dtype));
  if (s.pad > 0) op.parts["data_pad"] = padded;
  IterVar rr = reduce_axis(static_cast<int>(s.R), "rr"), rs = reduce_axis(static_cast<int>(s.S), "rs");
  const int st = static_cast<int>(s.stride);
  auto window = [&](const std::vector<Var>& v) {
    return padded(v[0], v[1], v[2] * st + rr->var, v[3] * st + rs->var, v[4]);
  };
  const std::vector<Expr> shape = {s.N, s.C / s.cb, s.OH, s.OW, s.cb};
  Tensor out;
  if (average) {
    Tensor total = compute(
        shape, [&](const std::vector<Var>& v) { return sum(window(v), {rr, rs}); }, "pool_sum", name);
    op.parts["acc"] = total;
    out = compute(
        shape,
        [&](const std::vector<Var>& v) {
          Expr count = taps_inside(v[2], s.stride, s.pad, s.R, s.H) * taps_inside(v[3], s.stride, s.pad, s.S, s.W);
          return total(std::vector<Expr>(v.begin(), v.end())) / cast(dtype, count);
        },
        "pool", "average");
  } else {
    out = compute(
        shape, [&](const std::vector<Var>& v) { return max_reduce(window(v), {rr, rs}); }, "pool", name);
  }
  op.inputs = {data};
  op.outputs = {out};
  op.flops = 1.0 * s.N * s.C * s.OH * s.OW * s.R * s.S;
  return op;
}

std::shared_ptr<ConfigSpace> window_pool_space(const OpInstance& op, const CpuInfo&) {
  const PoolShape c = pool_shape(op);
  auto s = std::make_shared<ConfigSpace>();
  s->define_split_levels("tile_oh", c.OH, {capped_candidates(c.OH, {1, 2, 4})});
  s->define_split_levels("tile_ow", c.OW, {row_tile_candidates(c.OW)});
  s->define_reorder("order", channel_band_orders());
  s->define_choice("acc_at", {1, 2, 3});
  s->define_reorder("reduce_order", {{0, 1}, {1, 0}});
  s->define_annotate("unroll_kw", c.S > 1 ? std::vector<std::string>{"none", "unroll"} : std::vector<std::string>{"none"});
  s->define_choice("parallel", {0, 1, 2, 3});
  // -2: inlined into the reduction, -1: at the root, else a band position.
  s->define_choice("data_at", c.pad > 0 ? std::vector<int64_t>{-2, -1, 1, 2, 3} : std::vector<int64_t>{-2});
  return s;
}

Config window_pool_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space) {
  const PoolShape c = pool_shape(op);
  nlohmann::json j;
  j["tile_oh"] = nearest_split(space, "tile_oh", {1});
  j["tile_ow"] = nearest_split(space, "tile_ow", {register_tile_cols(c.OW, c.cb, cpu, op.dtype)});
  j["order"] = channel_band_orders()[0];
  j["acc_at"] = 3;
  j["reduce_order"] = {0, 1};
  j["unroll_kw"] = c.S > 1 ? "unroll" : "none";
  j["parallel"] = cpu.num_threads > 1 ? 2 : 0;
  j["data_at"] = -2;
  return space.make(j);
}

ScheduledOp window_pool_apply(const OpInstance& op, const Config& cfg) {
  user_check(op.op == "max_pool2d_nchwc" || op.op == "avg_pool2d_nchwc")
      << "the pool2d_nchwc template cannot schedule op '" << op.op << "'";
  const int64_t ohi = cfg.split("tile_oh")[1], owi = cfg.split("tile_ow")[1];
  Tensor out = op.outputs[0];
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& sc = *sch;
  Tensor acc = pool_accumulator(sc, op);
  Stage so = sc[out];
  ChannelTiles tiles = schedule_channel_tiles(so, sc[acc], ohi, owi, cfg);
  place_pool_padding(sc, op, cfg, so, tiles.band, tiles.acc_pos, 4);
  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
}

OpDef window_pool_op_def(bool average) {
  OpDef d;
  d.name = average ? "avg_pool2d_nchwc" : "max_pool2d_nchwc";
  d.size_params = {"N", "C", "H", "W"};
  d.summary = std::string(average ? "average" : "maximum") +
              " over R x S windows of blocked data [N,C/cb,H,W,cb] into [N,C/cb,OH,OW,cb]" +
              (average ? ", padding excluded from the count (float types)" : " (padding never wins)") +
              "; FLOPs: 1 per window element";
  d.params = {
      int_param("N", "batch size", "1"), int_param("C", "channels"),      int_param("H", "input height"),
      int_param("W", "input width"),     int_param("R", "window height"), int_param("S", "window width"),
  };
  for (const OpParam& p : window_params(false)) d.params.push_back(p);
  d.params.back().meaning = "padding on each side of H and W (smaller than the window)";
  d.params.push_back(int_param("cb", "channels per block of the data and output layouts (divides C)", "16"));
  d.params.push_back(dtype_param());
  d.params.back().meaning = average ? "element type (f32, f64)" : "element type (f32, f64, i8, u8, i32)";
  d.build = [average](const std::map<std::string, int64_t>& p, DType t) { return window_pool_define(average, p, t); };
  d.define_space = window_pool_space;
  d.default_config = window_pool_default;
  d.apply_config = window_pool_apply;
  return d;
}

// ---- global average pool

OpInstance global_pool_define(const std::map<std::string, int64_t>& params, DType dtype) {
  const std::string name = "global_avg_pool2d_nchwc";
  OpInstance op;
  op.op = name;
  op.dtype = dtype;
  op.ints = params;
  const PoolShape s = pool_shape(op);
  check_block(name, s.C, s.cb);
  user_check(dtype.is_float()) << name << ": averages need a float type, got " << dtype.str();
  Tensor data = placeholder({s.N, s.C / s.cb, s.H, s.W, s.cb}, dtype, "data");
  IterVar rh = reduce_axis(static_cast<int>(s.H), "rh"), rw = reduce_axis(static_cast<int>(s.W), "rw");
  const std::vector<Expr> shape = {s.N, s.C / s.cb, 1, 1, s.cb};
  Tensor total = compute(
      shape, [&](const std::vector<Var>& v) { return sum(data(v[0], v[1], rh->var, rw->var, v[4]), {rh, rw}); },
      "pool_sum", name);
  op.parts["acc"] = total;
  Expr count = make_const(dtype, static_cast<double>(s.H * s.W));
  Tensor out = compute(
      shape, [&](const std::vector<Var>& v) { return total(std::vector<Expr>(v.begin(), v.end())) / count; }, "pool",
      "average");
  op.inputs = {data};
  op.outputs = {out};
  op.flops = 1.0 * s.N * s.C * s.H * s.W;
  return op;
}

std::shared_ptr<ConfigSpace> global_pool_space(const OpInstance& op, const CpuInfo&) {
  const PoolShape c = pool_shape(op);
  auto s = std::make_shared<ConfigSpace>();
  s->define_split_levels("unroll_w", c.W, {capped_candidates(c.W, {1, 2, 4, 7, 8, 14})});
  s->define_reorder("order", {{0, 1}, {1, 0}});
  s->define_choice("parallel", {0, 1, 2});
  return s;
}

Config global_pool_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space) {
  const PoolShape c = pool_shape(op);
  nlohmann::json j;
  j["unroll_w"] = nearest_split(space, "unroll_w", {std::min<int64_t>(c.W, 4)});
  j["order"] = {0, 1};
  j["parallel"] = cpu.num_threads > 1 ? 2 : 0;
  return space.make(j);
}

ScheduledOp global_pool_apply(const OpInstance& op, const Config& cfg) {
  user_check(op.op == "global_avg_pool2d_nchwc") << "the global pool template cannot schedule op '" << op.op << "'";
  Tensor out = op.outputs[0];
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& sc = *sch;
  Stage so = sc[out];
  auto ax = so.axis();
  LoopBand band(so, {ax[0], ax[1]}, cfg.reorder("order"), {ax[2], ax[3], ax[4]},
                static_cast<int>(cfg.choice("parallel")), true);
  so.vectorize(ax[4]);
  // Each block's sum accumulates in a vector register over the plane.
  Stage sb = sc[op.parts.at("acc")];
  sb.set_scope(MemScope::kLocal);
  sb.compute_at(so, band.at(band.size() - 1));
  auto rx = sb.reduce_axis();
  IterVar wo, wi;
  sb.split(rx[1], cfg.split("unroll_w")[1], &wo, &wi);
  auto sax = sb.axis();
  sb.reorder({sax[0], sax[1], sax[2], sax[3], rx[0], wo, wi, sax[4]});
  sb.unroll(wi);
  sb.vectorize(sax[4]);
  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
}

}  // namespace

OpDef max_pool2d_nchwc_op_def() { return window_pool_op_def(false); }
OpDef avg_pool2d_nchwc_op_def() { return window_pool_op_def(true); }

OpDef global_avg_pool2d_nchwc_op_def() {
  OpDef d;
  d.name = "global_avg_pool2d_nchwc";
  d.size_params = {"N", "C", "H", "W"};
  d.summary =
      "average of each channel's whole H x W plane, blocked data [N,C/cb,H,W,cb] into [N,C/cb,1,1,cb] (float "
      "types); FLOPs: 1 per input element";
  d.params = {
      int_param("N", "batch size", "1"), int_param("C", "channels"), int_param("H", "input height"),
      int_param("W", "input width"),
      int_param("cb", "channels per block of the data and output layouts (divides C)", "16"),
  };
  d.params.push_back(dtype_param());
  d.params.back().meaning = "element type (f32, f64)";
  d.build = [](const std::map<std::string, int64_t>& p, DType t) { return global_pool_define(p, t); };
  d.define_space = global_pool_space;
  d.default_config = global_pool_default;
  d.apply_config = global_pool_apply;
  return d;
}

}  // namespace kiln
