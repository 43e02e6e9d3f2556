// Winograd convolution (conv2d_winograd_nchwc and conv2d_winograd_nhwc with
// their ahead-of-time weight transforms winograd_weight_nchwc/_nhwc): the F(m, 3) matrices compute the 1-D
// correlation exactly (in double); the fp32 definition agrees with the
// direct conv2d_nchwc within the error bound the transforms imply
// (kernels/winograd_matrices.h) on random shapes (1, primes, odd sizes,
// tiles that overhang the output); the template lowers correct kernels for
// random configs; compiled transform and convolution together match the
// direct convolution; bad workloads are user errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <sstream>

#include "base/error.h"
#include "compute/interpreter.h"
#include "kernels/conv2d_winograd_nchwc.h"
#include "kernels/winograd_matrices.h"
#include "test_ops_conv_check.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Contains;

namespace {

constexpr double kUnitRoundoff = 1.0 / (1 << 24);  // fp32

struct WinogradCase {
  int64_t C, H, W, K, pad, m, cb, kb;
  bool bias;
  std::string act;
  bool nhwc = false;  // conv2d_nhwc and conv2d_winograd_nhwc, else the NCHW[x]c ops
  std::string direct() const {
    std::ostringstream os;
    os << (nhwc ? "conv2d_nhwc" : "conv2d_nchwc") << ":C=" << C << ",H=" << H << ",W=" << W << ",K=" << K
       << ",R=3,S=3,pad=" << pad;
    if (!nhwc) os << ",cb=" << cb << ",kb=" << kb;
    os << ",bias=" << bias << act;
    return os.str();
  }
  std::string winograd() const {
    std::ostringstream os;
    os << (nhwc ? "conv2d_winograd_nhwc" : "conv2d_winograd_nchwc") << ":C=" << C << ",H=" << H << ",W=" << W
       << ",K=" << K << ",pad=" << pad << ",m=" << m << ",cb=" << cb << ",kb=" << kb << ",bias=" << bias << act;
    return os.str();
  }
  std::string weight_transform() const {
    std::ostringstream os;
    os << (nhwc ? "winograd_weight_nhwc" : "winograd_weight_nchwc") << ":C=" << C << ",K=" << K << ",m=" << m;
    if (!nhwc) os << ",cb=" << cb << ",kb=" << kb;
    return os.str();
  }
  // |winograd - direct| <= this, for data and weights in [-1, 1]: the
  // transforms' growth factor times C channels of 9 taps' rounding; hswish
  // (slope up to 1.5) may magnify it.
  double tolerance() const { return 4 * winograd_error_growth(static_cast<int>(m)) * 9 * C * kUnitRoundoff; }
};

WinogradCase random_case(std::mt19937_64& rng) {
  WinogradCase c;
  c.pad = pick(rng, 0, 2);
  c.m = pick(rng, 0, 1) ? 4 : 2;
  c.cb = std::vector<int64_t>{1, 2, 4, 16}[pick(rng, 0, 3)];
  c.kb = std::vector<int64_t>{1, 3, 8, 16}[pick(rng, 0, 3)];
  c.C = c.cb * pick(rng, 1, 3);
  c.K = c.kb * pick(rng, 1, 2);
  c.H = odd_extent(rng, std::max<int64_t>(1, 3 - 2 * c.pad));
  c.W = odd_extent(rng, std::max<int64_t>(1, 3 - 2 * c.pad));
  c.bias = pick(rng, 0, 1);
  c.act = random_activation(rng);
  c.nhwc = pick(rng, 0, 1);
  return c;
}

HostTensor random_host(const Tensor& t, uint64_t seed) {
  HostTensor h(t.dtype(), shape_of(t));
  h.fill_random(seed, -1.0, 1.0);
  return h;
}

double max_abs_diff(const HostTensor& a, const HostTensor& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) worst = std::max(worst, std::fabs(a.get_float(i) - b.get_float(i)));
  return worst;
}

