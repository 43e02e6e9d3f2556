// Hopper's warpgroup tensor-core product (wgmma.mma_async, sm_90a) as a
// tensor intrinsic (kernels/cuda_tensor_intrinsics.h: cuda_wgmma): the GEMM
// template's tensor_core "wgmma" (warpgroups of four warps, operands read
// from shared tiles stored as 8 x 8 blocks by Stage::storage_tile), emulated
// against the interpreter with and without pipelines and producer warps,
// its PTX from NVRTC for sm_90a, the knobs' space, storage_tile's layout
// and the messages of what cannot be.
#include <catch2/catch.hpp>
#include <random>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/hw_instructions.h"
#include "compute/printer.h"
#include "kernels/cuda_tensor_intrinsics.h"
#include "schedule/lower.h"
#include "support/gpu_check.h"
#include "support/mma_config.h"
#include "support/skip.h"
#include "support/temp_dir.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Matchers::Contains;

namespace {

// The 4096^3 f16 GEMM in 128 x 256 blocks of two warpgroups, k tiles of 64
// in four slots filled by one producer warp, one k tile's products kept in
// flight, and `knobs`: checked to compile for sm_90a within the spill budget.
CudaSource wgmma_4096(const nlohmann::json& knobs) {
  const OpInstance op = build_workload("matmul:M=4096,N=4096,K=4096,dtype=f16");
  nlohmann::json j = {{"wgmma_m", {32, 2}}, {"wgmma_n", {16, 1, 32}}, {"mma_k", {64, 4}},
                      {"stages", 4},        {"producer_warps", 1},    {"mma_in_flight", 1}};
  j.update(knobs);
  const CudaSource src = gpu_source(op, wgmma_config(op, j), sm90a());
  CHECK(compile_for_gpu(src, sm90a(), kDefaultConfigSpillBytes) == "");
  return src;
}

}  // namespace

TEST_CASE("wgmma: the GEMM on warpgroups agrees with the interpreter, plain, pipelined and warp-specialized",
          "[gpu][tensorcore][wgmma][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_wgmma_gemm");
  const OpInstance op = build_workload("matmul:M=128,N=128,K=128,dtype=f16");
  struct Case {
    nlohmann::json knobs;
    int warps;  // consumer warps
    int width;  // N of each wgmma
  };
  const std::vector<Case> cases = {
      // Two warpgroups one above the other, 64 columns each, k tiles of 32.
      {{{"wgmma_m", {1, 2}}, {"wgmma_n", {2, 1, 8}}, {"mma_k", {4, 2}}, {"stages", 1}, {"producer_warps", 0}}, 8, 64},
      // One warpgroup of 128 columns, three slots, one producer warp.
      {{{"wgmma_m", {2, 1}}, {"wgmma_n", {1, 1, 16}}, {"mma_k", {4, 2}}, {"stages", 3}, {"producer_warps", 1}}, 4, 128},
      // Four warpgroups (2 x 2), k tiles of 16, two slots, two producer warps.
      {{{"wgmma_m", {1, 2}}, {"wgmma_n", {1, 2, 8}}, {"mma_k", {8, 1}}, {"stages", 2}, {"producer_warps", 2}}, 16, 64},
      // k tiles of 64 (four k steps a call), 16-byte cp.async fills, two slots.
      {{{"wgmma_m", {2, 1}}, {"wgmma_n", {2, 1, 8}}, {"mma_k", {2, 4}}, {"stages", 2}, {"fill_vec", 8}}, 4, 64},
      // Tensor copies: each operand's 8 x 8 tiles move as one box through
      // a 3-D map (below).
      {{{"wgmma_m", {2, 1}},
        {"wgmma_n", {1, 1, 16}},
        {"mma_k", {4, 2}},
        {"stages", 3},
        {"producer_warps", 1},
        {"bulk_copy", 2}},
       4,
       128},
  };
  uint64_t seed = 700;
  for (const Case& c : cases) {
    const Config cfg = wgmma_config(op, c.knobs);
    INFO(cfg.str());
    const CudaSource src = gpu_source(op, cfg, sm90a());
    const std::string k = kernel_text(src);
    // One call per warp and k tile, from the shared tiles: no fragment loads.
    CHECK_THAT(k, Contains("kiln_wgmma_m64n" + std::to_string(c.width) + "k16_f16<0, 1, 0, 0, 0>("));
    CHECK(k.find("kiln_mma_load_a") == std::string::npos);
    CHECK(k.find("kiln_mma_f16(") == std::string::npos);
    CHECK(src.code.find("wgmma.mma_async.sync.aligned.m64n" + std::to_string(c.width) + "k16.f32.f16.f16") !=
          std::string::npos);
    CHECK(src.launches.at(0).block[1] >= c.warps);
    CHECK(k.find("kiln_tensor_copy_2d(") == std::string::npos);
    if (c.knobs.contains("bulk_copy")) {
      CHECK_THAT(k, Contains("kiln_tensor_copy_3d(A_shared, ") && Contains("kiln_tensor_copy_3d(B_shared, "));
      CHECK(k.find("kiln_cp_async<") == std::string::npos);
      // A's 64 x 32 tile as 8 x 8 tiles, the tiles along m after each
      // other: rows of 8 halves (k % 8), 64 rows 128 apart (m), 4 tiles
      // along k 8 apart; B's 32 x 128 the same way, k for m and n for k.
      CHECK(tensor_map_descriptions(src) ==
            std::vector<std::string>{"3-D map of 8 x 128 x 16 2-byte elements, box 8 x 64 x 4",
                                     "3-D map of 8 x 128 x 16 2-byte elements, box 8 x 32 x 16"});
    }
    CHECK(emulate_sm90a(op, cfg, dir.path, seed++) == "");
  }
}

