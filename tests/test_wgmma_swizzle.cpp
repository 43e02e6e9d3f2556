// wgmma on 128-byte swizzled operands (the GEMM template's swizzle knob,
// Stage::storage_swizzle): emulated against the interpreter for each
// operand layout, plain, pipelined, warp-specialized and with products in
// flight, filled by cp.async or by tensor copies that land swizzled; the
// shared memory plan's 1024-byte alignment; the emulator's reports of a
// misplaced or misread swizzled operand and of a swizzled tensor copy out
// of place; and NVRTC with ptxas for sm_90a.
#include <catch2/catch.hpp>
#include <regex>

#include "base/error.h"
#include "support/gpu_check.h"
#include "support/mma_config.h"
#include "support/skip.h"
#include "support/temp_dir.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Matchers::Contains;

namespace {

// The tensor maps the kernels take, as describe() writes them, in order.
std::string tensor_maps(const CudaSource& src) {
  std::string out;
  for (const CudaKernelLaunch& l : src.launches)
    for (const CudaKernelLaunch::Param& p : l.params)
      if (p.tensor_map.rank > 0) out += (out.empty() ? "" : "; ") + rt::cuda::describe(p.tensor_map);
  return out;
}

// The byte offsets of the kernel's shared arrays carved out of a pool.
std::vector<int64_t> pool_offsets(const std::string& kernel, const std::string& array) {
  std::vector<int64_t> offsets;
  const std::regex at("SHARED(_AT)?\\([^,]+, " + array + ", [0-9]+, ([0-9]+)\\)");
  for (std::sregex_iterator it(kernel.begin(), kernel.end(), at), end; it != end; ++it)
    offsets.push_back(std::stoll((*it)[2].str()));
  return offsets;
}

}  // namespace

