#include "kernels/pool2d.h"

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/conv2d_common.h"
#include "kernels/gpu_pool2d_template.h"
#include "kernels/template_util.h"

namespace kiln {

namespace {

struct PoolShape {
  int64_t N, C, H, W, R, S, stride, pad, OH, OW;
};

PoolShape pool_shape(const OpInstance& op) {
  auto at = [&](const char* n) { return op.ints.at(n); };
  PoolShape s{at("N"), at("C"), at("H"), at("W"), at("R"), at("S"), at("stride"), at("pad"), 0, 0};
  s.OH = window_out_extent(s.H, s.R, s.stride, s.pad, 1);
  s.OW = window_out_extent(s.W, s.S, s.stride, s.pad, 1);
  return s;
}

}  // namespace

OpInstance pool2d_define(bool average, int64_t N, int64_t C, int64_t H, int64_t W, int64_t R, int64_t S, int64_t stride,
                         int64_t pad, DType dtype) {
  const std::string name = average ? "avg_pool2d" : "max_pool2d";
  check_window(name, H, W, R, S, pad, 1);
  user_check(pad < R && pad < S) << name << ": the padding (" << pad << ") must be smaller than the window (" << R
                                 << "x" << S << ")";
  user_check(!average || dtype.is_float()) << name << ": averages need a float type, got " << dtype.str();
  OpInstance op;
  op.op = name;
  op.dtype = dtype;
  op.ints = {{"N", N}, {"C", C}, {"H", H}, {"W", W}, {"R", R}, {"S", S}, {"stride", stride}, {"pad", pad}};
  PoolShape s = pool_shape(op);
  Tensor data = placeholder({N, C, H, W}, dtype, "data");
  Tensor padded = pad_spatial(data, 2, 3, pad, average ? make_zero(dtype) : combiner_identity(Combiner::kMax, dtype));
  if (pad > 0) op.parts["data_pad"] = padded;
  IterVar rr = reduce_axis(static_cast<int>(R), "rr"), rs = reduce_axis(static_cast<int>(S), "rs");
  const int st = static_cast<int>(stride);
  auto window = [&](Var n, Var c, Var oh, Var ow) { return padded(n, c, oh * st + rr->var, ow * st + rs->var); };
  Tensor out;
  if (average) {
    Tensor total = compute(
        {N, C, s.OH, s.OW},
        [&](Var n, Var c, Var oh, Var ow) {
          return sum(window(n, c, oh, ow), {rr, rs});
        },
        "pool_sum", "avg_pool2d");
    op.parts["acc"] = total;
    out = compute(
        {N, C, s.OH, s.OW},
        [&](Var n, Var c, Var oh, Var ow) {
          Expr count = taps_inside(oh, stride, pad, R, H) * taps_inside(ow, stride, pad, S, W);
          return total(n, c, oh, ow) / cast(dtype, count);
        },
        "pool", "average");
  } else {
    out = compute(
        {N, C, s.OH, s.OW},
        [&](Var n, Var c, Var oh, Var ow) {
          return max_reduce(window(n, c, oh, ow), {rr, rs});
        },
        "pool", "max_pool2d");
  }
  op.inputs = {data};
  op.outputs = {out};
  op.flops = 1.0 * N * C * s.OH * s.OW * R * S;
  return op;
}

std::shared_ptr<ConfigSpace> pool2d_space(const OpInstance& op, const CpuInfo& cpu) {
  PoolShape c = pool_shape(op);
  int lanes = vector_lanes(cpu, op.dtype);
  std::vector<int64_t> cols = row_tile_candidates(c.OW);
  for (int64_t v : vector_tile_candidates(c.OW, lanes)) cols.push_back(v);
  auto s = std::make_shared<ConfigSpace>();
  s->define_split_levels("tile_c", c.C, {capped_candidates(c.C, {1, 2, 4, 8})});
  s->define_split_levels("tile_oh", c.OH, {capped_candidates(c.OH, {1, 2, 4})});
  s->define_split_levels("tile_ow", c.OW, {capped_candidates(c.OW, cols)});
  s->define_reorder("order", channel_band_orders());
  s->define_choice("acc_at", {1, 2, 3});
  s->define_reorder("reduce_order", {{0, 1}, {1, 0}});
  s->define_annotate("unroll_kw", {"none", "unroll"});
  s->define_choice("parallel", {0, 1, 2, 3});
  // -2: inlined into the reduction, -1: at the root, else a band position.
  s->define_choice("data_at", {-2, -1, 1, 2, 3});
  return s;
}

Config pool2d_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space) {
  PoolShape c = pool_shape(op);
  nlohmann::json j;
  j["tile_c"] = nearest_split(space, "tile_c", {1});
  j["tile_oh"] = nearest_split(space, "tile_oh", {1});
  j["tile_ow"] = nearest_split(space, "tile_ow", {std::min<int64_t>(c.OW, vector_lanes(cpu, op.dtype))});
  j["order"] = channel_band_orders()[0];
  j["acc_at"] = 3;
  j["reduce_order"] = {0, 1};
  j["unroll_kw"] = "unroll";
  j["parallel"] = cpu.num_threads > 1 ? 2 : 0;
  j["data_at"] = -2;
  return space.make(j);
}