TEST_CASE("wgmma: transposed and bf16 operands, batches, and random configs agree with the interpreter",
          "[gpu][tensorcore][wgmma][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_wgmma_layouts");
  // A stored k x m (M-major tiles), B stored n x k (K-major tiles), bf16.
  const OpInstance ta = build_workload("batch_matmul:B=2,M=64,N=64,K=48,dtype=bf16,trans_a=1");
  const Config ca = wgmma_config(ta, {{"wgmma_m", {1, 1}}, {"wgmma_n", {1, 1, 8}}, {"mma_k", {3, 1}}, {"stages", 2}});
  CHECK_THAT(kernel_text(gpu_source(ta, ca, sm90a())), Contains("kiln_wgmma_m64n64k16_bf16<1, 1, 0, 0, 0>("));
  CHECK(emulate_sm90a(ta, ca, dir.path, 801) == "");
  const OpInstance tb = build_workload("batch_matmul:B=1,M=64,N=128,K=32,dtype=f16,trans_b=1");
  const Config cb =
      wgmma_config(tb, {{"wgmma_m", {1, 1}}, {"wgmma_n", {1, 1, 16}}, {"mma_k", {1, 2}}, {"producer_warps", 1}});
  CHECK_THAT(kernel_text(gpu_source(tb, cb, sm90a())), Contains("kiln_wgmma_m64n128k16_f16<0, 0, 0, 0, 0>("));
  CHECK(emulate_sm90a(tb, cb, dir.path, 802) == "");
  // Both layouts filled by tensor copies of their tiles, batched.
  for (const OpInstance* op : {&ta, &tb}) {
    nlohmann::json knobs = op == &ta ? ca.to_json() : cb.to_json();
    knobs["producer_warps"] = 1;
    knobs["bulk_copy"] = 2;
    knobs["stages"] = 2;
    if (op == &tb) knobs["mma_k"] = {2, 1};  // a k loop to pipeline
    const Config c = wgmma_config(*op, knobs);
    INFO(c.str());
    const std::string k = kernel_text(gpu_source(*op, c, sm90a()));
    CHECK_THAT(k, Contains("kiln_tensor_copy_") && Contains("d(A_shared, ") && Contains("d(B_shared, "));
    CHECK(k.find("kiln_cp_async<") == std::string::npos);
    CHECK(emulate_sm90a(*op, c, dir.path, 803) == "");
  }

  // Random configs of the space, tensor_core forced to wgmma.
  std::mt19937_64 rng(1130);
  int ran = 0;
  for (const char* w : {"matmul:M=64,N=128,K=64,dtype=bf16", "dense:N=128,IN=48,OUT=64,dtype=f16"}) {
    const OpInstance op = build_workload(w);
    auto space = find_op(op.op).gpu.define_space(op, sm90a());
    for (int c = 0; c < 3; ++c) {
      nlohmann::json j = space->random(rng).to_json();
      j["tensor_core"] = "wgmma";
      const Config cfg = space->from_json(j);
      INFO(w << " " << cfg.str());
      const std::string err = emulate_sm90a(op, cfg, dir.path, 810 + static_cast<uint64_t>(ran));
      if (is_launch_limit(err)) continue;
      CHECK(err == "");
      ++ran;
    }
  }
  CHECK(ran >= 4);
}

