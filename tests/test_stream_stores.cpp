// Streaming stores (Stage::stream_stores): streamed schedules agree with the
// interpreter on random shapes, their LLVM IR marks the stores of the
// streamed buffer non-temporal (no others) and fences them, the cost
// model's feature counts their bytes, the GEMM template's store knob on
// random configs (AMX included where the CPU has it), and each misuse's
// message.
#include <catch2/catch.hpp>
#include <random>

#include "base/error.h"
#include "codegen/build.h"
#include "compute/expr_ops.h"
#include "costmodel/features.h"
#include "support/kernel_check.h"
#include "support/quantized_check.h"
#include "support/skip.h"
#include "support/te_examples.h"
#include "support/template_check.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Matchers::Contains;

namespace {

// C = A x B accumulated in a local register tile, copied out 16 columns at
// a time by the output stage, whose stores stream when `stream` is set.
struct StreamedMatmul {
  PlainMatmul m;
  std::unique_ptr<Schedule> s;
};

StreamedMatmul streamed_matmul(int M, int N, int K, bool stream) {
  StreamedMatmul r;
  r.m = plain_matmul(M, N, K);
  r.s = std::make_unique<Schedule>(std::vector<Tensor>{r.m.C});
  Schedule& s = *r.s;
  Tensor acc = s.cache_write(r.m.C, MemScope::kLocal);
  Stage out = s[r.m.C];
  IterVar jo, ji;
  out.split(out.axis()[1], 16, &jo, &ji);
  out.vectorize(ji);
  out.parallel(out.axis()[0]);
  s[acc].compute_at(out, jo);
  s[acc].vectorize(s[acc].axis()[1]);
  if (stream) out.stream_stores();
  return r;
}

std::string llvm_ir_of(const StreamedMatmul& r) {
  return emit_llvm_ir({lower(*r.s, {r.m.A, r.m.B, r.m.C}, "f")}, Target::host());
}

}  // namespace

TEST_CASE("streamed matmuls agree with the interpreter on random shapes", "[schedule][stream_stores]") {
  std::mt19937_64 rng(1128);
  const int sizes[] = {1, 2, 3, 5, 7, 13, 16, 17, 31, 32, 48};
  for (int trial = 0; trial < 16; ++trial) {
    const int M = sizes[rng() % 11], N = sizes[rng() % 11], K = sizes[rng() % 11];
    StreamedMatmul r = streamed_matmul(M, N, K, true);
    INFO("M=" << M << " N=" << N << " K=" << K);
    CHECK(check_schedule(*r.s, {r.m.A, r.m.B}, {r.m.A, r.m.B, r.m.C}, {r.m.C}, 500 + trial) == "");
  }
}

TEST_CASE("streamed stores are non-temporal, the others are not, and a fence follows them",
          "[schedule][stream_stores]") {
  // 32 columns: every row's two 16-float stores are 64-byte aligned.
  const std::string streamed = llvm_ir_of(streamed_matmul(4, 32, 8, true));
  CHECK_THAT(streamed, Contains("!nontemporal"));
  if (Target::host().triple.rfind("x86_64", 0) == 0) CHECK_THAT(streamed, Contains("@llvm.x86.sse.sfence"));
  const std::string plain = llvm_ir_of(streamed_matmul(4, 32, 8, false));
  CHECK_THAT(plain, !Contains("!nontemporal"));
  CHECK_THAT(plain, !Contains("sfence"));
}

TEST_CASE("the cost model counts the bytes written by streaming stores", "[costmodel][stream_stores]") {
  auto feature = [](bool stream) {
    StreamedMatmul r = streamed_matmul(8, 64, 16, stream);
    FeatureVector v = extract_features(lower(*r.s, {r.m.A, r.m.B, r.m.C}, "f", LowerDepth::kAnnotatedLoops));
    return v.at(static_cast<size_t>(features::kLatencyOffset + 2));
  };
  CHECK(feature(false) == 0.0f);
  // 8 x 64 floats: log2(1 + 2048 bytes).
  CHECK(feature(true) == Approx(std::log2(1.0 + 8 * 64 * 4)));
}

TEST_CASE("the GEMM template's store knob: streaming configs agree with the interpreter", "[template][stream_stores]") {
  const nlohmann::json streaming = {{"store", "streaming"}};
  CHECK(check_pinned_configs("matmul:M=13,N=48,K=37", streaming, 4, 91) >= 4);
  CHECK(check_pinned_configs("batch_matmul:B=2,M=7,N=32,K=24,trans_b=1", streaming, 3, 92) >= 3);
  CHECK(check_pinned_configs("dense:N=5,IN=40,OUT=31,bias=1", streaming, 3, 93) >= 3);
  CHECK(check_pinned_configs("qmatmul:M=9,N=64,K=20,bias=1,relu=1,out=u8", streaming, 3, 94, cpu_with(true, false)) >=
        3);
  if (!host_has("amx-int8")) KILN_SKIP("this CPU has no AMX-INT8 (the plain and VNNI configs passed)");
  CpuInfo amx = cpu_with(true, false);
  amx.amx_int8 = true;
  const nlohmann::json amx_streaming = {{"store", "streaming"}, {"tensorize", "amx"}};
  CHECK(check_pinned_configs("qmatmul_packed_b:M=64,N=96,K=128,out=i32", amx_streaming, 4, 95, amx) >= 4);
}

TEST_CASE("stream_stores misuse is a user error that says what to do", "[schedule][stream_stores][errors]") {
  {
    Tensor A = placeholder({8, 8}, DType::f32(), "A");
    Tensor T = compute(
        {8, 8}, [&](Var i, Var j) { return A(i, j) * 2.0f; }, "T");
    Tensor O = compute(
        {8, 8}, [&](Var i, Var j) { return T(i, j) + 1.0f; }, "O");
    Schedule s({O});
    s[T].stream_stores();
    s[T].compute_inline();
    CHECK_THROWS_WITH(lower(s, {A, O}, "f"), Contains("stage 'T' is computed inline and stores nothing"));
  }
  {
    PlainMatmul m = plain_matmul(4, 16, 8);
    Schedule s({m.C});
    Tensor acc = s.cache_write(m.C, MemScope::kLocal);
    s[acc].compute_at(s[m.C], s[m.C].axis()[0]);
    s[acc].stream_stores();
    CHECK_THROWS_WITH(lower(s, {m.A, m.B, m.C}, "f"),
                      Contains("keeps its buffer in local memory; streaming stores bypass the caches"));
  }
  {
    StreamedMatmul r = streamed_matmul(4, 16, 8, true);
    CHECK_THROWS_WITH(lower_gpu(*r.s, {r.m.A, r.m.B, r.m.C}, "f", gpu_limits_for_arch("sm_90")),
                      Contains("stream_stores (stage 'C') is a CPU primitive"));
  }
  {
    PlainMatmul m = plain_matmul(4, 16, 8);
    Schedule s({m.C});
    CHECK_THROWS_WITH(s[m.A].stream_stores(), Contains("'A' is an input placeholder"));
  }
}
