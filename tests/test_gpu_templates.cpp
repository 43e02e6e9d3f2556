// The cuda templates on random configs and random small shapes (1, primes,
// odd sizes), without a GPU: every kernel's CUDA C runs on the CPU through
// the emulation header and is compared with the reference interpreter, and
// compiles with NVRTC for sm_80 and sm_90 within their limits (each
// emulated config: support/gpu_check.h), as do random configs of realistic
// shapes.
#include <catch2/catch.hpp>
#include <random>

#include "support/gpu_check.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "support/test_seed.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

const std::vector<int64_t> kSizes{1, 2, 3, 5, 7, 13, 16, 31, 37, 64};

int64_t pick(std::mt19937_64& rng, const std::vector<int64_t>& v) { return v[rng() % v.size()]; }

// A random GEMM-family workload of small, awkward sizes.
std::string random_gemm_workload(std::mt19937_64& rng) {
  const int kind = static_cast<int>(rng() % 3);
  const bool bias = rng() % 2, act = rng() % 2;
  std::string epi = std::string(bias ? ",bias=1" : "") + (act ? (rng() % 2 ? ",relu=1" : ",gelu=1") : "");
  const std::string M = std::to_string(pick(rng, kSizes)), N = std::to_string(pick(rng, kSizes)),
                    K = std::to_string(pick(rng, kSizes));
  if (kind == 0)
    return "matmul:M=" + M + ",N=" + N + ",K=" + K + epi + (rng() % 2 ? ",trans_a=1" : "") +
           (rng() % 2 ? ",trans_b=1" : "");
  if (kind == 1) return "dense:N=" + M + ",IN=" + K + ",OUT=" + N + epi;
  return "batch_matmul:B=" + std::to_string(1 + rng() % 3) + ",M=" + M + ",N=" + N + ",K=" + K +
         (rng() % 2 ? ",trans_b=1" : "");
}

// The default config and `random` random configs of a workload, emulated
// and checked (and some compiled by NVRTC: support/gpu_check.h). Returns
// how many there were, launched or over the launch limits.
int check_emulated(const std::string& workload, int random, uint64_t seed, const std::string& dir) {
  const Tally t = kiln::testing::check_emulated(workload, {}, random, seed, dir);
  return t.ran + t.rejected;
}

}  // namespace

TEST_CASE("cuda gemm template: fixed awkward shapes, emulated against the interpreter", "[gpu][template][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_gpu_tmpl");
  int n = 0;
  n += check_emulated("matmul:M=1,N=7,K=13", 2, 11, dir.path);
  n += check_emulated("matmul:M=37,N=45,K=19,bias=1,relu=1", 3, 12, dir.path);
  n += check_emulated("matmul:M=64,N=64,K=32,trans_a=1,gelu=1", 2, 13, dir.path);
  n += check_emulated("matmul:M=17,N=32,K=5,trans_b=1,bias=1", 2, 14, dir.path);
  n += check_emulated("dense:N=3,IN=29,OUT=31,bias=1", 2, 15, dir.path);
  n += check_emulated("batch_matmul:B=3,M=9,N=11,K=16,trans_b=1", 2, 16, dir.path);
  CHECK(n == 19);
}

TEST_CASE("cuda gemm template: warp tiles cut the thread grid into warps, emulated against the interpreter",
          "[gpu][template][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  // 16 x 16 threads: warps 8 lanes wide are 4 x 8 lanes, 4 x 2 of them; the
  // lane is threadIdx.x, the warp threadIdx.y.
  OpInstance op = build_workload("matmul:M=64,N=64,K=16,bias=1");
  const GpuTemplate& t = find_op(op.op).gpu;
  auto space = t.define_space(op, gpu);
  Config cfg = space->from_json_string(R"({"tile_y":[1,16,4],"tile_x":[1,16,4],"tile_k":[2,8],"shared":"both",)"
                                       R"("vec":4,"pad":0,"unroll_k":"unroll","warp_cols":8})");
  const CudaSource src = gpu_source(op, cfg, gpu);
  REQUIRE(src.launches.size() == 1);
  CHECK(src.launches[0].block == std::array<int64_t, 3>{{32, 8, 1}});
  // Without the knob (a config stored before it existed) the grid stays row-major.
  Config plain = space->from_json_string(R"({"tile_y":[1,16,4],"tile_x":[1,16,4],"tile_k":[2,8],"shared":"both",)"
                                         R"("vec":4,"pad":0,"unroll_k":"unroll"})");
  CHECK(plain.choice("warp_cols") == 0);
  CHECK(gpu_source(op, plain, gpu).launches[0].block == std::array<int64_t, 3>{{16, 16, 1}});
  // Every warp width on awkward shapes, tails included.
  TempDir dir("kiln_gpu_warps");
  int n = 0;
  const std::vector<int64_t> widths{1, 2, 4, 8, 16, 32};
  for (size_t i = 0; i < widths.size(); ++i) {
    const bool mm = i % 2 == 0;
    const std::string w = mm ? "matmul:M=37,N=45,K=19,bias=1,relu=1" : "batch_matmul:B=2,M=9,N=33,K=16,trans_b=1";
    const std::string c =
        std::string(mm ? R"({"tile_y":[3,8,2],"tile_x":[3,16,1],"tile_k":[3,8],)"
                       : R"({"tile_y":[2,4,2],"tile_x":[3,8,2],"tile_k":[2,8],)") +
        R"("shared":"both","vec":1,"pad":1,"unroll_k":"none","warp_cols":)" + std::to_string(widths[i]) + "}";
    n += check_emulated(w, {c}, 0, 40 + i, dir.path).ran;
  }
  CHECK(n >= 6);
}

