// The fallback kernels of cuda libraries (see cuda_fallback_kernels.h).
#include "library/cuda_fallback_kernels.h"

#include "codegen/cuda_prelude.h"
#include "library/source_text.h"

namespace kiln {

namespace {

// Loads and stores of each element type: f32 in registers.
const char* const kConversions = R"CUDA(
// ---- kiln lib: fallback kernels for shapes without a tuned kernel ----
__device__ __forceinline__ float kiln_fb_ld_f32(float v) { return v; }
__device__ __forceinline__ float kiln_fb_st_f32(float v) { return v; }
__device__ __forceinline__ float kiln_fb_ld_f16(kiln_half v) { return kiln_f16_to_f32(v); }
__device__ __forceinline__ kiln_half kiln_fb_st_f16(float v) { return kiln_f32_to_f16(v); }
__device__ __forceinline__ float kiln_fb_ld_bf16(kiln_bfloat16 v) { return kiln_bf16_to_f32(v); }
__device__ __forceinline__ kiln_bfloat16 kiln_fb_st_bf16(float v) { return kiln_f32_to_bf16(v); }

// The activations; written with comparisons so that a NaN stays NaN, as
// kiln's max and min keep it.
__device__ __forceinline__ float kiln_fb_relu6(float v) { return v < 0.0f ? 0.0f : (v > 6.0f ? 6.0f : v); }
__device__ __forceinline__ float kiln_fb_act(float v, int act) {
  if (act == 1) return v < 0.0f ? 0.0f : v;
  if (act == 2) return 0.5f * v * (1.0f + erff(v * 0.70710678118654752440f));
  if (act == 3) return kiln_fb_relu6(v);
  if (act == 4) return v * kiln_fb_relu6(v + 3.0f) / 6.0f;
  if (act == 5) return kiln_fb_relu6(v + 3.0f) / 6.0f;
  return v;
}
)CUDA";

// The kernels of one element type: @D@ its name, @T@ its storage type.
const char* const kKernels = R"CUDA(
extern "C" __global__ void __launch_bounds__(128) kiln_fallback_gemm_@D@(long long batch, long long M, long long N,
    long long K, const @T@* __restrict__ A, const @T@* __restrict__ B, const @T@* __restrict__ bias,
    @T@* __restrict__ C, int trans_b, int act) {
  const long long total = batch * M * N;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const long long b = i / (M * N), row = i / N % M, col = i % N;
    const @T@* a = A + (b * M + row) * K;
    float acc = 0.0f;
    if (trans_b) {
      const @T@* w = B + (b * N + col) * K;
      for (long long k = 0; k < K; ++k) acc += kiln_fb_ld_@D@(a[k]) * kiln_fb_ld_@D@(w[k]);
    } else {
      const @T@* w = B + b * K * N + col;
      for (long long k = 0; k < K; ++k) acc += kiln_fb_ld_@D@(a[k]) * kiln_fb_ld_@D@(w[k * N]);
    }
    if (bias) acc += kiln_fb_ld_@D@(bias[col]);
    C[i] = kiln_fb_st_@D@(kiln_fb_act(acc, act));
  }
}

extern "C" __global__ void __launch_bounds__(128) kiln_fallback_conv2d_@D@(long long N, long long C, long long H,
    long long W, long long K, long long R, long long S, long long stride, long long pad, long long dilation,
    long long groups, long long OH, long long OW, const @T@* __restrict__ data, const @T@* __restrict__ weight,
    const @T@* __restrict__ bias, @T@* __restrict__ out, int nhwc, int act) {
  const long long total = N * K * OH * OW, Cg = C / groups, Kg = K / groups;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    long long n, k, oh, ow;
    if (nhwc) {
      k = i % K, ow = i / K % OW, oh = i / (K * OW) % OH, n = i / (K * OW * OH);
    } else {
      ow = i % OW, oh = i / OW % OH, k = i / (OW * OH) % K, n = i / (OW * OH * K);
    }
    const long long c0 = k / Kg * Cg;  // the group's first input channel
    float acc = 0.0f;
    for (long long r = 0; r < R; ++r) {
      const long long ih = oh * stride - pad + r * dilation;
      if (ih < 0 || ih >= H) continue;
      for (long long s = 0; s < S; ++s) {
        const long long iw = ow * stride - pad + s * dilation;
        if (iw < 0 || iw >= W) continue;
        for (long long c = 0; c < Cg; ++c) {
          const @T@ x = nhwc ? data[((n * H + ih) * W + iw) * C + c0 + c] : data[((n * C + c0 + c) * H + ih) * W + iw];
          const @T@ w = nhwc ? weight[((r * S + s) * Cg + c) * K + k] : weight[((k * Cg + c) * R + r) * S + s];
          acc += kiln_fb_ld_@D@(x) * kiln_fb_ld_@D@(w);
        }
      }
    }
    if (bias) acc += kiln_fb_ld_@D@(bias[k]);
    out[i] = kiln_fb_st_@D@(kiln_fb_act(acc, act));
  }
}

