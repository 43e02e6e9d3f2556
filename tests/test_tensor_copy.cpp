// Tensor copies (TMA) in warp-specialized pipelines (Stage::pipeline with
// BulkCopyForm::kTensorMaps; schedule/passes/bulk_copy.h): a fill that is a
// dense box of rows moves by one cp.async.bulk.tensor through a 2-D tensor
// map of its source, wgmma's 8 x 8 tiles through a map of more dimensions
// (compute/tensor_copy_box.h), which the kernel takes as a __grid_constant__
// parameter and each launch encodes (runtime/tensor_map.h). The templates'
// `bulk_copy` knob at 2, emulated against the interpreter (the host entry
// point encodes the maps; the emulation lands the box with its phase and
// zero-fills what passes the tensor's edges), NVRTC for sm_90, the shared
// arrays' 128-byte alignment, the instruction's checks, and GPU artifacts
// that carry the maps.
#include <catch2/catch.hpp>
#include <functional>
#include <random>
#include <regex>

#include "base/error.h"
#include "codegen/cuda_tensor_maps.h"
#include "compute/expr_ops.h"
#include "compute/hw_instructions.h"
#include "compute/printer.h"
#include "compute/tensor_copy_box.h"
#include "runtime/gpu_artifact.h"
#include "schedule/passes/inject_pipeline.h"
#include "schedule/shared_memory_plan.h"
#include "support/gpu_check.h"
#include "support/mma_config.h"
#include "support/skip.h"
#include "support/temp_dir.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;

namespace {

const char* const kGemm = "matmul:M=64,N=48,K=160,dtype=f16";

Config tma_config(const OpInstance& op, int stages, int producers) {
  return mma_config(op, stages, producers, {{"bulk_copy", 2}});
}

const CudaKernelLaunch::Param* map_param(const CudaSource& src, const std::string& c_name_prefix, int arg) {
  for (const CudaKernelLaunch::Param& p : src.launches.at(0).params)
    if (p.c_type == c_name_prefix && p.arg_index == arg) return &p;
  return nullptr;
}

}  // namespace

TEST_CASE("tensor copies: the GEMM's tiles move as boxes through tensor maps, and it agrees with the interpreter",
          "[gpu][pipeline][warp_specialization][tensor_copy][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_tma_gemm");
  const OpInstance op = build_workload(kGemm);
  Tally tally;
  for (int producers = 1; producers <= 2; ++producers)
    for (int stages = 1; stages <= 5; stages += 2) {
      INFO(producers << " producer warps, " << stages << " stages");
      const CudaSource src = gpu_source(op, tma_config(op, stages, producers), gpu_limits_for_arch("sm_90"));
      const std::string k = kernel_text(src);
      // One tensor copy per tile and k step: A's 64 rows of 32 halves, B's
      // 32 rows of 16; the first producer thread expects both boxes' bytes.
      CHECK_THAT(k, Contains("const __grid_constant__ kiln_tensor_map A_map") &&
                        Contains("const __grid_constant__ kiln_tensor_map B_map") &&
                        Contains("kiln_tensor_copy_2d(A_shared, ") && Contains("kiln_tensor_copy_2d(B_shared, ") &&
                        Contains(", " + std::to_string(64 * 32 * 2 + 32 * 16 * 2) + ");"));
      CHECK(k.find("kiln_bulk_copy(") == std::string::npos);
      CHECK(k.find("kiln_cp_async") == std::string::npos);
      // A (argument 0) as rows of K = 160 halves, B (argument 1) as rows of N = 48.
      const CudaKernelLaunch::Param* a = map_param(src, "kiln_tensor_map", 0);
      const CudaKernelLaunch::Param* b = map_param(src, "kiln_tensor_map", 1);
      REQUIRE(a);
      REQUIRE(b);
      CHECK(rt::cuda::describe(a->tensor_map) == "2-D map of 160 x 64 2-byte elements, box 32 x 64");
      CHECK(a->tensor_map.strides[0] == 320);
      CHECK(rt::cuda::describe(b->tensor_map) == "2-D map of 48 x 160 2-byte elements, box 16 x 32");
      CHECK(b->tensor_map.strides[0] == 96);
      // The boxes land 128-byte aligned.
      const std::regex at(R"(KILN_SHARED_AT\(kiln_half, ([AB])_shared, \d+, (\d+)\))");
      int placed = 0;
      for (auto m = std::sregex_iterator(k.begin(), k.end(), at); m != std::sregex_iterator(); ++m, ++placed)
        CHECK(std::stoll((*m)[2]) % 128 == 0);
      CHECK(placed == 2);
      check_config(op, tma_config(op, stages, producers), dir.path, 410 + 10 * producers + stages, &tally);
    }
  CHECK(tally.ran == 6);
}

