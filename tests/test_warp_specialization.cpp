// Warp specialization of the tensor-core pipelines (Stage::pipeline with
// producer warps; schedule/passes/warp_specialize.h): producer warps fill
// the slots while the other warps compute, handing the slots over through
// mbarriers. The GEMM and conv2d templates' `producer_warps` knob emulated
// against the interpreter (the emulation checks every hand-off), planted
// bugs the emulator reports, NVRTC compiles for sm_80 and sm_90, the token
// verifier's checks of phases and of a deadlock between the two sides, and
// misuse as user errors.
#include <catch2/catch.hpp>
#include <regex>

#include "base/error.h"
#include "compute/hw_instructions.h"
#include "compute/printer.h"
#include "schedule/passes/inject_pipeline.h"
#include "schedule/verify.h"
#include "support/gpu_check.h"
#include "support/mma_config.h"
#include "support/skip.h"
#include "support/te_examples.h"
#include "support/temp_dir.h"
#include "support/token_check.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Matchers::Contains;

namespace {

const char* const kGemm = "matmul:M=64,N=48,K=160,dtype=f16";

// `src` with `pattern` removed from its kernels (not from the preludes).
CudaSource without(CudaSource src, const std::string& pattern) {
  const size_t k = src.code.find("__global__ void");
  REQUIRE(k != std::string::npos);
  const std::string planted = src.code.substr(0, k) + std::regex_replace(src.code.substr(k), std::regex(pattern), "");
  REQUIRE(planted != src.code);
  src.code = planted;
  return src;
}

}  // namespace

TEST_CASE("warp-specialized GEMM: producer warps fill the slots through mbarriers, and it agrees with the interpreter",
          "[gpu][pipeline][warp_specialization][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_ws_gemm");
  const OpInstance op = build_workload(kGemm);
  Tally tally;
  for (int producers = 1; producers <= 2; ++producers)
    for (int stages = 1; stages <= 5; stages += 2) {
      INFO(producers << " producer warps, " << stages << " stages");
      const Config cfg = mma_config(op, stages, producers);
      const CudaSource src = gpu_source(op, cfg, gpu_limits_for_arch("sm_90"));
      const std::string k = kernel_text(src);
      // The compute warps and the producers; the copies arrive on the
      // full barriers, and no commit group or block barrier is in the loop.
      CHECK(src.launches.at(0).block[1] == cfg.split("mma_m")[1] * cfg.split("mma_n")[1] + producers);
      CHECK(k.find("kiln_cp_async<8>(A_shared") != std::string::npos);
      CHECK(k.find("kiln_cp_async_mbarrier_arrive(kiln_full_0") != std::string::npos);
      CHECK(k.find("kiln_mbarrier_wait(kiln_full_0") != std::string::npos);
      CHECK(k.find("kiln_mbarrier_arrive(kiln_empty_0") != std::string::npos);
      CHECK(k.find("kiln_cp_async_wait(") == std::string::npos);
      CHECK(k.find("kiln_cp_async_commit(") == std::string::npos);
      // One block barrier after the mbarriers' set-up, one before the epilogue.
      const std::regex barrier(R"(__syncthreads\(\))");
      CHECK(std::distance(std::sregex_iterator(k.begin(), k.end(), barrier), std::sregex_iterator()) == 2);
      check_config(op, cfg, dir.path, 70 + 10 * producers + stages, &tally);
    }
  CHECK(tally.ran == 6);
}

