// The GPU baselines' parameter mapping (bench/contenders/gpu_mapping.h),
// tested without a GPU: cuBLAS's column-major GEMM and cuDNN's strided
// tensors, grouped filters and their formats are emulated here on the CPU
// exactly as the libraries define them, fed with what the mapping says, and
// the result checked against kiln's reference interpreter. So a wrong
// leading dimension, transposition, stride, filter format or weight reorder
// fails here, before a GPU ever runs it. Also: the GPU baselines' messages
// where no GPU can run them.
#include <catch2/catch.hpp>
#include <cmath>

#include "base/error.h"
#include "bench/contenders/baselines.h"
#include "bench/contenders/gpu_mapping.h"
#include "runtime/cuda_driver.h"
#include "tasks/kernel_build.h"
#include "tasks/reference_check.h"

using namespace kiln;
using namespace kiln::baselines;

namespace {

struct Instance {
  BuiltKernel k;
  ContenderOp op;
  std::vector<rt::NDArray> inputs;
  rt::NDArray out;
};

Instance instance(const std::string& workload) {
  Instance i{build_kernel(workload, ""), {}, {}, {}};
  i.op = contender_op(i.k.op);
  std::vector<rt::NDArray> arrays = random_arguments(i.k, 1);
  i.inputs.assign(arrays.begin(), arrays.end() - 1);
  i.out = arrays.back();
  return i;
}

CheckResult check(const Instance& i) { return check_outputs(i.k.op, i.inputs, {i.out}, 7); }

// cuBLAS's definition of a (strided-batched) GEMM in column-major order,
// with cuBLASLt's bias (one per row of C) and activation epilogue.
void emulate_cublas(const BlasGemm& g, const float* first, const float* second, float* c, const float* bias) {
  for (int64_t b = 0; b < g.batch; ++b) {
    const float* x = first + b * (g.batched ? g.stride_first : 0);
    const float* y = second + b * (g.batched ? g.stride_second : 0);
    float* cb = c + b * (g.batched ? g.stride_c : 0);
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t i = 0; i < g.m; ++i) {
        double acc = 0;
        for (int64_t l = 0; l < g.k; ++l) {
          const float xv = g.trans_first ? x[l + i * g.ld_first] : x[i + l * g.ld_first];
          const float yv = g.trans_second ? y[j + l * g.ld_second] : y[l + j * g.ld_second];
          acc += double(xv) * yv;
        }
        float v = float(acc) + (g.bias ? bias[i] : 0.0f);
        if (g.relu) v = v > 0 ? v : 0;
        if (g.gelu) v = 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f));
        cb[i + j * g.ldc] = v;
      }
  }
}

// cuBLAS's definition of cublasGemmBatchedEx: product i reads Aarray[i]
// and Barray[i] and writes Carray[i], with the one set of sizes, leading
// dimensions and transpositions (here the pointers are host addresses).
void emulate_cublas_pointer_arrays(const BlasGemm& g, const BatchPointers& p) {
  REQUIRE(p.first.size() == size_t(g.batch));
  REQUIRE(p.second.size() == size_t(g.batch));
  REQUIRE(p.c.size() == size_t(g.batch));
  for (int64_t b = 0; b < g.batch; ++b) {
    BlasGemm one = g;
    one.batched = false;
    one.batch = 1;
    emulate_cublas(one, reinterpret_cast<const float*>(p.first[size_t(b)]),
                   reinterpret_cast<const float*>(p.second[size_t(b)]), reinterpret_cast<float*>(p.c[size_t(b)]),
                   nullptr);
  }
}

void run_gemm_pointer_arrays(const std::string& workload) {
  INFO(workload);
  Instance i = instance(workload);
  const BlasGemm g = blas_gemm(i.op);
  REQUIRE(g.batched);
  auto address = [](const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); };
  const BatchPointers p =
      batch_pointers(g, address(i.inputs.at(size_t(g.first_input)).data()),
                     address(i.inputs.at(size_t(g.second_input)).data()), address(i.out.data()), sizeof(float));
  emulate_cublas_pointer_arrays(g, p);
  const CheckResult r = check(i);
  INFO(r.detail);
  CHECK(r.ok);
}

