#include "kernels/dense.h"

#include "base/error.h"
#include "kernels/gpu_gemm_template.h"
#include "kernels/gemm_common.h"
#include "kernels/matmul_packed_b.h"

namespace kiln {

namespace {

GemmShape dense_shape(const std::map<std::string, int64_t>& p) {
  GemmShape g;
  g.M = p.at("N");
  g.N = p.at("OUT");
  g.K = p.at("IN");
  g.trans_b = true;
  g.bias = p.at("bias") != 0;
  g.relu = p.at("relu") != 0;
  g.gelu = p.at("gelu") != 0;
  g.a_name = "data";
  g.b_name = "weight";
  return g;
}

}  // namespace

OpDef dense_op_def() {
  OpDef d;
  d.name = "dense";
  d.summary =
      "fully connected y[N,OUT] = x[N,IN] . W[OUT,IN]^T, optional bias[OUT] and relu or gelu epilogue fused into the "
      "kernel; FLOPs 2*N*IN*OUT";
  d.params = {
      {OpParam::kInt, "N", "rows of x and y (the batch of vectors)", ""},
      {OpParam::kInt, "IN", "input features: columns of x and of W", ""},
      {OpParam::kInt, "OUT", "output features: rows of W, columns of y", ""},
      {OpParam::kFlag, "bias", "1: add bias[OUT] to every row", "0"},
      {OpParam::kFlag, "relu", "1: apply max(x, 0) to the result", "0"},
      {OpParam::kFlag, "gelu", "1: apply gelu 0.5*x*(1+erf(x/sqrt(2))) to the result (floats; not with relu)", "0"},
      {OpParam::kDType, "dtype", "input element type (f32, f64, i8, u8, i32; integers accumulate in i32)", "f32"},
  };
  d.build = [](const std::map<std::string, int64_t>& p, DType t) { return gemm_define(dense_shape(p), t); };
  set_gemm_template(d, [](const OpInstance& op) { return dense_shape(op.ints); });
  // The weights packed once into panels, as a network packs them at load.
  d.alternatives = [](const OpInstance& op) { return packed_b_alternatives(dense_shape(op.ints), op.dtype); };
  set_gpu_gemm_template(d, [](const OpInstance& op) { return dense_shape(op.ints); });
  return d;
}

}  // namespace kiln