TEST_CASE("tensor copies: random configs of the GEMM, batched GEMM and conv2d templates agree with the interpreter",
          "[gpu][pipeline][warp_specialization][tensor_copy][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_tma_random");
  Tally tally;
  std::mt19937_64 rng(1129);
  int with_maps = 0;
  for (const char* w : {"matmul:M=48,N=40,K=96,dtype=f16", "batch_matmul:B=3,M=16,N=56,K=48,dtype=bf16,trans_a=1",
                        "conv2d_nhwc:N=2,H=7,W=7,C=16,K=24,R=3,S=3,stride=2,pad=1,dtype=f16"}) {
    const OpInstance op = build_workload(w);
    const GpuLimits gpu = gpu_limits_for_arch("sm_90");
    auto space = find_op(op.op).gpu.define_space(op, gpu);
    for (int c = 0; c < 3; ++c) {
      nlohmann::json j = space->random(rng).to_json();
      j["tensor_core"] = "mma";
      j["bulk_copy"] = 2;
      j["producer_warps"] = 1 + c % 2;
      if (j.contains("pad")) j["pad"] = 0;  // dense slots: boxes
      const Config cfg = space->from_json(j);
      try {
        with_maps += kernel_text(gpu_source(op, cfg, gpu)).find("kiln_tensor_copy_2d(") != std::string::npos;
      } catch (const UserError&) {
      }
      check_config(op, cfg, dir.path, 500 + static_cast<uint64_t>(c), &tally);
    }
  }
  CHECK(tally.ran + tally.rejected == 9);
  CHECK(tally.ran >= 6);
  CHECK(with_maps >= 3);
}

TEST_CASE("tensor copies: a planted missing wait for the full mbarrier is reported by the emulator",
          "[gpu][pipeline][warp_specialization][tensor_copy][emulation][errors]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_tma_planted");
  const OpInstance op = build_workload(kGemm);
  CudaSource src = gpu_source(op, tma_config(op, 3, 1), gpu_limits_for_arch("sm_90"));
  REQUIRE(run_emulated_and_check(op, src, dir.path + "/good", 5) == "");
  const size_t k = src.code.find("__global__ void");
  src.code = src.code.substr(0, k) +
             std::regex_replace(src.code.substr(k), std::regex(R"(kiln_mbarrier_wait\(kiln_full_0[^;]*\);)"), "");
  CHECK_THAT(run_emulated_and_check(op, src, dir.path + "/no_full_wait", 5),
             Contains("before its bulk copy arrived") || Contains("race") || Contains("share byte"));
}

TEST_CASE(
    "tensor copies: the emulation zero-fills a box that passes the tensor's edge, and refuses a map never "
    "encoded",
    "[gpu][tensor_copy][emulation][errors]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_tma_edges");
  const OpInstance op = build_workload(kGemm);
  CudaSource src = gpu_source(op, tma_config(op, 3, 1), gpu_limits_for_arch("sm_90"));
  // A's map with 63 rows instead of 64: the last row of every box is zeros,
  // so the output's last row differs from the interpreter's.
  for (CudaKernelLaunch::Param& p : src.launches[0].params)
    if (p.arg_index == 0 && p.tensor_map.rank == 2) p.tensor_map.dims[1] = 63;
  CHECK_THAT(run_emulated_and_check(op, src, dir.path + "/short", 5), Contains("wrong result"));
  // A kernel that takes a map nobody encoded.
  src = gpu_source(op, tma_config(op, 3, 1), gpu_limits_for_arch("sm_90"));
  for (CudaKernelLaunch::Param& p : src.launches[0].params)
    if (p.arg_index == 1 && p.tensor_map.rank == 2)
      p.tensor_map = rt::cuda::TensorMapSpec{}, p.c_type = "kiln_tensor_map";
  CHECK_THAT(run_emulated_and_check(op, src, dir.path + "/unencoded", 5),
             Contains("with a tensor map that was never encoded"));
  // A map no driver would encode: rows 328 bytes apart.
  src = gpu_source(op, tma_config(op, 3, 1), gpu_limits_for_arch("sm_90"));
  for (CudaKernelLaunch::Param& p : src.launches[0].params)
    if (p.arg_index == 0 && p.tensor_map.rank == 2) p.tensor_map.strides[0] = 328;
  CHECK_THAT(run_emulated_and_check(op, src, dir.path + "/stride", 5),
             Contains("with a tensor map no driver encodes") && Contains("row stride (328 bytes)"));
  // A slot placed 64 bytes into the block's shared memory.
  src = gpu_source(op, tma_config(op, 3, 1), gpu_limits_for_arch("sm_90"));
  const std::string placed = "KILN_SHARED_AT(kiln_half, A_shared, 6144, 0)";
  REQUIRE(src.code.find(placed) != std::string::npos);
  src.code.replace(src.code.find(placed), placed.size(), "KILN_SHARED_AT(kiln_half, A_shared, 6144, 64)");
  CHECK_THAT(run_emulated_and_check(op, src, dir.path + "/misplaced", 5),
             Contains("a tensor copy's destination must be 128-byte aligned in the block's shared memory, and it is "
                      "at byte 64"));
}

