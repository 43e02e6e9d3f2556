// The fallback kernels of cuda libraries (see cuda_fallback_kernels.h).
#include "library/cuda_fallback_kernels.h"

namespace kiln {

namespace {

// Plain CUDA C that NVRTC compiles as is and the emulation header
// (codegen/cuda_emulation.h) runs on the CPU. relu is written as
// `v < 0 ? 0 : v` so that a NaN stays NaN, as kiln's max does.
const char* const kFallbackCode = R"CUDA(// kiln lib: fallback kernels for shapes without a tuned kernel
__device__ __forceinline__ float kiln_fallback_act(float v, int act) {
  if (act == 1) return v < 0.0f ? 0.0f : v;
  if (act == 2) return 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f));
  return v;
}

extern "C" __global__ void __launch_bounds__(128) kiln_fallback_gemm(long long batch, long long M, long long N,
    long long K, const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ bias,
    float* __restrict__ C, int trans_b, int act) {
  const long long total = batch * M * N;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const long long b = i / (M * N), row = i / N % M, col = i % N;
    const float* a = A + (b * M + row) * K;
    float acc = 0.0f;
    if (trans_b) {
      const float* w = B + (b * N + col) * K;
      for (long long k = 0; k < K; ++k) acc += a[k] * w[k];
    } else {
      const float* w = B + b * K * N + col;
      for (long long k = 0; k < K; ++k) acc += a[k] * w[k * N];
    }
    if (bias) acc += bias[col];
    C[i] = kiln_fallback_act(acc, act);
  }
}

extern "C" __global__ void __launch_bounds__(128) kiln_fallback_softmax(long long M, long long N,
    const float* __restrict__ x, float* __restrict__ y) {
  for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < M; r += (long long)gridDim.x * blockDim.x) {
    const float* xr = x + r * N;
    float* yr = y + r * N;
    float m = xr[0];
    for (long long j = 1; j < N; ++j) m = fmaxf(m, xr[j]);
    float s = 0.0f;
    for (long long j = 0; j < N; ++j) s += expf(xr[j] - m);
    const float inv = 1.0f / s;
    for (long long j = 0; j < N; ++j) yr[j] = expf(xr[j] - m) * inv;
  }
}

extern "C" __global__ void __launch_bounds__(128) kiln_fallback_layer_norm(long long M, long long N,
    const float* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta,
    float* __restrict__ y) {
  const float inv_n = 1.0f / (float)N;
  for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < M; r += (long long)gridDim.x * blockDim.x) {
    const float* xr = x + r * N;
    float* yr = y + r * N;
    float s = 0.0f;
    for (long long j = 0; j < N; ++j) s += xr[j];
    const float mean = s * inv_n;
    float sq = 0.0f;
    for (long long j = 0; j < N; ++j) sq += (xr[j] - mean) * (xr[j] - mean);
    const float inv_std = 1.0f / sqrtf(sq * inv_n + 1e-5f);
    for (long long j = 0; j < N; ++j) yr[j] = (xr[j] - mean) * inv_std * gamma[j] + beta[j];
  }
}
)CUDA";

CudaKernelLaunch launch_of(const std::string& kernel, const std::vector<std::string>& types) {
  CudaKernelLaunch l;
  l.kernel = kernel;
  l.block = {128, 1, 1};
  for (size_t i = 0; i < types.size(); ++i) l.params.push_back({types[i], static_cast<int>(i)});
  return l;
}

}  // namespace

const std::vector<std::string>& cuda_fallback_kernels() {
  static const std::vector<std::string> names = {"kiln_fallback_gemm", "kiln_fallback_softmax",
                                                 "kiln_fallback_layer_norm"};
  return names;
}

CudaSource cuda_fallback_source() {
  CudaSource src;
  src.function = "kiln_fallback";
  src.code = kFallbackCode;
  const std::string ll = "long long", in = "const float*", out = "float*";
  src.launches = {launch_of("kiln_fallback_gemm", {ll, ll, ll, ll, in, in, in, out, "int", "int"}),
                  launch_of("kiln_fallback_softmax", {ll, ll, in, out}),
                  launch_of("kiln_fallback_layer_norm", {ll, ll, in, in, in, out})};
  return src;
}

}  // namespace kiln