TEST_CASE("warp-specialized tensor-core conv2d and batched bf16 GEMM agree with the interpreter",
          "[gpu][pipeline][warp_specialization][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_ws_conv");
  Tally tally;
  {
    // The padding's zeros are filled by cp.async (src-size 0), the weights copied.
    const OpInstance op = build_workload("conv2d_nhwc:N=2,H=7,W=6,C=32,K=16,R=3,S=3,stride=1,pad=1,dtype=f16,bias=1");
    for (int stages : {1, 3}) {
      INFO(stages << " stages");
      const Config cfg = mma_config(op, stages, 1);
      const std::string ir = to_string(build_kernel(op.canonical, "cuda -arch=sm_90", "", cfg.to_json().dump()).func);
      CHECK(ir.find("attr [") != std::string::npos);
      CHECK(ir.find("warp_specialized = " + std::to_string(stages)) != std::string::npos);
      check_config(op, cfg, dir.path, 90 + stages, &tally);
    }
  }
  {
    // Batched, B transposed, bf16.
    const OpInstance op = build_workload("batch_matmul:B=2,M=32,N=24,K=96,dtype=bf16,trans_b=1");
    check_config(op, mma_config(op, 2, 2), dir.path, 95, &tally);
  }
  CHECK(tally.ran == 3);
}

TEST_CASE("warp-specialized GEMM: planted missing waits are reported by the emulator",
          "[gpu][pipeline][warp_specialization][emulation][errors]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_ws_planted");
  const OpInstance op = build_workload(kGemm);
  // Two warps side by side along N: both read every row of A's tiles, and
  // each one's part of the staging tile takes bytes of slots both read.
  const CudaSource src =
      gpu_source(op, mma_config(op, 3, 1, {{"mma_m", {1, 1, 4}}, {"mma_n", {3, 2, 1}}}), gpu_limits_for_arch("sm_90"));
  REQUIRE(run_emulated_and_check(op, src, dir.path + "/good", 5) == "");
  // The compute reads a slot without waiting for its fill.
  CHECK_THAT(run_emulated_and_check(op, without(src, R"(kiln_mbarrier_wait\(kiln_full_0[^;]*\);)"),
                                    dir.path + "/no_full_wait", 5),
             Contains("before its cp.async copy arrived") || Contains("race") || Contains("share byte"));
  // The producer refills a slot without waiting for its release: it runs
  // ahead, its arrivals complete the wrong phases, and the warps end up
  // waiting for each other (or race, as the threads happen to run).
  CHECK_THAT(run_emulated_and_check(op, without(src, R"(if \([^\n]*\) kiln_mbarrier_wait\(kiln_empty_0[^;]*\);)"),
                                    dir.path + "/no_empty_wait", 5),
             Contains("race") || Contains("deadlock") || Contains("share byte"));
  // No drain: a warp's staging tile overwrites slot bytes another warp may
  // still read.
  CHECK_THAT(run_emulated_and_check(op, without(src, R"(\n *kiln_mbarrier_wait\(kiln_empty_0[^;]*\);)"),
                                    dir.path + "/no_drain", 5),
             // (Which array the report names first depends on how the threads ran.)
             Contains("shared arrays") && Contains("A_shared") && Contains("C_shared") && Contains("share byte") &&
                 Contains("nor an mbarrier phase that orders them"));
}

TEST_CASE("warp-specialized GEMM: 4096^3 with producer warps compiles with NVRTC for sm_80 and sm_90, no spills",
          "[gpu][pipeline][warp_specialization][nvrtc]") {
  if (!nvrtc_available()) KILN_SKIP("NVRTC is not available");
  const OpInstance op = build_workload("matmul:M=4096,N=4096,K=4096,dtype=f16");
  for (const char* arch : {"sm_80", "sm_90"}) {
    const GpuLimits gpu = gpu_limits_for_arch(arch);
    const GpuTemplate& t = find_op(op.op).gpu;
    auto space = t.define_space(op, gpu);
    // 128 x 128 blocks of eight 64 x 32 warps, three slots of k tiles of 32.
    // (Eight 64 x 64 warps and one or two producers spill: nine or ten
    // warps leave a thread at most 168 registers, as the register file is
    // split among the SM's four schedulers.)
    for (int producers = 1; producers <= 2; ++producers) {
      nlohmann::json j = t.default_config(op, gpu, *space).to_json();
      j.update({{"mma_m", {32, 2, 4}},
                {"mma_n", {32, 4, 4}},
                {"mma_k", {128, 2}},
                {"stages", 3},
                {"producer_warps", producers}});
      const CudaSource src = gpu_source(op, space->from_json(j), gpu);
      INFO(arch << ", " << producers << " producer warps");
      CHECK(src.launches.at(0).block[1] == 8 + producers);
      CHECK(compile_for_gpu(src, gpu, kDefaultConfigSpillBytes) == "");
    }
  }
}