TEST_CASE("tensor copies: the 4096^3 GEMM with dense slots compiles with NVRTC for sm_90 into cp.async.bulk.tensor",
          "[gpu][pipeline][warp_specialization][tensor_copy][nvrtc]") {
  if (!nvrtc_available()) KILN_SKIP("NVRTC is not available");
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  const CudaSource src = hopper_gemm_4096({{"bulk_copy", 2}, {"pad", 0}});
  CHECK(compile_for_gpu(src, gpu, kDefaultConfigSpillBytes) == "");
  const NvrtcOutput r = nvrtc_compile(src.code, "tma.cu", "sm_90");
  CHECK(count_matches(r.ptx, R"(cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.mbarrier::complete_tx::bytes)") ==
        2);
  CHECK(r.ptx.find("mbarrier.arrive.expect_tx.shared::cta.b64") != std::string::npos);
  // 128 x 128 blocks: A and B as 128 rows of 32 and 32 rows of 128 halves.
  const CudaKernelLaunch::Param* a = map_param(src, "kiln_tensor_map", 0);
  REQUIRE(a);
  CHECK(rt::cuda::describe(a->tensor_map) == "2-D map of 4096 x 4096 2-byte elements, box 32 x 128");
  // With padded slot rows (the default) the fills are no box: bulk copies per row.
  const std::string padded = kernel_text(hopper_gemm_4096({{"bulk_copy", 2}, {"pad", 1}}));
  CHECK(padded.find("kiln_tensor_copy_2d(") == std::string::npos);
  CHECK(padded.find("kiln_bulk_copy(") != std::string::npos);
}

TEST_CASE("tensor copies: the instruction is Hopper's, and a malformed call says what is wrong",
          "[gpu][tensor_copy][errors]") {
  const OpInstance op = build_workload(kGemm);
  CHECK_THROWS_WITH(gpu_source(op, tma_config(op, 2, 1), gpu_limits_for_arch("sm_80")),
                    Contains("instruction 'cuda.tensor_copy.f16' needs sm_90 or later; the target is sm_80"));
  const Var S = Var::handle("S", DType::f16()), A = Var::handle("A", DType::f16());
  auto call = [&](int64_t n, int64_t len, int64_t stride) {
    const Stmt s = TensorIntrinCallNode::make(cuda_tensor_copy_instruction(DType::f16()),
                                              {{S, Expr(0), Expr(static_cast<int>(n)), Expr(static_cast<int>(len))},
                                               {A, Expr(0), Expr(static_cast<int>(n)), Expr(static_cast<int>(stride))}},
                                              {Expr(0), Expr(0)});
    return hw_call_problem(*s.as<TensorIntrinCallNode>());
  };
  CHECK(call(64 * 32, 32, 160) == "");
  // Rows of 12 halves: 24 bytes.
  CHECK_THAT(call(12 * 4, 12, 160), Contains("copies a box of 12-element rows, 48 elements in all: its rows need "
                                             "whole 16-byte units, at most 256 of at most 256 elements"));
  // 512 rows: past a box's 256.
  CHECK_THAT(call(512 * 8, 8, 160), Contains("at most 256 of at most 256 elements"));
  // Source rows closer than a row.
  CHECK_THAT(call(64 * 32, 32, 16), Contains("reads rows 16 elements apart in the source; they need a constant "
                                             "distance of at least a row (32), in 16-byte units"));
  // Further dimensions of rows: (count, distance) pairs after the slot and
  // the swizzle.
  auto nd = [&](int64_t n, std::vector<int> pairs) {
    std::vector<Expr> scalars{Expr(0), Expr(0)};
    for (int x : pairs) scalars.push_back(Expr(x));
    const Stmt s = TensorIntrinCallNode::make(
        cuda_tensor_copy_instruction(DType::f16()),
        {{S, Expr(0), Expr(static_cast<int>(n)), Expr(8)}, {A, Expr(0), Expr(static_cast<int>(n)), Expr(160)}},
        scalars);
    return hw_call_problem(*s.as<TensorIntrinCallNode>());
  };
  CHECK(nd(8 * 64 * 4, {4, 8}) == "");
  CHECK(nd(8 * 8 * 4 * 2, {4, 8, 2, 1280}) == "");
  CHECK_THAT(nd(8 * 64 * 4, {4}), Contains("cuda.tensor_copy.f16 takes the slot, the swizzle and up to three (count, "
                                           "distance) pairs of further row dimensions, the call passes 3 scalars"));
  CHECK_THAT(nd(8 * 64 * 4, {4, 8, 1, 8, 1, 8, 1, 8}), Contains("the call passes 10 scalars"));
  CHECK_THAT(nd(8 * 64 * 4, {4, 3}), Contains("splits its rows by (4, 3): a dimension of a box needs a constant count "
                                              "of 1 to 256 rows and a positive constant distance in 16-byte units"));
  CHECK_THAT(nd(8 * 64 * 4, {300, 8}), Contains("splits its rows by (300, 8)"));
  CHECK_THAT(nd(8 * 256, {5, 8}), Contains("cuda.tensor_copy.f16 splits its 256 rows into further dimensions of 5 "
                                           "rows, which do not divide them"));
  // 512 rows left to the first dimension: past a box's 256.
  CHECK_THAT(nd(8 * 1024, {2, 8}), Contains("at most 256 of at most 256 elements in each dimension"));
  // The swizzle: 0 or 1, and swizzled rows of exactly 128 bytes.
  auto swizzled = [&](int64_t len, Expr swizzle) {
    const Stmt s =
        TensorIntrinCallNode::make(cuda_tensor_copy_instruction(DType::f16()),
                                   {{S, Expr(0), Expr(static_cast<int>(len * 8)), Expr(static_cast<int>(len))},
                                    {A, Expr(0), Expr(static_cast<int>(len * 8)), Expr(4096)}},
                                   {Expr(0), swizzle});
    return hw_call_problem(*s.as<TensorIntrinCallNode>());
  };
  CHECK(swizzled(64, Expr(1)) == "");
  CHECK(cuda_tensor_copy_swizzled(
      *TensorIntrinCallNode::make(cuda_tensor_copy_instruction(DType::f16()),
                                  {{S, Expr(0), Expr(512), Expr(64)}, {A, Expr(0), Expr(512), Expr(4096)}},
                                  {Expr(0), Expr(1)})
           .as<TensorIntrinCallNode>()));
  CHECK_THAT(swizzled(64, Expr(2)), Contains("cuda.tensor_copy.f16 scalar swizzle is 2, not 0 or 1"));
  CHECK_THAT(swizzled(64, Var("s", DType::i32())), Contains("scalar swizzle is s, not 0 or 1"));
  CHECK_THAT(swizzled(32, Expr(1)), Contains("cuda.tensor_copy.f16 lands rows of 32 elements swizzled; the 128-byte "
                                             "swizzle takes rows of 128 bytes (64 elements)"));
  CHECK(swizzled(32, Expr(0)) == "");
}