TEST_CASE("wgmma swizzle: swizzled operands agree with the interpreter in every layout and pipeline",
          "[gpu][tensorcore][wgmma][swizzle][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_wgmma_swizzle");
  struct Case {
    const char* workload;
    nlohmann::json knobs;
    const char* call;  // the prelude call: <AMn, BMn, ASw, BSw, Async>
    const char* maps;  // the tensor maps, when the fills are tensor copies
  };
  const std::vector<Case> cases = {
      // k tiles of 64: A's rows (k) and B's rows (n) are whole strips.
      {"matmul:M=128,N=128,K=128,dtype=f16",
       {{"wgmma_m", {1, 2}}, {"wgmma_n", {2, 1, 8}}, {"mma_k", {2, 4}}, {"stages", 1}},
       "kiln_wgmma_m64n64k16_f16<0, 1, 1, 1, 0>(",
       ""},
      // k tiles of 32: A's rows of 64 bytes keep the 8 x 8 tiles, B swizzles.
      {"matmul:M=128,N=128,K=128,dtype=f16",
       {{"wgmma_m", {1, 2}}, {"wgmma_n", {2, 1, 8}}, {"mma_k", {4, 2}}, {"stages", 2}},
       "kiln_wgmma_m64n64k16_f16<0, 1, 0, 1, 0>(",
       ""},
      // Three slots, a producer warp, 128 columns (B's rows two strips),
      // one k tile's products in flight.
      {"matmul:M=128,N=128,K=192,dtype=f16",
       {{"wgmma_m", {2, 1}},
        {"wgmma_n", {1, 1, 16}},
        {"mma_k", {3, 4}},
        {"stages", 3},
        {"producer_warps", 1},
        {"mma_in_flight", 1}},
       "kiln_wgmma_m64n128k16_f16<0, 1, 1, 1, 1>(",
       ""},
      // Two slots filled by tensor copies that land swizzled: A's and B's
      // 64 x 64 tiles each one strip, one box.
      {"matmul:M=128,N=128,K=128,dtype=f16",
       {{"wgmma_m", {2, 1}},
        {"wgmma_n", {2, 1, 8}},
        {"mma_k", {2, 4}},
        {"stages", 2},
        {"producer_warps", 1},
        {"bulk_copy", 2},
        {"fill_vec", 8}},
       "kiln_wgmma_m64n64k16_f16<0, 1, 1, 1, 0>(",
       "2-D map of 128 x 128 2-byte elements, box 64 x 64, 128-byte swizzle; "
       "2-D map of 128 x 128 2-byte elements, box 64 x 64, 128-byte swizzle"},
      // Tensor copies into three slots with products in flight: B's rows of
      // 256 columns are four strips, a 3-D box (the tile's 64 rows 256
      // elements apart in the source, its strips 64); bf16.
      {"matmul:M=128,N=256,K=192,dtype=bf16",
       {{"wgmma_m", {2, 1}},
        {"wgmma_n", {1, 1, 32}},
        {"mma_k", {3, 4}},
        {"stages", 3},
        {"producer_warps", 1},
        {"mma_in_flight", 1},
        {"bulk_copy", 2},
        {"fill_vec", 8}},
       "kiln_wgmma_m64n256k16_bf16<0, 1, 1, 1, 1>(",
       "2-D map of 192 x 128 2-byte elements, box 64 x 64, 128-byte swizzle; "
       "3-D map of 64 x 192 x 4 2-byte elements, box 64 x 64 x 4, 128-byte swizzle"},
      // A stored k x m (MN-major, m along the rows), batched, bf16.
      {"batch_matmul:B=2,M=64,N=64,K=64,dtype=bf16,trans_a=1",
       {{"wgmma_m", {1, 1}}, {"wgmma_n", {1, 1, 8}}, {"mma_k", {1, 4}}, {"stages", 1}},
       "kiln_wgmma_m64n64k16_bf16<1, 1, 1, 1, 0>(",
       ""},
      // B stored n x k (K-major), 128 columns in one warpgroup.
      {"batch_matmul:B=1,M=64,N=128,K=128,dtype=f16,trans_b=1",
       {{"wgmma_m", {1, 1}}, {"wgmma_n", {1, 1, 16}}, {"mma_k", {2, 4}}, {"stages", 2}},
       "kiln_wgmma_m64n128k16_f16<0, 0, 1, 1, 0>(",
       ""},
  };
  uint64_t seed = 900;
  for (const Case& c : cases) {
    const OpInstance op = build_workload(c.workload);
    nlohmann::json knobs = c.knobs;
    knobs["swizzle"] = 1;
    const Config cfg = wgmma_config(op, knobs);
    INFO(c.workload << " " << cfg.str());
    const CudaSource src = gpu_source(op, cfg, sm90a());
    const std::string k = kernel_text(src);
    CHECK_THAT(k, Contains(c.call));
    CHECK(tensor_maps(src) == c.maps);
    CHECK((k.find("kiln_tensor_copy_") != std::string::npos) == (*c.maps != 0));
    if (*c.maps) CHECK(k.find("kiln_cp_async<") == std::string::npos);
    // The swizzled arrays sit 1024-byte aligned in a pool that starts so.
    CHECK(std::regex_search(k, std::regex(R"(KILN_(DYNAMIC_)?SHARED_POOL\(([0-9]+, )?1024\);)")));
    for (const char* array : {"A_shared", "B_shared"}) {
      const std::vector<int64_t> at = pool_offsets(k, array);
      REQUIRE(at.size() == 1);
      CHECK(at[0] % 1024 == 0);
    }
    CHECK(emulation_problem(op, src, dir.path, seed++) == "");
  }
}