TEST_CASE("wgmma: the 4096^3 GEMM compiles with NVRTC for sm_90a into wgmma.mma_async", "[gpu][wgmma][nvrtc]") {
  if (!nvrtc_available()) KILN_SKIP("NVRTC is not available");
  const OpInstance op = build_workload("matmul:M=4096,N=4096,K=4096,dtype=f16");
  // Two warpgroups of 64 x 256 (a 128 x 256 block), k tiles of 64 in three
  // slots, one producer warp.
  const Config cfg = wgmma_config(op, {{"wgmma_m", {32, 2}},
                                       {"wgmma_n", {16, 1, 32}},
                                       {"mma_k", {64, 4}},
                                       {"stages", 3},
                                       {"producer_warps", 1},
                                       {"fill_vec", 8}});
  const CudaSource src = gpu_source(op, cfg, sm90a());
  CHECK(compile_for_gpu(src, sm90a(), kDefaultConfigSpillBytes) == "");
  const NvrtcOutput r = nvrtc_compile(src.code, "wgmma.cu", "sm_90a");
  CHECK(count_matches(r.ptx, R"(wgmma\.mma_async\.sync\.aligned\.m64n256k16\.f32\.f16\.f16)") >= 1);
  CHECK(r.ptx.find("wgmma.fence.sync.aligned") != std::string::npos);
  CHECK(r.ptx.find("wgmma.commit_group.sync.aligned") != std::string::npos);
  CHECK(r.ptx.find("wgmma.wait_group.sync.aligned") != std::string::npos);
  CHECK(r.ptx.find("fence.proxy.async.shared::cta") != std::string::npos);
  REQUIRE(r.resources.size() == 1);
  UNSCOPED_INFO("kiln-test-note: wgmma 4096^3, 128 x 256 blocks: " << r.resources[0].registers << " registers, "
                                                                   << r.resources[0].spill_store_bytes
                                                                   << " bytes of spill stores");
}

TEST_CASE("wgmma: tensor copies into the 8 x 8 tiles compile with NVRTC and ptxas for sm_90a",
          "[gpu][wgmma][tensor_copy][nvrtc]") {
  if (!nvrtc_available()) KILN_SKIP("NVRTC is not available");
  // A's and B's tiles by one tensor copy each.
  const CudaSource src = wgmma_4096({{"bulk_copy", 2}});
  const NvrtcOutput r = nvrtc_compile(src.code, "wgmma_tma.cu", "sm_90a");
  CHECK(count_matches(
            r.ptx, R"(cp\.async\.bulk\.tensor\.[345]d\.shared::cluster\.global\.mbarrier::complete_tx::bytes)") == 2);
  CHECK(r.ptx.find("cp.async.cg") == std::string::npos);
  CHECK(count_matches(r.ptx, R"(wgmma\.mma_async\.sync\.aligned\.m64n256k16\.f32\.f16\.f16)") >= 1);
  const std::vector<std::string> maps = tensor_map_descriptions(src);
  UNSCOPED_INFO("kiln-test-note: wgmma 4096^3 with tensor copies: " << (maps.empty() ? "" : maps[0]) << "; "
                                                                    << (maps.size() > 1 ? maps[1] : ""));
  CHECK(maps.size() == 2);
}

