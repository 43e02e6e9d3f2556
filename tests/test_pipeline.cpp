// Software pipelining (Stage::pipeline, Stage::double_buffer,
// schedule/passes/inject_pipeline.h) and its dependency tokens
// (verify_pipeline_tokens): pipelined and plain schedules against the
// interpreter on the CPU (random shapes and stage counts), the tensor-core
// GEMM's `stages` knob emulated with cp.async (and a planted missing wait
// that the emulator reports), NVRTC compiles, and one test per token-balance
// error and per misuse of the primitives.
#include <catch2/catch.hpp>
#include <random>
#include <regex>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/printer.h"
#include "schedule/verify.h"
#include "support/gpu_check.h"
#include "support/kernel_check.h"
#include "support/mma_config.h"
#include "support/skip.h"
#include "support/te_examples.h"
#include "support/temp_dir.h"
#include "support/template_check.h"
#include "support/token_check.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Matchers::Contains;

namespace {

// C = A x B with A's and B's tiles of k (kt wide) read into local buffers
// at the k-tile loop, which is pipelined with `stages` slots (1: plain).
struct PipelinedMatmul {
  PlainMatmul m;
  std::unique_ptr<Schedule> s;
  IterVar ko;
  Tensor AL, BL;
};

PipelinedMatmul pipelined_matmul(int M, int N, int K, int kt, int stages) {
  PipelinedMatmul p;
  p.m = plain_matmul(M, N, K);
  p.s = std::make_unique<Schedule>(std::vector<Tensor>{p.m.C});
  Schedule& s = *p.s;
  p.AL = s.cache_read(p.m.A, MemScope::kLocal, {p.m.C->op});
  p.BL = s.cache_read(p.m.B, MemScope::kLocal, {p.m.C->op});
  IterVar ki;
  s[p.m.C].split(s[p.m.C].reduce_axis()[0], kt, &p.ko, &ki);
  s[p.AL].compute_at(s[p.m.C], p.ko);
  s[p.BL].compute_at(s[p.m.C], p.ko);
  if (stages > 0) s[p.m.C].pipeline(p.ko, stages);
  return p;
}

std::string lowered(const Schedule& s, const std::vector<Tensor>& args) { return to_string(lower(s, args, "f")); }

using Op = TokenNode::Op;
using Queue = TokenNode::Queue;
Stmt tok(Op op, Queue q, Expr slot) { return TokenNode::make(op, q, 0, slot); }
// A fill of slot `slot`, and the compute's take and release of it.
Stmt fill(Expr slot) { return SeqNode::make({tok(Op::kPop, Queue::kFree, slot), tok(Op::kPush, Queue::kFull, slot)}); }
Stmt use(Expr slot) { return SeqNode::make({tok(Op::kPop, Queue::kFull, slot), tok(Op::kPush, Queue::kFree, slot)}); }

}  // namespace

TEST_CASE("pipelined and plain matmuls agree with the interpreter on random shapes and stage counts",
          "[schedule][pipeline]") {
  std::mt19937_64 rng(20261126);
  const int sizes[] = {1, 2, 3, 5, 7, 13, 16, 31};
  for (int trial = 0; trial < 24; ++trial) {
    const int M = sizes[rng() % 8], N = sizes[rng() % 8], K = sizes[rng() % 8];
    const int kt = 1 + static_cast<int>(rng() % 8), stages = 1 + static_cast<int>(rng() % 5);
    PipelinedMatmul p = pipelined_matmul(M, N, K, kt, stages);
    std::string ir;
    INFO("M=" << M << " N=" << N << " K=" << K << " k tile " << kt << ", " << stages << " stages");
    CHECK(check_schedule(*p.s, {p.m.A, p.m.B}, {p.m.A, p.m.B, p.m.C}, {p.m.C}, 100 + trial, &ir) == "");
    const int tiles = (K + kt - 1) / kt;
    // A pipeline needs two slots and two k tiles; otherwise the loop stays.
    CHECK((ir.find("push_token(full") != std::string::npos) == (std::min(stages, tiles) >= 2));
  }
}