TEST_CASE("wgmma swizzle: the emulator reports a swizzled operand out of place or read as tiles",
          "[gpu][wgmma][swizzle][emulation][errors]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_wgmma_swizzle_planted");
  const OpInstance op = build_workload("matmul:M=128,N=128,K=128,dtype=f16");
  const Config cfg =
      wgmma_config(op, {{"wgmma_m", {1, 2}}, {"wgmma_n", {2, 1, 8}}, {"mma_k", {2, 4}}, {"stages", 1}, {"swizzle", 1}});
  const CudaSource src = gpu_source(op, cfg, sm90a());
  REQUIRE(emulation_problem(op, src, dir.path, 950) == "");
  // Planted: A in an array of its own (only 16-byte aligned on the GPU).
  CudaSource own = src;
  own.code = std::regex_replace(src.code, std::regex(R"(KILN_SHARED_AT\((\w+), A_shared, ([0-9]+), [0-9]+\))"),
                                "KILN_SHARED($1, A_shared, $2)");
  REQUIRE(own.code != src.code);
  CHECK_THAT(emulation_problem(op, own, dir.path, 951),
             Contains("A is stored swizzled in an array of its own, which is only 16-byte aligned; the swizzle "
                      "needs its array 1024-byte aligned in the block's shared memory"));
  // Planted: B half an atom off its boundary.
  CudaSource off = src;
  const std::smatch m = [&] {
    std::smatch r;
    std::regex_search(src.code, r, std::regex(R"(KILN_SHARED_AT\((\w+), B_shared, ([0-9]+), ([0-9]+)\))"));
    return r;
  }();
  REQUIRE(m.size() == 4);
  off.code =
      std::regex_replace(src.code, std::regex(R"(KILN_SHARED_AT\((\w+), B_shared, ([0-9]+), ([0-9]+)\))"),
                         "KILN_SHARED_AT($1, B_shared, $2, " + std::to_string(std::stoll(m[3].str()) + 512) + ")");
  CHECK_THAT(
      emulation_problem(op, off, dir.path, 952),
      Contains("B is stored swizzled and its tiles start at byte " + std::to_string(std::stoll(m[3].str()) + 512) +
               " of the block's shared memory, not at a 1024-byte boundary"));
  // Planted: A read as 8 x 8 tiles while stored swizzled: the descriptor
  // names other elements, and the product is wrong.
  CudaSource tiles = src;
  tiles.code = std::regex_replace(src.code, std::regex(R"(k16_f16<0, 1, 1, 1, 0>\()"), "k16_f16<0, 1, 0, 1, 0>(");
  REQUIRE(tiles.code != src.code);
  const std::string wrong = emulation_problem(op, tiles, dir.path, 953);
  CHECK(wrong != "");
  CHECK(wrong.find("exception") == std::string::npos);
}

TEST_CASE("wgmma swizzle: the emulator reports a swizzled tensor copy out of place or landing unswizzled",
          "[gpu][wgmma][swizzle][tensor_copy][emulation][errors]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_wgmma_swizzle_tma_planted");
  const OpInstance op = build_workload("matmul:M=128,N=128,K=128,dtype=f16");
  const Config cfg = wgmma_config(op, {{"wgmma_m", {2, 1}},
                                       {"wgmma_n", {2, 1, 8}},
                                       {"mma_k", {2, 4}},
                                       {"stages", 2},
                                       {"producer_warps", 1},
                                       {"bulk_copy", 2},
                                       {"fill_vec", 8},
                                       {"swizzle", 1}});
  const CudaSource src = gpu_source(op, cfg, sm90a());
  REQUIRE(tensor_maps(src).find("128-byte swizzle") != std::string::npos);
  REQUIRE(emulation_problem(op, src, dir.path, 960) == "");
  // Planted: A's slots 512 bytes past their place, still 128-byte aligned.
  const std::regex a_at(R"(KILN_SHARED_AT\((\w+), A_shared, ([0-9]+), ([0-9]+)\))");
  std::smatch m;
  REQUIRE(std::regex_search(src.code, m, a_at));
  const int64_t moved = std::stoll(m[3].str()) + 512;
  CudaSource off = src;
  off.code = std::regex_replace(src.code, a_at, "KILN_SHARED_AT($1, A_shared, $2, " + std::to_string(moved) + ")");
  CHECK_THAT(emulation_problem(op, off, dir.path, 961),
             Contains("issues a tensor copy into A_shared[") &&
                 Contains("through a 128-byte swizzled tensor map at byte " + std::to_string(moved) +
                          " of the block's shared memory, not at a 1024-byte boundary where the swizzle's pattern "
                          "starts"));
  // Planted: the maps encoded without the swizzle. The tiles land row
  // after row, wgmma reads them swizzled, and the product is wrong.
  CudaSource plain = src;
  for (CudaKernelLaunch& l : plain.launches)
    for (CudaKernelLaunch::Param& p : l.params) p.tensor_map.swizzle = 0;
  const std::string wrong = emulation_problem(op, plain, dir.path, 962);
  CHECK(wrong != "");
  CHECK(wrong.find("exception") == std::string::npos);
}

