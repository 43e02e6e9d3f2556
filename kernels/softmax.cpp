#include "kernels/softmax.h"

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/gpu_row_template.h"
#include "kernels/row_template.h"

namespace kiln {

OpInstance softmax_define(int64_t M, int64_t N, DType dtype) {
  user_check(dtype.is_float()) << "softmax needs a float dtype (f32 or f64), got " << dtype.str();
  OpInstance op;
  op.op = "softmax";
  op.dtype = dtype;
  op.ints = {{"M", M}, {"N", N}};
  Tensor x = placeholder({M, N}, dtype, "data");
  IterVar k1 = reduce_axis(static_cast<int>(N), "k");
  Tensor mx = compute(
      {M}, [&](Var i) { return max_reduce(x(i, k1->var), {k1}); }, "row_max", "softmax");
  Tensor e = compute(
      {M, N}, [&](Var i, Var j) { return exp(x(i, j) - mx(i)); }, "exp", "softmax");
  IterVar k2 = reduce_axis(static_cast<int>(N), "k");
  Tensor sm = compute(
      {M}, [&](Var i) { return sum(e(i, k2->var), {k2}); }, "row_sum", "softmax");
  Tensor inv = compute(
      {M}, [&](Var i) { return make_const(dtype, 1.0) / sm(i); }, "row_inv", "softmax");
  Tensor out = compute(
      {M, N}, [&](Var i, Var j) { return e(i, j) * inv(i); }, "out", "softmax");
  op.inputs = {x};
  op.outputs = {out};
  op.parts = {{"row_max", mx}, {"exp", e}, {"row_sum", sm}, {"row_inv", inv}};
  op.flops = 5.0 * M * N;
  return op;
}

namespace {

ScheduledOp softmax_apply(const OpInstance& op, const Config& cfg) {
  user_check(op.op == "softmax") << "the softmax template cannot schedule op '" << op.op << "'";
  RowParams p = decode_row_knobs(cfg);
  const bool store_exp = cfg.annotate("exp") == "store";
  const Tensor& out = op.outputs[0];
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& s = *sch;
  // Inlining first: the sum's rfactor then copies the exponential into its
  // partial sums.
  if (!store_exp) s[op.parts.at("exp")].compute_inline();
  IterVar row = schedule_row_output(s, out, p);
  schedule_row_reduction(s, op.parts.at("row_max"), out, row, p);
  if (store_exp) schedule_row_elementwise(s, op.parts.at("exp"), out, row, p);
  schedule_row_reduction(s, op.parts.at("row_sum"), out, row, p);
  schedule_row_scalar(s, op.parts.at("row_inv"), out, row);
  return ScheduledOp{sch, op.args()};
}

ScheduledOp softmax_gpu_apply(const OpInstance& op, const Config& cfg) {
  const GpuRowParams p = decode_gpu_row_knobs(cfg);
  const Tensor& out = op.outputs[0];
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& s = *sch;
  const GpuRowLoops loops = gpu_row_output(s, out, p);
  // x is read by the max and the exponential (inlined into the sum and the
  // output after the cache is in place).
  if (p.cache_x) gpu_row_cache_input(s, op.inputs[0], {op.parts.at("row_max"), op.parts.at("exp")}, out, loops, p);
  s[op.parts.at("exp")].compute_inline();
  gpu_row_reduction(s, op.parts.at("row_max"), out, loops.row, p);
  gpu_row_reduction(s, op.parts.at("row_sum"), out, loops.row, p);
  gpu_row_scalar(s, op.parts.at("row_inv"), out, loops.row);
  return ScheduledOp{sch, op.args()};
}

}  // namespace

OpDef softmax_op_def() {
  OpDef d;
  d.name = "softmax";
  d.summary =
      "y[M,N] = softmax of x[M,N] over the last axis N (max-subtracted, float types); FLOPs 5*M*N (max, subtract, "
      "exp, sum, scale)";
  d.params = {
      {OpParam::kInt, "M", "rows (independent softmaxes)", ""},
      {OpParam::kInt, "N", "length of the last axis, the one normalized", ""},
      {OpParam::kDType, "dtype", "element type (f32, f64)", "f32"},
  };
  d.build = [](const std::map<std::string, int64_t>& p, DType t) { return softmax_define(p.at("M"), p.at("N"), t); };
  d.define_space = [](const OpInstance& op, const CpuInfo& cpu) {
    auto s = std::make_shared<ConfigSpace>();
    define_row_knobs(*s, op.ints.at("M"), op.ints.at("N"), op.dtype, cpu);
    s->define_annotate("exp", {"store", "inline"});
    return s;
  };
  d.default_config = [](const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space) {
    nlohmann::json j;
    default_row_knobs(j, space, op.ints.at("N"), op.dtype, cpu);
    j["exp"] = "store";
    return space.make(j);
  };
  d.apply_config = softmax_apply;
  set_gpu_row_template(d, softmax_gpu_apply);
  return d;
}

}  // namespace kiln