TEST_CASE("tensor maps: their limits, and GPU artifacts that carry them", "[gpu][tensor_copy][errors]") {
  rt::cuda::TensorMapSpec s;
  s.rank = 2;
  s.element_bytes = 2;
  s.dims = {160, 64, 0, 0, 0};
  s.strides = {320, 0, 0, 0};
  s.box = {32, 64, 0, 0, 0};
  CHECK(rt::cuda::tensor_map_problem(s) == "");
  rt::cuda::TensorMapSpec t = s;
  t.strides[0] = 328;
  CHECK(rt::cuda::tensor_map_problem(t) ==
        "the stride of dimension 1 of a tensor map is 328 bytes; it must be a positive multiple of 16 below 2^40");
  t = s;
  t.box[1] = 300;
  CHECK(rt::cuda::tensor_map_problem(t) ==
        "the box of a tensor map is 300 elements along dimension 1, out of [1, 256]");
  t = s;
  t.box[0] = 12;
  CHECK(rt::cuda::tensor_map_problem(t) ==
        "the box's rows of a tensor map are 24 bytes; they must be a multiple of 16");
  t = s;
  t.element_bytes = 3;
  CHECK(rt::cuda::tensor_map_problem(t) == "a tensor map's elements have 1, 2, 4 or 8 bytes, not 3");
  // The 128-byte swizzle: rows of exactly 128 bytes.
  t = s;
  t.swizzle = 64;
  CHECK(rt::cuda::tensor_map_problem(t) == "a tensor map swizzles 0 or 128 bytes, not 64");
  t.swizzle = 128;
  CHECK(rt::cuda::tensor_map_problem(t) ==
        "the box's rows of a 128-byte swizzled tensor map are 64 bytes; kiln swizzles whole 128-byte rows");
  t.box[0] = 64;
  const rt::cuda::TensorMapSpec swizzled = t;
  CHECK(rt::cuda::tensor_map_problem(swizzled) == "");
  CHECK(rt::cuda::describe(swizzled) == "2-D map of 160 x 64 2-byte elements, box 64 x 64, 128-byte swizzle");
  CHECK(swizzled != s);
  CHECK(rt::cuda::tensor_map_swizzle_mode(128) == 3);  // CU_TENSOR_MAP_SWIZZLE_128B
  CHECK(rt::cuda::tensor_map_swizzle_mode(0) == 0);

  TempDir dir("kiln_tma_artifact");
  GpuArtifact a;
  a.arch = "sm_90";
  GpuArtifactKernel k;
  k.name = "k0";
  k.arg_indices = {0, 1, 0};
  k.tensor_maps = {rt::cuda::TensorMapSpec{}, swizzled, s};
  a.kernels.push_back(k);
  a.image = {'c', 'u', 'b', 'i', 'n'};
  write_gpu_artifact(a, dir.path + "/a.kgpu");
  const GpuArtifact b = read_gpu_artifact(dir.path + "/a.kgpu");
  REQUIRE(b.kernels.size() == 1);
  CHECK(b.kernels[0].arg_indices == k.arg_indices);
  CHECK(b.kernels[0].tensor_maps == k.tensor_maps);
  // A damaged map is refused when read, naming the kernel.
  a.kernels[0].tensor_maps[2].box[0] = 12;
  write_gpu_artifact(a, dir.path + "/bad.kgpu");
  CHECK_THROWS_WITH(read_gpu_artifact(dir.path + "/bad.kgpu"),
                    Contains("is a damaged GPU artifact (kernel k0: the box's rows of a tensor map are 24 bytes"));
}