TEST_CASE("wgmma swizzle: the swizzled 4096^3 GEMM compiles with NVRTC and ptxas for sm_90a",
          "[gpu][wgmma][swizzle][nvrtc]") {
  if (!nvrtc_available()) KILN_SKIP("NVRTC is not available");
  const OpInstance op = build_workload("matmul:M=4096,N=4096,K=4096,dtype=f16");
  // 128 x 256 blocks of two warpgroups, k tiles of 64 in four slots filled
  // by one producer warp, one k tile's products in flight: 192 KiB of
  // dynamic shared memory, 1024-byte aligned.
  const Config cfg = wgmma_config(op, {{"wgmma_m", {32, 2}},
                                       {"wgmma_n", {16, 1, 32}},
                                       {"mma_k", {64, 4}},
                                       {"stages", 4},
                                       {"producer_warps", 1},
                                       {"mma_in_flight", 1},
                                       {"fill_vec", 8},
                                       {"swizzle", 1}});
  const CudaSource src = gpu_source(op, cfg, sm90a());
  CHECK_THAT(kernel_text(src),
             Contains("KILN_DYNAMIC_SHARED_POOL(1024);") && Contains("kiln_wgmma_m64n256k16_f16<0, 1, 1, 1, 1>("));
  CHECK(compile_for_gpu(src, sm90a(), kDefaultConfigSpillBytes) == "");
  const NvrtcOutput r = nvrtc_compile(src.code, "wgmma_swizzle.cu", "sm_90a");
  CHECK(count_matches(r.ptx, R"(wgmma\.mma_async\.sync\.aligned\.m64n256k16\.f32\.f16\.f16)") >= 1);
  CHECK(r.ptx.find("cp.async.cg.shared.global") != std::string::npos);
  REQUIRE(r.resources.size() == 1);
  UNSCOPED_INFO("kiln-test-note: swizzled wgmma 4096^3, 128 x 256 blocks: "
                << r.resources[0].registers << " registers, " << r.resources[0].spill_store_bytes
                << " bytes of spill stores");

  // The same with tensor copies: every fill is one TMA copy of a box that
  // lands swizzled (A's 128 x 64 tile; B's 64 x 256, four strips).
  const Config tma = wgmma_config(op, {{"wgmma_m", {32, 2}},
                                       {"wgmma_n", {16, 1, 32}},
                                       {"mma_k", {64, 4}},
                                       {"stages", 4},
                                       {"producer_warps", 1},
                                       {"mma_in_flight", 1},
                                       {"bulk_copy", 2},
                                       {"fill_vec", 8},
                                       {"swizzle", 1}});
  const CudaSource tsrc = gpu_source(op, tma, sm90a());
  CHECK(tensor_maps(tsrc) ==
        "2-D map of 4096 x 4096 2-byte elements, box 64 x 128, 128-byte swizzle; "
        "3-D map of 64 x 4096 x 64 2-byte elements, box 64 x 64 x 4, 128-byte swizzle");
  CHECK(compile_for_gpu(tsrc, sm90a(), kDefaultConfigSpillBytes) == "");
  const NvrtcOutput t = nvrtc_compile(tsrc.code, "wgmma_swizzle_tma.cu", "sm_90a");
  CHECK(count_matches(t.ptx, R"(cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global)") >= 1);
  CHECK(count_matches(t.ptx, R"(cp\.async\.bulk\.tensor\.3d\.shared::cluster\.global)") >= 1);
  CHECK(t.ptx.find("cp.async.cg.shared.global") == std::string::npos);
  CHECK(count_matches(t.ptx, R"(wgmma\.mma_async\.sync\.aligned\.m64n256k16\.f32\.f16\.f16)") >= 1);
}
