// Bulk copies in warp-specialized pipelines (Stage::pipeline with
// bulk_copies; schedule/passes/bulk_copy.h): the producer moves each fill
// that is a box of rows by Hopper's bulk copy engine, one cp.async.bulk per
// row, and the slot's full mbarrier expects its bytes. The templates'
// `bulk_copy` knob emulated against the interpreter (the emulation lands a
// bulk copy's bytes only when its phase completes, and reports a read
// before that), NVRTC compiles for sm_90, and the fills it refuses, each
// with its reason.
#include <catch2/catch.hpp>
#include <functional>
#include <random>
#include <regex>

#include "base/error.h"
#include "compute/printer.h"
#include "schedule/passes/inject_pipeline.h"
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

// mma_config with bulk copies.
Config bulk_config(const OpInstance& op, int stages, int producers) {
  return mma_config(op, stages, producers, {{"bulk_copy", 1}});
}

}  // namespace

TEST_CASE("bulk copies: the GEMM's fills move by cp.async.bulk, and it agrees with the interpreter",
          "[gpu][pipeline][warp_specialization][bulk_copy][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_bulk_gemm");
  const OpInstance op = build_workload(kGemm);
  Tally tally;
  for (int producers = 1; producers <= 2; ++producers)
    for (int stages = 1; stages <= 5; stages += 2) {
      INFO(producers << " producer warps, " << stages << " stages");
      const Config cfg = bulk_config(op, stages, producers);
      const CudaSource src = gpu_source(op, cfg, gpu_limits_for_arch("sm_90"));
      const std::string k = kernel_text(src);
      // A's tile: 64 rows of 32 halves (64 bytes), B's: 32 rows of 16 (32
      // bytes); the first producer thread expects both tiles' bytes, and
      // full counts its arrival and one of every producer thread, which
      // keeps the threads that issue no copy within a phase of the fills.
      CHECK(k.find("kiln_bulk_copy(A_shared") != std::string::npos);
      CHECK(k.find("kiln_bulk_copy(B_shared") != std::string::npos);
      CHECK(k.find(", 64, kiln_full_0, ") != std::string::npos);
      CHECK(k.find(", 32, kiln_full_0, ") != std::string::npos);
      CHECK(k.find("kiln_mbarrier_arrive_expect_tx(kiln_full_0, ") != std::string::npos);
      CHECK(k.find(", " + std::to_string(64 * 32 * 2 + 32 * 16 * 2) + ");") != std::string::npos);
      const int64_t producer_threads = producers * src.launches.at(0).block[0] * src.launches.at(0).block[2];
      CHECK(k.find("kiln_mbarrier_init(kiln_full_0, s, " + std::to_string(producer_threads + 1) + ");") !=
            std::string::npos);
      CHECK(count_matches(k, "kiln_mbarrier_arrive_expect_tx") == 1);
      CHECK(count_matches(k, "kiln_mbarrier_arrive\\(kiln_full_0") == 1);
      // No cp.async is left.
      CHECK(k.find("kiln_cp_async") == std::string::npos);
      check_config(op, cfg, dir.path, 170 + 10 * producers + stages, &tally);
    }
  CHECK(tally.ran == 6);
}

TEST_CASE(
    "bulk copies: padded rows, transposed and batched bf16 GEMMs, and conv2d's weights agree with the interpreter",
    "[gpu][pipeline][warp_specialization][bulk_copy][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_bulk_more");
  Tally tally;
  {
    // Batched, B transposed, bf16: each row of a slot is a row of the batch's matrix.
    const OpInstance op = build_workload("batch_matmul:B=2,M=32,N=24,K=96,dtype=bf16,trans_b=1");
    const Config cfg = bulk_config(op, 2, 2);
    const std::string k = kernel_text(gpu_source(op, cfg, gpu_limits_for_arch("sm_90")));
    CHECK(k.find("kiln_bulk_copy(A_shared") != std::string::npos);
    CHECK(k.find("kiln_bulk_copy(B_shared") != std::string::npos);
    check_config(op, cfg, dir.path, 195, &tally);
  }
  {
    // The padding's zeros need cp.async's predicate: the data keeps
    // cp.async, the weights move by bulk copies; full counts both.
    const OpInstance op = build_workload("conv2d_nhwc:N=2,H=7,W=6,C=32,K=16,R=3,S=3,stride=1,pad=1,dtype=f16,bias=1");
    for (int stages : {1, 3}) {
      INFO(stages << " stages");
      const Config cfg = bulk_config(op, stages, 1);
      const std::string k = kernel_text(gpu_source(op, cfg, gpu_limits_for_arch("sm_90")));
      CHECK(k.find("kiln_bulk_copy(") != std::string::npos);
      CHECK(k.find("kiln_cp_async<") != std::string::npos);
      CHECK(k.find("kiln_cp_async_mbarrier_arrive(kiln_full_0") != std::string::npos);
      check_config(op, cfg, dir.path, 190 + stages, &tally);
    }
  }
  CHECK(tally.ran == 3);
}