TEST_CASE("a pipeline fills the first slots in a prologue and the next tiles ahead of the compute",
          "[schedule][pipeline]") {
  PipelinedMatmul p = pipelined_matmul(4, 4, 24, 4, 3);  // 6 k tiles, 3 slots
  const std::string ir = lowered(*p.s, {p.m.A, p.m.B, p.m.C});
  CHECK_THAT(ir, Contains("for (k.outer.prologue, 0, 2)"));
  // (The CPU's loop partitioning then peels the iterations that fill nothing.)
  CHECK_THAT(ir, Contains("pop_token(full, pipeline 0, slot floormod(k.outer, 3), in_flight "));
  CHECK_THAT(ir, Contains("pop_token(free, pipeline 0, slot floormod((k.outer + 2), 3))"));
  CHECK_THAT(ir, Contains("push_token(free, pipeline 0, slot floormod(k.outer, 3))"));
  // Three slots of 4 elements for A's 1 x 4 tile.
  CHECK_THAT(ir, Contains("A.local[f32 * 12]"));
}

TEST_CASE("double_buffer is a two-slot pipeline of the loop the stage is computed at", "[schedule][pipeline]") {
  PipelinedMatmul p = pipelined_matmul(5, 3, 12, 3, 0);
  (*p.s)[p.AL].double_buffer();
  std::string ir;
  CHECK(check_schedule(*p.s, {p.m.A, p.m.B}, {p.m.A, p.m.B, p.m.C}, {p.m.C}, 7, &ir) == "");
  CHECK_THAT(ir, Contains("pop_token(free, pipeline 0, slot 0)"));
  CHECK_THAT(ir, Contains("pop_token(free, pipeline 0, slot floormod((k.outer + 1), 2))"));
}

namespace {

// The GEMM template's IR for matmul 12x64x16 (four 16-column blocks of B,
// one 12-row block), its default config with `knobs` changed.
std::string gemm_ir(const nlohmann::json& knobs) {
  nlohmann::json j{{"tile_x", {4, 1, 16}}, {"tile_y", {1, 1, 12}}, {"order", {0, 1, 2, 3}}};  // yo, xo, ym, xm
  for (auto it = knobs.begin(); it != knobs.end(); ++it) j[it.key()] = it.value();
  return lowered_default_config("matmul:M=12,N=64,K=16", avx512_cpu(), j);
}

}  // namespace

TEST_CASE("the GEMM template's double-buffered packing pipelines the serial loop B is packed at",
          "[template][pipeline]") {
  // B packed per column block (band position 1, xo), the accumulator inside.
  const std::string two = gemm_ir({{"pack_buffers", 2}, {"pack_b", 1}, {"parallel", 0}, {"acc_at", 3}});
  CHECK_THAT(two, Contains("PB[f32 * 512]"));  // two slots of a 16 x 16 panel
  CHECK_THAT(two, Contains("pop_token(free, pipeline 0, slot floormod((C.j.outer + 1), 2))"));
  CHECK_THAT(two, Contains("push_token(free, pipeline 0, slot floormod(C.j.outer, 2))"));
  // One slot: the same loop packs into one buffer.
  const std::string one = gemm_ir({{"pack_buffers", 1}, {"pack_b", 1}, {"parallel", 0}, {"acc_at", 3}});
  CHECK_THAT(one, Contains("PB[f32 * 256]"));
  CHECK_THAT(one, !Contains("push_token"));
  // Packed at the parallel loop, or at the accumulator's loop: nothing to
  // overlap, one buffer.
  CHECK_THAT(gemm_ir({{"pack_buffers", 2}, {"pack_b", 1}, {"parallel", 2}, {"acc_at", 3}}), !Contains("push_token"));
  CHECK_THAT(gemm_ir({{"pack_buffers", 2}, {"pack_b", 1}, {"parallel", 0}, {"acc_at", 1}}), !Contains("push_token"));
  // The pipelined config against the interpreter, and one with a partial
  // last column block and an odd k.
  const nlohmann::json pipelined{{"pack_buffers", 2}, {"pack_b", 1},          {"parallel", 0},
                                 {"acc_at", 3},       {"tile_x", {4, 1, 16}}, {"order", {0, 1, 2, 3}}};
  CHECK(check_pinned_configs("matmul:M=12,N=64,K=16", pipelined, 1, 97) >= 1);
  CHECK(check_pinned_configs("matmul:M=12,N=61,K=37,bias=1", pipelined, 1, 98) >= 1);
}