TEST_CASE("wgmma: offered on sm_90a for M and N multiples of 64, and only there", "[gpu][wgmma][space]") {
  auto offered = [](const char* w, const GpuLimits& gpu) {
    const OpInstance op = build_workload(w);
    const GpuTemplate& t = find_op(op.op).gpu;
    auto space = t.define_space(op, gpu);
    const Config d = t.default_config(op, gpu, *space);
    nlohmann::json j = d.to_json();
    j["tensor_core"] = "wgmma";
    std::string why;
    try {
      space->from_json(j);
    } catch (const UserError& e) {
      why = e.what();
    }
    return std::make_pair(d.has("wgmma_m") && d.has("wgmma_n"), why);
  };
  CHECK(offered("matmul:M=128,N=192,K=64,dtype=f16", sm90a()) == std::make_pair(true, std::string()));
  // Not on sm_90 (wgmma is an sm_90a instruction), nor where M is no multiple of 64.
  for (const auto& [w, arch] : {std::make_pair("matmul:M=128,N=192,K=64,dtype=f16", "sm_90"),
                                std::make_pair("matmul:M=48,N=128,K=64,dtype=f16", "sm_90a")}) {
    const auto [has, why] = offered(w, gpu_limits_for_arch(arch));
    CHECK_FALSE(has);
    CHECK_THAT(why, Contains("tensor_core") && Contains("wgmma"));
  }
  // The default stays on mma.sync (what the H100 measurements chose).
  const OpInstance op = build_workload("matmul:M=4096,N=4096,K=4096,dtype=f16");
  auto space = find_op(op.op).gpu.define_space(op, sm90a());
  CHECK(find_op(op.op).gpu.default_config(op, sm90a(), *space).annotate("tensor_core") == "mma");
}

TEST_CASE("wgmma: what cannot be says why", "[gpu][wgmma][errors]") {
  const OpInstance op = build_workload("matmul:M=64,N=64,K=32,dtype=f16");
  const Config cfg = wgmma_config(op, {{"wgmma_m", {1, 1}}, {"wgmma_n", {1, 1, 8}}, {"mma_k", {2, 1}}});
  // A schedule whose shared A tile is re-laid out by `change` before lowering.
  auto lowered_with = [&](const std::function<void(Stage&)>& change, const GpuLimits& gpu) {
    ScheduledOp so = find_op(op.op).gpu.apply_config(op, cfg);
    for (Stage st : so.schedule->stages())
      if (st.name() == "A.shared") change(st);
    return emit_cuda(lower_gpu(*so.schedule, so.args, "kiln_matmul", gpu), gpu);
  };
  const auto keep = [](Stage&) {};
  // The instruction exists on sm_90a only.
  CHECK_THROWS_WITH(lowered_with(keep, gpu_limits_for_arch("sm_90")),
                    Contains("instruction 'cuda.wgmma.m64n64k16.f16' needs sm_90a; the target is sm_90"));
  CHECK_NOTHROW(lowered_with(keep, sm90a()));
  // The tiles must be wgmma's 8 x 8 core matrices.
  CHECK_THROWS_WITH(
      lowered_with([](Stage& st) { st.storage_tile(16, 16); }, sm90a()),
      Contains(
          "'A.shared', bound to the intrinsic's 'a', is not stored in tiles of 8 x 8 elements; the intrinsic reads "
          "it as such tiles (storage_tile(8, 8) on its stage)"));
  CHECK_THROWS_WITH(lowered_with([](Stage& st) { st.storage_align(0, 64, 8); }, sm90a()),
                    Contains("'A.shared' has both storage_tile and storage_align"));
  CHECK_THROWS_WITH(lowered_with([](Stage& st) { st.storage_tile(8, 12); }, sm90a()),
                    Contains("'A.shared' (storage_tile) spans 16 elements along dimension 1, not a whole number of "
                             "its tiles' 12"));
  // storage_tile's own checks.
  CHECK_THROWS_WITH(lowered_with([](Stage& st) { st.storage_tile(0, 8); }, sm90a()),
                    Contains("storage_tile: need tiles of at least 1 x 1 elements, got 0 x 8"));

  // A call the instruction cannot take.
  const Var W = Var::handle("W", DType::f32()), S = Var::handle("S", DType::f16());
  auto call = [&](std::vector<Expr> scalars) {
    const Stmt s = TensorIntrinCallNode::make(
        cuda_wgmma_instruction(DType::f16(), 64),
        {{W, Expr(0), Expr(16 * 64), Expr(1)}, {S, Expr(0), Expr(0), Expr(1)}, {S, Expr(0), Expr(0), Expr(1)}},
        std::move(scalars));
    return hw_call_problem(*s.as<TensorIntrinCallNode>());
  };
  CHECK(call({Expr(128), Expr(64), Expr(0), Expr(64), Expr(128), Expr(1), Expr(0), Expr(0), Expr(2)}) == "");
  CHECK(call({Expr(12), Expr(64), Expr(0), Expr(64), Expr(128), Expr(1), Expr(0), Expr(0), Expr(2)}) ==
        "cuda.wgmma.m64n64k16.f16 scalar a_m is 12 elements: the tiles of a wgmma operand need to be a positive "
        "multiple of 16 bytes apart, below 256 KiB");
  CHECK(call({Expr(128), Expr(64), Expr(2), Expr(64), Expr(128), Expr(1), Expr(0), Expr(0), Expr(2)}) ==
        "cuda.wgmma.m64n64k16.f16 scalar a_mn_major is 2, not 0 or 1");
  CHECK(call({Expr(128), Expr(64), Expr(0), Expr(64), Var("n"), Expr(1), Expr(0), Expr(0), Expr(2)}) ==
        "cuda.wgmma.m64n64k16.f16 scalar b_n is not a constant");
  // Swizzled operands: a flag, and strips and row groups 1024 bytes apart.
  CHECK(call({Expr(128), Expr(64), Expr(0), Expr(64), Expr(128), Expr(1), Expr(2), Expr(0), Expr(2)}) ==
        "cuda.wgmma.m64n64k16.f16 scalar a_swizzle is 2, not 0 or 1");
  CHECK(call({Expr(512), Expr(4096), Expr(0), Expr(512), Expr(2048), Expr(1), Expr(1), Expr(1), Expr(2)}) == "");
  CHECK(call({Expr(512), Expr(4096), Expr(0), Expr(64), Expr(2048), Expr(1), Expr(1), Expr(1), Expr(2)}) ==
        "cuda.wgmma.m64n64k16.f16 scalar b_k is 64 elements: a swizzled operand's strips and groups of 8 rows need "
        "to be a multiple of 1024 bytes apart");
  CHECK(call({Expr(128), Expr(64), Expr(0), Expr(64), Expr(128), Expr(1), Expr(0), Expr(0), Expr(0)}) ==
        "cuda.wgmma.m64n64k16.f16 scalar steps is 0, out of [1, any]");
  // The commit-and-wait leaves 0 to 7 groups in flight, a constant.
  auto wait = [&](Expr n) {
    const Stmt s = TensorIntrinCallNode::make(kCudaWgmmaCommitWait, {{W, Expr(0), Expr(0), Expr(1)}}, {std::move(n)});
    return hw_call_problem(*s.as<TensorIntrinCallNode>());
  };
  CHECK(wait(Expr(1)) == "");
  CHECK(wait(Expr(8)) ==
        "cuda.wgmma_commit_wait scalar in_flight is 8: wgmma.wait_group takes a constant count of 0 to 7 groups "
        "left in flight");
  CHECK_THAT(wait(Var("n")), Contains("scalar in_flight is n:"));
  CHECK_THROWS_WITH(cuda_wgmma(DType::f16(), 96, 1, false, false),
                    Contains("wgmma computes 8 to 256 columns, a power of two here; got 96"));
}