TEST_CASE("bulk copies: random configs of the GEMM and conv2d templates on sm_90 agree with the interpreter",
          "[gpu][pipeline][warp_specialization][bulk_copy][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_bulk_random");
  Tally tally;
  std::mt19937_64 rng(2026);
  for (const char* w : {"matmul:M=48,N=40,K=96,dtype=f16", "batch_matmul:B=3,M=16,N=56,K=48,dtype=bf16,trans_a=1",
                        "conv2d_nhwc:N=2,H=7,W=7,C=16,K=24,R=3,S=3,stride=2,pad=1,dtype=f16"}) {
    const OpInstance op = build_workload(w);
    const GpuLimits gpu = gpu_limits_for_arch("sm_90");
    auto space = find_op(op.op).gpu.define_space(op, gpu);
    for (int c = 0; c < 3; ++c) {
      nlohmann::json j = space->random(rng).to_json();
      j["tensor_core"] = "mma";
      j["bulk_copy"] = 1;
      j["producer_warps"] = 1 + c % 2;
      check_config(op, space->from_json(j), dir.path, 300 + static_cast<uint64_t>(c), &tally);
    }
  }
  CHECK(tally.ran + tally.rejected == 9);
  CHECK(tally.ran >= 6);
}

TEST_CASE("bulk copies: a planted missing wait for the full mbarrier is reported by the emulator",
          "[gpu][pipeline][warp_specialization][bulk_copy][emulation][errors]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_bulk_planted");
  const OpInstance op = build_workload(kGemm);
  CudaSource src = gpu_source(op, bulk_config(op, 3, 1), gpu_limits_for_arch("sm_90"));
  REQUIRE(run_emulated_and_check(op, src, dir.path + "/good", 5) == "");
  const size_t k = src.code.find("__global__ void");
  src.code = src.code.substr(0, k) +
             std::regex_replace(src.code.substr(k), std::regex(R"(kiln_mbarrier_wait\(kiln_full_0[^;]*\);)"), "");
  CHECK_THAT(run_emulated_and_check(op, src, dir.path + "/no_full_wait", 5),
             Contains("before its bulk copy arrived") || Contains("race") || Contains("share byte"));
}

TEST_CASE("bulk copies: the 4096^3 GEMM compiles with NVRTC for sm_90 into cp.async.bulk and expect-tx",
          "[gpu][pipeline][warp_specialization][bulk_copy][nvrtc]") {
  if (!nvrtc_available()) KILN_SKIP("NVRTC is not available");
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  const CudaSource src = hopper_gemm_4096({{"bulk_copy", 1}});
  CHECK(compile_for_gpu(src, gpu, kDefaultConfigSpillBytes) == "");
  const NvrtcOutput r = nvrtc_compile(src.code, "bulk.cu", "sm_90");
  CHECK(r.ptx.find("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes") != std::string::npos);
  CHECK(r.ptx.find("mbarrier.arrive.expect_tx.shared::cta.b64") != std::string::npos);
}