TEST_CASE("the GEMM template's double-buffered packing: random configs agree with the interpreter",
          "[template][pipeline]") {
  // Pinned where the knob applies (B packed at the second band loop, serial,
  // the accumulator inside), then anywhere the random configs put the pack.
  const nlohmann::json at_serial{{"pack_buffers", 2}, {"pack_b", 1}, {"parallel", 0}, {"acc_at", 3}};
  CHECK(check_pinned_configs("matmul:M=13,N=48,K=37", at_serial, 4, 91) >= 4);
  CHECK(check_pinned_configs("matmul:M=6,N=40,K=17,trans_b=1,bias=1,gelu=1", at_serial, 3, 92) >= 3);
  CHECK(check_pinned_configs("batch_matmul:B=3,M=5,N=32,K=11", at_serial, 3, 93) >= 3);
  CHECK(check_pinned_configs("dense:N=7,IN=23,OUT=48,bias=1,relu=1", at_serial, 3, 94) >= 3);
  CHECK(check_pinned_configs("matmul:M=11,N=33,K=19", {{"pack_buffers", 2}}, 6, 95) >= 6);
  CHECK(check_pinned_configs("matmul:M=9,N=32,K=64,dtype=u8", {{"pack_buffers", 2}, {"pack_b", 1}, {"parallel", 1}}, 4,
                             96) >= 4);
}

TEST_CASE("pipeline and double_buffer misuse are user errors that say what to do", "[schedule][pipeline][errors]") {
  {
    PipelinedMatmul p = pipelined_matmul(4, 4, 8, 2, 0);
    CHECK_THROWS_WITH((*p.s)[p.m.C].pipeline(p.ko, 0), Contains("a pipeline has 1 to 5"));
    CHECK_THROWS_WITH((*p.s)[p.m.C].pipeline(p.ko, 6), Contains("asks for 6 stages"));
  }
  {
    PlainMatmul m = plain_matmul(4, 4, 8);
    Schedule s({m.C});
    Tensor AL = s.cache_read(m.A, MemScope::kLocal, {m.C->op});
    CHECK_THROWS_WITH(s[AL].double_buffer(), Contains("is not computed at a loop of another stage"));
  }
  {
    // Nothing is computed at the pipelined loop: nothing to fill ahead.
    PlainMatmul m = plain_matmul(4, 4, 8);
    Schedule s({m.C});
    IterVar ko, ki;
    s[m.C].split(s[m.C].reduce_axis()[0], 2, &ko, &ki);
    s[m.C].pipeline(ko, 2);
    CHECK_THROWS_WITH(lower(s, {m.A, m.B, m.C}, "f"), Contains("no stage is computed at loop 'k.outer'"));
  }
  {
    // A parallel loop's iterations do not run in order.
    PlainMatmul m = plain_matmul(8, 4, 8);
    Schedule s({m.C});
    Tensor AL = s.cache_read(m.A, MemScope::kLocal, {m.C->op});
    IterVar io, ii;
    s[m.C].split(s[m.C].axis()[0], 2, &io, &ii);
    s[AL].compute_at(s[m.C], io);
    s[m.C].parallel(io);
    s[m.C].pipeline(io, 2);
    CHECK_THROWS_WITH(lower(s, {m.A, m.B, m.C}, "f"), Contains("only a serial loop can be pipelined"));
  }
}