namespace {

// A hand-built pipelined loop k (2 slots, one producer warp, bulk copies
// as tensor copies) in a loop over 4 compute warps: the fill copies `rows`
// rows of `len` floats of A, row r from `src(k, r, x)`, into the slot at
// r * `slot_row` + x; the compute copies the slot out to O.
// With `dst`, the slot element of row r, element x is dst(r, x) instead.
Stmt box_nest(int64_t rows, int64_t len, int64_t slot_row,
              const std::function<Expr(const Var& k, const Var& r, const Var& x)>& src, Var* A_out = nullptr,
              Var* O_out = nullptr, const std::function<Expr(const Var& r, const Var& x)>& dst = nullptr,
              int bulk_copies = 1 + 4) {
  const DType t = DType::f32();
  Var A = Var::handle("A", t), O = Var::handle("O", t), S = Var::handle("S", t);
  Var w("w"), x("x"), r("r"), k("k"), y("y");
  if (A_out) *A_out = A;
  if (O_out) *O_out = O;
  const int slot = static_cast<int>(rows * slot_row);
  Stmt fill = ForNode::make(r, 0, static_cast<int>(rows), ForKind::kSerial,
                            ForNode::make(x, 0, static_cast<int>(len), ForKind::kThreadBinding,
                                          StoreNode::make(S, LoadNode::make(t, A, src(k, r, x)),
                                                          dst ? dst(r, x) : r * static_cast<int>(slot_row) + x),
                                          "threadIdx.x"));
  Stmt compute = ForNode::make(y, 0, 32, ForKind::kThreadBinding,
                               StoreNode::make(O, LoadNode::make(t, S, y), k * 32 + y), "threadIdx.x");
  Stmt loop = ForNode::make(k, 0, 4, ForKind::kSerial,
                            AllocateNode::make(S, t, {Expr(slot)}, MemScope::kShared, SeqNode::make({fill, compute})));
  loop = AttrStmtNode::make(
      Ref<Object>(), attr::kPipelineStages, Expr(2),
      AttrStmtNode::make(Ref<Object>(), attr::kWarpSpecialized, Expr(1),
                         AttrStmtNode::make(Ref<Object>(), attr::kBulkCopies, Expr(bulk_copies), loop)));
  return ForNode::make(w, 0, 4, ForKind::kThreadBinding, loop, "threadIdx.y");
}

}  // namespace

TEST_CASE(
    "tensor copies: a hand-built dense box becomes one tensor copy from the first producer thread, in parts "
    "of at most 256 rows; other fills keep bulk copies per row",
    "[schedule][pipeline][warp_specialization][tensor_copy]") {
  // 4 rows of 32 floats, 128 apart in A; each k step starts 32 further on.
  Var A, O;
  const Stmt box = passes::inject_pipeline(
      box_nest(
          4, 32, 32, [](const Var& k, const Var& r, const Var& x) { return k * 32 + r * 128 + x; }, &A, &O),
      true);
  std::string ir = to_string(box);
  CHECK_THAT(ir, Contains("bulk_copy_bytes = 512") && Contains("tensor_intrin cuda.tensor_copy.f32(S[") &&
                     Contains("extent=128, stride=32]") && Contains("extent=128, stride=128]") &&
                     Contains("x.tma == 0"));
  CHECK(ir.find("cuda.bulk_copy") == std::string::npos);
  {
    // Printed: the kernel takes A as rows of 128 floats, boxes of 32 x 4.
    Var b("b");
    LoweredFunc f;
    f.name = "tma_box";
    f.args = {BufferArg{A, "A", DType::f32(), {8, 128}}, BufferArg{O, "O", DType::f32(), {128}}};
    f.body = ForNode::make(b, 0, 1, ForKind::kThreadBinding, box, "blockIdx.x");
    try {
      const CudaSource src = emit_cuda(f, gpu_limits_for_arch("sm_90"));
      const CudaKernelLaunch::Param* p = map_param(src, "kiln_tensor_map", 0);
      REQUIRE(p);
      CHECK(rt::cuda::describe(p->tensor_map) == "2-D map of 128 x 8 4-byte elements, box 32 x 4");
      CHECK_THAT(src.code, Contains("kiln_tensor_copy_2d(S, ") && Contains("A_map"));
    } catch (const UserError& e) {
      FAIL(e.what());
    }
    // 2^32 rows of A: more than PTX's signed 32-bit coordinates reach.
    f.args[0].shape = {int64_t{1} << 32, 128};
    CHECK_THROWS_WITH(emit_cuda(f, gpu_limits_for_arch("sm_90")),
                      Contains("a tensor copy from 'A' needs a 2-D map of 128 x 4294967296 4-byte elements, box 32 x "
                               "4: its coordinates pass what a signed 32-bit integer holds"));
  }
  // 512 rows of 4 floats: two boxes of 256 rows.
  ir = to_string(passes::inject_pipeline(
      box_nest(512, 4, 4, [](const Var& k, const Var& r, const Var& x) { return k * 4 + r * 16 + x; }), true));
  CHECK_THAT(
      ir, Contains("x.tma_part, 0, 2)") && Contains("extent=1024, stride=4]") && Contains("extent=1024, stride=16]"));
  // 264 rows of 4 floats: halves of 132 rows would start 2112 bytes apart,
  // not 128-byte aligned; thirds of 88 rows do.
  ir = to_string(passes::inject_pipeline(
      box_nest(264, 4, 4, [](const Var& k, const Var& r, const Var& x) { return k * 4 + r * 16 + x; }), true));
  CHECK_THAT(ir, Contains("x.tma_part, 0, 3)") && Contains("extent=352, stride=4]"));
  // Rows that may cross a source row (k steps of 40 floats in rows of 128): bulk copies per row.
  ir = to_string(passes::inject_pipeline(
      box_nest(4, 32, 32, [](const Var& k, const Var& r, const Var& x) { return k * 40 + r * 128 + x; }), true));
  CHECK(ir.find("cuda.tensor_copy") == std::string::npos);
  CHECK_THAT(ir, Contains("tensor_intrin cuda.bulk_copy.f32("));
  // Padded slot rows (36 floats apart): no dense box, bulk copies per row.
  ir = to_string(passes::inject_pipeline(
      box_nest(4, 32, 36, [](const Var& k, const Var& r, const Var& x) { return k * 32 + r * 128 + x; }), true));
  CHECK(ir.find("cuda.tensor_copy") == std::string::npos);
  CHECK_THAT(ir, Contains("tensor_intrin cuda.bulk_copy.f32("));
}

