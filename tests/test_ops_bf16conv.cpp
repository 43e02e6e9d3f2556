// conv2d_nchwc_bf16: the bf16 convolution on the blocked layout with
// AVX512-BF16's weight blocks. Random configs of its template on random
// small shapes (1, primes, odd sizes; strides, padding, dilation, groups,
// bias and activations), tensorized with vdpbf16ps or not, match the
// interpreter (f32 sums rounded to bf16 once; a tensorized sum adds in the
// instruction's order, so within a few bf16 ulps); the knob is offered
// only with the instruction and 16-channel blocks; bad workloads are user
// errors.
#include <catch2/catch.hpp>

#include <random>

#include "base/error.h"
#include "kernels/op_registry.h"
#include "support/quantized_check.h"
#include "support/skip.h"
#include "support/test_seed.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Contains;

namespace {

// A random small layer: C in blocks of cb (even), K in blocks of kb (16
// when `tensorized`, so that the intrinsic applies).
std::string random_layer(std::mt19937_64& rng, bool tensorized) {
  const int64_t sizes[] = {1, 2, 3, 5, 7, 9};
  const int64_t cb = rng() % 2 ? 2 : 6, kb = tensorized ? 16 : (rng() % 2 ? 4 : 16);
  const int64_t groups = rng() % 4 == 0 ? 2 : 1;
  const int64_t C = cb * groups * static_cast<int64_t>(1 + rng() % 2), K = kb * groups * static_cast<int64_t>(1 + rng() % 2);
  const int64_t R = rng() % 2 ? 3 : 1, S = rng() % 3 == 0 ? 1 : R;
  const int64_t stride = 1 + static_cast<int64_t>(rng() % 2), pad = R > 1 ? static_cast<int64_t>(rng() % 2) : 0;
  const int64_t dilation = R > 1 && rng() % 4 == 0 ? 2 : 1;
  const int64_t H = sizes[rng() % 6] + dilation * (R - 1), W = sizes[rng() % 6] + dilation * (S - 1);
  const char* acts[] = {"", ",relu=1", ",relu6=1", ",hswish=1"};
  return "conv2d_nchwc_bf16:N=" + std::to_string(1 + rng() % 2) + ",C=" + std::to_string(C) +
         ",H=" + std::to_string(H) + ",W=" + std::to_string(W) + ",K=" + std::to_string(K) +
         ",R=" + std::to_string(R) + ",S=" + std::to_string(S) + ",stride=" + std::to_string(stride) +
         ",pad=" + std::to_string(pad) + ",dilation=" + std::to_string(dilation) + ",cb=" + std::to_string(cb) +
         ",kb=" + std::to_string(kb) + ",groups=" + std::to_string(groups) + ",bias=" + std::to_string(rng() % 2) +
         acts[rng() % 4];
}

// bf16 has 8 bits of mantissa: sums of up to a few hundred products of
// values in [-2, 2] in another order land within a few of its ulps.
constexpr double kTol = 2e-2;

}  // namespace

TEST_CASE("conv2d_nchwc_bf16: random configs of random layers match the interpreter", "[ops][bf16conv]") {
  const uint64_t seed = run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed);
  for (int layer = 0; layer < 5; ++layer)
    check_random_configs(random_layer(rng, false), cpu_with(false, false), "", 3, rng, kTol);
}

TEST_CASE("conv2d_nchwc_bf16: AVX512-BF16-tensorized configs match the interpreter", "[ops][bf16conv][bf16]") {
  if (!host_has("avx512bf16")) KILN_SKIP("this CPU has no AVX512-BF16");
  const uint64_t seed = run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed + 1);
  for (int layer = 0; layer < 6; ++layer)
    check_random_configs(random_layer(rng, true), cpu_with(false, true), "bf16", 3, rng, kTol);
}

