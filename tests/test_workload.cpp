// Workload strings: parsing, validation, canonical form; one test per user error.
#include <catch2/catch.hpp>

#include "base/error.h"
#include "kernels/op_registry.h"

using namespace kiln;
using Catch::Contains;

TEST_CASE("workload strings build ops with defaults and a canonical form", "[workload]") {
  OpInstance mm = build_workload("matmul:M=64,N=32,K=16");
  CHECK(mm.canonical == "matmul:M=64,N=32,K=16,dtype=f32,bias=0,relu=0");
  CHECK(mm.flops == 2.0 * 64 * 32 * 16);
  CHECK(mm.inputs.size() == 2);
  OpInstance cv = build_workload(" conv2d : N=1, C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1 ");
  CHECK(cv.canonical == "conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1,dilation=1,dtype=f32");
  CHECK(cv.flops == 2.0 * 64 * 56 * 56 * 64 * 9);
  CHECK(build_workload("matmul:M=8,N=8,K=8,dtype=i8").outputs[0].dtype() == DType::i32());
  CHECK(build_workload("elemwise:M=3,N=5,dtype=u8").outputs[0].dtype() == DType::u8());
}

TEST_CASE("workload errors name the problem", "[workload][user_error]") {
  CHECK_THROWS_WITH(build_workload(""), Contains("empty workload string"));
  CHECK_THROWS_WITH(build_workload("matmul"), Contains("expected OP:NAME=VALUE"));
  CHECK_THROWS_WITH(build_workload(":M=1"), Contains("missing op name"));
  CHECK_THROWS_WITH(build_workload("matmull:M=1,N=1,K=1"), Contains("unknown op 'matmull' (known ops: matmul, conv2d"));
  CHECK_THROWS_WITH(build_workload("matmul:M=1,,N=1"), Contains("empty parameter"));
  CHECK_THROWS_WITH(build_workload("matmul:M1024"), Contains("expected NAME=VALUE, got 'M1024'"));
  CHECK_THROWS_WITH(build_workload("matmul:M=1,M=2,N=1,K=1"), Contains("parameter 'M' is given twice"));
  CHECK_THROWS_WITH(build_workload("matmul:M=1,N=1"), Contains("missing parameter K"));
  CHECK_THROWS_WITH(build_workload("matmul:M=1,N=1,K=1,Q=3"), Contains("matmul has no parameter 'Q'"));
  CHECK_THROWS_WITH(build_workload("matmul:M=x,N=1,K=1"), Contains("M='x' is not an integer"));
  CHECK_THROWS_WITH(build_workload("matmul:M=0,N=1,K=1"), Contains("M=0 must be at least 1"));
  CHECK_THROWS_WITH(build_workload("matmul:M=99999999999,N=1,K=1"), Contains("is too large"));
  // Each parameter fits, but a tensor would not fit a 48-bit address space.
  CHECK_THROWS_WITH(build_workload("matmul:M=1073741824,N=1073741824,K=1"),
                    Contains("tensor C [1073741824, 1073741824] of f32 would take more than 256 TiB"));
  CHECK_THROWS_WITH(build_workload("conv2d:N=1073741824,C=1073741824,H=1073741824,W=1073741824,K=1,R=1,S=1"),
                    Contains("would take more than 256 TiB"));
  CHECK_NOTHROW(build_workload("elemwise:M=1073741824,N=65536,dtype=i8"));  // 2^46 bytes each
  CHECK_THROWS_WITH(build_workload("matmul:M=1,N=1,K=1,relu=2"), Contains("relu is a flag and must be 0 or 1"));
  CHECK_THROWS_WITH(build_workload("matmul:M=1,N=1,K=1,dtype=f33"), Contains("unknown dtype 'f33'"));
  CHECK_THROWS_WITH(build_workload("conv2d:C=1,H=2,W=2,K=1,R=5,S=5"), Contains("does not fit the padded input"));
}