TEST_CASE("bulk copies: the knob is offered on sm_90 only, and needs producer warps and sm_90",
          "[gpu][pipeline][warp_specialization][bulk_copy][errors]") {
  const OpInstance op = build_workload(kGemm);
  const GpuTemplate& t = find_op(op.op).gpu;
  for (const char* arch : {"sm_80", "sm_90"}) {
    const GpuLimits gpu = gpu_limits_for_arch(arch);
    auto space = t.define_space(op, gpu);
    CHECK(t.default_config(op, gpu, *space).has("bulk_copy") == (std::string(arch) == "sm_90"));
  }
  // The instruction is Hopper's.
  CHECK_THROWS_WITH(gpu_source(op, bulk_config(op, 2, 1), gpu_limits_for_arch("sm_80")),
                    Contains("instruction 'cuda.bulk_copy.f16' needs sm_90 or later; the target is sm_80"));
  // The primitive: bulk copies are the producer warps' to issue.
  PlainMatmul m = plain_matmul(4, 4, 8);
  Schedule s({m.C});
  IterVar ko, ki;
  s[m.C].split(s[m.C].reduce_axis()[0], 2, &ko, &ki);
  CHECK_THROWS_WITH(s[m.C].pipeline(ko, 2, 0, BulkCopies::kEveryFill),
                    Contains("asks for bulk copies without producer warps; the producer warps issue them"));
}

namespace {

using Index = std::function<Expr(const Var& k, const Var& x)>;

// A hand-built pipelined loop k (2 slots, one producer warp, bulk copies)
// in a loop over 4 compute warps: the fill copies `lanes` elements of A,
// from k * row + x (or `index`), into the slot, and the compute copies them
// out to O.
struct BulkNest {
  DType t = DType::f32();
  Var A = Var::handle("A", t), O = Var::handle("O", t);

  explicit BulkNest(DType type = DType::f32()) : t(type) {}

