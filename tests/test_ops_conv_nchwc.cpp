// conv2d_nchwc, the packed NCHW[x]c convolution: its definition agrees with
// a naive loop nest written here (blocked indexing, groups, stride,
// dilation, padding, bias, relu); its template lowers correct kernels for
// random shapes (1, primes, odd; every block size that divides them) and
// random configs; its space is large enough to tune; bad block sizes are
// user errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <sstream>

#include "base/error.h"
#include "compute/interpreter.h"
#include "kernels/conv2d_nchwc.h"
#include "test_ops_conv_check.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Contains;

namespace {

// out[n][ko][oh][ow][ki] by the formula in conv2d_nchwc.h, in plain loops.
std::vector<float> naive_conv2d_nchwc(const Conv2dNchwcShape& s, const float* data, const float* weight,
                                      const float* bias) {
  const int64_t CBg = s.Cg / s.cb, KB = s.K / s.kb;
  std::vector<float> out(static_cast<size_t>(s.N * KB * s.OH * s.OW * s.kb));
  size_t o = 0;
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t ko = 0; ko < KB; ++ko)
      for (int64_t oh = 0; oh < s.OH; ++oh)
        for (int64_t ow = 0; ow < s.OW; ++ow)
          for (int64_t ki = 0; ki < s.kb; ++ki) {
            const int64_t k = ko * s.kb + ki, g = k / s.Kg;
            double acc = bias ? bias[k] : 0.0;
            for (int64_t co = 0; co < CBg; ++co)
              for (int64_t r = 0; r < s.R; ++r)
                for (int64_t q = 0; q < s.S; ++q)
                  for (int64_t ci = 0; ci < s.cb; ++ci) {
                    const int64_t h = oh * s.stride + r * s.dil - s.pad, w = ow * s.stride + q * s.dil - s.pad;
                    if (h < 0 || h >= s.H || w < 0 || w >= s.W) continue;
                    const int64_t cblock = g * CBg + co;
                    const float x = data[(((n * (s.C / s.cb) + cblock) * s.H + h) * s.W + w) * s.cb + ci];
                    const float wt = weight[((((ko * CBg + co) * s.R + r) * s.S + q) * s.cb + ci) * s.kb + ki];
                    acc += static_cast<double>(x) * wt;
                  }
            out[o++] = static_cast<float>(activate(acc, s.act));
          }
  return out;
}

std::string random_workload(std::mt19937_64& rng) {
  const int64_t R = pick(rng, 1, 3), S = pick(rng, 1, 3), stride = pick(rng, 1, 2), dil = pick(rng, 1, 2);
  const int64_t pad = pick(rng, 0, 2), G = pick(rng, 1, 2);
  const int64_t cb = odd_extent(rng) % 5 + 1, kb = std::vector<int64_t>{1, 3, 4, 8, 16}[pick(rng, 0, 4)];
  const int64_t C = G * cb * pick(rng, 1, 3), K = G * kb * pick(rng, 1, 3);
  const int64_t H = odd_extent(rng, std::max<int64_t>(1, dil * (R - 1) + 1 - 2 * pad));
  const int64_t W = odd_extent(rng, std::max<int64_t>(1, dil * (S - 1) + 1 - 2 * pad));
  std::ostringstream os;
  os << "conv2d_nchwc:N=" << pick(rng, 1, 2) << ",C=" << C << ",H=" << H << ",W=" << W << ",K=" << K << ",R=" << R
     << ",S=" << S << ",stride=" << stride << ",pad=" << pad << ",dilation=" << dil << ",cb=" << cb << ",kb=" << kb
     << ",groups=" << G << ",bias=" << pick(rng, 0, 1) << random_activation(rng);
  return os.str();
}

}  // namespace

TEST_CASE("conv2d_nchwc's definition agrees with a naive loop nest", "[ops][conv][nchwc]") {
  std::mt19937_64 rng(71);
  for (int t = 0; t < 8; ++t) {
    const std::string w = random_workload(rng);
    INFO(w);
    OpInstance op = build_workload(w);
    Conv2dNchwcShape s = conv2d_nchwc_shape(op);
    std::vector<std::pair<Tensor, HostTensor>> in;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      HostTensor h(op.inputs[i].dtype(), shape_of(op.inputs[i]));
      h.fill_random(500 + 10 * t + i, -2.0, 2.0);
      in.emplace_back(op.inputs[i], h);
    }
    HostTensor got = interpret(op.outputs, in)[0];
    std::vector<float> want = naive_conv2d_nchwc(s, in[0].second.data<float>(), in[1].second.data<float>(),
                                                 s.bias ? in[2].second.data<float>() : nullptr);
    REQUIRE(got.num_elements() == static_cast<int64_t>(want.size()));
    HostTensor expected(got.dtype, got.shape);
    std::copy(want.begin(), want.end(), expected.data<float>());
    CHECK(compare_tensors(expected, got, 1e-4, 1e-4) == "");
    CHECK(op.flops == 2.0 * s.N * s.K * s.OH * s.OW * s.Cg * s.R * s.S);
  }
}