namespace {

using Op = TokenNode::Op;
using Queue = TokenNode::Queue;

Stmt tok(Op op, Queue q, const Expr& slot, const Expr& phase) { return TokenNode::make_phased(op, q, 0, slot, phase); }

// A warp-specialized region over `trips` iterations of `slots` slots, as
// inject_pipeline builds it; `phase_shift` moves the compute's full waits
// by that many uses, and `drain` leaves the drain out when false.
Stmt region(int64_t trips, int64_t slots, int64_t phase_shift = 0, bool drain = true, int64_t producer_trips = -1) {
  Var k("k"), p("p"), d("d"), w("w");
  if (producer_trips < 0) producer_trips = trips;
  const Expr s = make_const(DType::i32(), slots);
  Stmt producer = ForNode::make(p, 0, static_cast<int>(producer_trips), ForKind::kSerial,
                                SeqNode::make({tok(Op::kPop, Queue::kFree, floormod(p, s), floordiv(p, s) - 1),
                                               tok(Op::kPush, Queue::kFull, floormod(p, s), floordiv(p, s))}));
  std::vector<Stmt> consumer{ForNode::make(
      k, 0, static_cast<int>(trips), ForKind::kSerial,
      SeqNode::make({tok(Op::kPop, Queue::kFull, floormod(k, s), floordiv(k, s) + static_cast<int>(phase_shift)),
                     tok(Op::kPush, Queue::kFree, floormod(k, s), floordiv(k, s))}))};
  if (drain)
    consumer.push_back(ForNode::make(d, static_cast<int>(trips - slots), static_cast<int>(slots), ForKind::kSerial,
                                     tok(Op::kWait, Queue::kFree, floormod(d, s), floordiv(d, s))));
  return AttrStmtNode::make(make_const(DType::i32(), int64_t{4}), attr::kWarpSpecialized, s,
                            IfThenElseNode::make(w >= 4, producer, SeqNode::make(consumer)));
}

// region()'s pipeline with wgmma products kept in flight, as inject_pipeline
// makes it: each iteration issues products on its slot, then commits and
// waits with `loop_wait` groups left in flight (none: no wait) and releases
// the slot before; after the loop the last wait (`last_wait`) and release.
// `looped` issues the products in a loop of 3 and guards the wait with a
// condition that always holds; `release_first` releases before the wait.
Stmt in_flight_region(int64_t trips, int64_t slots, int loop_wait = 1, bool last_wait = true, bool looped = false,
                      bool release_first = false) {
  Var k("k"), p("p"), d("d"), w("w");
  const Expr s = make_const(DType::i32(), slots);
  const Var acc = Var::handle("acc", DType::f32()), sh = Var::handle("S", DType::f16());
  const Stmt issue = TensorIntrinCallNode::make(
      cuda_wgmma_instruction(DType::f16(), 64, true),
      {{acc, Expr(0), Expr(16 * 64), Expr(1)}, {sh, Expr(0), Expr(0), Expr(1)}, {sh, Expr(0), Expr(0), Expr(1)}},
      {Expr(128), Expr(64), Expr(0), Expr(64), Expr(128), Expr(1), Expr(0), Expr(0), Expr(2)});
  auto wait = [&](int n) {
    return TensorIntrinCallNode::make(kCudaWgmmaCommitWait, {{acc, Expr(0), Expr(0), Expr(1)}}, {Expr(n)});
  };
  Stmt producer = ForNode::make(p, 0, static_cast<int>(trips), ForKind::kSerial,
                                SeqNode::make({tok(Op::kPop, Queue::kFree, floormod(p, s), floordiv(p, s) - 1),
                                               tok(Op::kPush, Queue::kFull, floormod(p, s), floordiv(p, s))}));
  Var ki("ki");
  std::vector<Stmt> body{tok(Op::kPop, Queue::kFull, floormod(k, s), floordiv(k, s)),
                         looped ? ForNode::make(ki, 0, 3, ForKind::kSerial, issue) : issue};
  const Stmt release =
      IfThenElseNode::make(k >= 1, tok(Op::kPush, Queue::kFree, floormod(k - 1, s), floordiv(k - 1, s)));
  if (release_first) body.push_back(release);
  if (loop_wait >= 0) body.push_back(looped ? IfThenElseNode::make(k >= 0, wait(loop_wait)) : wait(loop_wait));
  if (!release_first) body.push_back(release);
  std::vector<Stmt> consumer{ForNode::make(k, 0, static_cast<int>(trips), ForKind::kSerial, SeqNode::make(body))};
  if (last_wait) consumer.push_back(wait(0));
  consumer.push_back(tok(Op::kPush, Queue::kFree, make_const(DType::i32(), (trips - 1) % slots),
                         make_const(DType::i32(), (trips - 1) / slots)));
  consumer.push_back(ForNode::make(d, static_cast<int>(trips - slots), static_cast<int>(slots), ForKind::kSerial,
                                   tok(Op::kWait, Queue::kFree, floormod(d, s), floordiv(d, s))));
  return AttrStmtNode::make(make_const(DType::i32(), int64_t{4}), attr::kWarpSpecialized, s,
                            IfThenElseNode::make(w >= 4, producer, SeqNode::make(consumer)));
}

}  // namespace