void run_gemm(const std::string& workload) {
  INFO(workload);
  Instance i = instance(workload);
  const BlasGemm g = blas_gemm(i.op);
  emulate_cublas(g, i.inputs.at(size_t(g.first_input)).data_as<float>(),
                 i.inputs.at(size_t(g.second_input)).data_as<float>(), i.out.data_as<float>(),
                 g.bias ? i.inputs.at(size_t(g.bias_input)).data_as<float>() : nullptr);
  const CheckResult r = check(i);
  INFO(r.detail);
  CHECK(r.ok);
}

// cuDNN's definition of a grouped cross-correlation on strided 4-d tensors
// with a KCRS (NCHW format) or KRSC (NHWC format) filter, then the epilogue.
void emulate_cudnn(const DnnConv& c, const float* x, const float* w, float* y, const float* bias) {
  const auto xs = c.x_strides(), ys = c.y_strides();
  const int64_t kg = c.k / c.groups;
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t k = 0; k < c.k; ++k)
      for (int64_t oh = 0; oh < c.oh; ++oh)
        for (int64_t ow = 0; ow < c.ow; ++ow) {
          double acc = 0;
          for (int64_t ci = 0; ci < c.cg; ++ci)
            for (int64_t r = 0; r < c.r; ++r)
              for (int64_t s = 0; s < c.s; ++s) {
                const int64_t h = oh * c.stride + r * c.dilation - c.pad, wi = ow * c.stride + s * c.dilation - c.pad;
                if (h < 0 || h >= c.h || wi < 0 || wi >= c.w) continue;
                const int64_t ch = (k / kg) * c.cg + ci;
                const int64_t widx = c.nhwc ? ((k * c.r + r) * c.s + s) * c.cg + ci : ((k * c.cg + ci) * c.r + r) * c.s + s;
                acc += double(x[n * xs[0] + ch * xs[1] + h * xs[2] + wi * xs[3]]) * w[widx];
              }
          float v = float(acc) + (c.bias ? bias[k] : 0.0f);
          if (c.activation == "relu") v = v > 0 ? v : 0;
          if (c.activation == "relu6") v = std::min(std::max(v, 0.0f), 6.0f);
          y[n * ys[0] + k * ys[1] + oh * ys[2] + ow * ys[3]] = v;
        }
}

void run_conv(const std::string& workload) {
  INFO(workload);
  Instance i = instance(workload);
  const DnnConv c = dnn_conv(i.op);
  REQUIRE(c.uncovered.empty());
  std::vector<float> w(i.inputs.at(1).data_as<float>(), i.inputs.at(1).data_as<float>() + i.inputs.at(1).num_elements());
  if (c.weight_hwio) {
    std::vector<float> krsc(w.size());
    hwio_to_krsc(w.data(), krsc.data(), c.r, c.s, c.cg, c.k, sizeof(float));
    w = krsc;
  }
  emulate_cudnn(c, i.inputs.at(0).data_as<float>(), w.data(), i.out.data_as<float>(),
                c.bias ? i.inputs.at(2).data_as<float>() : nullptr);
  const CheckResult r = check(i);
  INFO(r.detail);
  CHECK(r.ok);
}

}  // namespace

TEST_CASE("cuBLAS mapping: row-major GEMMs as column-major cublasGemmEx calls", "[bench][gpu]") {
  for (const char* w : {"matmul:M=7,N=5,K=3", "matmul:M=6,N=9,K=4,trans_a=1", "matmul:M=5,N=8,K=6,trans_b=1",
                        "matmul:M=4,N=7,K=5,trans_a=1,trans_b=1", "matmul:M=1,N=9,K=13", "dense:N=3,IN=11,OUT=6",
                        "dense:N=1,IN=40,OUT=12"})
    run_gemm(w);
  const BlasGemm g = blas_gemm(instance("matmul:M=6,N=9,K=4,trans_a=1").op);
  CHECK(g.m == 9);  // C^T is N x M
  CHECK(g.n == 6);
  CHECK(g.ld_first == 9);   // B [K, N]: column-major N x K
  CHECK(g.ld_second == 6);  // A stored [K, M]: column-major M x K, transposed
  CHECK(g.trans_second);
  CHECK_FALSE(g.trans_first);
  CHECK(g.ldc == 9);
}