// Runs a built op's default schedule, JIT-compiled, on the given inputs.
HostTensor run_compiled(const std::string& workload, const std::vector<HostTensor>& inputs) {
  OpInstance op = build_workload(workload);
  ScheduledOp so = find_op(op.op).default_schedule(op, avx512_cpu());
  return run_schedule(*so.schedule, so.args, inputs);
}

}  // namespace

TEST_CASE("F(2,3) and F(4,3) compute the 1-D correlation exactly", "[ops][winograd]") {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int m : winograd_tile_sizes()) {
    const WinogradMatrices& w = winograd_matrices(m);
    REQUIRE(w.alpha == m + 2);
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<double> d(static_cast<size_t>(w.alpha)), g(3);
      for (double& x : d) x = u(rng);
      for (double& x : g) x = u(rng);
      std::vector<double> prod(static_cast<size_t>(w.alpha));
      for (int e = 0; e < w.alpha; ++e) {
        double gg = 0, dd = 0;
        for (int r = 0; r < 3; ++r) gg += w.G[e][r] * g[r];
        for (int j = 0; j < w.alpha; ++j) dd += w.BT[e][j] * d[j];
        prod[e] = gg * dd;
      }
      for (int i = 0; i < m; ++i) {
        double y = 0, want = 0;
        for (int e = 0; e < w.alpha; ++e) y += w.AT[i][e] * prod[e];
        for (int r = 0; r < 3; ++r) want += d[i + r] * g[r];
        CHECK(y == Approx(want).margin(1e-12));
      }
    }
  }
  CHECK(winograd_error_growth(2) == Approx(81));
  CHECK(winograd_error_growth(4) == Approx(36100));
}

TEST_CASE("Winograd's fp32 definition agrees with the direct convolution within the transform's bound",
          "[ops][winograd]") {
  std::mt19937_64 rng(17);
  for (int t = 0; t < 10; ++t) {
    WinogradCase c = random_case(rng);
    INFO(c.winograd());
    OpInstance direct = build_workload(c.direct());
    OpInstance wt = build_workload(c.weight_transform());
    OpInstance wino = build_workload(c.winograd());
    HostTensor data = random_host(direct.inputs[0], 100 + t), weight = random_host(direct.inputs[1], 200 + t);
    std::vector<std::pair<Tensor, HostTensor>> din{{direct.inputs[0], data}, {direct.inputs[1], weight}};
    HostTensor U = interpret(wt.outputs, {{wt.inputs[0], weight}})[0];
    std::vector<std::pair<Tensor, HostTensor>> win{{wino.inputs[0], data}, {wino.inputs[1], U}};
    if (c.bias) {
      HostTensor b = random_host(direct.inputs[2], 300 + t);
      din.emplace_back(direct.inputs[2], b);
      win.emplace_back(wino.inputs[2], b);
    }
    HostTensor want = interpret(direct.outputs, din)[0];
    HostTensor got = interpret(wino.outputs, win)[0];
    REQUIRE(got.shape == want.shape);
    const double err = max_abs_diff(got, want);
    INFO("max |winograd - direct| = " << err << ", bound " << c.tolerance());
    CHECK(err <= c.tolerance());
    CHECK(wino.flops == direct.flops);  // effective FLOPs: the direct convolution's
  }
}

// The template check fills every input at random, the transformed weights
// too: unlike real ones (G's entries are at most 1) they make the
// intermediate sums large, and an output near zero then differs from the
// interpreter's by more than the usual 2e-4 * (1 + |x|) through rounding
// alone (F(4,3)'s output transform multiplies by up to 8 x 8). The tuner's
// check allows 1e-3, which is what this test uses.
constexpr double kRandomWeightTolerance = 1e-3;

