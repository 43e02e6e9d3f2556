// Pooling on the blocked layout (max_pool2d_nchwc, avg_pool2d_nchwc,
// global_avg_pool2d_nchwc): their definitions agree with the plain-layout
// pooling ops on the same data, blocked; random small shapes (1, primes,
// odd; blocks narrower or wider than a vector) with random configs agree
// with the reference interpreter, as do the default schedules; bad
// workloads are user errors.
#include <catch2/catch.hpp>
#include <random>
#include <sstream>

#include "base/error.h"
#include "compute/interpreter.h"
#include "test_ops_conv_check.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Contains;

namespace {

int64_t random_block(std::mt19937_64& rng) { return std::vector<int64_t>{1, 3, 4, 8, 16, 32}[pick(rng, 0, 5)]; }

std::string random_pool(const char* op, std::mt19937_64& rng, const char* dtype) {
  int64_t R = pick(rng, 1, 3), S = pick(rng, 1, 3);
  int64_t pad = pick(rng, 0, static_cast<int>(std::min(R, S)) - 1), cb = random_block(rng);
  std::ostringstream os;
  os << op << ":N=" << pick(rng, 1, 2) << ",C=" << cb * pick(rng, 1, 3) << ",H=" << odd_extent(rng, R)
     << ",W=" << odd_extent(rng, S) << ",R=" << R << ",S=" << S << ",stride=" << pick(rng, 1, 3) << ",pad=" << pad
     << ",cb=" << cb << ",dtype=" << dtype;
  return os.str();
}

std::string random_global(std::mt19937_64& rng, const char* dtype) {
  int64_t cb = random_block(rng);
  std::ostringstream os;
  os << "global_avg_pool2d_nchwc:N=" << pick(rng, 1, 2) << ",C=" << cb * pick(rng, 1, 3) << ",H=" << odd_extent(rng)
     << ",W=" << odd_extent(rng) << ",cb=" << cb << ",dtype=" << dtype;
  return os.str();
}

// [N, C/cb, H, W, cb] -> [N, C, H, W].
HostTensor unblock(const HostTensor& b) {
  const int64_t N = b.shape[0], CB = b.shape[1], H = b.shape[2], W = b.shape[3], cb = b.shape[4];
  HostTensor p(b.dtype, {N, CB * cb, H, W});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < CB * cb; ++c)
      for (int64_t i = 0; i < H * W; ++i)
        p.set_float(((n * CB * cb + c) * H * W) + i, b.get_float(((n * CB + c / cb) * H * W + i) * cb + c % cb));
  return p;
}

}  // namespace

TEST_CASE("blocked pooling agrees with pooling on the plain layout", "[ops][pool][nchwc]") {
  std::mt19937_64 rng(61);
  for (int t = 0; t < 9; ++t) {
    const char* op = t % 3 == 0 ? "max_pool2d_nchwc" : t % 3 == 1 ? "avg_pool2d_nchwc" : "global_avg_pool2d_nchwc";
    const std::string w = t % 3 == 2 ? random_global(rng, "f32") : random_pool(op, rng, "f32");
    INFO(w);
    OpInstance blocked = build_workload(w);
    // The same pooling on NCHW: the plain op, or a whole-plane window.
    const auto& p = blocked.ints;
    std::ostringstream plain;
    if (t % 3 == 2)
      plain << "avg_pool2d:N=" << p.at("N") << ",C=" << p.at("C") << ",H=" << p.at("H") << ",W=" << p.at("W")
            << ",R=" << p.at("H") << ",S=" << p.at("W");
    else
      plain << (t % 3 == 0 ? "max_pool2d" : "avg_pool2d") << ":N=" << p.at("N") << ",C=" << p.at("C")
            << ",H=" << p.at("H") << ",W=" << p.at("W") << ",R=" << p.at("R") << ",S=" << p.at("S")
            << ",stride=" << p.at("stride") << ",pad=" << p.at("pad");
    OpInstance ref = build_workload(plain.str());
    HostTensor in(DType::f32(), shape_of(blocked.inputs[0]));
    in.fill_random(90 + t, -3.0, 3.0);
    HostTensor got = unblock(interpret(blocked.outputs, {{blocked.inputs[0], in}})[0]);
    HostTensor want = interpret(ref.outputs, {{ref.inputs[0], unblock(in)}})[0];
    CHECK(compare_tensors(want, got, 1e-5, 1e-5) == "");
    CHECK(blocked.flops == ref.flops);
  }
}

TEST_CASE("blocked pooling: random shapes, blocks and configs", "[ops][pool][nchwc][property]") {
  std::mt19937_64 rng(63);
  for (int t = 0; t < 4; ++t)
    check_template_configs(random_pool("max_pool2d_nchwc", rng, t == 3 ? "i8" : "f32"), 3, 900 + t);
  for (int t = 0; t < 4; ++t)
    check_template_configs(random_pool("avg_pool2d_nchwc", rng, t == 3 ? "f64" : "f32"), 3, 910 + t);
  for (int t = 0; t < 4; ++t) check_template_configs(random_global(rng, t == 3 ? "f64" : "f32"), 3, 920 + t);
  check_template_configs("max_pool2d_nchwc:C=32,H=17,W=17,R=3,S=3,stride=2,pad=1", 4, 11);
  check_template_configs("global_avg_pool2d_nchwc:C=48,H=7,W=7", 3, 12);
  for (const char* w : {"max_pool2d_nchwc:C=64,H=112,W=112,R=3,S=3,stride=2,pad=1",
                        "avg_pool2d_nchwc:C=24,H=9,W=9,R=3,S=3,pad=1,cb=8",
                        "global_avg_pool2d_nchwc:C=960,H=7,W=7"})
    check_default_schedule(w);
}

TEST_CASE("blocked pooling workload errors are user errors", "[ops][pool][nchwc][user_error]") {
  CHECK_THROWS_WITH(build_workload("max_pool2d_nchwc:C=24,H=9,W=9,R=3,S=3"),
                    Contains("max_pool2d_nchwc: the channel block cb=16 must divide the channels (24)"));
  CHECK_THROWS_WITH(build_workload("avg_pool2d_nchwc:C=16,H=9,W=9,R=3,S=3,pad=3"),
                    Contains("avg_pool2d_nchwc: the padding (3) must be smaller than the window (3x3)"));
  CHECK_THROWS_WITH(build_workload("avg_pool2d_nchwc:C=16,H=9,W=9,R=3,S=3,dtype=i8"),
                    Contains("averages need a float type, got i8"));
  CHECK_THROWS_WITH(build_workload("global_avg_pool2d_nchwc:C=16,H=9,W=9,dtype=i32"),
                    Contains("global_avg_pool2d_nchwc: averages need a float type, got i32"));
  CHECK_THROWS_WITH(build_workload("global_avg_pool2d_nchwc:C=20,H=9,W=9,cb=8"), Contains("cb=8 must divide"));
  CHECK_THROWS_WITH(build_workload("max_pool2d_nchwc:C=16,H=2,W=9,R=3,S=3"), Contains("does not fit"));
}
