#include "bench/contenders/gpu_mapping.h"

#include <cstring>

#include "base/error.h"

namespace kiln::baselines {

namespace {

bool gemm_op(const std::string& op) { return op == "matmul" || op == "dense" || op == "batch_matmul"; }

// cuDNN's element type of a dtype it takes; UserError for any other.
std::string dnn_data_type(const std::string& dtype) {
  if (dtype == "f32") return "CUDNN_DATA_FLOAT";
  if (dtype == "f16") return "CUDNN_DATA_HALF";
  user_error() << "the cuDNN contender compares f32 and f16 ops only, not " << dtype;
  return "";
}

}  // namespace

bool cublas_supports(const ContenderOp& op) {
  return gemm_op(op.op) && (op.dtype == "f32" || op.dtype == "f16" || op.dtype == "bf16");
}

BlasGemm blas_gemm(const ContenderOp& op) {
  BlasGemm g;
  int64_t M = 0, N = 0, K = 0;
  bool ta = false, tb = false;
  if (op.op == "matmul" || op.op == "dense") {
    const bool dense = op.op == "dense";  // y[N, OUT] = x[N, IN] . W[OUT, IN]^T
    M = op.ints.at(dense ? "N" : "M");
    N = op.ints.at(dense ? "OUT" : "N");
    K = op.ints.at(dense ? "IN" : "K");
    ta = !dense && param_or(op, "trans_a", 0);
    tb = dense || param_or(op, "trans_b", 0);
    g.bias = param_or(op, "bias", 0);
    g.relu = param_or(op, "relu", 0);
    g.gelu = param_or(op, "gelu", 0);
    if (g.bias) g.bias_input = 2;
  } else if (op.op == "batch_matmul") {
    g.batched = true;
    g.batch = op.ints.at("B");
    M = op.ints.at("M");
    N = op.ints.at("N");
    K = op.ints.at("K");
    ta = param_or(op, "trans_a", 0);
    tb = param_or(op, "trans_b", 0);
  } else {
    user_error() << "cuBLAS has no contender for op '" << op.op << "' (matmul, dense and batch_matmul only)";
  }
  if (op.dtype == "f16")
    g.data_type = "CUDA_R_16F";
  else if (op.dtype == "bf16")
    g.data_type = "CUDA_R_16BF";
  else
    user_check(op.dtype == "f32") << "the cuBLAS contender compares f32, f16 and bf16 GEMMs only, not " << op.dtype;
  g.m = N;
  g.n = M;
  g.k = K;
  // First operand: B, row-major [K, N] (column-major N x K, ld N), or [N, K]
  // when transposed (column-major K x N, ld K, taken transposed).
  g.trans_first = tb;
  g.ld_first = tb ? K : N;
  // Second operand: A, row-major [M, K] (column-major K x M, ld K), or
  // [K, M] when transposed (column-major M x K, ld M, taken transposed).
  g.trans_second = ta;
  g.ld_second = ta ? M : K;
  g.ldc = N;
  g.first_input = 1;
  g.second_input = 0;
  g.stride_first = K * N;
  g.stride_second = M * K;
  g.stride_c = M * N;
  return g;
}

BatchPointers batch_pointers(const BlasGemm& g, uint64_t first, uint64_t second, uint64_t c, size_t element_bytes) {
  internal_assert(g.batched && g.batch >= 1) << "batch_pointers of a GEMM that is not batched";
  BatchPointers p;
  const uint64_t bytes = element_bytes;
  for (int64_t i = 0; i < g.batch; ++i) {
    const uint64_t b = static_cast<uint64_t>(i);
    p.first.push_back(first + b * static_cast<uint64_t>(g.stride_first) * bytes);
    p.second.push_back(second + b * static_cast<uint64_t>(g.stride_second) * bytes);
    p.c.push_back(c + b * static_cast<uint64_t>(g.stride_c) * bytes);
  }
  return p;
}

std::array<int64_t, 4> DnnConv::strides_of(const std::array<int64_t, 4>& d) const {
  // d = {N, C, H, W}
  if (nhwc) return {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]};
  return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
}

