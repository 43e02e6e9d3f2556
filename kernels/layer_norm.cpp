#include "kernels/layer_norm.h"

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/gpu_row_template.h"
#include "kernels/row_template.h"

namespace kiln {

OpInstance layer_norm_define(int64_t M, int64_t N, DType dtype) {
  user_check(dtype.is_float()) << "layer_norm needs a float dtype (f32 or f64), got " << dtype.str();
  OpInstance op;
  op.op = "layer_norm";
  op.dtype = dtype;
  op.ints = {{"M", M}, {"N", N}};
  const double inv_n = 1.0 / static_cast<double>(N);
  Tensor x = placeholder({M, N}, dtype, "data");
  Tensor gamma = placeholder({N}, dtype, "gamma");
  Tensor beta = placeholder({N}, dtype, "beta");
  IterVar k1 = reduce_axis(static_cast<int>(N), "k");
  Tensor rs = compute(
      {M}, [&](Var i) { return sum(x(i, k1->var), {k1}); }, "row_sum", "layer_norm");
  Tensor mean = compute(
      {M}, [&](Var i) { return rs(i) * make_const(dtype, inv_n); }, "mean", "layer_norm");
  IterVar k2 = reduce_axis(static_cast<int>(N), "k");
  Tensor sq = compute(
      {M},
      [&](Var i) {
        Expr d = x(i, k2->var) - mean(i);
        return sum(d * d, {k2});
      },
      "row_sqdiff", "layer_norm");
  Tensor inv_std = compute(
      {M},
      [&](Var i) { return make_const(dtype, 1.0) / sqrt(sq(i) * make_const(dtype, inv_n) + make_const(dtype, 1e-5)); },
      "inv_std", "layer_norm");
  Tensor out = compute(
      {M, N}, [&](Var i, Var j) { return (x(i, j) - mean(i)) * inv_std(i) * gamma(j) + beta(j); }, "out", "layer_norm");
  op.inputs = {x, gamma, beta};
  op.outputs = {out};
  op.parts = {{"row_sum", rs}, {"mean", mean}, {"row_sqdiff", sq}, {"inv_std", inv_std}};
  op.flops = 8.0 * M * N;
  return op;
}

namespace {

ScheduledOp layer_norm_apply(const OpInstance& op, const Config& cfg) {
  user_check(op.op == "layer_norm") << "the layer_norm template cannot schedule op '" << op.op << "'";
  RowParams p = decode_row_knobs(cfg);
  const Tensor& out = op.outputs[0];
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& s = *sch;
  IterVar row = schedule_row_output(s, out, p);
  schedule_row_reduction(s, op.parts.at("row_sum"), out, row, p);
  schedule_row_scalar(s, op.parts.at("mean"), out, row);
  schedule_row_reduction(s, op.parts.at("row_sqdiff"), out, row, p);
  schedule_row_scalar(s, op.parts.at("inv_std"), out, row);
  return ScheduledOp{sch, op.args()};
}

ScheduledOp layer_norm_gpu_apply(const OpInstance& op, const Config& cfg) {
  const GpuRowParams p = decode_gpu_row_knobs(cfg);
  const Tensor& out = op.outputs[0];
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& s = *sch;
  const GpuRowLoops loops = gpu_row_output(s, out, p);
  if (p.cache_x)
    gpu_row_cache_input(s, op.inputs[0], {op.parts.at("row_sum"), op.parts.at("row_sqdiff"), out}, out, loops, p);
  gpu_row_reduction(s, op.parts.at("row_sum"), out, loops.row, p);
  gpu_row_scalar(s, op.parts.at("mean"), out, loops.row);
  gpu_row_reduction(s, op.parts.at("row_sqdiff"), out, loops.row, p);
  gpu_row_scalar(s, op.parts.at("inv_std"), out, loops.row);
  return ScheduledOp{sch, op.args()};
}

}  // namespace

OpDef layer_norm_op_def() {
  OpDef d;
  d.name = "layer_norm";
  d.summary =
      "y[M,N] = (x - mean) / sqrt(var + 1e-5) * gamma[N] + beta[N], mean and variance over the last axis N of "
      "x[M,N] (float types); FLOPs 8*M*N (two reductions, center, square, normalize, scale, shift)";
  d.params = {
      {OpParam::kInt, "M", "rows (independently normalized)", ""},
      {OpParam::kInt, "N", "length of the last axis, the one normalized (gamma and beta have N elements)", ""},
      {OpParam::kDType, "dtype", "element type (f32, f64)", "f32"},
  };
  d.build = [](const std::map<std::string, int64_t>& p, DType t) { return layer_norm_define(p.at("M"), p.at("N"), t); };
  d.define_space = [](const OpInstance& op, const CpuInfo& cpu) {
    auto s = std::make_shared<ConfigSpace>();
    define_row_knobs(*s, op.ints.at("M"), op.ints.at("N"), op.dtype, cpu);
    return s;
  };
  d.default_config = [](const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space) {
    nlohmann::json j;
    default_row_knobs(j, space, op.ints.at("N"), op.dtype, cpu);
    return space.make(j);
  };
  d.apply_config = layer_norm_apply;
  set_gpu_row_template(d, layer_norm_gpu_apply);
  return d;
}

}  // namespace kiln