extern "C" __global__ void __launch_bounds__(128) kiln_fallback_pool2d_@D@(long long N, long long C, long long H,
    long long W, long long R, long long S, long long stride, long long pad, long long OH, long long OW,
    const @T@* __restrict__ data, @T@* __restrict__ out, int average) {
  const long long total = N * C * OH * OW;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const long long ow = i % OW, oh = i / OW % OH, nc = i / (OW * OH);
    const long long h0 = oh * stride - pad, w0 = ow * stride - pad;
    const long long hb = h0 < 0 ? 0 : h0, he = h0 + R < H ? h0 + R : H;
    const long long wb = w0 < 0 ? 0 : w0, we = w0 + S < W ? w0 + S : W;
    const @T@* x = data + nc * H * W;
    // pad < R and pad < S: every window holds a tap of the input.
    float acc = average ? 0.0f : kiln_fb_ld_@D@(x[hb * W + wb]);
    for (long long h = hb; h < he; ++h)
      for (long long w = wb; w < we; ++w) {
        const float v = kiln_fb_ld_@D@(x[h * W + w]);
        if (average) acc += v;
        else if (v > acc || v != v) acc = acc != acc ? acc : v;
      }
    if (average) acc = acc / (float)((he - hb) * (we - wb));
    out[i] = kiln_fb_st_@D@(acc);
  }
}

extern "C" __global__ void __launch_bounds__(128) kiln_fallback_softmax_@D@(long long M, long long N,
    const @T@* __restrict__ x, @T@* __restrict__ y) {
  for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < M; r += (long long)gridDim.x * blockDim.x) {
    const @T@* xr = x + r * N;
    @T@* yr = y + r * N;
    float m = kiln_fb_ld_@D@(xr[0]);
    for (long long j = 1; j < N; ++j) m = fmaxf(m, kiln_fb_ld_@D@(xr[j]));
    float s = 0.0f;
    for (long long j = 0; j < N; ++j) s += expf(kiln_fb_ld_@D@(xr[j]) - m);
    const float inv = 1.0f / s;
    for (long long j = 0; j < N; ++j) yr[j] = kiln_fb_st_@D@(expf(kiln_fb_ld_@D@(xr[j]) - m) * inv);
  }
}

extern "C" __global__ void __launch_bounds__(128) kiln_fallback_layer_norm_@D@(long long M, long long N,
    const @T@* __restrict__ x, const @T@* __restrict__ gamma, const @T@* __restrict__ beta,
    @T@* __restrict__ y) {
  const float inv_n = 1.0f / (float)N;
  for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < M; r += (long long)gridDim.x * blockDim.x) {
    const @T@* xr = x + r * N;
    @T@* yr = y + r * N;
    float s = 0.0f;
    for (long long j = 0; j < N; ++j) s += kiln_fb_ld_@D@(xr[j]);
    const float mean = s * inv_n;
    float sq = 0.0f;
    for (long long j = 0; j < N; ++j) {
      const float d = kiln_fb_ld_@D@(xr[j]) - mean;
      sq += d * d;
    }
    const float inv_std = 1.0f / sqrtf(sq * inv_n + 1e-5f);
    for (long long j = 0; j < N; ++j)
      yr[j] = kiln_fb_st_@D@((kiln_fb_ld_@D@(xr[j]) - mean) * inv_std * kiln_fb_ld_@D@(gamma[j]) +
                             kiln_fb_ld_@D@(beta[j]));
  }
}
)CUDA";

struct Kind {
  const char* name;
  std::vector<std::string> params;  // "ll", "int", "in" (const T*), "out" (T*)
};

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> k = {
      {"gemm", {"ll", "ll", "ll", "ll", "in", "in", "in", "out", "int", "int"}},
      {"conv2d",
       {"ll", "ll", "ll", "ll", "ll", "ll", "ll", "ll", "ll", "ll", "ll", "ll", "ll", "in", "in", "in", "out", "int",
        "int"}},
      {"pool2d", {"ll", "ll", "ll", "ll", "ll", "ll", "ll", "ll", "ll", "ll", "in", "out", "int"}},
      {"softmax", {"ll", "ll", "in", "out"}},
      {"layer_norm", {"ll", "ll", "in", "in", "in", "out"}},
  };
  return k;
}

std::string storage_type(const std::string& dtype) {
  return dtype == "f16" ? "kiln_half" : dtype == "bf16" ? "kiln_bfloat16" : "float";
}

CudaKernelLaunch launch_of(const Kind& kind, const std::string& dtype) {
  const std::string t = storage_type(dtype);
  CudaKernelLaunch l;
  l.kernel = std::string("kiln_fallback_") + kind.name + "_" + dtype;
  l.block = {128, 1, 1};
  for (size_t i = 0; i < kind.params.size(); ++i) {
    const std::string& p = kind.params[i];
    const std::string type = p == "ll" ? "long long" : p == "int" ? "int" : p == "in" ? "const " + t + "*" : t + "*";
    l.params.push_back({type, static_cast<int>(i)});
  }
  return l;
}

}  // namespace

const std::vector<std::string>& cuda_fallback_dtypes() {
  static const std::vector<std::string> d = {"f32", "f16", "bf16"};
  return d;
}

const std::vector<std::string>& cuda_fallback_kernels() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const std::string& d : cuda_fallback_dtypes())
      for (const Kind& k : kinds()) n.push_back(std::string("kiln_fallback_") + k.name + "_" + d);
    return n;
  }();
  return names;
}

CudaSource cuda_fallback_source() {
  CudaSource src;
  src.function = "kiln_fallback";
  src.code = cuda_prelude() + cuda_narrow_float_prelude() + kConversions;
  for (const std::string& d : cuda_fallback_dtypes()) {
    src.code += replace_all(replace_all(kKernels, "@D@", d), "@T@", storage_type(d));
    for (const Kind& k : kinds()) src.launches.push_back(launch_of(k, d));
  }
  return src;
}

}  // namespace kiln