TEST_CASE("cuda gemm template: random shapes and configs, emulated against the interpreter",
          "[gpu][template][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_gpu_rand");
  const EmulatedNvrtcCounts nvrtc_before = emulated_nvrtc_counts();
  const uint64_t run = run_seed();
  INFO(seed_note(run));
  std::mt19937_64 rng(run);
  for (int i = 0; i < 6; ++i) check_emulated(random_gemm_workload(rng), 1, run + static_cast<uint64_t>(i), dir.path);
  check_nvrtc_covered(nvrtc_before);  // and NVRTC compiled each for sm_80 and sm_90
}

TEST_CASE("cuda gemm template: a longer random sweep", "[gpu][template][emulation][.slow]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_gpu_sweep");
  const uint64_t run = run_seed();
  INFO(seed_note(run));
  std::mt19937_64 rng(run + 7);
  for (int i = 0; i < 40; ++i) check_emulated(random_gemm_workload(rng), 2, run + static_cast<uint64_t>(i), dir.path);
}

TEST_CASE("cuda gemm template: NVRTC compiles random configs for sm_80 and sm_90 within limits",
          "[gpu][template][nvrtc]") {
  std::string why;
  if (!nvrtc_available(&why)) KILN_SKIP("NVRTC is not available: " << why);
  const uint64_t run = run_seed();
  INFO(seed_note(run));
  std::mt19937_64 rng(run);
  int compiled = 0;
  for (const char* arch : {"sm_80", "sm_90"}) {
    const GpuLimits gpu = gpu_limits_for_arch(arch);
    for (const std::string w : {"matmul:M=1024,N=1024,K=1024,bias=1,gelu=1", "matmul:M=37,N=45,K=19,trans_a=1",
                                "dense:N=16,IN=768,OUT=3072,bias=1", "batch_matmul:B=12,M=128,N=128,K=64,trans_b=1"}) {
      OpInstance op = build_workload(w);
      const GpuTemplate& t = find_op(op.op).gpu;
      auto space = t.define_space(op, gpu);
      for (int c = 0; c < 3; ++c) {
        Config cfg = c == 0 ? t.default_config(op, gpu, *space) : space->random(rng);
        std::string err;
        try {
          err = compile_for_gpu(gpu_source(op, cfg, gpu), gpu,
                                c == 0 ? kDefaultConfigSpillBytes : kRandomConfigSpillBytes);
          ++compiled;
        } catch (const UserError& e) {
          err = std::string(e.what()).find("allows at most") != std::string::npos ? "" : e.what();
        }
        INFO(arch << " " << w << " config " << cfg.str());
        CHECK(err == "");
      }
    }
  }
  CHECK(compiled > 0);
}

