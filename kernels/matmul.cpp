#include "kernels/matmul.h"

#include "compute/error.h"
#include "compute/expr_ops.h"
#include "kernels/matmul_template.h"
#include "kernels/template_util.h"

namespace kiln {

OpInstance matmul_define(int64_t M, int64_t N, int64_t K, DType dtype, bool with_bias, bool relu) {
  OpInstance op;
  op.op = "matmul";
  DType acc = accumulator_type(dtype);
  Tensor A = placeholder({M, K}, dtype, "A");
  Tensor B = placeholder({K, N}, dtype, "B");
  IterVar k = reduce_axis(static_cast<int>(K), "k");
  Tensor C = compute(
      {M, N}, [&](Var i, Var j) { return sum(cast(acc, A(i, k->var)) * cast(acc, B(k->var, j)), {k}); }, "C", "matmul");
  op.inputs = {A, B};
  Tensor out = C;
  if (with_bias || relu) {
    Tensor bias;
    if (with_bias) {
      bias = placeholder({N}, acc, "bias");
      op.inputs.push_back(bias);
    }
    out = compute(
        {M, N},
        [&](Var i, Var j) {
          Expr v = C(i, j);
          if (with_bias) v = v + bias(j);
          if (relu) v = max(v, make_zero(acc));
          return v;
        },
        "out", "epilogue");
    op.parts["matmul"] = C;
  }
  op.outputs = {out};
  op.flops = 2.0 * M * N * K;
  op.dtype = dtype;
  op.ints = {{"M", M}, {"N", N}, {"K", K}, {"bias", with_bias}, {"relu", relu}};
  return op;
}

ScheduledOp matmul_schedule(const OpInstance& op, const MatmulSchedule& cfg) {
  user_check(cfg.mb > 0 && cfg.nb > 0) << "matmul schedule: tile sizes must be positive";
  int64_t M = op.ints.at("M"), N = op.ints.at("N"), K = op.ints.at("K");
  MatmulParams p;
  p.tile_y = {(M + cfg.mb - 1) / cfg.mb, 1, cfg.mb};
  p.tile_x = {(N + cfg.nb - 1) / cfg.nb, 1, cfg.nb};
  p.tile_k =
      cfg.kb > 0 && cfg.kb < K ? std::vector<int64_t>{(K + cfg.kb - 1) / cfg.kb, cfg.kb} : std::vector<int64_t>{1, K};
  p.order = {1, 0, 3, 2};  // column panels outer
  p.acc_at = 3;
  p.pack_b = 0;
  p.unroll_k = std::max<int64_t>(1, cfg.k_unroll);
  p.parallel = cfg.parallel ? 1 : 0;
  return matmul_template_schedule(op, p);
}

OpDef matmul_op_def() {
  OpDef d;
  d.name = "matmul";
  d.summary = "row-major C[M,N] = A[M,K] . B[K,N], optional bias[N] and relu epilogue";
  d.params = {
      {OpParam::kInt, "M", "rows of A and C", ""},
      {OpParam::kInt, "N", "columns of B and C", ""},
      {OpParam::kInt, "K", "columns of A, rows of B (the reduction)", ""},
      {OpParam::kDType, "dtype", "input element type (f32, f64, i8, u8, i32; integers accumulate in i32)", "f32"},
      {OpParam::kFlag, "bias", "1: add bias[N] to every row", "0"},
      {OpParam::kFlag, "relu", "1: apply max(x, 0) to the result", "0"},
  };
  d.build = [](const std::map<std::string, int64_t>& p, DType t) {
    return matmul_define(p.at("M"), p.at("N"), p.at("K"), t, p.at("bias") != 0, p.at("relu") != 0);
  };
  d.define_space = matmul_space;
  d.default_config = matmul_default;
  d.apply_config = matmul_apply;
  d.hand_schedule = [](const OpInstance& op, const CpuInfo& cpu) {
    auto space = matmul_space(op, cpu);
    return matmul_apply(op, matmul_default(op, cpu, *space));
  };
  return d;
}

}  // namespace kiln