TEST_CASE("tensor copies: a hand-built fill of a 128-byte swizzled slot lands swizzled from a 1024-byte start",
          "[schedule][pipeline][warp_specialization][tensor_copy][swizzle]") {
  // Row r of 32 floats (128 bytes), its 16-byte chunk q at chunk q XOR r % 8
  // (Stage::storage_swizzle's layout, the XOR bit by bit).
  auto swizzled = [](const Var& r, const Var& x) {
    const Expr q = floordiv(Expr(x), Expr(4)), rr = floormod(Expr(r), Expr(8));
    Expr moved = Expr(0);
    for (int bit = 1; bit <= 4; bit *= 2)
      moved = moved + floormod(floormod(floordiv(q, Expr(bit)), Expr(2)) + floormod(floordiv(rr, Expr(bit)), Expr(2)),
                               Expr(2)) *
                          Expr(bit);
    return r * 32 + moved * 4 + floormod(Expr(x), Expr(4));
  };
  auto rows_of_A = [](const Var& k, const Var& r, const Var& x) { return k * 32 + r * 128 + x; };
  // 16 rows: each slot 2048 bytes, a box of 16 rows of 32 floats landing swizzled.
  std::string ir =
      to_string(passes::inject_pipeline(box_nest(16, 32, 32, rows_of_A, nullptr, nullptr, swizzled), true));
  INFO(ir);
  CHECK_THAT(ir, Contains("bulk_copy_bytes = 2048") && Contains("tensor_intrin cuda.tensor_copy.f32(S[") &&
                     Contains("extent=512, stride=32]") && Contains("extent=512, stride=128]"));
  CHECK(ir.find("cuda.bulk_copy") == std::string::npos);
  // The same rows stored unswizzled: a box without the swizzle.
  const std::string plain = to_string(passes::inject_pipeline(box_nest(16, 32, 32, rows_of_A), true));
  CHECK_THAT(plain, Contains("tensor_intrin cuda.tensor_copy.f32(S["));
  // The two calls differ only in the swizzle scalar.
  auto call = [](const std::string& text) {
    const size_t at = text.find("tensor_intrin cuda.tensor_copy");
    return text.substr(at, text.find('\n', at) - at);
  };
  CHECK(call(ir) != call(plain));
  CHECK_THAT(call(ir), EndsWith(", 1)"));
  CHECK_THAT(call(plain), EndsWith(", 0)"));
  // 4 rows: slots of 512 bytes, so the second slot starts off a 1024-byte
  // boundary where the swizzle's pattern would restart: the fill stays.
  ir = to_string(passes::inject_pipeline(box_nest(4, 32, 32, rows_of_A, nullptr, nullptr, swizzled), true));
  CHECK(ir.find("cuda.tensor_copy") == std::string::npos);
  CHECK(ir.find("cuda.bulk_copy") == std::string::npos);
  // Rows of 16 floats swizzled as if they were 32 wide (chunks moved past
  // the row): no 128-byte rows, the fill stays.
  ir = to_string(passes::inject_pipeline(
      box_nest(
          16, 16, 32, [](const Var& k, const Var& r, const Var& x) { return k * 16 + r * 128 + x; }, nullptr, nullptr,
          swizzled),
      true));
  CHECK(ir.find("cuda.tensor_copy") == std::string::npos);
  // 512 rows: two boxes of 256 rows, each starting 1024-byte aligned.
  ir = to_string(passes::inject_pipeline(box_nest(512, 32, 32, rows_of_A, nullptr, nullptr, swizzled), true));
  CHECK_THAT(ir, Contains("x.tma_part, 0, 2)") && Contains("extent=8192, stride=32]"));
  CHECK_THAT(call(ir), EndsWith(", 1)"));
  // Every fill asked to move by bulk copies: without tensor maps, or from
  // slots off 1024-byte boundaries, the swizzled fill says why it cannot.
  CHECK_THROWS_WITH(passes::inject_pipeline(box_nest(16, 32, 32, rows_of_A, nullptr, nullptr, swizzled, 2), true),
                    Contains("it fills a slot stored 128-byte swizzled, whose rows only tensor copies land (bulk "
                             "copies with tensor maps); a bulk copy lands a row as it is"));
  CHECK_THROWS_WITH(passes::inject_pipeline(box_nest(4, 32, 32, rows_of_A, nullptr, nullptr, swizzled, 2 + 4), true),
                    Contains("it fills a slot stored 128-byte swizzled, whose rows form no box that a tensor copy "
                             "lands swizzled (each box needs a start 1024-byte aligned"));
}

