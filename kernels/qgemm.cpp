#include "kernels/qgemm.h"

#include "kernels/gemm_common.h"
#include "kernels/matmul_packed_b.h"
#include "kernels/quantize.h"

namespace kiln {

namespace {

GemmShape qmatmul_shape(const std::map<std::string, int64_t>& p, DType out) {
  GemmShape g;
  g.M = p.at("M");
  g.N = p.at("N");
  g.K = p.at("K");
  g.bias = p.at("bias") != 0;
  g.relu = p.at("relu") != 0;
  g.quantized = true;
  g.out_type = out;
  return g;
}

GemmShape qdense_shape(const std::map<std::string, int64_t>& p, DType out) {
  GemmShape g;
  g.M = p.at("N");
  g.N = p.at("OUT");
  g.K = p.at("IN");
  g.trans_b = true;
  g.bias = p.at("bias") != 0;
  g.relu = p.at("relu") != 0;
  g.quantized = true;
  g.out_type = out;
  g.a_name = "data";
  g.b_name = "weight";
  return g;
}

}  // namespace

OpDef qmatmul_op_def() {
  OpDef d;
  d.name = "qmatmul";
  d.summary =
      "int8 C[M,N] = requantize(A[M,K] (u8) . B[K,N] (i8) + bias[N] (i32), scale[N]) into u8, i8, f32 or i32, "
      "summed in i32; FLOPs 2*M*N*K";
  d.params = {
      {OpParam::kInt, "M", "rows of A and C", ""},
      {OpParam::kInt, "N", "columns of B and C", ""},
      {OpParam::kInt, "K", "columns of A, rows of B (the reduction)", ""},
      {OpParam::kFlag, "bias", "1: add an i32 bias[N] to the sums", "0"},
      {OpParam::kFlag, "relu", "1: clamp the result at 0", "0"},
      quantized_out_param(),
  };
  d.build = [](const std::map<std::string, int64_t>& p, DType out) {
    return gemm_define(qmatmul_shape(p, out), out);
  };
  set_gemm_template(d, [](const OpInstance& op) { return qmatmul_shape(op.ints, op.dtype); });
  // B as constant weights, packed once in the int8 blocked layout.
  d.alternatives = [](const OpInstance& op) {
    return packed_b_alternatives(qmatmul_shape(op.ints, op.dtype), op.dtype);
  };
  return d;
}

OpDef qdense_op_def() {
  OpDef d;
  d.name = "qdense";
  d.summary =
      "int8 fully connected y[N,OUT] = requantize(x[N,IN] (u8) . W[OUT,IN]^T (i8) + bias[OUT] (i32), scale[OUT]) "
      "into u8, i8, f32 or i32, summed in i32; FLOPs 2*N*IN*OUT";
  d.params = {
      {OpParam::kInt, "N", "rows of x and y (the batch of vectors)", ""},
      {OpParam::kInt, "IN", "input features: columns of x and of W", ""},
      {OpParam::kInt, "OUT", "output features: rows of W, columns of y", ""},
      {OpParam::kFlag, "bias", "1: add an i32 bias[OUT] to the sums", "0"},
      {OpParam::kFlag, "relu", "1: clamp the result at 0", "0"},
      quantized_out_param(),
  };
  d.build = [](const std::map<std::string, int64_t>& p, DType out) { return gemm_define(qdense_shape(p, out), out); };
  set_gemm_template(d, [](const OpInstance& op) { return qdense_shape(op.ints, op.dtype); });
  d.alternatives = [](const OpInstance& op) {
    return packed_b_alternatives(qdense_shape(op.ints, op.dtype), op.dtype);
  };
  return d;
}

}  // namespace kiln
