// f16 and bf16 on the cuda backend: stored in 16 bits in global and shared
// memory, computed and accumulated in f32 (registers). The device prelude's
// conversions against the interpreter's, bit for bit; every cuda template
// family on f16 and bf16 workloads, emulated against the interpreter and
// compiled by NVRTC; the source's packed (half2-style) accesses.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "compute/interpreter.h"
#include "codegen/cuda_prelude.h"
#include "support/gpu_check.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "support/test_seed.h"
#include "test_codegen_util.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Matchers::Contains;
using kiln::test::user_error_of;

namespace {

// Converts each input to f16 and bf16 and back.
const char* const kConvertKernel = R"(
extern "C" __global__ void convert(const float* __restrict__ x, kiln_half* __restrict__ h,
                                   kiln_bfloat16* __restrict__ b, float* __restrict__ hf, float* __restrict__ bf) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  h[i] = kiln_f32_to_f16(x[i]);
  b[i] = kiln_f32_to_bf16(x[i]);
  hf[i] = kiln_f16_to_f32(h[i]);
  bf[i] = kiln_bf16_to_f32(b[i]);
}
)";

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Values where rounding is delicate: ties to even, the largest finite f16
// and what overflows it, subnormals and what underflows, infinities, NaN.
std::vector<float> delicate_values(uint64_t seed) {
  std::vector<float> v{0.0f,
                       -0.0f,
                       1.0f,
                       1.0f + std::ldexp(1.0f, -11),      // f16 tie: stays 1
                       1.0f + 3 * std::ldexp(1.0f, -11),  // f16 tie: rounds up to even
                       1.0f + std::ldexp(1.0f, -8),       // bf16 tie
                       1.0f + 3 * std::ldexp(1.0f, -8),
                       65504.0f,
                       65519.99f,
                       65520.0f,  // rounds to f16 infinity
                       -70000.0f,
                       std::ldexp(1.0f, -24),       // the smallest f16 subnormal
                       std::ldexp(1.0f, -25),       // half of it: a tie, to 0
                       std::ldexp(1.5f, -25),       // above the tie: the smallest subnormal
                       std::ldexp(3.0f, -25),       // a tie between two subnormals
                       std::ldexp(1023.5f, -24),    // rounds up into the smallest normal
                       std::ldexp(1.0f, -130),      // an f32 subnormal
                       3.3895314e38f,               // rounds to bf16 infinity
                       std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity(),
                       std::numeric_limits<float>::quiet_NaN(),
                       from_bits(0x7f800001u)};  // a signalling NaN
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> exponent(-30, 17);
  std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
  while (v.size() % 64 != 0) v.push_back(std::ldexp(mantissa(rng), exponent(rng)));  // whole blocks of 64
  for (int i = 0; i < 192; ++i) v.push_back(std::ldexp(mantissa(rng), exponent(rng)));
  return v;
}

}  // namespace

TEST_CASE("cuda f16/bf16: the prelude's conversions match the interpreter bit for bit (emulated)",
          "[gpu][narrow][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_narrow_conv");
  const std::vector<float> x = delicate_values(run_seed());
  const int n = static_cast<int>(x.size());
  CudaSource src;
  src.function = "convert_all";
  src.code = cuda_prelude() + cuda_narrow_float_prelude() + kConvertKernel;
  CudaKernelLaunch l;
  l.kernel = "convert";
  l.grid = {n / 64, 1, 1};
  l.block = {64, 1, 1};
  l.params = {{"const float*", 0}, {"kiln_half*", 1}, {"kiln_bfloat16*", 2}, {"float*", 3}, {"float*", 4}};
  src.launches = {l};
  EmulatedModule em = build_emulated_module(src, dir.path + "/emu");
  auto mod = rt::Module::load(em.path);
  kiln_packed_fn fn = mod->get_function(src.function);
  REQUIRE(fn != nullptr);
  std::vector<float> xs = x, hf(x.size()), bf(x.size());
  std::vector<uint16_t> h(x.size()), b(x.size());
  std::vector<void*> args{xs.data(), h.data(), b.data(), hf.data(), bf.data()};
  REQUIRE(fn(args.data()) == 0);
  for (size_t i = 0; i < x.size(); ++i) {
    INFO("x = " << x[i] << " (bits 0x" << std::hex << bits_of(x[i]) << ")");
    CHECK(h[i] == f16_bits_from_float(x[i]));
    CHECK(b[i] == bf16_bits_from_float(x[i]));
    CHECK(bits_of(hf[i]) == bits_of(float_from_f16_bits(h[i])));
    CHECK(bits_of(bf[i]) == bits_of(float_from_bf16_bits(b[i])));
  }
}

