// max_pool2d and avg_pool2d: random small shapes (1, primes, odd) with
// random configs agree with the reference interpreter; padding never wins a
// max and is left out of an average's count (checked on known values);
// so do the default schedules; bad workloads are user errors.
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

std::string random_pool(const char* op, std::mt19937_64& rng, const char* dtype) {
  int64_t R = pick(rng, 1, 3), S = pick(rng, 1, 3);
  int64_t pad = pick(rng, 0, static_cast<int>(std::min(R, S)) - 1);
  std::ostringstream os;
  os << op << ":N=" << pick(rng, 1, 2) << ",C=" << odd_extent(rng) << ",H=" << odd_extent(rng, R)
     << ",W=" << odd_extent(rng, S) << ",R=" << R << ",S=" << S << ",stride=" << pick(rng, 1, 3) << ",pad=" << pad
     << ",dtype=" << dtype;
  return os.str();
}

}  // namespace

TEST_CASE("max_pool2d and avg_pool2d: random shapes and configs", "[ops][pool][property]") {
  std::mt19937_64 rng(53);
  for (int t = 0; t < 5; ++t) check_template_configs(random_pool("max_pool2d", rng, t == 4 ? "i8" : "f32"), 3, 400 + t);
  for (int t = 0; t < 5; ++t) check_template_configs(random_pool("avg_pool2d", rng, t == 4 ? "f64" : "f32"), 3, 500 + t);
  check_template_configs("max_pool2d:C=5,H=17,W=17,R=3,S=3,stride=2,pad=1", 4, 11);
  check_template_configs("avg_pool2d:C=3,H=7,W=7,R=7,S=7", 2, 12);
}

TEST_CASE("pooling windows at the border: padding never wins, never counts", "[ops][pool]") {
  // A 1x1x2x2 input of negative values, 3x3 windows, padding 1, stride 1.
  for (const char* op : {"max_pool2d", "avg_pool2d"}) {
    OpInstance p = build_workload(std::string(op) + ":C=1,H=2,W=2,R=3,S=3,pad=1");
    HostTensor in(DType::f32(), {1, 1, 2, 2});
    const float vals[] = {-1, -2, -3, -6};
    for (int i = 0; i < 4; ++i) in.set_float(i, vals[i]);
    HostTensor out = interpret(p.outputs, {{p.inputs[0], in}})[0];
    REQUIRE(out.num_elements() == 4);
    for (int i = 0; i < 4; ++i) CHECK(out.get_float(i) == (std::string(op) == "max_pool2d" ? -1.0 : -3.0));
    CHECK(p.flops == 4 * 9);
  }
}

TEST_CASE("pool default schedules and other configs agree with the reference", "[ops][pool]") {
  for (const char* w : {"max_pool2d:C=64,H=112,W=112,R=3,S=3,stride=2,pad=1", "avg_pool2d:C=2048,H=7,W=7,R=7,S=7",
                        "max_pool2d:C=3,H=5,W=5,R=2,S=2,stride=2"})
    check_default_schedule(w);
}

TEST_CASE("pool workload errors are user errors", "[ops][pool][user_error]") {
  CHECK_THROWS_WITH(build_workload("max_pool2d:C=2,H=5,W=5,R=2,S=2,pad=2"),
                    Contains("max_pool2d: the padding (2) must be smaller than the window (2x2)"));
  CHECK_THROWS_WITH(build_workload("avg_pool2d:C=2,H=5,W=5,R=2,S=2,dtype=i32"),
                    Contains("avg_pool2d: averages need a float type, got i32"));
  CHECK_THROWS_WITH(build_workload("avg_pool2d:C=2,H=1,W=5,R=2,S=2"), Contains("does not fit the padded input"));
  CHECK_THROWS_WITH(build_workload("max_pool2d:C=2,H=5,W=5,R=2,S=2,dilation=2"),
                    Contains("max_pool2d has no parameter 'dilation'"));
}
