// Software prefetch (Stage::prefetch, schedule/passes/inject_prefetch.h):
// prefetched schedules agree with the interpreter on random shapes and
// distances, the prefetches cover the next iteration's rows, the LLVM IR
// calls llvm.prefetch, the conv2d_nchwc and GEMM templates' prefetch knob
// on random configs, and each misuse's message.
#include <catch2/catch.hpp>
#include <random>

#include "base/error.h"
#include "codegen/build.h"
#include "compute/expr_ops.h"
#include "support/kernel_check.h"
#include "support/quantized_check.h"
#include "support/skip.h"
#include "support/te_examples.h"
#include "support/template_check.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Matchers::Contains;

namespace {

// C = A x B, k split by kt; A and B prefetched `distance` k tiles ahead.
struct Prefetched {
  PlainMatmul m;
  std::unique_ptr<Schedule> s;
};

Prefetched prefetched_matmul(int M, int N, int K, int kt, int distance) {
  Prefetched p;
  p.m = plain_matmul(M, N, K);
  p.s = std::make_unique<Schedule>(std::vector<Tensor>{p.m.C});
  Stage c = (*p.s)[p.m.C];
  IterVar ko, ki;
  c.split(c.reduce_axis()[0], kt, &ko, &ki);
  c.prefetch(p.m.A, ko, distance);
  c.prefetch(p.m.B, ko, distance);
  return p;
}

}  // namespace

TEST_CASE("prefetched matmuls agree with the interpreter on random shapes and distances", "[schedule][prefetch]") {
  std::mt19937_64 rng(1126);
  const int sizes[] = {1, 2, 3, 5, 7, 13, 16, 31};
  for (int trial = 0; trial < 16; ++trial) {
    const int M = sizes[rng() % 8], N = sizes[rng() % 8], K = sizes[rng() % 8];
    const int kt = 1 + static_cast<int>(rng() % 6), distance = 1 + static_cast<int>(rng() % 3);
    Prefetched p = prefetched_matmul(M, N, K, kt, distance);
    std::string ir;
    INFO("M=" << M << " N=" << N << " K=" << K << " k tile " << kt << ", distance " << distance);
    CHECK(check_schedule(*p.s, {p.m.A, p.m.B}, {p.m.A, p.m.B, p.m.C}, {p.m.C}, 300 + trial, &ir) == "");
    // A k-tile loop of one iteration is gone, and with it the prefetch.
    if ((K + kt - 1) / kt > 1) CHECK_THAT(ir, Contains("prefetch(A["));
  }
}

TEST_CASE("a prefetch covers the rows the iteration ahead reads, a line at a time", "[schedule][prefetch]") {
  // A k tile of 16 reads 16 floats of A's row (one line). With B 16
  // floats wide its 16 rows of the tile are one run of 16 lines; with B 64
  // wide each row is a line of its own, 256 bytes from the next: a loop of
  // 16 rows. (The CPU's loop partitioning peels the iterations with no
  // tile ahead, so the guard is gone.)
  Prefetched narrow = prefetched_matmul(1, 16, 64, 16, 2);
  std::string ir = to_string(lower(*narrow.s, {narrow.m.A, narrow.m.B, narrow.m.C}, "f"));
  CHECK_THAT(ir, Contains("prefetch(A[((k.outer*16) + 32)])"));
  CHECK_THAT(ir, Contains("for (B.line, 0, 16)"));
  Prefetched wide = prefetched_matmul(1, 64, 64, 16, 2);
  ir = to_string(lower(*wide.s, {wide.m.A, wide.m.B, wide.m.C}, "f"));
  CHECK_THAT(ir, Contains("for (k.inner.ahead, 0, 16)"));
  Prefetched& p = wide;
  const std::string llvm = emit_llvm_ir({lower(*p.s, {p.m.A, p.m.B, p.m.C}, "f")}, Target::host());
  CHECK_THAT(llvm, Contains("@llvm.prefetch"));
}

TEST_CASE("conv2d_nchwc's prefetch knob: random configs agree with the interpreter", "[template][prefetch]") {
  for (int distance : {1, 2}) {
    CHECK(check_pinned_configs("conv2d_nchwc:C=32,H=7,W=9,K=32,R=3,S=3,pad=1", {{"prefetch", distance}}, 4,
                               70 + distance) >= 4);
  }
  CHECK(check_pinned_configs("conv2d_nchwc:C=16,H=5,W=5,K=32,R=1,S=1,stride=2,bias=1,relu=1", {{"prefetch", 1}}, 3,
                             73) >= 3);
}