TEST_CASE("warp-specialized tokens: wgmma products in flight hold their slot until a commit-and-wait retires them",
          "[schedule][pipeline][warp_specialization][tokens]") {
  for (int64_t trips : {2, 3, 7})
    for (int64_t slots = 2; slots <= std::min<int64_t>(4, trips); ++slots) {
      INFO(trips << " trips, " << slots << " slots");
      CHECK(token_error(in_flight_region(trips, slots)) == "");
      CHECK(token_error(in_flight_region(trips, slots, 1, true, true)) == "");  // looped, the wait guarded
    }
  // The release before the wait that retires the products reading it.
  CHECK_THAT(token_error(in_flight_region(7, 3, 1, true, false, true)),
             Contains("pipeline 0: slot 0 (at k = 1) is released (push of its free token) while wgmma products"));
  // One slot: the compute would wait for a fill that waits for its release.
  CHECK_THAT(token_error(in_flight_region(7, 1)), Contains("the warp-specialized pipeline would deadlock"));
  // No wait in the loop, or one that leaves two groups in flight: slot 0 is
  // released under the products of iteration 0.
  for (int loop_wait : {-1, 2})
    CHECK_THAT(token_error(in_flight_region(7, 3, loop_wait)),
               Contains("pipeline 0: slot 0 (at k = 1) is released (push of its free token) while wgmma products "
                        "that read it are in flight: the producer could refill it under them; a wgmma "
                        "commit-and-wait must retire them first"));
  // No wait after the loop: the last slot is released under its products.
  CHECK_THAT(token_error(in_flight_region(7, 3, 1, false)),
             Contains("pipeline 0: slot 0 is released (push of its free token) while wgmma products"));
  // Products issued after the last wait stay in flight.
  const Stmt late =
      SeqNode::make({in_flight_region(7, 3),
                     TensorIntrinCallNode::make(cuda_wgmma_instruction(DType::f16(), 64, true),
                                                {{Var::handle("acc", DType::f32()), Expr(0), Expr(1024), Expr(1)},
                                                 {Var::handle("S", DType::f16()), Expr(0), Expr(0), Expr(1)},
                                                 {Var::handle("S", DType::f16()), Expr(0), Expr(0), Expr(1)}},
                                                {})});
  CHECK(token_error(late) ==
        "pipeline tokens: 1 issue(s) of wgmma products are still in flight at the end: no wgmma commit-and-wait "
        "retires them");
  // A wait under a condition that does not hold retires nothing.
  Var k("k");
  const Stmt skipped = SeqNode::make(
      {in_flight_region(7, 3), late.as<SeqNode>()->seq[1],
       ForNode::make(k, 0, 1, ForKind::kSerial,
                     IfThenElseNode::make(
                         k > 0, TensorIntrinCallNode::make(
                                    kCudaWgmmaCommitWait,
                                    {{Var::handle("acc", DType::f32()), Expr(0), Expr(0), Expr(1)}}, {Expr(0)})))});
  CHECK_THAT(token_error(skipped), Contains("1 issue(s) of wgmma products are still in flight at the end"));
}