TEST_CASE("balanced pipeline tokens pass the verifier", "[schedule][pipeline][tokens]") {
  Var k("k");
  // Two slots: fill 0, then per iteration fill the next and use the current.
  Stmt s = SeqNode::make(
      {fill(0),
       ForNode::make(k, 0, 4, ForKind::kSerial,
                     SeqNode::make({IfThenElseNode::make(k + 1 < 4, fill(floormod(k + 1, 2))), use(floormod(k, 2))}))});
  CHECK(token_error(s) == "");
}

TEST_CASE("token balance: the compute waiting for a slot no fill pushed is a deadlock",
          "[schedule][pipeline][tokens]") {
  CHECK_THAT(token_error(use(0)),
             Contains("pipeline 0: slot 0: the compute waits for the slot to be filled") && Contains("would deadlock"));
}

TEST_CASE("token balance: a slot filled again before the compute released it is a deadlock",
          "[schedule][pipeline][tokens]") {
  Var k("k");
  // One slot refilled every iteration, used only after the loop.
  Stmt s = SeqNode::make({ForNode::make(k, 0, 2, ForKind::kSerial, fill(0)), use(0)});
  CHECK_THAT(token_error(s), Contains("slot 0 (at k = 1): the fill waits for the slot to be released") &&
                                 Contains("compute still holds it"));
}

TEST_CASE("token balance: a slot marked full without being taken may be overwritten while read",
          "[schedule][pipeline][tokens]") {
  Stmt s = SeqNode::make({tok(Op::kPush, Queue::kFull, 1), use(1)});
  CHECK_THAT(token_error(s), Contains("slot 1 is marked full without being taken for the fill"));
}

TEST_CASE("token balance: a fill nobody reads is a token pushed and never popped", "[schedule][pipeline][tokens]") {
  CHECK_THAT(token_error(SeqNode::make({fill(0), use(0), fill(0)})),
             Contains("slot 0 is filled") && Contains("never read"));
}

TEST_CASE("token balance: a slot read and never released", "[schedule][pipeline][tokens]") {
  Stmt s = SeqNode::make({fill(0), tok(Op::kPop, Queue::kFull, 0)});
  CHECK_THAT(token_error(s), Contains("slot 0 is read (its full token popped) but never released"));
}

TEST_CASE("token balance: a release of a slot the compute never took", "[schedule][pipeline][tokens]") {
  Stmt s = SeqNode::make({fill(0), tok(Op::kPush, Queue::kFree, 0)});
  CHECK_THAT(token_error(s), Contains("slot 0 is released (push of its free token) but the compute never took it"));
}

TEST_CASE("token balance: tokens under a loop of unknown extent cannot be checked", "[schedule][pipeline][tokens]") {
  Var k("k"), n("n");
  Stmt s = ForNode::make(k, 0, n, ForKind::kSerial, SeqNode::make({fill(0), use(0)}));
  CHECK_THAT(token_error(s), Contains("does not reduce to a constant"));
}

namespace {

const char* const kPipelinedGemm = "matmul:M=64,N=48,K=160,dtype=f16";

}  // namespace

TEST_CASE("cuda tensor-core GEMM: every stage count copies with cp.async and agrees with the interpreter",
          "[gpu][pipeline][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_pipeline_gemm");
  const OpInstance op = build_workload(kPipelinedGemm);
  Tally tally;
  for (int stages = 1; stages <= 5; ++stages) {  // 5 k tiles: up to one slot each
    const Config cfg = mma_config(op, stages);
    const CudaSource src = gpu_source(op, cfg, gpu_limits_for_arch("sm_90"));
    CHECK((src.code.find("kiln_cp_async<8>(A_shared") != std::string::npos) == (stages > 1));
    CHECK((src.code.find("kiln_cp_async_wait(") != std::string::npos) == (stages > 1));
    check_config(op, cfg, dir.path, 40 + stages, &tally);
  }
  // bf16 with bias and gelu, batched, B transposed; random configs of the
  // whole space (stages among the knobs).
  const Tally random = check_emulated("batch_matmul:B=2,M=32,N=24,K=96,dtype=bf16,trans_b=1", {}, 4, 9, dir.path);
  CHECK(tally.ran == 5);
  CHECK(random.ran + random.rejected == 5);
}