TEST_CASE("the GEMM template's prefetch knob: random configs agree with the interpreter", "[template][prefetch]") {
  CHECK(check_pinned_configs("matmul:M=13,N=48,K=37", {{"prefetch", 4}}, 4, 81) >= 4);
  CHECK(check_pinned_configs("batch_matmul:B=2,M=7,N=32,K=24,trans_b=1", {{"prefetch", 8}}, 3, 82) >= 3);
  CHECK(check_pinned_configs("dense:N=5,IN=40,OUT=32,bias=1", {{"prefetch", 16}}, 3, 83) >= 3);
}

TEST_CASE("the GEMM template's prefetch knob reaches tensorized tiles: the VNNI and BF16 calls' packed B",
          "[template][prefetch]") {
  // The calls read B's packed panel as instruction operands, not loads: a
  // run of 64 bytes per call, 4 k steps of 16 lanes of u8 or 2 of bf16.
  for (const auto& [workload, cpu, intrin] :
       {std::make_tuple("qmatmul:M=12,N=64,K=256", cpu_with(true, false), "vnni"),
        std::make_tuple("matmul:M=12,N=64,K=64,dtype=bf16", cpu_with(false, true), "bf16")}) {
    INFO(workload);
    const std::string on = lowered_default_config(workload, cpu, {{"tensorize", intrin}, {"prefetch", 4}});
    CHECK_THAT(on, Contains("prefetch(PB["));
    CHECK_THAT(lowered_default_config(workload, cpu, {{"tensorize", intrin}, {"prefetch", 0}}), !Contains("prefetch("));
  }
}

TEST_CASE("tensorized GEMMs with prefetch agree with the interpreter", "[template][prefetch][vnni][bf16]") {
  const uint64_t seed = run_seed();
  INFO(seed_note(seed));
  std::mt19937_64 rng(seed);
  if (!host_has("avx512vnni")) KILN_SKIP("this CPU has no AVX512-VNNI");
  for (int distance : {4, 16})
    check_pinned_random_configs("qmatmul:M=7,N=48,K=36,out=u8", cpu_with(true, false),
                                {{"tensorize", "vnni"}, {"prefetch", distance}}, 3, rng);
  if (!host_has("avx512bf16")) KILN_SKIP("this CPU has no AVX512-BF16 (the VNNI configs passed)");
  check_pinned_random_configs("matmul:M=5,N=32,K=26,dtype=bf16,bias=1", cpu_with(false, true),
                              {{"tensorize", "bf16"}, {"prefetch", 8}}, 3, rng, 2e-2);
}

TEST_CASE("prefetch misuse is a user error that says what to do", "[schedule][prefetch][errors]") {
  PlainMatmul m = plain_matmul(4, 4, 8);
  Schedule s({m.C});
  IterVar ko, ki;
  s[m.C].split(s[m.C].reduce_axis()[0], 2, &ko, &ki);
  CHECK_THROWS_WITH(s[m.C].prefetch(m.A, ko, 0), Contains("a prefetch looks at least 1 iteration ahead"));
  Tensor other = placeholder({4, 4}, DType::f32(), "other");
  CHECK_THROWS_WITH(s[m.C].prefetch(other, ko, 1), Contains("stage 'C' does not read 'other'"));
  {
    // A stage computed inline has no buffer to prefetch from.
    Tensor A = placeholder({8, 8}, DType::f32(), "A");
    Tensor T = compute(
        {8, 8}, [&](Var i, Var j) { return A(i, j) * 2.0f; }, "T");
    IterVar k = reduce_axis(8, "k");
    Tensor O = compute(
        {8}, [&](Var i) { return sum(T(i, k->var), {k}); }, "O");
    Schedule si({O});
    IterVar o, i;
    si[O].split(si[O].reduce_axis()[0], 2, &o, &i);
    si[O].prefetch(T, o, 1);
    si[T].compute_inline();
    CHECK_THROWS_WITH(lower(si, {A, O}, "f"), Contains("has no storage of its own"));
  }
  {
    Prefetched p = prefetched_matmul(4, 4, 8, 2, 1);
    CHECK_THROWS_WITH(lower_gpu(*p.s, {p.m.A, p.m.B, p.m.C}, "f", gpu_limits_for_arch("sm_90")),
                      Contains("prefetch is a CPU primitive"));
  }
}