TEST_CASE("wgmma: storage_tile lays a buffer out as contiguous tiles, and the kernel still computes the same",
          "[gpu][wgmma][storage_tile][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  // A 16 x 24 shared copy in 8 x 4 tiles, read transposed: element (i, j)
  // at (j / 4) * 64 + (i / 8) * 32 + (i % 8) * 4 + j % 4 (a column of two
  // tiles, then the next).
  const LoweredFunc f = transpose_through_shared(
      32, 24, 1, [](Stage& sx) { sx.storage_tile(8, 4); }, "tiled", sm90a());
  const std::string ir = to_string(f);
  // The shared array is 16 x 24 elements; the copy's index steps 64 from
  // one column of tiles to the next.
  CHECK_THAT(ir, Contains("allocate X.shared[f32 * 384] @shared") && Contains(", 4)*64)"));
  const CudaSource src = emit_cuda(f, sm90a());
  TempDir dir("kiln_storage_tile");
  CHECK(emulated_transpose_mismatches(src, dir.path, 32, 24, 5) == 0);
}

TEST_CASE("wgmma: the emulator reports warps of a warpgroup that name different tiles",
          "[gpu][wgmma][emulation][errors]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_wgmma_planted");
  const OpInstance op = build_workload("matmul:M=128,N=128,K=128,dtype=f16");
  const Config cfg = wgmma_config(op, {{"wgmma_m", {1, 2}}, {"wgmma_n", {2, 1, 8}}, {"mma_k", {4, 2}}, {"stages", 1}});
  CudaSource src = gpu_source(op, cfg, sm90a());
  // Planted: warps 0 and 1 swap their 16-row bands of A. Each warp's own
  // rows are still the ones it stores, but the GPU takes one descriptor
  // for the warpgroup, and warp 1's would point 32 rows before warp 0's.
  const std::string right = "A_shared, (C_j_outer_C_i_outer_fused * 128), 64, 1024";
  const size_t at = src.code.find(right);
  REQUIRE(at != std::string::npos);
  src.code.replace(at, right.size(), "A_shared, ((C_j_outer_C_i_outer_fused ^ 1) * 128), 64, 1024");
  const std::string err = run_emulated_and_check(op, src, dir.path, 901);
  CHECK_THAT(err, Contains("kiln_wgmma_m64n64k16_f16 (wgmma.mma_async.m64n64k16)") && Contains("of its warpgroup") &&
                      Contains("; the four warps of a warpgroup must name the same tiles (warp 4g+w's rows 16*w "
                               "after warp 4g's)"));
}