TEST_CASE("tensor copies: the shared-memory plan puts a tensor copy's slots at 128-byte aligned offsets",
          "[schedule][tensor_copy]") {
  // A 16-byte array first, then the slots: laid out one after another, the
  // slots would start at 16.
  const DType t = DType::f32();
  Var small = Var::handle("small", t), S = Var::handle("S", t), A = Var::handle("A", t), x("x");
  Stmt copy = TensorIntrinCallNode::make(cuda_tensor_copy_instruction(t),
                                         {{S, Expr(0), Expr(128), Expr(32)}, {A, Expr(0), Expr(128), Expr(128)}},
                                         {Expr(0), Expr(0)});
  Stmt body = AllocateNode::make(small, t, {Expr(4)}, MemScope::kShared,
                                 SeqNode::make({StoreNode::make(small, Expr(1.0f), Expr(0)),
                                                AllocateNode::make(S, t, {Expr(256)}, MemScope::kShared, copy)}));
  const SharedMemoryPlan plan = plan_shared_memory(body);
  REQUIRE(plan.arrays.size() == 2);
  const SharedArrayPlace* s = plan.find(S.node());
  REQUIRE(s);
  CHECK(s->align == 128);
  CHECK(s->offset % 128 == 0);
  CHECK(plan.over_aligned);
  CHECK(plan.bytes == s->offset + 1024);
  // A copy that lands swizzled wants its slots 1024-byte aligned.
  Stmt swizzled = TensorIntrinCallNode::make(cuda_tensor_copy_instruction(t),
                                             {{S, Expr(0), Expr(256), Expr(32)}, {A, Expr(0), Expr(256), Expr(128)}},
                                             {Expr(0), Expr(1)});
  const SharedMemoryPlan sp = plan_shared_memory(
      AllocateNode::make(small, t, {Expr(4)}, MemScope::kShared,
                         SeqNode::make({StoreNode::make(small, Expr(1.0f), Expr(0)),
                                        AllocateNode::make(S, t, {Expr(256)}, MemScope::kShared, swizzled)})));
  const SharedArrayPlace* ss = sp.find(S.node());
  REQUIRE(ss);
  CHECK(ss->align == 1024);
  CHECK(ss->offset % 1024 == 0);
  CHECK(sp.align == 1024);
}

TEST_CASE("tensor copies: a kernel takes one map per argument and box, named after the argument",
          "[gpu][tensor_copy]") {
  const DType t = DType::f32();
  Var A = Var::handle("A", t), S = Var::handle("S", t), T = Var::handle("T", t), L = Var::handle("L", t);
  LoweredFunc f;
  f.name = "maps";
  f.args = {BufferArg{A, "A", t, {64, 128}}};
  auto copy = [&](const Var& dst, int rows, int len, int stride) {
    return TensorIntrinCallNode::make(
        cuda_tensor_copy_instruction(t),
        {{dst, Expr(0), Expr(rows * len), Expr(len)}, {A, Expr(0), Expr(rows * len), Expr(stride)}},
        {Expr(0), Expr(0)});
  };
  // Two copies through the same map, one with another box, one read
  // another way; the name A_map is taken by something else.
  const Stmt body = SeqNode::make({copy(S, 4, 32, 128), copy(T, 4, 32, 128), copy(S, 8, 32, 128), copy(S, 2, 64, 256)});
  std::unordered_set<std::string> taken{"A", "A_map"};
  const CudaTensorMaps maps(body, f, {{A.node(), "A"}}, &taken);
  REQUIRE(maps.params().size() == 3);
  CHECK(maps.params()[0].name == "A_map1");
  CHECK(rt::cuda::describe(maps.params()[0].spec) == "2-D map of 128 x 64 4-byte elements, box 32 x 4");
  CHECK(maps.params()[1].name == "A_map2");
  CHECK(rt::cuda::describe(maps.params()[1].spec) == "2-D map of 128 x 64 4-byte elements, box 32 x 8");
  CHECK(maps.params()[2].name == "A_map3");
  CHECK(rt::cuda::describe(maps.params()[2].spec) == "2-D map of 256 x 32 4-byte elements, box 64 x 2");
  CHECK(&maps.of(*copy(T, 4, 32, 128).as<TensorIntrinCallNode>()) == &maps.params()[0]);
  // A copy from something that is not an argument has no map.
  const Stmt local = TensorIntrinCallNode::make(cuda_tensor_copy_instruction(t),
                                                {{S, Expr(0), Expr(128), Expr(32)}, {L, Expr(0), Expr(128), Expr(128)}},
                                                {Expr(0), Expr(0)});
  CHECK_THROWS_WITH(CudaTensorMaps(local, f, {{A.node(), "A"}}, &taken),
                    Contains("a tensor copy reads 'L', which is not an argument of the function"));
  // 8 x 8 tiles of A (f32: rows of 8 floats): a tile's 8 rows 128 apart,
  // 4 tiles along the row 8 apart, 2 tiles across 1024 apart.
  auto tiles = [&](int64_t far) {
    return TensorIntrinCallNode::make(
        cuda_tensor_copy_instruction(t),
        {{S, Expr(0), Expr(8 * 8 * 4 * 2), Expr(8)}, {A, Expr(0), Expr(8 * 8 * 4 * 2), Expr(128)}},
        {Expr(0), Expr(0), Expr(4), Expr(8), Expr(2), Expr(static_cast<int>(far))});
  };
  REQUIRE(hw_call_problem(*tiles(1024).as<TensorIntrinCallNode>()) == "");
  const CudaTensorMaps nd(tiles(1024), f, {{A.node(), "A"}}, &taken);
  REQUIRE(nd.params().size() == 1);
  CHECK(rt::cuda::describe(nd.params()[0].spec) == "4-D map of 8 x 8 x 16 x 8 4-byte elements, box 8 x 8 x 4 x 2");
  CHECK(nd.params()[0].spec.strides == std::array<uint64_t, 4>{512, 32, 4096, 0});
  // Tiles across 1000 rows apart: no multiple of the tile rows' 128.
  CHECK_THROWS_WITH(CudaTensorMaps(tiles(1000), f, {{A.node(), "A"}}, &taken),
                    Contains("a tensor copy from 'A' has a box that no tensor map of it moves: its dimensions 128 and "
                             "1000 elements apart do not nest"));
}

