// `kiln lib` and op flags its entry points do not express: matmul's
// trans_a, trans_b and gelu (the entry points take row-major operands
// without gelu) and conv2d's groups, bias and relu (they take data, weight,
// out of an ungrouped convolution). Such kernels stay out of libraries (a
// user error when asked for by name).
#include <catch2/catch.hpp>

#include "library/library_builder.h"
#include "base/error.h"
#include "tests/lib_test_util.h"

using namespace kiln;
using Catch::Contains;

TEST_CASE("kiln lib leaves out matmuls with transposed operands or gelu", "[ops][gemm][user_error]") {
  // The library's matmul entry points take row-major operands and dispatch
  // on M, N, K only: a transposed or gelu kernel would answer a plain call.
  kiln::test::TempDir tmp;
  LibraryOptions o;
  o.db_path = tmp.path + "/k.db";
  o.out_dir = tmp.path + "/out";
  o.name = "te";
  for (const char* w : {"matmul:M=8,N=8,K=8,trans_b=1", "matmul:M=8,N=8,K=8,trans_a=1", "matmul:M=8,N=8,K=8,gelu=1"}) {
    o.workloads = {w};
    INFO(w);
    CHECK_THROWS_WITH(build_library(o), Contains("kiln lib supports matmul (row-major operands"));
  }
}

TEST_CASE("kiln lib leaves out grouped conv2d and conv2d with an epilogue", "[ops][conv][user_error]") {
  kiln::test::TempDir tmp;
  LibraryOptions o;
  o.db_path = tmp.path + "/k.db";
  o.out_dir = tmp.path + "/out";
  o.name = "tc";
  for (const char* w : {"conv2d:N=1,C=4,H=6,W=6,K=4,R=3,S=3,groups=2", "conv2d:N=1,C=4,H=6,W=6,K=4,R=3,S=3,bias=1",
                        "conv2d:N=1,C=4,H=6,W=6,K=4,R=3,S=3,relu=1"}) {
    o.workloads = {w};
    INFO(w);
    CHECK_THROWS_WITH(build_library(o), Contains("conv2d (ungrouped, no bias/relu)"));
  }
}
