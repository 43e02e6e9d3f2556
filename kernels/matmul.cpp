#include "kernels/matmul.h"

#include "base/error.h"
#include "kernels/gpu_gemm_template.h"
#include "compute/expr_ops.h"
#include "kernels/matmul_packed_b.h"
#include "kernels/matmul_template.h"
#include "kernels/template_util.h"

namespace kiln {

OpInstance matmul_define(int64_t M, int64_t N, int64_t K, DType dtype, bool with_bias, bool relu) {
  GemmShape g;
  g.M = M;
  g.N = N;
  g.K = K;
  g.bias = with_bias;
  g.relu = relu;
  return matmul_define(g, dtype);
}

OpInstance matmul_define(const GemmShape& g, DType dtype) {
  OpInstance op = gemm_define(g, dtype);
  op.op = "matmul";
  op.ints = {{"M", g.M},
             {"N", g.N},
             {"K", g.K},
             {"bias", g.bias},
             {"relu", g.relu},
             {"trans_a", g.trans_a},
             {"trans_b", g.trans_b},
             {"gelu", g.gelu}};
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
  d.summary =
      "row-major C[M,N] = A[M,K] . B[K,N] (A stored [K,M] with trans_a, B stored [N,K] with trans_b), optional "
      "bias[N] and relu or gelu epilogue fused into the kernel; FLOPs 2*M*N*K";
  d.params = {
      {OpParam::kInt, "M", "rows of A and C", ""},
      {OpParam::kInt, "N", "columns of B and C", ""},
      {OpParam::kInt, "K", "columns of A, rows of B (the reduction)", ""},
      {OpParam::kDType, "dtype", "input element type (f32, f64, i8, u8, i32; integers accumulate in i32)", "f32"},
      {OpParam::kFlag, "bias", "1: add bias[N] to every row", "0"},
      {OpParam::kFlag, "relu", "1: apply max(x, 0) to the result", "0"},
      {OpParam::kFlag, "trans_a", "1: A is stored transposed, as [K,M]", "0", 1, true},
      {OpParam::kFlag, "trans_b", "1: B is stored transposed, as [N,K]", "0", 1, true},
      {OpParam::kFlag, "gelu", "1: apply gelu 0.5*x*(1+erf(x/sqrt(2))) to the result (floats; not with relu)", "0", 1,
       true},
  };
  d.build = [](const std::map<std::string, int64_t>& p, DType t) {
    GemmShape g;
    g.M = p.at("M");
    g.N = p.at("N");
    g.K = p.at("K");
    g.bias = p.at("bias") != 0;
    g.relu = p.at("relu") != 0;
    g.trans_a = p.at("trans_a") != 0;
    g.trans_b = p.at("trans_b") != 0;
    g.gelu = p.at("gelu") != 0;
    return matmul_define(g, t);
  };
  d.define_space = matmul_space;
  d.default_config = matmul_default;
  d.apply_config = matmul_apply;
  // B as constant weights, packed once (the oneDNN baseline gets its
  // weights reordered once, too).
  d.alternatives = [](const OpInstance& op) { return packed_b_alternatives(matmul_gemm_shape(op), op.dtype); };
  set_gpu_gemm_template(d, [](const OpInstance& op) { return matmul_gemm_shape(op); });
  return d;
}

}  // namespace kiln
