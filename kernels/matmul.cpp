#include "kernels/matmul.h"

#include "compute/error.h"
#include "compute/expr_ops.h"

namespace kiln {

namespace {
DType accumulator_type(DType t) { return t.is_float() ? t : DType::i32(); }
}  // namespace

OpInstance matmul_define(int64_t M, int64_t N, int64_t K, DType dtype, bool with_bias, bool relu) {
  OpInstance op;
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

MatmulSchedule matmul_default_config(const OpInstance& op, const CpuInfo& cpu) {
  MatmulSchedule cfg;
  DType acc = accumulator_type(op.dtype);
  int lanes = std::max(1, cpu.vector_bits / acc.bits);
  cfg.nb = 4 * lanes;  // four vector registers per row of the tile
  cfg.mb = 6;
  int64_t N = op.ints.at("N"), M = op.ints.at("M");
  if (N < cfg.nb) cfg.nb = std::max<int64_t>(1, N);
  if (M < cfg.mb) cfg.mb = M;
  cfg.parallel = cpu.num_threads > 1;
  return cfg;
}

ScheduledOp matmul_schedule(const OpInstance& op, const MatmulSchedule& cfg) {
  user_check(cfg.mb > 0 && cfg.nb > 0) << "matmul schedule: tile sizes must be positive";
  int64_t M = op.ints.at("M"), N = op.ints.at("N"), K = op.ints.at("K");
  bool with_bias = op.ints.at("bias") != 0, relu = op.ints.at("relu") != 0;
  DType acc = accumulator_type(op.dtype);
  const Tensor& A = op.inputs[0];
  const Tensor& B = op.inputs[1];
  const int nb = static_cast<int>(cfg.nb);
  int64_t n_panels = (N + nb - 1) / nb;

  // B packed into panels of nb columns: PB[jo, k, ji] = B[k, jo*nb + ji]
  // (zero past N), so the micro-kernel reads B contiguously.
  Tensor PB = compute(
      {n_panels, K, cfg.nb},
      [&](Var jo, Var k, Var ji) {
        Expr j = jo * nb + ji;
        Expr v = B(k, min(j, static_cast<int>(N - 1)));
        return (N % nb == 0) ? v : select(j < static_cast<int>(N), v, make_zero(op.dtype));
      },
      "PB", "pack");
  IterVar k = reduce_axis(static_cast<int>(K), "k");
  Tensor C = compute(
      {M, N},
      [&](Var i, Var j) {
        return sum(cast(acc, A(i, k->var)) * cast(acc, PB(floordiv(j, nb), k->var, floormod(j, nb))), {k});
      },
      "C", "matmul");
  Tensor out = C;
  if (with_bias || relu) {
    const Tensor* bias = with_bias ? &op.inputs[2] : nullptr;
    out = compute(
        {M, N},
        [&](Var i, Var j) {
          Expr v = C(i, j);
          if (bias) v = v + (*bias)(j);
          if (relu) v = max(v, make_zero(acc));
          return v;
        },
        "out", "epilogue");
  }
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& s = *sch;
  // Accumulator tile in registers: the matmul stage itself when an
  // epilogue stage writes the output, else a cache_write stage.
  Tensor acc_t = (out.same_tensor(C)) ? s.cache_write(C, MemScope::kLocal) : C;
  if (!out.same_tensor(C)) s[C].set_scope(MemScope::kLocal);
  Stage so = s[out];
  IterVar io, jo, ii, ji;
  so.tile(so.axis()[0], so.axis()[1], cfg.mb, cfg.nb, &io, &jo, &ii, &ji);
  so.reorder({jo, io, ii, ji});
  so.vectorize(ji);
  if (cfg.parallel) so.parallel(jo);
  // Pack each panel inside the parallel loop that uses it.
  s[PB].compute_at(so, jo);
  Stage sp = s[PB];
  sp.vectorize(sp.axis()[2]);

  Stage sc = s[acc_t];
  sc.compute_at(so, io);
  IterVar ci = sc.axis()[0], cj = sc.axis()[1], ck = sc.reduce_axis()[0];
  if (cfg.kb > 0 && cfg.kb < K) {
    IterVar ko, ki;
    sc.split(ck, cfg.kb, &ko, &ki);
    sc.reorder({ko, ki, ci, cj});
    ck = ki;
  } else {
    sc.reorder({ck, ci, cj});
  }
  if (cfg.k_unroll > 1) {
    IterVar ko, ki;
    sc.split(ck, cfg.k_unroll, &ko, &ki);
    sc.unroll(ki);
  }
  sc.unroll(ci);
  sc.vectorize(cj);
  return ScheduledOp{sch, [&] {
                       std::vector<Tensor> a = op.inputs;
                       a.push_back(out);
                       return a;
                     }()};
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
  d.hand_schedule = [](const OpInstance& op, const CpuInfo& cpu) {
    return matmul_schedule(op, matmul_default_config(op, cpu));
  };
  return d;
}

}  // namespace kiln