bool cudnn_supports(const ContenderOp& op) {
  return (op.op == "conv2d" || op.op == "conv2d_nhwc" || op.op == "depthwise_conv2d" || op.op == "softmax") &&
         (op.dtype == "f32" || op.dtype == "f16");
}

DnnConv dnn_conv(const ContenderOp& op) {
  DnnConv c;
  const bool depthwise = op.op == "depthwise_conv2d";
  user_check(op.op == "conv2d" || op.op == "conv2d_nhwc" || depthwise)
      << "cuDNN has no contender for op '" << op.op << "' (conv2d, conv2d_nhwc, depthwise_conv2d and softmax)";
  c.data_type = dnn_data_type(op.dtype);
  c.tensor_ops = op.dtype == "f16";
  c.nhwc = op.op == "conv2d_nhwc";
  c.weight_hwio = c.nhwc;
  c.n = param_or(op, "N", 1);
  c.c = op.ints.at("C");
  c.h = op.ints.at("H");
  c.w = op.ints.at("W");
  c.r = op.ints.at("R");
  c.s = op.ints.at("S");
  c.k = depthwise ? c.c : op.ints.at("K");
  c.groups = depthwise ? c.c : param_or(op, "groups", 1);
  c.cg = c.c / c.groups;
  c.pad = param_or(op, "pad", 0);
  c.stride = param_or(op, "stride", 1);
  c.dilation = param_or(op, "dilation", 1);
  c.oh = (c.h + 2 * c.pad - c.dilation * (c.r - 1) - 1) / c.stride + 1;
  c.ow = (c.w + 2 * c.pad - c.dilation * (c.s - 1) - 1) / c.stride + 1;
  c.bias = param_or(op, "bias", 0);
  for (const char* a : {"relu", "relu6", "hswish", "hsigmoid"})
    if (param_or(op, a, 0)) c.activation = a;
  if (param_or(op, "stride_w", 0) > 0)
    c.uncovered = "kiln's cuDNN mapping takes one stride for both axes, and this workload has stride_w";
  else if (c.activation == "hswish" || c.activation == "hsigmoid")
    c.uncovered = "cuDNN's convolution API has no " + c.activation +
                  " activation (cudnnConvolutionBiasActivationForward fuses relu only, cudnnActivationForward has "
                  "no hard-swish or hard-sigmoid)";
  if (c.bias && c.activation == "relu")
    c.epilogue = ConvEpilogue::kFusedBiasRelu;
  else if (c.bias || !c.activation.empty())
    c.epilogue = ConvEpilogue::kSeparate;
  return c;
}

void hwio_to_krsc(const void* src, void* dst, int64_t R, int64_t S, int64_t Cg, int64_t K, size_t element_bytes) {
  const auto* in = static_cast<const unsigned char*>(src);
  auto* out = static_cast<unsigned char*>(dst);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t k = 0; k < K; ++k) {
          const int64_t from = ((r * S + s) * Cg + c) * K + k;
          const int64_t to = ((k * R + r) * S + s) * Cg + c;
          std::memcpy(out + to * element_bytes, in + from * element_bytes, element_bytes);
        }
}

DnnSoftmax dnn_softmax(const ContenderOp& op) {
  user_check(op.op == "softmax") << "cuDNN's softmax contender runs softmax, not '" << op.op << "'";
  return {op.ints.at("M"), op.ints.at("N"), dnn_data_type(op.dtype)};
}

size_t gpu_element_bytes(const std::string& dtype, const std::string& library) {
  if (dtype == "f32") return 4;
  if (dtype == "f16" || dtype == "bf16") return 2;
  user_error() << "the " << library << " contender compares f32, f16 and bf16 ops only, not " << dtype;
  return 0;
}

}  // namespace kiln::baselines