TEST_CASE("cuda tensor-core conv2d: one k loop over taps and channels, the padding zero-filled by cp.async",
          "[gpu][pipeline][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_pipeline_conv");
  const OpInstance op = build_workload("conv2d_nhwc:N=2,H=7,W=6,C=32,K=16,R=3,S=3,stride=1,pad=1,dtype=f16,bias=1");
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  const GpuTemplate& t = find_op(op.op).gpu;
  auto space = t.define_space(op, gpu);
  Tally tally;
  for (int stages = 1; stages <= 3; ++stages) {
    INFO(stages << " stages");
    nlohmann::json j = t.default_config(op, gpu, *space).to_json();
    j["tensor_core"] = "mma";
    j["stages"] = stages;
    const Config cfg = space->from_json(j);
    const std::string ir = to_string(build_kernel(op.canonical, "cuda -arch=sm_90", "", cfg.to_json().dump()).func);
    // The gathered input's copies carry the condition of its padding (a
    // scalar after the operands); the weights' copies are plain.
    const std::regex zero_filled(R"(tensor_intrin cuda\.cp_async\.f16\.8\(im2col\.shared\[[^\n]*\], [^\n]*>= 0)");
    CHECK(std::regex_search(ir, zero_filled) == (stages > 1));
    CHECK((ir.find("tensor_intrin cuda.cp_async.f16.8(weight.shared[") != std::string::npos) == (stages > 1));
    check_config(op, cfg, dir.path, 60 + stages, &tally);
  }
  CHECK(tally.ran == 3);
}

TEST_CASE("cuda tensor-core GEMM: a planted missing cp.async wait is reported by the emulator",
          "[gpu][pipeline][emulation][errors]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_pipeline_planted");
  const OpInstance op = build_workload(kPipelinedGemm);
  CudaSource src = gpu_source(op, mma_config(op, 3), gpu_limits_for_arch("sm_90"));
  REQUIRE(run_emulated_and_check(op, src, dir.path + "/good", 3) == "");
  // The kernel's waits go (the prelude defines the function before it).
  const size_t kernel = src.code.find("__global__ void");
  REQUIRE(kernel != std::string::npos);
  const std::string planted =
      src.code.substr(0, kernel) +
      std::regex_replace(src.code.substr(kernel), std::regex(R"(kiln_cp_async_wait\([^;]*\);)"), "");
  REQUIRE(planted != src.code);
  src.code = planted;
  const std::string err = run_emulated_and_check(op, src, dir.path + "/planted", 3);
  CHECK_THAT(err, Contains("was read before its cp.async copy arrived"));
}

TEST_CASE("cuda tensor-core GEMM: pipelined 4096^3 configs compile with NVRTC for sm_80 and sm_90",
          "[gpu][pipeline][nvrtc]") {
  if (!nvrtc_available()) KILN_SKIP("NVRTC is not available");
  const OpInstance op = build_workload("matmul:M=4096,N=4096,K=4096,dtype=f16");
  for (const char* arch : {"sm_80", "sm_90"}) {
    const GpuLimits gpu = gpu_limits_for_arch(arch);
    const GpuTemplate& t = find_op(op.op).gpu;
    auto space = t.define_space(op, gpu);
    // The defaults: 128 x 256 blocks with two slots of k tiles of 64, whose
    // 128 KiB staging tile (reusing the slots' bytes) sm_80's blocks may opt
    // in to as well.
    const Config def = t.default_config(op, gpu, *space);
    CHECK(def.choice("stages") == 2);
    CHECK(def.split("mma_n")[1] * def.split("mma_n")[2] * 8 == 256);
    CHECK(def.split("mma_k")[1] * 16 == 64);
    for (int64_t stages = 1; stages <= def.choice("stages"); ++stages) {
      nlohmann::json j = def.to_json();
      j["stages"] = stages;
      const CudaSource src = gpu_source(op, space->from_json(j), gpu);
      INFO(arch << ", " << stages << " stages");
      CHECK(compile_for_gpu(src, gpu, kDefaultConfigSpillBytes) == "");
    }
  }
}
