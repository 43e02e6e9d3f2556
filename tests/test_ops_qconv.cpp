// qconv2d_nchwc: the int8 convolution on the blocked layout with VNNI's
// weight blocks. Random configs of its template on random small shapes
// (1, primes, odd sizes; strides, padding, dilation, groups, bias and
// relu), tensorized with VNNI or not, equal the interpreter exactly over
// the whole u8 / i8 range; the knob is offered only with the instruction
// and 16-channel blocks; bad workloads are user errors.
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

// A random small layer: C in blocks of cb (a multiple of 4), K in blocks of
// kb (16 when `vnni`, so that the intrinsic applies).
std::string random_layer(std::mt19937_64& rng, bool vnni) {
  const int64_t sizes[] = {1, 2, 3, 5, 7, 9};
  const int64_t cb = rng() % 2 ? 4 : 8, kb = vnni ? 16 : (rng() % 2 ? 4 : 16);
  const int64_t groups = rng() % 4 == 0 ? 2 : 1;
  const int64_t C = cb * groups * static_cast<int64_t>(1 + rng() % 2), K = kb * groups * static_cast<int64_t>(1 + rng() % 2);
  const int64_t R = rng() % 2 ? 3 : 1, S = rng() % 3 == 0 ? 1 : R;
  const int64_t stride = 1 + static_cast<int64_t>(rng() % 2), pad = R > 1 ? static_cast<int64_t>(rng() % 2) : 0;
  const int64_t dilation = R > 1 && rng() % 4 == 0 ? 2 : 1;
  // At least the dilated window in each direction.
  const int64_t H = sizes[rng() % 6] + dilation * (R - 1), W = sizes[rng() % 6] + dilation * (S - 1);
  const char* outs[] = {"u8", "i8", "i32", "f32"};
  return "qconv2d_nchwc:N=" + std::to_string(1 + rng() % 2) + ",C=" + std::to_string(C) + ",H=" + std::to_string(H) +
         ",W=" + std::to_string(W) + ",K=" + std::to_string(K) + ",R=" + std::to_string(R) +
         ",S=" + std::to_string(S) + ",stride=" + std::to_string(stride) + ",pad=" + std::to_string(pad) +
         ",dilation=" + std::to_string(dilation) + ",cb=" + std::to_string(cb) + ",kb=" + std::to_string(kb) +
         ",groups=" + std::to_string(groups) + ",bias=" + std::to_string(rng() % 2) +
         ",relu=" + std::to_string(rng() % 2) + ",out=" + outs[rng() % 4];
}

}  // namespace

TEST_CASE("qconv2d_nchwc: random configs of random layers equal the interpreter exactly", "[ops][qconv]") {
  const uint64_t seed = run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed);
  for (int layer = 0; layer < 6; ++layer) check_random_configs(random_layer(rng, false), cpu_with(false, false), "", 3, rng);
}

TEST_CASE("qconv2d_nchwc: VNNI-tensorized configs equal the interpreter exactly", "[ops][qconv][vnni]") {
  if (!host_has("avx512vnni")) KILN_SKIP("this CPU has no AVX512-VNNI");
  const uint64_t seed = run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed + 1);
  for (int layer = 0; layer < 8; ++layer) check_random_configs(random_layer(rng, true), cpu_with(true, false), "vnni", 3, rng);
  // A 1x1 layer's flat alternative computes the same op over the same buffers.
  const OpInstance op = build_workload("qconv2d_nchwc:C=16,H=3,W=5,K=32,R=1,S=1,bias=1,out=i8");
  const auto alts = find_op(op.op).alternatives(op);
  REQUIRE(alts.size() == 1);
  CHECK(alts[0].kernel.workload.find("H=1") != std::string::npos);
  CHECK(alts[0].kernel.workload.find("out=i8") != std::string::npos);
  CHECK(alts[0].kernel.inputs == std::vector<int>{0, 1, 2, 3});
}

TEST_CASE("qconv2d_nchwc: the tensorize knob needs VNNI and 16-channel output blocks", "[ops][qconv]") {
  auto has_knob = [](const std::string& w, const CpuInfo& cpu) {
    OpInstance op = build_workload(w);
    for (const Knob& k : find_op(op.op).define_space(op, cpu)->knobs())
      if (k.name == "tensorize") return true;
    return false;
  };
  CHECK(has_knob("qconv2d_nchwc:C=16,H=8,W=8,K=32,R=3,S=3,pad=1", cpu_with(true, false)));
  CHECK_FALSE(has_knob("qconv2d_nchwc:C=16,H=8,W=8,K=32,R=3,S=3,pad=1", cpu_with(false, true)));
  CHECK_FALSE(has_knob("qconv2d_nchwc:C=16,H=8,W=8,K=32,R=3,S=3,pad=1,kb=8", cpu_with(true, false)));
}

TEST_CASE("qconv2d_nchwc: bad workloads are user errors", "[ops][qconv][errors]") {
  CHECK_THROWS_WITH(build_workload("qconv2d_nchwc:C=12,H=8,W=8,K=16,R=3,S=3,cb=6"),
                    Contains("the input channel block cb=6 must be a multiple of 4"));
  CHECK_THROWS_WITH(build_workload("qconv2d_nchwc:C=16,H=8,W=8,K=24,R=3,S=3,kb=16"),
                    Contains("the output channel block kb=16 must divide the output channels per group (24)"));
  CHECK_THROWS_WITH(build_workload("qconv2d_nchwc:C=16,H=8,W=8,K=16,R=3,S=3,out=bf16"),
                    Contains("qconv2d_nchwc: the output is u8 or i8 (requantized), i32 (the sums) or f32"));
  const OpInstance op = build_workload("qconv2d_nchwc:C=16,H=8,W=8,K=16,R=3,S=3,pad=1,bias=1,relu=1");
  CHECK(op.inputs.size() == 4);
  CHECK(op.inputs[1].dtype() == DType::i8());
  CHECK(*as_const_int(op.inputs[1].shape()[4]) == 4);
  CHECK(op.outputs[0].dtype() == DType::u8());
}
