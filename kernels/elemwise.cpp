#include "kernels/elemwise.h"

#include "compute/expr_ops.h"

namespace kiln {

OpInstance elemwise_define(int64_t M, int64_t N, DType dtype) {
  OpInstance op;
  op.dtype = dtype;
  op.ints = {{"M", M}, {"N", N}};
  Tensor A = placeholder({M, N}, dtype, "A");
  Tensor B = placeholder({M, N}, dtype, "B");
  Tensor t1 = compute(
      {M, N}, [&](Var i, Var j) { return A(i, j) * B(i, j) + make_const(dtype, int64_t{1}); }, "t1");
  Tensor t2 = compute(
      {M, N}, [&](Var i, Var j) { return max(t1(i, j), make_zero(dtype)); }, "t2");
  Tensor out = compute(
      {M, N},
      [&](Var i, Var j) {
        if (dtype.is_float()) return t2(i, j) * sigmoid(t1(i, j)) + tanh(A(i, j));
        return t2(i, j) * make_const(dtype, int64_t{3}) - A(i, j);
      },
      "out", "elemwise");
  op.inputs = {A, B};
  op.outputs = {out};
  op.parts["t1"] = t1;
  op.parts["t2"] = t2;
  op.flops = 6.0 * M * N;
  return op;
}

ScheduledOp elemwise_schedule(const OpInstance& op, const ElemwiseSchedule& cfg) {
  const Tensor& out = op.outputs[0];
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& s = *sch;
  s[op.parts.at("t1")].compute_inline();
  s[op.parts.at("t2")].compute_inline();
  Stage so = s[out];
  IterVar f = so.fuse(so.axis()[0], so.axis()[1]);
  IterVar outer, inner, u, v;
  so.split(f, cfg.vector_lanes * cfg.unroll, &outer, &inner);
  so.split(inner, cfg.vector_lanes, &u, &v);
  if (cfg.parallel) so.parallel(outer);
  so.unroll(u);
  so.vectorize(v);
  return ScheduledOp{sch, op.args()};
}

OpDef elemwise_op_def() {
  OpDef d;
  d.name = "elemwise";
  d.summary = "fused element-wise chain out = relu(A*B+1) * sigmoid(A*B+1) + tanh(A) over [M, N]";
  d.params = {
      {OpParam::kInt, "M", "rows", ""},
      {OpParam::kInt, "N", "columns", ""},
      {OpParam::kDType, "dtype", "element type (f32, f64, i8, u8, i32)", "f32"},
  };
  d.build = [](const std::map<std::string, int64_t>& p, DType t) { return elemwise_define(p.at("M"), p.at("N"), t); };
  d.hand_schedule = [](const OpInstance& op, const CpuInfo& cpu) {
    ElemwiseSchedule cfg;
    cfg.vector_lanes = std::max(1, cpu.vector_bits / op.dtype.bits);
    int64_t total = op.ints.at("M") * op.ints.at("N");
    while (cfg.vector_lanes > 1 && cfg.vector_lanes > total) cfg.vector_lanes /= 2;
    cfg.unroll = total >= cfg.vector_lanes * 4 ? 4 : 1;
    cfg.parallel = cpu.num_threads > 1 && total >= 4096;
    return elemwise_schedule(op, cfg);
  };
  return d;
}

}  // namespace kiln