TEST_CASE("tensor copies: a box's dimensions as a tensor map's, and those no map has", "[gpu][tensor_copy][errors]") {
  std::vector<TensorCopyDim> v;
  // wgmma's A tile of 64 x 32 halves in 8 x 8 tiles, from rows of 96.
  REQUIRE(tensor_copy_map_dims({{8, 1}, {64, 96}, {4, 8}}, 128 * 96, &v) == "");
  REQUIRE(v.size() == 3);
  CHECK((v[0].extent == 8 && v[1].extent == 128 && v[2].extent == 12));
  CHECK((v[1].farthest && !v[0].farthest && !v[2].farthest));
  CHECK((v[1].distance == 96 && v[2].box == 4));
  CHECK(tensor_copy_map_dims({{8, 1}, {8, 96}, {4, 96}}, 4096, &v) ==
        "two of its dimensions are 96 elements apart in the source");
  CHECK(tensor_copy_map_dims({{8, 1}, {8, 96}, {4, 40}}, 4096, &v) ==
        "its dimensions 40 and 96 elements apart do not nest (the larger distance is no multiple of the smaller)");
  CHECK(tensor_copy_map_dims({{8, 1}, {16, 8}, {2, 64}}, 4096, &v) ==
        "its box is 16 elements along the dimension 8 elements apart, wider than the map's 8 there (the next "
        "distance over this one)");
}

TEST_CASE(
    "tensor copies: wgmma's 8 x 8 tiles move through 3-D maps; the emulation catches a short map and a missing "
    "wait",
    "[gpu][pipeline][warp_specialization][tensor_copy][wgmma][emulation][errors]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_tma_wgmma");
  const OpInstance op = build_workload("matmul:M=128,N=64,K=96,dtype=f16");
  const Config cfg = wgmma_config(op, {{"wgmma_m", {2, 1}},
                                       {"wgmma_n", {1, 1, 8}},
                                       {"mma_k", {3, 2}},
                                       {"stages", 2},
                                       {"producer_warps", 1},
                                       {"bulk_copy", 2}});
  const CudaSource good = gpu_source(op, cfg, gpu_limits_for_arch("sm_90a"));
  const std::string k = kernel_text(good);
  CHECK_THAT(k, Contains("kiln_tensor_copy_3d(A_shared, ") && Contains("kiln_tensor_copy_3d(B_shared, "));
  // A's 64 x 32 tile: rows of 8 halves, its 64 rows 96 apart, 4 tiles
  // along k 8 apart; B's 32 x 64: rows of 8, 32 rows 64 apart, 8 tiles
  // along n.
  const CudaKernelLaunch::Param* a = map_param(good, "kiln_tensor_map", 0);
  const CudaKernelLaunch::Param* b = map_param(good, "kiln_tensor_map", 1);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(rt::cuda::describe(a->tensor_map) == "3-D map of 8 x 128 x 12 2-byte elements, box 8 x 64 x 4");
  CHECK(rt::cuda::describe(b->tensor_map) == "3-D map of 8 x 96 x 8 2-byte elements, box 8 x 32 x 8");
  REQUIRE(run_emulated_and_check(op, good, dir.path + "/good", 11) == "");
  // A's map one row short: the second block row's last row lands as zeros.
  CudaSource src = good;
  for (CudaKernelLaunch::Param& p : src.launches[0].params)
    if (p.arg_index == 0 && p.tensor_map.rank == 3) p.tensor_map.dims[1] = 127;
  CHECK_THAT(run_emulated_and_check(op, src, dir.path + "/short", 11), Contains("wrong result"));
  // The compute no longer waits for its slot's tensor copies.
  src = good;
  const size_t at = src.code.find("__global__ void");
  src.code = src.code.substr(0, at) +
             std::regex_replace(src.code.substr(at), std::regex(R"(kiln_mbarrier_wait\(kiln_full_0[^;]*\);)"), "");
  CHECK_THAT(run_emulated_and_check(op, src, dir.path + "/no_full_wait", 11),
             Contains("before its bulk copy arrived") || Contains("race") || Contains("share byte"));
}