TEST_CASE("cuBLAS mapping: batch_matmul strides for cublasGemmStridedBatchedEx", "[bench][gpu]") {
  for (const char* w : {"batch_matmul:B=3,M=8,N=12,K=7,trans_b=1", "batch_matmul:B=2,M=9,N=5,K=11,trans_a=1",
                        "batch_matmul:B=4,M=3,N=4,K=5"})
    run_gemm(w);
  const BlasGemm g = blas_gemm(instance("batch_matmul:B=3,M=8,N=12,K=7,trans_b=1").op);
  CHECK(g.batched);
  CHECK(g.batch == 3);
  CHECK(g.stride_first == 7 * 12);
  CHECK(g.stride_second == 8 * 7);
  CHECK(g.stride_c == 8 * 12);
}

TEST_CASE("cuBLAS mapping: batch_matmul pointer arrays for cublasGemmBatchedEx", "[bench][gpu]") {
  for (const char* w : {"batch_matmul:B=3,M=8,N=12,K=7,trans_b=1", "batch_matmul:B=2,M=9,N=5,K=11,trans_a=1",
                        "batch_matmul:B=4,M=3,N=4,K=5", "batch_matmul:B=5,M=1,N=7,K=3,trans_a=1,trans_b=1",
                        "batch_matmul:B=1,M=6,N=1,K=2"})
    run_gemm_pointer_arrays(w);
  // Byte addresses: batch i at base + i * stride elements of the dtype.
  const BlasGemm g = blas_gemm(instance("batch_matmul:B=3,M=8,N=12,K=7,trans_b=1").op);
  const BatchPointers p = batch_pointers(g, 0x10000, 0x20000, 0x30000, 2);
  CHECK(p.first == std::vector<uint64_t>{0x10000, 0x10000 + 7 * 12 * 2, 0x10000 + 2 * 7 * 12 * 2});
  CHECK(p.second == std::vector<uint64_t>{0x20000, 0x20000 + 8 * 7 * 2, 0x20000 + 2 * 8 * 7 * 2});
  CHECK(p.c == std::vector<uint64_t>{0x30000, 0x30000 + 8 * 12 * 2, 0x30000 + 2 * 8 * 12 * 2});
}

TEST_CASE("cuBLAS mapping: bias, relu and gelu as cuBLASLt epilogues on C^T's rows", "[bench][gpu]") {
  for (const char* w : {"matmul:M=16,N=20,K=12,trans_a=1,trans_b=1,bias=1,gelu=1", "matmul:M=5,N=7,K=3,bias=1",
                        "dense:N=5,IN=24,OUT=16,bias=1,relu=1", "matmul:M=4,N=6,K=5,relu=1"})
    run_gemm(w);
  const BlasGemm g = blas_gemm(instance("dense:N=5,IN=24,OUT=16,bias=1,relu=1").op);
  CHECK(g.has_epilogue());
  CHECK(g.bias_input == 2);
  CHECK_FALSE(blas_gemm(instance("matmul:M=4,N=4,K=4").op).has_epilogue());
  CHECK_THROWS_WITH(blas_gemm(instance("softmax:M=4,N=4").op),
                    Catch::Contains("cuBLAS has no contender for op 'softmax'"));
}