TEST_CASE("conv2d_nchwc: random shapes, block sizes, groups, epilogues and configs", "[ops][conv][nchwc][property]") {
  std::mt19937_64 rng(73);
  for (int t = 0; t < 8; ++t) check_template_configs(random_workload(rng), 3, 600 + static_cast<uint64_t>(t));
  // ResNet-like blocks (16 channels a block, several blocks per register tile), stride 2, integers.
  check_template_configs("conv2d_nchwc:C=32,H=9,W=9,K=64,R=3,S=3,pad=1,relu=1", 4, 11);
  check_template_configs("conv2d_nchwc:C=16,H=11,W=10,K=48,R=3,S=3,stride=2,pad=1,bias=1", 3, 12);
  check_template_configs("conv2d_nchwc:C=8,H=5,W=7,K=32,R=1,S=1,cb=4,kb=8,dtype=i8", 2, 13);
}

TEST_CASE("conv2d_nchwc: canonical string, space and default config", "[ops][conv][nchwc]") {
  CHECK(build_workload("conv2d_nchwc:C=64,H=56,W=56,K=64,R=3,S=3,pad=1").canonical ==
        "conv2d_nchwc:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1,dilation=1,cb=16,kb=16,dtype=f32");
  CpuInfo cpu = avx512_cpu();
  OpInstance op = build_workload("conv2d_nchwc:C=512,H=7,W=7,K=512,R=3,S=3,pad=1");
  const OpDef& def = find_op("conv2d_nchwc");
  auto space = def.define_space(op, cpu);
  CHECK(space->size() >= 100000);
  // Two 16-channel blocks (two vectors) by 7 columns per register tile.
  Config d = def.default_config(op, cpu, *space);
  CHECK(d.split("tile_kb") == std::vector<int64_t>{16, 2});
  CHECK(d.split("tile_ow") == std::vector<int64_t>{1, 7});
  // Two rows fill 28 accumulators; the partial last row tile stays out of
  // the parallel loop (channel tiles only), so that partitioning peels it.
  CHECK(d.split("tile_oh") == std::vector<int64_t>{4, 1, 2});
  CHECK(d.choice("parallel") == 2);
  CHECK(d.annotate("border") == "clip");
  // Too few channel tiles for a parallel loop of its own: one row per tile.
  OpInstance few = build_workload("conv2d_nchwc:C=64,H=7,W=7,K=64,R=3,S=3,pad=1");
  auto few_space = def.define_space(few, cpu);
  Config fd = def.default_config(few, cpu, *few_space);
  CHECK(fd.split("tile_oh")[2] == 1);
  CHECK(fd.choice("parallel") == 3);
  for (const char* w : {"conv2d_nchwc:C=512,H=7,W=7,K=512,R=3,S=3,pad=1", "conv2d_nchwc:C=64,H=7,W=7,K=128,R=1,S=1",
                        "conv2d_nchwc:C=64,H=56,W=56,K=64,R=3,S=3,pad=1",
                        "conv2d_nchwc:C=3,H=224,W=224,K=64,R=7,S=7,stride=2,pad=3,cb=3",
                        "conv2d_nchwc:C=8,H=9,W=9,K=16,R=1,S=1,cb=2,kb=4,groups=2,bias=1"})
    check_default_schedule(w);
  // Knobs that do nothing for a shape have one option: no padding, one tap wide.
  OpInstance pointwise = build_workload("conv2d_nchwc:C=64,H=14,W=14,K=64,R=1,S=1");
  auto ps = def.define_space(pointwise, cpu);
  CHECK(ps->knob("data_at").size() == 1);
  CHECK(ps->knob("unroll_kw").size() == 1);
}

TEST_CASE("conv2d_nchwc workload errors are user errors", "[ops][conv][nchwc][user_error]") {
  CHECK_THROWS_WITH(
      build_workload("conv2d_nchwc:C=6,H=9,W=9,K=48,R=3,S=3,pad=1"),
      Contains("conv2d_nchwc: the input channel block cb=16 must divide the input channels per group (6)"));
  CHECK_THROWS_WITH(
      build_workload("conv2d_nchwc:C=6,H=9,W=9,K=48,R=3,S=3,pad=1,cb=6,kb=5"),
      Contains("conv2d_nchwc: the output channel block kb=5 must divide the output channels per group (48)"));
  CHECK_THROWS_WITH(build_workload("conv2d_nchwc:C=16,H=9,W=9,K=48,R=3,S=3,kb=32"),
                    Contains("the output channel block kb=32 must divide the output channels per group (48)"));
  CHECK_THROWS_WITH(build_workload("conv2d_nchwc:C=32,H=9,W=9,K=32,R=3,S=3,groups=4"),
                    Contains("the input channel block cb=16 must divide the input channels per group (8)"));
  CHECK_THROWS_WITH(build_workload("conv2d_nchwc:C=16,H=9,W=9,K=16,R=3,S=3,cb=0"), Contains("cb=0 must be at least 1"));
  CHECK_THROWS_WITH(build_workload("conv2d_nchwc:C=16,H=2,W=9,K=16,R=3,S=3"),
                    Contains("conv2d_nchwc: the window (3x3, dilation 1) does not fit the padded input (2x9)"));
}