TEST_CASE("conv2d_nchwc_bf16: AMX-tensorized configs match the interpreter", "[ops][bf16conv][amx]") {
  if (!host_has("amx-bf16")) KILN_SKIP("this CPU has no AMX-BF16");
  const uint64_t seed = run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed + 2);
  CpuInfo cpu = cpu_with(false, true);
  cpu.amx_bf16 = true;
  // Input channel blocks of 32 (one AMX bf16 k tile), output blocks of 32
  // or 64; 1 and odd sizes, strides, padding and dilation.
  const int64_t sizes[] = {1, 3, 5, 9, 17};
  for (int layer = 0; layer < 5; ++layer) {
    const int64_t R = rng() % 2 ? 3 : 1, dil = R > 1 && rng() % 3 == 0 ? 2 : 1, kb = rng() % 2 ? 32 : 64;
    const std::string w = "conv2d_nchwc_bf16:N=1,C=" + std::to_string(32 * (1 + rng() % 3)) +
                          ",H=" + std::to_string(sizes[rng() % 5] + dil * (R - 1)) +
                          ",W=" + std::to_string(sizes[rng() % 5] + dil * (R - 1)) + ",K=" + std::to_string(kb) +
                          ",R=" + std::to_string(R) + ",S=" + std::to_string(R) +
                          ",stride=" + std::to_string(1 + rng() % 2) + ",pad=" + std::to_string(R > 1 ? rng() % 2 : 0) +
                          ",dilation=" + std::to_string(dil) + ",cb=32,kb=" + std::to_string(kb) +
                          ",bias=" + std::to_string(rng() % 2) + (rng() % 2 ? ",relu=1" : "");
    check_random_configs(w, cpu, "amx", 3, rng, kTol);
  }
  // Narrow blocks (2 or 4 channels) with a kernel row's taps folded into
  // one product: 3 to 7 taps, strides 1 and 2, odd sizes.
  for (int layer = 0; layer < 3; ++layer) {
    const int64_t cb = rng() % 2 ? 2 : 4, R = 3 + 2 * static_cast<int64_t>(rng() % 3);
    const std::string w = "conv2d_nchwc_bf16:N=1,C=" + std::to_string(cb) +
                          ",H=" + std::to_string(R + sizes[rng() % 5]) + ",W=" + std::to_string(R + sizes[rng() % 5]) +
                          ",K=32,R=" + std::to_string(R) + ",S=" + std::to_string(R) +
                          ",stride=" + std::to_string(1 + rng() % 2) + ",pad=" + std::to_string(R / 2) +
                          ",cb=" + std::to_string(cb) + ",kb=32,bias=1";
    check_random_configs(w, cpu, "amx", 3, rng, kTol);
  }
}

TEST_CASE("conv2d_nchwc_bf16: the tensorize knob needs AVX512-BF16 and 16-channel output blocks", "[ops][bf16conv]") {
  auto has_knob = [](const std::string& w, const CpuInfo& cpu) {
    OpInstance op = build_workload(w);
    const auto space = find_op(op.op).define_space(op, cpu);
    for (const Knob& k : space->knobs())
      if (k.name == "tensorize") return true;
    return false;
  };
  CHECK(has_knob("conv2d_nchwc_bf16:C=16,H=8,W=8,K=32,R=3,S=3,pad=1", cpu_with(false, true)));
  CHECK_FALSE(has_knob("conv2d_nchwc_bf16:C=16,H=8,W=8,K=32,R=3,S=3,pad=1", cpu_with(true, false)));
  CHECK_FALSE(has_knob("conv2d_nchwc_bf16:C=16,H=8,W=8,K=32,R=3,S=3,pad=1,kb=8", cpu_with(false, true)));
}

TEST_CASE("conv2d_nchwc_bf16: the definition and bad workloads", "[ops][bf16conv][errors]") {
  CHECK_THROWS_WITH(build_workload("conv2d_nchwc_bf16:C=12,H=8,W=8,K=16,R=3,S=3,cb=3"),
                    Contains("the input channel block cb=3 must be a multiple of 2"));
  CHECK_THROWS_WITH(build_workload("conv2d_nchwc_bf16:C=16,H=8,W=8,K=24,R=3,S=3,kb=16"),
                    Contains("the output channel block kb=16 must divide the output channels per group (24)"));
  CHECK_THROWS_WITH(build_workload("conv2d_nchwc_bf16:C=16,H=8,W=8,K=16,R=3,S=3,relu=1,relu6=1"),
                    Contains("conv2d_nchwc_bf16"));
  const OpInstance op = build_workload("conv2d_nchwc_bf16:C=16,H=8,W=8,K=16,R=3,S=3,pad=1,bias=1,relu=1");
  REQUIRE(op.inputs.size() == 3);
  CHECK(op.inputs[1].dtype() == DType::bf16());
  CHECK(*as_const_int(op.inputs[1].shape()[4]) == 8);  // cb / 2 pairs
  CHECK(*as_const_int(op.inputs[1].shape()[6]) == 2);
  CHECK(op.inputs[2].dtype() == DType::bf16());
  CHECK(op.outputs[0].dtype() == DType::bf16());
  // The sums are f32: the reduction's stage, rounded once by the epilogue.
  CHECK(op.parts.at("conv2d_nchwc_bf16").dtype() == DType::f32());
}