TEST_CASE("cuda gemm template: more row blocks or batches than blockIdx.y and .z allow fold into blockIdx.x",
          "[gpu][template][emulation]") {
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  // M = 20000000 rows: even 256 rows per block make 78125 blocks, over y's
  // 65535, so the default config folds.
  {
    OpInstance op = build_workload("matmul:M=20000000,N=1,K=1");
    const GpuTemplate& t = find_op(op.op).gpu;
    auto space = t.define_space(op, gpu);
    CudaSource src;
    REQUIRE_NOTHROW(src = gpu_source(op, t.default_config(op, gpu, *space), gpu));
    CHECK(src.launches.at(0).grid[1] == 1);
    CHECK(src.launches.at(0).grid[0] > kGpuMaxGridYZ);
  }
  // M = 1000000: every row split of the space lowers to a launchable grid;
  // those of more than 65535 blocks use blockIdx.x alone, the others keep
  // the rows on blockIdx.y.
  OpInstance tall = build_workload("matmul:M=1000000,N=1,K=1");
  const GpuTemplate& t = find_op(tall.op).gpu;
  auto space = t.define_space(tall, gpu);
  const Config def = t.default_config(tall, gpu, *space);
  int folded = 0, unfolded = 0;
  for (const auto& rows : space->knob("tile_y").options) {
    nlohmann::json j = def.to_json();
    j["tile_y"] = rows;
    const Config cfg = space->from_json(j);
    INFO("config " << cfg.str());
    CudaSource src;
    REQUIRE_NOTHROW(src = gpu_source(tall, cfg, gpu));
    REQUIRE(src.launches.size() == 1);
    const auto& grid = src.launches[0].grid;
    CHECK(grid[0] * grid[1] * grid[2] == rows[0]);
    CHECK(grid[1] <= kGpuMaxGridYZ);
    if (rows[0] > kGpuMaxGridYZ) {
      CHECK(grid == std::array<int64_t, 3>{{rows[0], 1, 1}});
      ++folded;
    } else {
      CHECK(grid == std::array<int64_t, 3>{{1, rows[0], 1}});
      ++unfolded;
    }
  }
  CHECK(folded > 0);
  CHECK(unfolded > 0);
  // 65536 batches: every config folds the batch into blockIdx.x.
  OpInstance wide = build_workload("batch_matmul:B=65536,M=1,N=1,K=1");
  auto wide_space = find_op(wide.op).gpu.define_space(wide, gpu);
  std::mt19937_64 rng(5);
  for (int c = 0; c < 16; ++c) {
    const Config cfg = wide_space->random(rng);
    INFO("config " << cfg.str());
    CudaSource src;
    REQUIRE_NOTHROW(src = gpu_source(wide, cfg, gpu));
    CHECK(src.launches.at(0).grid == std::array<int64_t, 3>{{65536, 1, 1}});
  }
}

TEST_CASE("cuda gemm template: grids folded into blockIdx.x, emulated against the interpreter",
          "[gpu][template][emulation]") {
  // Cheap: N = K = 1, one or two threads per block.
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_gpu_fold");
  const std::string one_row = R"({"tile_y":[70001,1,1],"tile_x":[1,1,1],"tile_k":[1,1],"shared":"both",)"
                              R"("vec":1,"pad":0,"unroll_k":"none","warp_cols":0})";
  const std::string warps = R"({"tile_y":[70001,1,1],"tile_x":[1,1,1],"tile_k":[1,1],"shared":"a",)"
                            R"("vec":4,"pad":1,"unroll_k":"unroll","warp_cols":8})";
  Tally tally = check_emulated("matmul:M=70001,N=1,K=1,bias=1,relu=1", {one_row, warps}, 0, 61, dir.path);
  tally.add(check_emulated("batch_matmul:B=65536,M=1,N=1,K=1", {}, 1, 62, dir.path));
  tally.add(check_emulated("batch_matmul:B=65537,M=2,N=1,K=1,trans_a=1",
                           {R"({"tile_y":[2,1,1],"tile_x":[1,1,1],"tile_k":[1,1],"shared":"b","vec":1,"pad":4,)"
                            R"("unroll_k":"none","warp_cols":0})"},
                           0, 63, dir.path));
  CHECK(tally.ran == 7);  // every config launched: none over the grid's limits
  CHECK(tally.rejected == 0);
}

TEST_CASE("compile_for_gpu checks ptxas's spills against the bound it is given", "[gpu][nvrtc]") {
  std::string why;
  if (!nvrtc_available(&why)) KILN_SKIP("NVRTC is not available: " << why);
  // 128 live floats per thread, with __launch_bounds__(1024) leaving each
  // thread 64 registers: ptxas must spill.
  CudaSource src;
  src.function = "spills";
  src.code = R"(
extern "C" __global__ void __launch_bounds__(1024) spills_kernel0(const float* in, float* out) {
  float acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = in[threadIdx.x * 128 + i];
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = acc[i] * acc[(i + r + 1) % 128] + 1.0f;
  float s = 0;
#pragma unroll
  for (int i = 0; i < 128; ++i) s += acc[i] * (i + 1);
  out[threadIdx.x] = s;
}
)";
  src.launches.resize(1);
  src.launches[0].kernel = "spills_kernel0";
  src.launches[0].block = {1024, 1, 1};
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  CHECK_THAT(compile_for_gpu(src, gpu, kDefaultConfigSpillBytes),
             Catch::Contains("spills_kernel0: ") && Catch::Contains("bytes of spill stores") &&
                 Catch::Contains("over the bound of 64 (64 registers)"));
  CHECK(compile_for_gpu(src, gpu, int64_t{1} << 20) == "");
}