TEST_CASE("warp-specialized tokens: the two sides run side by side and pass the verifier",
          "[schedule][pipeline][warp_specialization][tokens]") {
  for (int64_t slots = 1; slots <= 4; ++slots) {
    INFO(slots << " slots");
    CHECK(token_error(region(7, slots)) == "");
    CHECK(token_error(region(7, slots, 0, false)) == "");  // the drain is for the compute warps' shared memory
  }
}

TEST_CASE("warp-specialized tokens: a wait on the wrong phase is an error naming both phases",
          "[schedule][pipeline][warp_specialization][tokens]") {
  CHECK_THAT(token_error(region(6, 2, 1)), Contains("pipeline 0: slot 0 (at k = 0)") &&
                                               Contains("compute's wait for the fill names phase 1 of the slot") &&
                                               Contains("it is phase 0 there"));
}

TEST_CASE("warp-specialized tokens: a producer that stops early leaves the compute waiting: a deadlock",
          "[schedule][pipeline][warp_specialization][tokens]") {
  CHECK_THAT(token_error(region(6, 2, 0, true, 5)),
             Contains("the warp-specialized pipeline would deadlock: the producer warps are done, and the compute "
                      "warps wait for the full token of pipeline 0: slot 1 (at k = 5)"));
}

TEST_CASE("warp specialization misuse is a user error that says what to do",
          "[schedule][pipeline][warp_specialization][errors]") {
  {
    PlainMatmul m = plain_matmul(4, 4, 8);
    Schedule s({m.C});
    IterVar ko, ki;
    s[m.C].split(s[m.C].reduce_axis()[0], 2, &ko, &ki);
    CHECK_THROWS_WITH(s[m.C].pipeline(ko, 2, 5),
                      Contains("asks for 5 producer warps; warp specialization takes 1 to 4"));
  }
  {
    // On the CPU: no warps.
    PlainMatmul m = plain_matmul(4, 4, 8);
    Schedule s({m.C});
    Tensor AL = s.cache_read(m.A, MemScope::kLocal, {m.C->op});
    IterVar ko, ki;
    s[m.C].split(s[m.C].reduce_axis()[0], 2, &ko, &ki);
    s[AL].compute_at(s[m.C], ko);
    s[m.C].pipeline(ko, 2, 1);
    CHECK_THROWS_WITH(lower(s, {m.A, m.B, m.C}, "f"), Contains("warp specialization needs a cuda target"));
  }
  {
    // Products stay in flight only where a slot can stay taken.
    PlainMatmul m = plain_matmul(4, 4, 8);
    Schedule s({m.C});
    IterVar ko, ki;
    s[m.C].split(s[m.C].reduce_axis()[0], 2, &ko, &ki);
    CHECK_THROWS_WITH(s[m.C].mma_in_flight(ko, 1),
                      Contains("mma_in_flight: axis 'k.outer' of stage 'C' is not pipelined with producer warps; "
                               "products stay in flight in a warp-specialized pipeline of 2 or more stages"));
    s[m.C].pipeline(ko, 1, 1);
    CHECK_THROWS_WITH(s[m.C].mma_in_flight(ko, 1), Contains("is pipelined with 1 stage;"));
    s[m.C].pipeline(ko, 2, 1);
    CHECK_THROWS_WITH(s[m.C].mma_in_flight(ko, 2),
                      Contains("asks for 2 iterations of products in flight; kiln keeps 0 or 1"));
    CHECK_NOTHROW(s[m.C].mma_in_flight(ko, 1));
    CHECK(s[m.C]->iter_attrs.at(ko.get()).mma_in_flight == 1);
    // Pipelined again without producer warps: nothing can stay in flight.
    s[m.C].pipeline(ko, 2);
    CHECK(s[m.C]->iter_attrs.at(ko.get()).mma_in_flight == 0);
  }
}