TEST_CASE("cuda f16/bf16: the prelude's conversions compile with NVRTC", "[gpu][narrow][nvrtc]") {
  std::string why;
  if (!nvrtc_available(&why)) KILN_SKIP("NVRTC is not available: " << why);
  for (const char* arch : {"sm_75", "sm_80", "sm_90"}) {
    INFO(arch);
    NvrtcOutput out = nvrtc_compile(cuda_prelude() + cuda_narrow_float_prelude() + kConvertKernel, "convert.cu", arch);
    CHECK(!out.cubin.empty());
    CHECK(out.ptx.find("cvt.rn.f16.f32") != std::string::npos);
  }
}

TEST_CASE("cuda f16/bf16: kernels store 16 bits, accumulate in f32 and copy tiles as packed vectors",
          "[gpu][narrow]") {
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  OpInstance op = build_workload("matmul:M=64,N=64,K=32,dtype=f16,bias=1");
  const GpuTemplate& t = find_op(op.op).gpu;
  auto space = t.define_space(op, gpu);
  Config cfg = space->from_json_string(
      R"({"tile_y":[1,16,4],"tile_x":[1,16,4],"tile_k":[4,8],"shared":"both","vec":2,"pad":0,"unroll_k":"unroll"})");
  const std::string code = gpu_source(op, cfg, gpu).code;
  CHECK_THAT(code, Contains("const kiln_half* __restrict__ A"));
  CHECK_THAT(code, Contains("KILN_SHARED(kiln_half, A_shared"));
  CHECK_THAT(code, Contains("float C_local[16]"));  // the accumulators: f32 registers
  // The shared tiles are filled with 4-byte copies of two f16 (half2), bits unchanged.
  CHECK_THAT(code, Contains("kiln_ld<kiln_u16x2>(A, "));
  CHECK_THAT(code, !Contains("kiln_f32_to_f16x2(kiln_f16x2_to_f32"));
  CHECK_THAT(code, Contains("kiln_f16_to_f32(A_shared["));
  // The output: the f32 sums plus bias, rounded once, stored two at a time.
  CHECK_THAT(code, Contains("kiln_f32_to_f16x2((kiln_ld<float2>(C_local, 0) + kiln_f16x2_to_f32(kiln_ld<kiln_u16x2>(bias, "));

  OpInstance bop = build_workload("softmax:M=3,N=64,dtype=bf16");
  const GpuTemplate& rt = find_op(bop.op).gpu;
  const std::string bcode = gpu_source(bop, rt.default_config(bop, gpu, *rt.define_space(bop, gpu)), gpu).code;
  CHECK_THAT(bcode, Contains("kiln_bfloat16* __restrict__"));
  CHECK_THAT(bcode, Contains("kiln_bf16_to_f32("));
}