  // `tensor_maps`: BulkCopyForm::kTensorMaps (the attribute's value + 4).
  Stmt make(int64_t lanes, int64_t row, Expr fill_offset = Expr(), const Index& index = nullptr,
            BulkCopies mode = BulkCopies::kEveryFill, bool tensor_maps = false) const {
    Var w("w"), x("x"), k("k"), S = Var::handle("S", t);
    auto on_lanes = [&](const Stmt& body) {
      return ForNode::make(x, 0, static_cast<int>(lanes), ForKind::kThreadBinding, body, "threadIdx.x");
    };
    const Expr src_index = index ? index(k, x) : k * static_cast<int>(row) + x;
    Expr value = LoadNode::make(t, A, src_index);
    if (fill_offset.defined()) value = value + fill_offset;
    Stmt fill = on_lanes(StoreNode::make(S, value, x));
    Stmt compute = on_lanes(StoreNode::make(O, LoadNode::make(t, S, x), k * static_cast<int>(lanes) + x));
    Stmt loop = ForNode::make(
        k, 0, 4, ForKind::kSerial,
        AllocateNode::make(S, t, {Expr(static_cast<int>(lanes))}, MemScope::kShared, SeqNode::make({fill, compute})));
    loop = AttrStmtNode::make(
        Ref<Object>(), attr::kPipelineStages, Expr(2),
        AttrStmtNode::make(Ref<Object>(), attr::kWarpSpecialized, Expr(1),
                           AttrStmtNode::make(Ref<Object>(), attr::kBulkCopies,
                                              Expr(static_cast<int>(mode) + (tensor_maps ? 4 : 0)), loop)));
    return ForNode::make(w, 0, 4, ForKind::kThreadBinding, loop, "threadIdx.y");
  }
};

Stmt bulk_nest(int64_t lanes, int64_t row, Expr fill_offset = Expr(), const Index& index = nullptr,
               BulkCopies mode = BulkCopies::kEveryFill) {
  return BulkNest().make(lanes, row, std::move(fill_offset), index, mode);
}

std::string bulk_error(const Stmt& s) {
  try {
    passes::inject_pipeline(s, true);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("bulk copies: a hand-built fill becomes one bulk copy per row, issued by the first producer warp's lanes",
          "[schedule][pipeline][warp_specialization][bulk_copy]") {
  const Stmt out = passes::inject_pipeline(bulk_nest(32, 32), true);
  const std::string ir = to_string(out);
  CHECK_THAT(ir, Contains("bulk_copy_bytes = 128") && Contains("tensor_intrin cuda.bulk_copy.f32(S[") &&
                     Contains("extent=32") && Contains("x.bulk"));
  CHECK(ir.find("cp_async") == std::string::npos);
  CHECK(token_error(out) == "");
}

TEST_CASE(
    "tensor copies: a hand-built fill of 8 x 8 tiles becomes one 4-D box, its bounds proved from the loops' "
    "ranges",
    "[schedule][pipeline][warp_specialization][bulk_copy][tensor_copy]") {
  // Each k step fills two rows of four 8 x 8 tiles of floats (a 16 x 32
  // piece of A, rows of `row`), tile after tile along the row, then across:
  // lane x is element x % 8 of row (x / 8) % 8 of tile (x / 64) % 4 of tile
  // row x / 256.
  auto tiles = [](int64_t row) {
    return [row](const Var& k, const Var& x) {
      const Expr r = static_cast<int>(row);
      return k * 32 + x % 8 + (x / 8 % 8) * r + (x / 64 % 4) * 8 + (x / 256) * (r * 8);
    };
  };
  BulkNest nest;
  const Stmt out = passes::inject_pipeline(nest.make(512, 0, Expr(), tiles(128), BulkCopies::kEveryFill, true), true);
  const std::string ir = to_string(out);
  INFO(ir);
  // The tile's rows (8, 128 apart) first, then (count, distance) pairs for
  // the tiles along the row (4, 8 apart) and across (2, 1024 apart).
  CHECK_THAT(ir, Contains("tensor_intrin cuda.tensor_copy.f32(S[") && Contains("extent=512, stride=8") &&
                     Contains("extent=512, stride=128") && Contains(", 4, 8, 2, 1024)") &&
                     Contains("bulk_copy_bytes = 2048"));
  CHECK(token_error(out) == "");
  // Rows of 120: the fourth k step's tiles would pass the row's end, where
  // a map's box stops; the fill is no box, and its rows are not evenly
  // spaced for bulk copies either.
  CHECK_THAT(bulk_error(nest.make(512, 0, Expr(), tiles(120), BulkCopies::kEveryFill, true)),
             Contains("the fill of 'S' cannot move by them: its rows are not evenly spaced runs of one length"));
  const std::string fit =
      to_string(passes::inject_pipeline(nest.make(512, 0, Expr(), tiles(120), BulkCopies::kWhereTheyFit, true), true));
  CHECK(fit.find("tensor_copy") == std::string::npos);
}

TEST_CASE("bulk copies where they fit: a fill they cannot move keeps its copies",
          "[schedule][pipeline][warp_specialization][bulk_copy]") {
  const Stmt out = passes::inject_pipeline(bulk_nest(32, 32, Expr(1.0f), nullptr, BulkCopies::kWhereTheyFit), true);
  const std::string ir = to_string(out);
  CHECK(ir.find("bulk_copy") == std::string::npos);
  CHECK_THAT(ir, Contains("warp_specialized = 2"));
  CHECK(token_error(out) == "");
}

TEST_CASE("bulk copies for every fill: fills they cannot move are user errors that say why",
          "[schedule][pipeline][warp_specialization][bulk_copy][errors]") {
  const std::string every =
      "pipeline of loop 'k': bulk copies were asked for every fill, but the fill of 'S' cannot "
      "move by them: ";
  // Computed values: stores, not copies.
  CHECK_THAT(bulk_error(bulk_nest(32, 32, Expr(1.0f))), Contains(every + "it stores computed values, not copies"));
  // Rows of 6 floats: 24 bytes.
  CHECK_THAT(bulk_error(bulk_nest(6, 6)),
             Contains("its rows are runs of 24 bytes; a bulk copy moves a multiple of 16"));
  // Source rows 33 floats apart: k * 132 bytes is not 16-byte aligned.
  CHECK_THAT(bulk_error(bulk_nest(32, 33)), Contains("its rows in 'A' are not all 16-byte aligned"));
  // An index that mixes the fill's lane with the pipelined loop.
  CHECK_THAT(bulk_error(bulk_nest(32, 32, Expr(), [](const Var& k, const Var& x) { return k * x + x; })),
             Contains("mixes the fill's loops with the loops around it"));
}

TEST_CASE("bulk copies: every config of the tensor-core templates with the knob on lowers on sm_90",
          "[gpu][pipeline][warp_specialization][bulk_copy]") {
  // The knob must not make a config invalid: fills the bulk copies cannot
  // move (a conv2d's padded gather) keep cp.async.
  std::mt19937_64 rng(7);
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  int lowered = 0, gemms = 0, gemms_with_bulk = 0, convs_with_bulk = 0;
  for (const char* w : {"matmul:M=48,N=40,K=96,dtype=f16", "matmul:M=128,N=8,K=16,dtype=bf16,trans_a=1,trans_b=1",
                        "batch_matmul:B=3,M=16,N=56,K=48,dtype=bf16,trans_a=1", "dense:N=32,IN=80,OUT=24,dtype=f16",
                        "conv2d_nhwc:N=2,H=7,W=7,C=16,K=24,R=3,S=3,stride=2,pad=1,dtype=f16",
                        "conv2d_nhwc:N=1,H=9,W=9,C=8,K=8,R=1,S=1,stride=1,pad=0,dtype=bf16",
                        "conv2d_nhwc:N=1,H=6,W=6,C=24,K=40,R=5,S=5,stride=1,pad=2,dtype=f16"}) {
    const OpInstance op = build_workload(w);
    auto space = find_op(op.op).gpu.define_space(op, gpu);
    REQUIRE(space);
    for (int c = 0; c < 25; ++c) {
      nlohmann::json j = space->random(rng).to_json();
      if (!j.contains("bulk_copy")) break;  // no tensor-core knobs for this shape
      j["tensor_core"] = "mma";
      j["bulk_copy"] = 1;
      j["producer_warps"] = 1 + c % 2;
      const Config cfg = space->from_json(j);
      INFO(w << " config " << cfg.str());
      std::string err;
      try {
        const std::string k = kernel_text(gpu_source(op, cfg, gpu));
        ++lowered;
        const bool bulk = k.find("kiln_bulk_copy(") != std::string::npos;
        if (op.op == "conv2d_nhwc") {
          convs_with_bulk += bulk;
        } else if (k.find("kiln_full_0") != std::string::npos) {  // warp-specialized (more than one k tile)
          ++gemms;
          gemms_with_bulk += bulk;
        }
      } catch (const UserError& e) {
        err = e.what();
        if (is_launch_limit(err)) err = "";
      }
      CHECK(err == "");
    }
  }
  CHECK(lowered > 100);
  CHECK(gemms > 50);
  // A GEMM's tiles divide its shape: every fill moves by bulk copies. A
  // conv2d's weights do where their tile fits the channels.
  CHECK(gemms_with_bulk == gemms);
  CHECK(convs_with_bulk > 0);
}

TEST_CASE("bulk copies: element types they are not offered for, and blocks with threads along z, are refused",
          "[gpu][pipeline][warp_specialization][bulk_copy][errors]") {
  // f64 (no cp.async either): a plain copy, which bulk copies do not take.
  CHECK_THAT(bulk_error(BulkNest(DType::f64()).make(32, 32)),
             Contains("the fill of 'S' cannot move by them: it copies f64, which bulk copies are not offered for"));
  // Two rows of threads along z would each issue the rows.
  BulkNest n;
  Var b("b"), z("z");
  LoweredFunc f;
  f.name = "bulk_z";
  f.args = {BufferArg{n.A, "A", DType::f32(), {256}}, BufferArg{n.O, "O", DType::f32(), {256}}};
  f.body = ForNode::make(
      b, 0, 1, ForKind::kThreadBinding,
      ForNode::make(z, 0, 2, ForKind::kThreadBinding, passes::inject_pipeline(n.make(32, 32), true), "threadIdx.z"),
      "blockIdx.x");
  CHECK_THROWS_WITH(emit_cuda(f, gpu_limits_for_arch("sm_90")),
                    Contains("a warp-specialized pipeline with bulk copies needs a block of one thread along "
                             "threadIdx.z") &&
                        Contains("this block has 32 x 5 x 2"));
  // Without z, the same nest prints its bulk copies and the fence after the barriers' set-up.
  f.body = ForNode::make(b, 0, 1, ForKind::kThreadBinding, passes::inject_pipeline(n.make(32, 32), true), "blockIdx.x");
  const std::string code = emit_cuda(f, gpu_limits_for_arch("sm_90")).code;
  CHECK_THAT(code, Contains("kiln_fence_mbarrier_init();") && Contains("kiln_bulk_copy(S, ") &&
                       Contains("kiln_mbarrier_init(kiln_full_0, s, 33);"));
}