namespace {

// Hand-built loop nests for inject_pipeline's checks: a pipelined loop k
// (2 slots, one producer warp) whose fill copies 32 floats of A into the
// shared slot buffer S and whose compute copies them out to O.
struct WsNest {
  Var w{"w"}, x{"x"}, A = Var::handle("A", DType::f32()), O = Var::handle("O", DType::f32());
  Var Cs = Var::handle("Cs", DType::f32());  // another shared buffer of the warps
  int lane_count = 32;
  int producers = 1;

  Stmt lanes(const Stmt& body) const {
    return ForNode::make(x, 0, lane_count, ForKind::kThreadBinding, body, "threadIdx.x");
  }

  // `fill_offset` is added to the fill's value (the warp index, to make the
  // fills depend on it, or a load of another buffer); `extra` runs after
  // the compute's copy.
  Stmt pipelined(const std::string& name, Expr fill_offset = Expr(), Stmt extra = Stmt()) const {
    Var k(name), S = Var::handle(name + ".S", DType::f32());
    Expr value = LoadNode::make(DType::f32(), A, k * 32 + x);
    if (fill_offset.defined()) value = value + fill_offset;
    Stmt fill = lanes(StoreNode::make(S, value, x));
    Stmt compute = lanes(StoreNode::make(O, LoadNode::make(DType::f32(), S, x), k * 32 + x));
    if (extra.defined()) compute = SeqNode::make({compute, extra});
    Stmt loop = ForNode::make(
        k, 0, 4, ForKind::kSerial,
        AllocateNode::make(S, DType::f32(), {Expr(32)}, MemScope::kShared, SeqNode::make({fill, compute})));
    return AttrStmtNode::make(Ref<Object>(), attr::kPipelineStages, Expr(2),
                              AttrStmtNode::make(Ref<Object>(), attr::kWarpSpecialized, Expr(producers), loop));
  }
  Stmt warps(const Stmt& body) const { return ForNode::make(w, 0, 4, ForKind::kThreadBinding, body, "threadIdx.y"); }
  Stmt with_cs(const Stmt& body) const {
    return AllocateNode::make(Cs, DType::f32(), {Expr(4)}, MemScope::kShared, body);
  }
};

std::string pipeline_error(const Stmt& s) {
  try {
    passes::inject_pipeline(s, true);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("warp specialization: a hand-built nest becomes producer and compute sides of a wider warp loop",
          "[schedule][pipeline][warp_specialization]") {
  WsNest n;
  const Stmt out = passes::inject_pipeline(n.warps(n.pipelined("k")), true);
  const std::string ir = to_string(out);
  CHECK_THAT(ir, Contains("thread_binding(threadIdx.y) (w, 0, 5)") && Contains("warp_specialized = 2") &&
                     Contains("if ((w >= 4))") && Contains("wait_token(free"));
  CHECK(token_error(out) == "");
}

TEST_CASE("warp specialization: products kept in flight need a compute that issues wgmma products",
          "[schedule][pipeline][warp_specialization][errors]") {
  WsNest n;
  // The nest's pipeline marks with kMmaInFlight around its loop.
  const Stmt nest = n.pipelined("k");
  const auto* stages = nest.as<AttrStmtNode>();
  const auto* ws = stages->body.as<AttrStmtNode>();
  const Stmt marked =
      AttrStmtNode::make(Ref<Object>(), attr::kPipelineStages, stages->value,
                         AttrStmtNode::make(Ref<Object>(), attr::kWarpSpecialized, ws->value,
                                            AttrStmtNode::make(Ref<Object>(), attr::kMmaInFlight, Expr(1), ws->body)));
  CHECK_THAT(pipeline_error(n.warps(marked)),
             Contains("mma_in_flight on loop 'k': its compute issues no wgmma product to keep in flight"));
}

TEST_CASE("warp specialization: with two producer warps, a fill without a warp loop runs on the first one",
          "[schedule][pipeline][warp_specialization]") {
  WsNest n;
  n.producers = 2;
  const std::string ir = to_string(passes::inject_pipeline(n.warps(n.pipelined("k")), true));
  CHECK_THAT(
      ir, Contains("thread_binding(threadIdx.y) (w, 0, 6)") && Contains("if ((w >= 4))") && Contains("if ((w == 4))"));
}

TEST_CASE("warp specialization: nests it cannot split are user errors that say why",
          "[schedule][pipeline][warp_specialization][errors]") {
  WsNest n;
  Var j("j");
  // No warp loop around the pipeline, or a loop between the two.
  CHECK_THAT(pipeline_error(n.pipelined("k")), Contains("warp specialization of loop 'k': it needs the loop directly "
                                                        "inside the loop bound to threadIdx.y"));
  CHECK_THAT(pipeline_error(n.warps(ForNode::make(j, 0, 2, ForKind::kSerial, n.pipelined("k")))),
             Contains("with no other loop between the two"));
  // The warp loop in a loop of its own: the barriers are set up once a block.
  CHECK_THAT(pipeline_error(ForNode::make(j, 0, 2, ForKind::kSerial, n.warps(n.pipelined("k")))),
             Contains("the warp loop 'w' sits in a loop of its own"));
  // Two warp-specialized pipelines in one warp loop.
  CHECK_THAT(pipeline_error(n.warps(SeqNode::make({n.pipelined("k"), n.pipelined("k2")}))),
             Contains("the warp loop 'w' already holds a warp-specialized pipeline"));
  // Under a condition inside the warp loop.
  CHECK_THAT(pipeline_error(n.warps(IfThenElseNode::make(n.w < 3, n.pipelined("k")))),
             Contains("the pipeline is nested in a condition inside the warp loop 'w'"));
  // Fills that depend on the compute warp's index.
  CHECK_THAT(pipeline_error(n.warps(n.pipelined("k", cast(DType::f32(), n.w)))),
             Contains("its fills depend on the warp index 'w'"));
  // What the two sides may not do without block barriers between them.
  CHECK_THAT(pipeline_error(n.warps(n.pipelined("k", Expr(), BarrierNode::make(MemScope::kShared)))),
             Contains("its compute holds a block barrier, which the producer warps would never reach"));
  CHECK_THAT(pipeline_error(n.with_cs(n.warps(n.pipelined("k", LoadNode::make(DType::f32(), n.Cs, n.x))))),
             Contains("its fills read a shared buffer other than the pipeline's slots"));
  CHECK_THAT(pipeline_error(n.with_cs(n.warps(n.pipelined("k", Expr(), StoreNode::make(n.Cs, Expr(1.0f), n.w))))),
             Contains("its compute writes a shared buffer other than the pipeline's slots"));
  {
    // A buffer of the compute side's scope, read by the fills.
    Var L = Var::handle("L", DType::f32());
    CHECK_THAT(pipeline_error(n.warps(AllocateNode::make(L, DType::f32(), {Expr(1)}, MemScope::kLocal,
                                                         n.pipelined("k", LoadNode::make(DType::f32(), L, 0))))),
               Contains("its fills use 'L', bound inside the warp loop 'w' around the pipeline"));
  }
  // The compute warps' own shared memory, before and after the pipeline.
  CHECK_THAT(
      pipeline_error(n.warps(n.with_cs(SeqNode::make({StoreNode::make(n.Cs, Expr(1.0f), n.w), n.pipelined("k")})))),
      Contains("the compute warps access shared memory before the pipeline"));
  CHECK_THAT(pipeline_error(n.warps(n.with_cs(SeqNode::make(
                 {n.pipelined("k"), StoreNode::make(n.O, LoadNode::make(DType::f32(), n.Cs, n.w), n.w)})))),
             Contains("the compute warps read shared memory after the pipeline"));
}

TEST_CASE("warp specialization needs mbarriers: sm_80 or later", "[gpu][pipeline][warp_specialization][errors]") {
  const OpInstance op = build_workload(kGemm);
  CHECK_THROWS_WITH(gpu_source(op, mma_config(op, 2, 1), gpu_limits_for_arch("sm_75")),
                    Contains("a warp-specialized pipeline needs mbarriers, sm_80 or later"));
}

TEST_CASE("warp specialization: every thread of the block must run the region, which sets the mbarriers up",
          "[gpu][pipeline][warp_specialization][errors]") {
  WsNest n;
  Var b("b"), v("v");
  // Another loop over threadIdx.y, of 8 warps, makes the block wider than
  // the warp-specialized loop's 4 + 1.
  Stmt wider = ForNode::make(v, 0, 8, ForKind::kThreadBinding, n.lanes(StoreNode::make(n.O, Expr(0.0f), v * 32 + n.x)),
                             "threadIdx.y");
  Stmt kernel =
      ForNode::make(b, 0, 1, ForKind::kThreadBinding,
                    SeqNode::make({passes::inject_pipeline(n.warps(n.pipelined("k")), true), wider}), "blockIdx.x");
  LoweredFunc f;
  f.name = "ws";
  f.args = {BufferArg{n.A, "A", DType::f32(), {256}}, BufferArg{n.O, "O", DType::f32(), {256}}};
  f.body = kernel;
  CHECK_THROWS_WITH(
      emit_cuda(f, gpu_limits_for_arch("sm_90")),
      Contains("the warp-specialized pipeline sits in loop 'w' over 5 of the block's 8 threads along threadIdx.y") &&
          Contains("must span the block"));
  // Under a condition on a thread index.
  Var z("z");
  f.body =
      ForNode::make(b, 0, 1, ForKind::kThreadBinding,
                    ForNode::make(z, 0, 1, ForKind::kThreadBinding,
                                  IfThenElseNode::make(z < 1, passes::inject_pipeline(n.warps(n.pipelined("k")), true)),
                                  "threadIdx.z"),
                    "blockIdx.x");
  CHECK_THROWS_WITH(emit_cuda(f, gpu_limits_for_arch("sm_90")),
                    Contains("the warp-specialized pipeline sits under a condition on a thread index"));
  // Rows of 16 lanes: a producer row and a compute row would share a warp.
  WsNest half;
  half.lane_count = 16;
  f.body = ForNode::make(b, 0, 1, ForKind::kThreadBinding,
                         passes::inject_pipeline(half.warps(half.pipelined("k")), true), "blockIdx.x");
  f.args = {BufferArg{half.A, "A", DType::f32(), {256}}, BufferArg{half.O, "O", DType::f32(), {256}}};
  CHECK_THROWS_WITH(emit_cuda(f, gpu_limits_for_arch("sm_90")),
                    Contains("needs whole warps per threadIdx.y row") && Contains("this block has 16 x 5 x 1"));
}
