// Tuning a workload with its alternatives on one budget (tasks/variant_tuning.h):
// which workloads have variants, and how the trials are shared.
#include <catch2/catch.hpp>
#include <sstream>
#include <utility>
#include <vector>

#include "kernels/op_registry.h"
#include "tasks/variant_tuning.h"

using namespace kiln;

TEST_CASE("a 3x3 stride-1 fp convolution has two Winograd variants, a pointwise one its flat form", "[variants]") {
  auto v = workload_variants("conv2d_nchwc:C=32,H=14,W=14,K=64,R=3,S=3,pad=1,bias=1,relu=1");
  REQUIRE(v.size() == 3);
  CHECK(v[0] == build_workload("conv2d_nchwc:C=32,H=14,W=14,K=64,R=3,S=3,pad=1,bias=1,relu=1").canonical);
  CHECK(v[1] == build_workload("conv2d_winograd_nchwc:C=32,H=14,W=14,K=64,pad=1,m=2,bias=1,relu=1").canonical);
  CHECK(v[2] == build_workload("conv2d_winograd_nchwc:C=32,H=14,W=14,K=64,pad=1,m=4,bias=1,relu=1").canonical);
  auto nhwc = workload_variants("conv2d_nhwc:C=24,H=9,W=9,K=20,R=3,S=3,pad=1");
  REQUIRE(nhwc.size() == 3);  // channels blocked by 8 and 4 inside the kernel
  CHECK(nhwc[2] == build_workload("conv2d_winograd_nhwc:C=24,H=9,W=9,K=20,pad=1,m=4,cb=8,kb=4").canonical);
  for (const char* w : {"conv2d_nchwc:C=32,H=14,W=14,K=64,R=3,S=3,stride=2,pad=1",
                        "conv2d_nhwc:C=32,H=14,W=14,K=64,R=3,S=3,stride=2,pad=1",
                        "conv2d_nchwc:C=32,H=14,W=14,K=64,R=3,S=3,pad=2,dilation=2",
                        "conv2d_nchwc:C=32,H=14,W=14,K=64,R=3,S=3,pad=1,groups=2",
                        "conv2d_nchwc:C=32,H=14,W=14,K=64,R=3,S=3,pad=1,dtype=i8",
                        "conv2d_nchwc:C=32,H=1,W=14,K=64,R=1,S=1", "batch_matmul:B=2,M=4,N=4,K=4"}) {
    INFO(w);
    CHECK(workload_variants(w).size() == 1);
  }
  auto flat = workload_variants("conv2d_nchwc:C=32,H=14,W=14,K=64,R=1,S=1");
  REQUIRE(flat.size() == 2);
  CHECK(flat[1] == build_workload("conv2d_nchwc:C=32,H=1,W=196,K=64,R=1,S=1").canonical);
}

TEST_CASE("variants share the budget: budget/(n+1) each, the rest to the leader", "[variants]") {
  std::vector<std::pair<std::string, int>> calls;
  std::ostringstream log;
  auto tune = [&](const std::string& v, int trials) {
    calls.emplace_back(v, trials);
    return v == "b" ? 10.0 : 5.0;
  };
  CHECK(tune_variants({"a", "b", "c"}, 256, tune, log) == 1);
  CHECK(calls == std::vector<std::pair<std::string, int>>{{"a", 64}, {"b", 64}, {"c", 64}, {"b", 128}});
  CHECK(log.str().find("the rest of the budget (64 trials) goes to the leading variant b") != std::string::npos);
  calls.clear();
  CHECK(tune_variants({"a"}, 100, tune, log) == 0);
  CHECK(calls == std::vector<std::pair<std::string, int>>{{"a", 100}});
  calls.clear();
  tune_variants({"a", "b", "c"}, 2, tune, log);  // fewer trials than variants: never more than the budget
  CHECK(calls == std::vector<std::pair<std::string, int>>{{"a", 1}, {"b", 1}});
}
