#include "kernels/batch_matmul.h"

#include "kernels/gpu_gemm_template.h"

#include "kernels/gemm_common.h"

namespace kiln {

namespace {

GemmShape batch_matmul_shape(const std::map<std::string, int64_t>& p) {
  GemmShape g;
  g.batch = p.at("B");
  g.M = p.at("M");
  g.N = p.at("N");
  g.K = p.at("K");
  g.trans_a = p.at("trans_a") != 0;
  g.trans_b = p.at("trans_b") != 0;
  return g;
}

}  // namespace

OpDef batch_matmul_op_def() {
  OpDef d;
  d.name = "batch_matmul";
  d.summary =
      "out[b,M,N] = A[b,M,K] . B[b,K,N] for each of B batches (A stored [b,K,M] with trans_a, B stored [b,N,K] with "
      "trans_b); FLOPs 2*B*M*N*K";
  d.params = {
      {OpParam::kInt, "B", "batches (independent products)", ""},
      {OpParam::kInt, "M", "rows of each A and output", ""},
      {OpParam::kInt, "N", "columns of each B and output", ""},
      {OpParam::kInt, "K", "the reduction: columns of A, rows of B", ""},
      {OpParam::kFlag, "trans_a", "1: each A is stored transposed, as [K,M]", "0"},
      {OpParam::kFlag, "trans_b", "1: each B is stored transposed, as [N,K]", "0"},
      {OpParam::kDType, "dtype", "input element type (f32, f64, i8, u8, i32; integers accumulate in i32)", "f32"},
  };
  d.build = [](const std::map<std::string, int64_t>& p, DType t) { return gemm_define(batch_matmul_shape(p), t); };
  set_gemm_template(d, [](const OpInstance& op) { return batch_matmul_shape(op.ints); });
  set_gpu_gemm_template(d, [](const OpInstance& op) { return batch_matmul_shape(op.ints); });
  return d;
}

}  // namespace kiln