Tensor pool_accumulator(Schedule& sc, const OpInstance& op) {
  auto it = op.parts.find("acc");
  return it != op.parts.end() ? it->second : sc.cache_write(op.outputs[0], MemScope::kLocal);
}

void place_pool_padding(Schedule& sc, const OpInstance& op, const Config& cfg, Stage out, const LoopBand& band,
                        int acc_pos, int vec_axis) {
  auto pad = op.parts.find("data_pad");
  if (pad == op.parts.end()) return;
  const int data_at = static_cast<int>(cfg.choice("data_at"));
  if (data_at == -2)
    sc[pad->second].compute_inline();
  else
    place_stage(sc[pad->second], out, band, data_at, acc_pos, cfg.choice("parallel") > 0, vec_axis);
}

ScheduledOp pool2d_apply(const OpInstance& op, const Config& cfg) {
  user_check(op.op == "max_pool2d" || op.op == "avg_pool2d")
      << "the pool2d template cannot schedule op '" << op.op << "'";
  const int64_t ci = cfg.split("tile_c")[1], ohi = cfg.split("tile_oh")[1], owi = cfg.split("tile_ow")[1];
  const int parallel = static_cast<int>(cfg.choice("parallel"));
  Tensor out = op.outputs[0];
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& sc = *sch;
  Tensor acc = pool_accumulator(sc, op);
  Stage so = sc[out];
  auto ax = so.axis();
  IterVar co, ci_l, oho, ohi_l, owo, owi_l;
  so.split(ax[1], ci, &co, &ci_l);
  so.split(ax[2], ohi, &oho, &ohi_l);
  so.split(ax[3], owi, &owo, &owi_l);
  LoopBand band(so, {ax[0], co, oho, owo}, cfg.reorder("order"), {ci_l, ohi_l, owi_l}, parallel, true);
  so.vectorize(owi_l);
  const int acc_pos = std::max(0, std::min(static_cast<int>(cfg.choice("acc_at")), band.size() - 1));

  Stage sb = sc[acc];
  sb.set_scope(MemScope::kLocal);
  sb.compute_at(so, band.at(acc_pos));
  tile_accumulator(sb, {0, ci, ohi, owi}, cfg.reorder("reduce_order"), 3,
                   cfg.annotate("unroll_kw") == "unroll" ? 1 : -1);
  place_pool_padding(sc, op, cfg, so, band, acc_pos, -1);
  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
}

namespace {

OpDef pool2d_op_def(bool average) {
  OpDef d;
  d.name = average ? "avg_pool2d" : "max_pool2d";
  d.size_params = {"N", "C", "H", "W"};
  d.summary = average ? "average over R x S windows of NCHW data, padding excluded from the count (float types); "
                        "FLOPs: 1 per window element"
                      : "maximum over R x S windows of NCHW data (padding never wins); FLOPs: 1 per window element";
  d.params = {
      int_param("N", "batch size", "1"), int_param("C", "channels"),      int_param("H", "input height"),
      int_param("W", "input width"),     int_param("R", "window height"), int_param("S", "window width"),
  };
  for (const OpParam& p : window_params(false)) d.params.push_back(p);
  d.params.back().meaning = "padding on each side of H and W (smaller than the window)";
  d.params.push_back(dtype_param());
  d.params.back().meaning = average ? "element type (f32, f64)" : "element type (f32, f64, i8, u8, i32)";
  d.build = [average](const std::map<std::string, int64_t>& p, DType t) {
    return pool2d_define(average, p.at("N"), p.at("C"), p.at("H"), p.at("W"), p.at("R"), p.at("S"), p.at("stride"),
                         p.at("pad"), t);
  };
  d.define_space = pool2d_space;
  d.default_config = pool2d_default;
  d.apply_config = pool2d_apply;
  set_gpu_pool2d_template(d);
  return d;
}

}  // namespace

OpDef max_pool2d_op_def() { return pool2d_op_def(false); }
OpDef avg_pool2d_op_def() { return pool2d_op_def(true); }

}  // namespace kiln