TEST_CASE("cuDNN mapping: NCHW and NHWC tensors, KCRS and KRSC filters, groups, epilogues", "[bench][gpu]") {
  for (const char* w : {"conv2d:N=1,C=8,H=12,W=12,K=16,R=3,S=3,stride=1,pad=1",
                        "conv2d:N=2,C=5,H=9,W=11,K=7,R=3,S=3,stride=2,pad=1,bias=1,relu=1",
                        "conv2d:N=1,C=8,H=11,W=11,K=8,R=3,S=3,stride=2,pad=1,groups=2,bias=1",
                        "conv2d:N=1,C=4,H=9,W=9,K=6,R=3,S=3,pad=2,dilation=2,relu6=1",
                        "conv2d_nhwc:N=1,H=10,W=10,C=8,K=12,R=3,S=3,stride=1,pad=1",
                        "conv2d_nhwc:N=2,H=9,W=9,C=6,K=4,R=3,S=2,stride=2,pad=1,groups=2,bias=1,relu=1",
                        "conv2d_nhwc:N=1,H=8,W=8,C=16,K=16,R=1,S=1,relu6=1",
                        "depthwise_conv2d:N=1,C=16,H=12,W=12,R=3,S=3,stride=1,pad=1",
                        "depthwise_conv2d:N=1,C=5,H=9,W=9,R=3,S=3,stride=2,pad=1,bias=1,relu=1"})
    run_conv(w);
  const DnnConv nhwc = dnn_conv(instance("conv2d_nhwc:N=2,H=9,W=7,C=6,K=4,R=3,S=3,pad=1").op);
  CHECK(nhwc.nhwc);
  CHECK(nhwc.weight_hwio);
  CHECK(nhwc.x_strides() == std::array<int64_t, 4>{9 * 7 * 6, 1, 7 * 6, 6});
  CHECK(nhwc.y_dims() == std::array<int64_t, 4>{2, 4, 9, 7});
  const DnnConv dw = dnn_conv(instance("depthwise_conv2d:N=1,C=5,H=9,W=9,R=3,S=3,stride=2,pad=1").op);
  CHECK(dw.groups == 5);
  CHECK(dw.filter_dims() == std::array<int64_t, 4>{5, 1, 3, 3});
  CHECK(dnn_conv(instance("conv2d:C=4,H=5,W=5,K=4,R=3,S=3,bias=1,relu=1").op).epilogue ==
        ConvEpilogue::kFusedBiasRelu);
  CHECK(dnn_conv(instance("conv2d:C=4,H=5,W=5,K=4,R=3,S=3,bias=1").op).epilogue == ConvEpilogue::kSeparate);
  CHECK(dnn_conv(instance("conv2d:C=4,H=5,W=5,K=4,R=3,S=3").op).epilogue == ConvEpilogue::kNone);
  CHECK_THAT(dnn_conv(instance("conv2d:C=4,H=5,W=5,K=4,R=3,S=3,hswish=1").op).uncovered,
             Catch::Contains("no hswish activation"));
}

TEST_CASE("cuDNN mapping: HWIO to KRSC", "[bench][gpu]") {
  const int64_t R = 2, S = 3, C = 4, K = 5;
  std::vector<float> hwio(size_t(R * S * C * K)), krsc(hwio.size());
  for (size_t i = 0; i < hwio.size(); ++i) hwio[i] = float(i);
  hwio_to_krsc(hwio.data(), krsc.data(), R, S, C, K, sizeof(float));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t k = 0; k < K; ++k)
          CHECK(krsc[size_t(((k * R + r) * S + s) * C + c)] == hwio[size_t(((r * S + s) * C + c) * K + k)]);
  CHECK(dnn_softmax(instance("softmax:M=12,N=33").op).cols == 33);
  CHECK(gpu_element_bytes("f16", "cuBLAS") == 2);
  CHECK_THROWS_WITH(gpu_element_bytes("f64", "cuBLAS"), Catch::Contains("compares f32 and f16 ops only, not f64"));
}

TEST_CASE("the GPU baselines say why they cannot run where no GPU can", "[bench][gpu]") {
  CHECK(is_gpu_baseline("cublas"));
  CHECK(is_gpu_baseline("cudnn"));
  CHECK_FALSE(is_gpu_baseline("onednn"));
  if (rt::cuda::available()) return;  // a GPU here: whether the libraries run is cli:bench_gpu_device's check
  for (const char* b : {"cublas", "cudnn"}) {
    const std::string why = baseline_unavailable_reason(b);
    INFO(b << ": " << why);
    CHECK((why.find("needs a GPU") != std::string::npos || why.find("could not initialize") != std::string::npos ||
           why.find("this kiln has no cu") != std::string::npos));
    CHECK_FALSE(baseline_supports(b, build_workload("matmul:M=4,N=4,K=4")));
    CHECK_THROWS_WITH(make_gpu_contender(b, build_workload("matmul:M=4,N=4,K=4"), {}, {}), Catch::Contains(why));
  }
  CHECK_THROWS_WITH(make_gpu_contender("onednn", build_workload("matmul:M=4,N=4,K=4"), {}, {}),
                    Catch::Contains("'onednn' is not a GPU baseline"));
}