TEST_CASE("conv2d_winograd_nchwc's template lowers correct kernels for random configs and shapes",
          "[ops][winograd][template]") {
  std::mt19937_64 rng(29);
  for (int t = 0; t < 5; ++t) {
    WinogradCase c = random_case(rng);
    check_template_configs(c.winograd(), 3, 400 + static_cast<uint64_t>(t), avx512_cpu(), kRandomWeightTolerance);
  }
  // Channel blocks of a full vector, both tile sizes, tiles overhanging the output.
  check_template_configs("conv2d_winograd_nchwc:C=32,H=9,W=11,K=32,pad=1,m=4,bias=1,relu=1", 4, 450, avx512_cpu(),
                         kRandomWeightTolerance);
  check_template_configs("conv2d_winograd_nchwc:C=16,H=6,W=5,K=48,pad=0,m=2", 4, 460, avx512_cpu(),
                         kRandomWeightTolerance);
  check_template_configs("conv2d_winograd_nhwc:C=24,H=9,W=7,K=40,pad=1,m=4,cb=8,kb=8,bias=1,hswish=1", 4, 470,
                         avx512_cpu(), kRandomWeightTolerance);
}

TEST_CASE("compiled weight transform and Winograd kernel match the direct convolution", "[ops][winograd]") {
  for (int m : winograd_tile_sizes())
    for (bool nhwc : {false, true}) {
    WinogradCase c{32, 14, 13, 32, 1, m, 16, 16, true, ",relu=1", nhwc};
    INFO(c.winograd());
    OpInstance direct = build_workload(c.direct());
    HostTensor data = random_host(direct.inputs[0], 1), weight = random_host(direct.inputs[1], 2),
               bias = random_host(direct.inputs[2], 3);
    HostTensor U = run_compiled(c.weight_transform(), {weight});
    OpInstance wt = build_workload(c.weight_transform());
    CHECK(compare_tensors(interpret(wt.outputs, {{wt.inputs[0], weight}})[0], U, 1e-6, 1e-6) == "");
    HostTensor got = run_compiled(c.winograd(), {data, U, bias});
    HostTensor want = interpret(direct.outputs, {{direct.inputs[0], data}, {direct.inputs[1], weight},
                                                 {direct.inputs[2], bias}})[0];
    const double err = max_abs_diff(got, want);
    INFO("max |winograd - direct| = " << err << ", bound " << c.tolerance());
    CHECK(err <= c.tolerance());
    }
}

TEST_CASE("bad Winograd workloads are user errors", "[ops][winograd][errors]") {
  CHECK_THROWS_WITH(build_workload("conv2d_winograd_nchwc:C=16,H=8,W=8,K=16,m=3"),
                    Contains("Winograd tile size m=3 is not implemented: kiln has F(2x2,3x3) (m=2) and F(4x4,3x3) (m=4)"));
  CHECK_THROWS_WITH(build_workload("winograd_weight_nchwc:C=16,K=16,m=6"), Contains("tile size m=6"));
  CHECK_THROWS_WITH(build_workload("conv2d_winograd_nchwc:C=16,H=8,W=8,K=16,dtype=i8"),
                    Contains("needs dtype f32 or f64 (its transforms have fractional entries), not i8"));
  CHECK_THROWS_WITH(build_workload("conv2d_winograd_nchwc:C=24,H=8,W=8,K=16"),
                    Contains("the input channel block cb=16 must divide the input channels C=24"));
  CHECK_THROWS_WITH(build_workload("conv2d_winograd_nchwc:C=16,H=8,W=8,K=20,kb=8"),
                    Contains("the output channel block kb=8 must divide the output channels K=20"));
  CHECK_THROWS_WITH(build_workload("conv2d_winograd_nchwc:C=16,H=2,W=8,K=16,pad=0"),
                    Contains("does not fit the padded input"));
  CHECK_THROWS_WITH(build_workload("winograd_weight_nchwc:C=16,K=16,dtype=u8"), Contains("needs dtype f32 or f64"));
  CHECK_THROWS_WITH(build_workload("conv2d_winograd_nhwc:C=12,H=8,W=8,K=16"),
                    Contains("conv2d_winograd_nhwc: the input channel block cb=16 must divide the input channels C=12"));
  CHECK_THROWS_WITH(build_workload("winograd_weight_nhwc:C=16,K=16,m=5"), Contains("tile size m=5"));
}
