// The GPU baselines' parameter mapping (bench/contenders/gpu_mapping.h),
// tested without a GPU: cuBLAS's column-major GEMM and cuDNN's strided
// tensors, grouped filters and their formats are emulated here on the CPU
// exactly as the libraries define them, fed with what the mapping says, and
// the result checked against kiln's reference interpreter. So a wrong
// leading dimension, transposition, stride, filter format or weight reorder
// fails here, before a GPU ever runs it. f16 and bf16 operands are
// widened to f32, summed in f32 and the result rounded once to 16 bits, as
// the libraries do with the data and compute types the mapping names. Also:
// the GPU baselines' messages where no GPU can run them, and that every
// workload of the GPU suites has a baseline.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "bench/bench_suite.h"
#include "bench/contenders/baselines.h"
#include "bench/contenders/gpu_mapping.h"
#include "runtime/cuda_driver.h"
#include "runtime/float16.h"
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

// `n` elements of f32, f16 or bf16 at `data` as floats.
std::vector<float> floats_of(const void* data, int64_t n, rt::DataType t) {
  std::vector<float> v(size_t(n), 0.0f);
  for (size_t e = 0; e < v.size(); ++e)
    if (t == rt::DataType::f32())
      v[e] = static_cast<const float*>(data)[e];
    else if (t == rt::DataType::f16())
      v[e] = rt::half_to_float(static_cast<const uint16_t*>(data)[e]);
    else
      v[e] = rt::bfloat16_to_float(static_cast<const uint16_t*>(data)[e]);
  return v;
}

std::vector<float> floats_of(const rt::NDArray& a) { return floats_of(a.data(), a.num_elements(), a.dtype()); }

// f32 results rounded once to `a`'s dtype, as the libraries store an f32
// accumulator into a 16-bit output.
void store(const std::vector<float>& v, const rt::NDArray& a) {
  REQUIRE(v.size() == size_t(a.num_elements()));
  for (size_t e = 0; e < v.size(); ++e)
    if (a.dtype() == rt::DataType::f32())
      a.data_as<float>()[e] = v[e];
    else if (a.dtype() == rt::DataType::f16())
      a.data_as<uint16_t>()[e] = rt::float_to_half(v[e]);
    else
      a.data_as<uint16_t>()[e] = rt::float_to_bfloat16(v[e]);
}

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
  const std::vector<float> first = floats_of(i.inputs.at(size_t(g.first_input))),
                           second = floats_of(i.inputs.at(size_t(g.second_input))),
                           bias = g.bias ? floats_of(i.inputs.at(size_t(g.bias_input))) : std::vector<float>();
  std::vector<float> c(size_t(i.out.num_elements()));
  emulate_cublas(g, first.data(), second.data(), c.data(), g.bias ? bias.data() : nullptr);
  store(c, i.out);
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
  // The weights as the plug-in hands them to cuDNN: reordered in their own
  // element size.
  const rt::NDArray& weight = i.inputs.at(1);
  std::vector<unsigned char> w(weight.nbytes());
  if (c.weight_hwio)
    hwio_to_krsc(weight.data(), w.data(), c.r, c.s, c.cg, c.k, gpu_element_bytes(i.op.dtype, "cuDNN"));
  else
    std::memcpy(w.data(), weight.data(), w.size());
  const std::vector<float> x = floats_of(i.inputs.at(0)),
                           wf = floats_of(w.data(), weight.num_elements(), weight.dtype()),
                           bias = c.bias ? floats_of(i.inputs.at(2)) : std::vector<float>();
  std::vector<float> y(size_t(i.out.num_elements()));
  emulate_cudnn(c, x.data(), wf.data(), y.data(), c.bias ? bias.data() : nullptr);
  store(y, i.out);
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

TEST_CASE("cuBLAS mapping: f16 and bf16 GEMMs as GemmEx on 16-bit data summed in f32", "[bench][gpu]") {
  for (const char* t : {"f16", "bf16"})
    for (const std::string w : {"matmul:M=7,N=5,K=3", "matmul:M=4,N=7,K=5,trans_a=1,trans_b=1", "dense:N=3,IN=11,OUT=6",
                                "batch_matmul:B=3,M=8,N=12,K=7,trans_b=1", "batch_matmul:B=2,M=9,N=5,K=11,trans_a=1",
                                "matmul:M=16,N=20,K=12,bias=1,gelu=1", "dense:N=5,IN=24,OUT=16,bias=1,relu=1"})
      run_gemm(w + ",dtype=" + t);
  // The types of every GEMM op: the data in the op's dtype, the sums in f32.
  for (const std::string w : {"matmul:M=4096,N=4096,K=4096", "dense:N=128,IN=768,OUT=768,bias=1",
                              "batch_matmul:B=12,M=128,N=128,K=64,trans_b=1"})
    for (auto [dtype, data_type] : {std::pair{"f32", "CUDA_R_32F"}, {"f16", "CUDA_R_16F"}, {"bf16", "CUDA_R_16BF"}}) {
      INFO(w << " " << dtype);
      const ContenderOp op = contender_op(build_workload(w + ",dtype=" + dtype));
      CHECK(cublas_supports(op));
      CHECK_FALSE(cudnn_supports(op));
      const BlasGemm g = blas_gemm(op);
      CHECK(g.data_type == data_type);
      CHECK(g.compute_type == "CUBLAS_COMPUTE_32F");
    }
  CHECK(gpu_element_bytes("bf16", "cuBLAS") == 2);
  const ContenderOp f64 = contender_op(build_workload("matmul:M=4,N=4,K=4,dtype=f64"));
  CHECK_FALSE(cublas_supports(f64));
  CHECK_THROWS_WITH(blas_gemm(f64), Catch::Contains("compares f32, f16 and bf16 GEMMs only, not f64"));
}