TEST_CASE("wgmma: products kept in flight across k tiles agree with the interpreter",
          "[gpu][tensorcore][wgmma][pipeline][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_wgmma_in_flight");
  struct Case {
    const char* workload;
    nlohmann::json knobs;
    std::string call;  // the async call's name and template arguments
  };
  const std::vector<Case> cases = {
      // One warpgroup of 128 columns, four k tiles in two slots, one producer warp.
      {"matmul:M=128,N=128,K=128,dtype=f16",
       {{"wgmma_m", {2, 1}}, {"wgmma_n", {1, 1, 16}}, {"mma_k", {4, 2}}, {"stages", 2}, {"producer_warps", 1}},
       "kiln_wgmma_m64n128k16_f16<0, 1, 0, 0, 1>("},
      // Four warpgroups (2 x 2), eight k tiles of 16 in three slots, two producer warps.
      {"matmul:M=128,N=128,K=128,dtype=f16",
       {{"wgmma_m", {1, 2}}, {"wgmma_n", {1, 2, 8}}, {"mma_k", {8, 1}}, {"stages", 3}, {"producer_warps", 2}},
       "kiln_wgmma_m64n64k16_f16<0, 1, 0, 0, 1>("},
      // bf16, A stored k x m, batches, bulk copies, k tiles of 16 in five slots.
      {"batch_matmul:B=2,M=64,N=64,K=96,dtype=bf16,trans_a=1",
       {{"wgmma_m", {1, 1}},
        {"wgmma_n", {1, 1, 8}},
        {"mma_k", {6, 1}},
        {"stages", 5},
        {"producer_warps", 1},
        {"bulk_copy", 1}},
       "kiln_wgmma_m64n64k16_bf16<1, 1, 0, 0, 1>("},
  };
  uint64_t seed = 1200;
  for (const Case& c : cases) {
    const OpInstance op = build_workload(c.workload);
    nlohmann::json knobs = c.knobs;
    knobs["mma_in_flight"] = 1;
    const Config cfg = wgmma_config(op, knobs);
    INFO(c.workload << " " << cfg.str());
    const std::string k = kernel_text(gpu_source(op, cfg, sm90a()));
    // Issued async; each iteration retires the one before, the last after the loop.
    CHECK_THAT(k, Contains(c.call) && Contains("kiln_wgmma_commit_wait<1>(C_warp);") &&
                      Contains("kiln_wgmma_commit_wait<0>(C_warp);"));
    CHECK(count_matches(k, R"(kiln_wgmma_commit_wait<)") == 2);
    // In the loop, the slot is released after the wait.
    CHECK(k.find("kiln_wgmma_commit_wait<1>(C_warp);") < k.find("kiln_mbarrier_arrive(kiln_empty_0"));
    CHECK(emulate_sm90a(op, cfg, dir.path, seed++) == "");
    // Without it, each call waits for its own products.
    knobs["mma_in_flight"] = 0;
    const std::string plain = kernel_text(gpu_source(op, wgmma_config(op, knobs), sm90a()));
    CHECK(plain.find("kiln_wgmma_commit_wait") == std::string::npos);
    CHECK_THAT(plain, Contains(c.call.substr(0, c.call.size() - 3) + "0>("));
  }
  // One slot: nothing can stay in flight, so the knob changes nothing.
  const OpInstance op = build_workload("matmul:M=128,N=128,K=128,dtype=f16");
  const nlohmann::json one = {{"wgmma_m", {2, 1}}, {"wgmma_n", {1, 1, 16}}, {"mma_k", {4, 2}},
                              {"stages", 1},       {"producer_warps", 1},   {"mma_in_flight", 1}};
  CHECK(kernel_text(gpu_source(op, wgmma_config(op, one), sm90a())).find("kiln_wgmma_commit_wait") ==
        std::string::npos);
}