TEST_CASE("cuda f16/bf16: GEMM, conv2d and depthwise templates emulated against the interpreter",
          "[gpu][narrow][template][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_narrow_gemm");
  const EmulatedNvrtcCounts nvrtc_before = emulated_nvrtc_counts();
  const uint64_t run = run_seed();
  INFO(seed_note(run));
  Tally t;
  t.add(check_emulated("matmul:M=37,N=45,K=19,dtype=f16,bias=1,relu=1", {}, 1, run, dir.path));
  t.add(check_emulated("matmul:M=16,N=32,K=24,dtype=bf16,trans_b=1,gelu=1", {}, 1, run + 1, dir.path));
  t.add(check_emulated("dense:N=3,IN=29,OUT=31,dtype=f16,bias=1", {}, 1, run + 2, dir.path));
  t.add(check_emulated("batch_matmul:B=2,M=9,N=8,K=16,dtype=bf16", {}, 1, run + 3, dir.path));
  t.add(check_emulated("conv2d:C=3,H=9,W=7,K=5,R=3,S=3,pad=1,dtype=f16,bias=1,relu=1", {}, 1, run + 4, dir.path));
  t.add(check_emulated("conv2d_nhwc:C=4,H=7,W=7,K=8,R=1,S=1,dtype=bf16", {}, 1, run + 5, dir.path));
  t.add(check_emulated("depthwise_conv2d:C=5,H=9,W=9,R=3,S=3,stride=2,pad=1,dtype=f16", {}, 1, run + 6, dir.path));
  CHECK(t.ran + t.rejected == 14);
  CHECK(t.ran >= 7);
  check_nvrtc_covered(nvrtc_before);  // and NVRTC compiled each for sm_80 and sm_90
}

TEST_CASE("cuda f16/bf16: pool, softmax and layer_norm templates emulated against the interpreter",
          "[gpu][narrow][template][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_narrow_rows");
  const EmulatedNvrtcCounts nvrtc_before = emulated_nvrtc_counts();
  const uint64_t run = run_seed();
  INFO(seed_note(run));
  Tally t;
  t.add(check_emulated("max_pool2d:C=3,H=9,W=9,R=3,S=3,stride=2,pad=1,dtype=f16", {}, 1, run, dir.path));
  t.add(check_emulated("avg_pool2d:C=2,H=8,W=8,R=2,S=2,stride=2,dtype=bf16", {}, 1, run + 1, dir.path));
  t.add(check_emulated("softmax:M=5,N=67,dtype=f16", {}, 1, run + 2, dir.path));
  t.add(check_emulated("layer_norm:M=3,N=96,dtype=bf16", {}, 1, run + 3, dir.path));
  CHECK(t.ran + t.rejected == 8);
  CHECK(t.ran >= 4);
  check_nvrtc_covered(nvrtc_before);  // and NVRTC compiled each for sm_80 and sm_90
}

TEST_CASE("cuda f16/bf16: NVRTC compiles every template family for sm_80 and sm_90 within limits",
          "[gpu][narrow][template][nvrtc]") {
  std::string why;
  if (!nvrtc_available(&why)) KILN_SKIP("NVRTC is not available: " << why);
  const uint64_t run = run_seed();
  INFO(seed_note(run));
  Tally t = check_nvrtc({"matmul:M=1024,N=1024,K=1024,dtype=f16,bias=1,gelu=1",
                         "batch_matmul:B=12,M=128,N=128,K=64,trans_b=1,dtype=bf16",
                         "conv2d_nhwc:C=64,H=56,W=56,K=64,R=3,S=3,pad=1,dtype=f16",
                         "depthwise_conv2d:C=32,H=28,W=28,R=3,S=3,pad=1,dtype=bf16",
                         "max_pool2d:C=64,H=56,W=56,R=3,S=3,stride=2,pad=1,dtype=f16",
                         "softmax:M=128,N=128,dtype=f16", "layer_norm:M=128,N=768,dtype=bf16"},
                        1, run);
  CHECK(t.ran > 0);
}

TEST_CASE("cuda f16/bf16: other element types are refused in the templates' terms", "[gpu][narrow][errors]") {
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  OpInstance op = build_workload("matmul:M=8,N=8,K=8,dtype=f64");
  CHECK_THAT(user_error_of([&] { find_op("matmul").gpu.define_space(op, gpu); }),
             Contains("the cuda matmul template computes f32, or f16/bf16 stored in 16 bits and computed in f32") &&
                 Contains("got f64"));
  OpInstance soft = build_workload("softmax:M=2,N=8,dtype=f64");
  CHECK_THAT(user_error_of([&] { find_op("softmax").gpu.define_space(soft, gpu); }), Contains("got f64"));
}