TEST_CASE("cuDNN mapping: f16 NHWC convolutions on NHWC tensors and KRSC filters, summed in f32", "[bench][gpu]") {
  for (const char* w : {"conv2d_nhwc:N=1,H=10,W=10,C=8,K=12,R=3,S=3,stride=1,pad=1,dtype=f16",
                        "conv2d_nhwc:N=2,H=9,W=9,C=6,K=4,R=3,S=2,stride=2,pad=1,groups=2,bias=1,relu=1,dtype=f16",
                        "conv2d_nhwc:N=1,H=8,W=8,C=16,K=16,R=1,S=1,relu6=1,dtype=f16",
                        "conv2d_nhwc:N=1,H=11,W=11,C=3,K=8,R=7,S=7,stride=2,pad=3,dtype=f16",
                        "conv2d:N=1,C=8,H=12,W=12,K=16,R=3,S=3,stride=1,pad=1,dtype=f16",
                        "conv2d_nhwc:N=1,H=7,W=7,C=512,K=4,R=3,S=3,stride=1,pad=1,dtype=f16"})
    run_conv(w);
  const ContenderOp op = contender_op(build_workload("conv2d_nhwc:N=1,H=56,W=56,C=64,K=64,R=3,S=3,pad=1,dtype=f16"));
  CHECK(cudnn_supports(op));
  CHECK_FALSE(cublas_supports(op));
  const DnnConv c = dnn_conv(op);
  CHECK(c.nhwc);  // NHWC tensors, a CUDNN_TENSOR_NHWC (KRSC) filter
  CHECK(c.weight_hwio);
  CHECK(c.x_strides() == std::array<int64_t, 4>{56 * 56 * 64, 1, 56 * 64, 64});
  CHECK(c.y_strides() == std::array<int64_t, 4>{56 * 56 * 64, 1, 56 * 64, 64});
  CHECK(c.data_type == "CUDNN_DATA_HALF");
  CHECK(c.compute_type == "CUDNN_DATA_FLOAT");
  CHECK(c.tensor_ops);
  // f32: summed in f32 without tensor cores (no TF32).
  const DnnConv f32 = dnn_conv(contender_op(build_workload("conv2d_nhwc:N=1,H=8,W=8,C=16,K=16,R=3,S=3,pad=1")));
  CHECK(f32.data_type == "CUDNN_DATA_FLOAT");
  CHECK(f32.compute_type == "CUDNN_DATA_FLOAT");
  CHECK_FALSE(f32.tensor_ops);
  CHECK(dnn_softmax(contender_op(build_workload("softmax:M=4,N=8,dtype=f16"))).data_type == "CUDNN_DATA_HALF");
  // cuDNN has no bf16 contender.
  const ContenderOp bf16 = contender_op(build_workload("conv2d_nhwc:N=1,H=8,W=8,C=16,K=16,R=3,S=3,pad=1,dtype=bf16"));
  CHECK_FALSE(cudnn_supports(bf16));
  CHECK_THROWS_WITH(dnn_conv(bf16), Catch::Contains("compares f32 and f16 ops only, not bf16"));
}

// The 16-bit GPU suites compare every workload with a baseline in the same
// run: their GEMMs with cuBLAS in the suite's dtype, their convolutions
// with cuDNN in NHWC f16.
TEST_CASE("the 16-bit GPU suites: every workload maps to cuBLAS GemmEx or cuDNN NHWC", "[bench][gpu]") {
  for (auto [suite, data_type] : {std::pair{"cuda-matmul-f16", "CUDA_R_16F"},
                                  {"cuda-bert-base-f16", "CUDA_R_16F"},
                                  {"cuda-bert-base-bf16", "CUDA_R_16BF"},
                                  {"cuda-resnet50-f16", ""}})
    for (auto& w : load_suite(suite).workloads) {
      INFO(suite << " line " << w.line << ": " << w.text);
      const ContenderOp op = contender_op(build_workload(w.text));
      CHECK(cublas_supports(op) != cudnn_supports(op));
      if (cublas_supports(op)) {
        const BlasGemm g = blas_gemm(op);
        CHECK(g.data_type == data_type);
        CHECK(g.compute_type == "CUBLAS_COMPUTE_32F");
      } else {
        CHECK(op.op == "conv2d_nhwc");
        const DnnConv c = dnn_conv(op);
        CHECK(c.uncovered.empty());
        CHECK(c.nhwc);
        CHECK(c.data_type == "CUDNN_DATA_HALF");
        CHECK(c.compute_type == "CUDNN_DATA_FLOAT");
        CHECK(c.tensor_ops);
      }
    }
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
  CHECK_THROWS_WITH(gpu_element_bytes("f64", "cuBLAS"),
                    Catch::Contains("compares f32, f16 and bf16 ops only, not f64"));
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