TEST_CASE(
    "wgmma: the emulator catches a slot released while its products are in flight, and accumulators read "
    "or never retired",
    "[gpu][wgmma][pipeline][emulation][errors]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_wgmma_in_flight_planted");
  const OpInstance op = build_workload("matmul:M=128,N=128,K=128,dtype=f16");
  const Config cfg = wgmma_config(op, {{"wgmma_m", {2, 1}},
                                       {"wgmma_n", {1, 1, 16}},
                                       {"mma_k", {8, 1}},
                                       {"stages", 2},
                                       {"producer_warps", 1},
                                       {"mma_in_flight", 1}});
  const CudaSource right = gpu_source(op, cfg, sm90a());
  auto planted = [&](const std::string& what, const std::string& with, uint64_t seed) {
    CudaSource src = right;
    const size_t at = src.code.find(what);
    REQUIRE(at != std::string::npos);
    src.code.replace(at, what.size(), with);
    return run_emulated_and_check(op, src, dir.path, seed);
  };
  // No wait in the loop: slot (k - 1) % 2 is released while the products
  // that read it are still in flight, and the producer refills it.
  const std::string loop_wait = "kiln_wgmma_commit_wait<1>(C_warp);";
  CHECK_THAT(planted(loop_wait, "", 1201),
             Contains(" while a wgmma product issued by thread ") &&
                 Contains(" still reads it: the product is in flight until a kiln_wgmma_commit_wait "
                          "(wgmma.wait_group) retires it, so its slot was released, or written, too early"));
  // No wait after the loop: the epilogue reads accumulators still in flight.
  const std::string last_wait = "kiln_wgmma_commit_wait<0>(C_warp);";
  CHECK_THAT(planted(last_wait, "", 1202),
             Contains("kiln_mma_store") &&
                 Contains("touches accumulators that a wgmma product still in flight writes; retire it first "
                          "(kiln_wgmma_commit_wait, wgmma.wait_group)"));
  // ... and with no epilogue either, the products never land.
  const std::string kernel = "extern \"C\" __global__";
  CudaSource src = right;
  src.code.replace(src.code.find(last_wait), last_wait.size(), "");
  src.code.insert(src.code.find(kernel), "#define kiln_mma_store(...) ((void)0)\n");
  CHECK_THAT(run_emulated_and_check(op, src, dir.path, 1203),
             Contains("finished its block with 1 wgmma product(s) still in flight: no kiln_wgmma_commit_wait "
                      "(wgmma.wait_group) retired them, so their sums never reached the accumulators"));
}

TEST_CASE("wgmma: products in flight compile with NVRTC and ptxas for sm_90a without serialization",
          "[gpu][wgmma][pipeline][nvrtc]") {
  if (!nvrtc_available()) KILN_SKIP("NVRTC is not available");
  const CudaSource src = wgmma_4096({{"fill_vec", 8}});
  const NvrtcOutput r = nvrtc_compile(src.code, "wgmma_in_flight.cu", "sm_90a");
  CHECK(r.ptx.find("wgmma.wait_group.sync.aligned 1;") != std::string::npos);
  CHECK(r.ptx.find("wgmma.wait_group.sync.aligned 0;") != std::string::npos);
  // ptxas would wait after each product itself where the accumulators'
  // registers are touched while one is in flight ("wgmma.mma_async
  // instructions are serialized"), and say so in its log.
  INFO(r.log);
  CHECK(r.log.find("serialized") == std::string::npos);
  REQUIRE(r.resources.size() == 1);
  CHECK(r.resources[0].spill_store_bytes == 0);
}
