// NVRTC through dlopen (codegen/nvrtc.h): the ptxas -v log parser on fixed
// text, architecture and compile errors, and real compiles for several
// architectures. Compiling needs libnvrtc (no GPU); without it those cases are
// skipped.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "codegen/nvrtc.h"
#include "support/scoped_env.h"
#include "support/skip.h"

using namespace kiln;
using Catch::Matchers::Contains;
using kiln::testing::ScopedEnv;

namespace {

// A block-wide sum through a __shared__ tile of TILE floats (TILE * 4 bytes of static shared memory).
const char* kTileSum = R"(
#ifndef TILE
#define TILE 256
#endif
extern "C" __global__ void tile_sum(const float* in, float* out) {
  __shared__ float tile[TILE];
  tile[threadIdx.x] = in[blockIdx.x * TILE + threadIdx.x];
  __syncthreads();
  for (int stride = TILE / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) tile[threadIdx.x] += tile[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = tile[0];
}
)";

bool supports(int arch) {
  std::vector<int> archs = nvrtc_supported_archs();
  return archs.empty() || std::find(archs.begin(), archs.end(), arch) != archs.end();
}

}  // namespace

TEST_CASE("ptxas info lines parse into per-kernel resources", "[codegen][nvrtc]") {
  // Two entry functions (the second spills, the third reports nothing but its name), a device function's
  // properties that belong to no kernel, module-level lines and other noise, CRLF line ends.
  const std::string log =
      "ptxas warning : For profile sm_90a adjusting per thread register count of 16 to lower bound of 24\n"
      "ptxas info    : Overriding maximum register limit 256 for 'k1' with  24 of maxrregcount option\n"
      "ptxas info    : 0 bytes gmem, 256 bytes cmem[3]\n"
      "ptxas info    : Compiling entry function 'k1' for 'sm_90a'\n"
      "ptxas info    : Function properties for k1\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 14 registers, used 1 barriers, 1024 bytes smem, 368 bytes cmem[0], 8 bytes cmem[2]\n"
      "ptxas info    : Compile time = 1.327 ms\n"
      "ptxas info    : Compiling entry function '_Z7mangledPfi' for 'sm_90a'\r\n"
      "ptxas info    : Function properties for _Z7mangledPfi\r\n"
      "ptxas         .     224 bytes stack frame, 412 bytes spill stores, 416 bytes spill loads\r\n"
      "ptxas info    : Used 24 registers, used 0 barriers, 224 bytes cumulative stack size\r\n"
      "ptxas info    : Function properties for _Z6helperPKfi\n"
      "ptxas         .     96 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Compiling entry function 'bare' for 'sm_80'\n"
      "something else entirely\n";
  std::vector<CudaKernelResources> ks = parse_ptxas_info(log);
  REQUIRE(ks.size() == 3);

  CHECK(ks[0].kernel == "k1");
  CHECK(ks[0].registers == 14);
  CHECK(ks[0].barriers == 1);
  CHECK(ks[0].shared_bytes == 1024);
  CHECK(ks[0].constant_bytes == 368);
  CHECK(ks[0].stack_bytes == 0);
  CHECK(ks[0].spill_store_bytes == 0);

  CHECK(ks[1].kernel == "_Z7mangledPfi");
  CHECK(ks[1].registers == 24);
  CHECK(ks[1].barriers == 0);
  CHECK(ks[1].stack_bytes == 224);  // the helper's 96 bytes are not the kernel's
  CHECK(ks[1].spill_store_bytes == 412);
  CHECK(ks[1].spill_load_bytes == 416);
  CHECK(ks[1].shared_bytes == 0);
  CHECK(ks[1].constant_bytes == 0);

  CHECK(ks[2].kernel == "bare");
  CHECK(ks[2].registers == 0);
  CHECK(ks[2].stack_bytes == 0);

  // Older ptxas: no barriers, properties indented without a prefix.
  ks = parse_ptxas_info(
      "ptxas info    : Compiling entry function 'old' for 'sm_70'\n"
      "ptxas info    : Function properties for old\n"
      "    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 32 registers, 4096 bytes smem, 352 bytes cmem[0]\n");
  REQUIRE(ks.size() == 1);
  CHECK(ks[0].registers == 32);
  CHECK(ks[0].barriers == 0);
  CHECK(ks[0].shared_bytes == 4096);
  CHECK(ks[0].constant_bytes == 352);
  CHECK(ks[0].stack_bytes == 16);
  CHECK(ks[0].spill_store_bytes == 8);
  CHECK(ks[0].spill_load_bytes == 12);

  CHECK(parse_ptxas_info("").empty());
  CHECK(parse_ptxas_info("x.cu(2): error: expected an expression\n").empty());
}

TEST_CASE("an invalid CUDA architecture is a user error naming it", "[codegen][nvrtc]") {
  // Checked before NVRTC is loaded: runs without the CUDA toolkit.
  for (const char* arch : {"sm_x", "compute_90", "", "sm_", "sm_a", "90", "sm_90b", "SM_90"}) {
    CAPTURE(arch);
    REQUIRE_THROWS_AS(nvrtc_compile(kTileSum, "tile_sum.cu", arch), UserError);
    REQUIRE_THROWS_WITH(nvrtc_compile(kTileSum, "tile_sum.cu", arch),
                        Contains("invalid CUDA architecture \"" + std::string(arch) + "\""));
  }
}

TEST_CASE("NVRTC is loaded once and KILN_NVRTC is the only path searched when set", "[codegen][nvrtc]") {
  std::string why;
  bool available = nvrtc_available(&why);
  if (!available) CHECK_THAT(why, Contains("libnvrtc.so"));
  if (!std::getenv("KILN_NVRTC")) CHECK(nvrtc_search_paths().size() > 1);
  {
    // No quiet fallback to another NVRTC (tests/cli_gpu.sh checks the
    // message, which needs a fresh process).
    ScopedEnv env("KILN_NVRTC", "/nonexistent/libnvrtc.so");
    CHECK(nvrtc_search_paths() == std::vector<std::string>{"/nonexistent/libnvrtc.so"});
    CHECK(nvrtc_available() == available);  // the library already loaded (or not) stays so
  }
  CHECK(nvrtc_search_paths().front() != "/nonexistent/libnvrtc.so");
  if (available) {
    auto [major, minor] = nvrtc_version();
    CHECK(major >= 11);
    CHECK(minor >= 0);
  } else {
    REQUIRE_THROWS_AS(nvrtc_version(), UserError);
    REQUIRE_THROWS_WITH(nvrtc_version(), Contains("KILN_NVRTC") && Contains("libnvrtc.so from the CUDA toolkit"));
  }
}

TEST_CASE("NVRTC compiles a shared-memory kernel for several architectures", "[codegen][nvrtc]") {
  std::string why;
  if (!nvrtc_available(&why)) KILN_SKIP("NVRTC not found: " << why);
  for (const char* arch : {"sm_70", "sm_72", "sm_80", "sm_87", "sm_90", "sm_90a"}) {
    CAPTURE(arch);
    int number = std::stoi(std::string(arch).substr(3, 2));
    if (!supports(number)) {  // CUDA 13 dropped Volta (sm_70, sm_72)
      auto [major, minor] = nvrtc_version();
      WARN("NVRTC " << major << "." << minor << " does not support " << arch);
      REQUIRE_THROWS_WITH(nvrtc_compile(kTileSum, "tile_sum.cu", arch),
                          Contains("does not support " + std::string(arch)) && Contains("sm_80"));
      continue;
    }
    NvrtcOutput out = nvrtc_compile(kTileSum, "tile_sum.cu", arch);
    REQUIRE(out.cubin.size() > 4);
    CHECK(out.cubin[0] == 0x7f);
    CHECK(std::string(out.cubin.begin() + 1, out.cubin.begin() + 4) == "ELF");
    CHECK_THAT(out.ptx, Contains(".entry tile_sum"));
    CHECK_THAT(out.ptx, Contains(".target " + std::string(arch)));
    CHECK(out.ptx.find('\0') == std::string::npos);
    CHECK_THAT(out.log, Contains("Compiling entry function 'tile_sum' for '" + std::string(arch) + "'"));
    CHECK(out.compile_ms > 0);
    REQUIRE(out.resources.size() == 1);
    const CudaKernelResources& k = out.resources[0];
    CHECK(k.kernel == "tile_sum");
    CHECK(k.registers > 0);
    CHECK(k.shared_bytes == 256 * 4);
    CHECK(k.barriers >= 1);
    CHECK(k.spill_store_bytes == 0);
    CHECK(k.stack_bytes == 0);
  }
}

TEST_CASE("NVRTC passes extra options and finds cuda_fp16.h and cuda_bf16.h", "[codegen][nvrtc]") {
  std::string why;
  if (!nvrtc_available(&why)) KILN_SKIP("NVRTC not found: " << why);
  NvrtcOutput out = nvrtc_compile(kTileSum, "tile_sum.cu", "sm_80", {"-DTILE=128"});
  REQUIRE(out.resources.size() == 1);
  CHECK(out.resources[0].shared_bytes == 128 * 4);

  const std::string halves = R"(
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void to_half(const float* in, __half* h, __nv_bfloat16* b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  h[i] = __float2half(in[i]);
  b[i] = __float2bfloat16(in[i]);
}
__global__ void second(float* a) { a[threadIdx.x] *= 2.0f; }
)";
  out = nvrtc_compile(halves, "halves.cu", "sm_80");
  REQUIRE(out.resources.size() == 2);
  CHECK((out.resources[0].kernel == "to_half" || out.resources[1].kernel == "to_half"));
  CHECK_THAT(out.ptx, Contains(".entry to_half"));
  CHECK(!out.cubin.empty());
}

TEST_CASE("ptxas spills are reported for a register-starved kernel", "[codegen][nvrtc]") {
  std::string why;
  if (!nvrtc_available(&why)) KILN_SKIP("NVRTC not found: " << why);
  const std::string spill = R"(
__global__ void starved(float* a, int n) {
  float acc[48];
#pragma unroll
  for (int j = 0; j < 48; ++j) acc[j] = a[j * n + threadIdx.x];
  for (int it = 0; it < n; ++it) {
#pragma unroll
    for (int j = 0; j < 48; ++j) acc[j] = acc[j] * acc[(j + 1) % 48] + 1.0f;
  }
  float s = 0;
#pragma unroll
  for (int j = 0; j < 48; ++j) s += acc[j];
  a[threadIdx.x] = s;
}
)";
  NvrtcOutput out = nvrtc_compile(spill, "starved.cu", "sm_80", {"--maxrregcount=24"});
  REQUIRE(out.resources.size() == 1);
  const CudaKernelResources& k = out.resources[0];
  CHECK(k.kernel == "_Z7starvedPfi");
  CHECK(k.registers <= 24);
  CHECK(k.spill_store_bytes > 0);
  CHECK(k.spill_load_bytes > 0);
  CHECK(k.stack_bytes > 0);
}

TEST_CASE("a CUDA syntax error is a user error with NVRTC's log", "[codegen][nvrtc]") {
  std::string why;
  if (!nvrtc_available(&why)) KILN_SKIP("NVRTC not found: " << why);
  const std::string broken = "extern \"C\" __global__ void broken(float* a) {\n  int x = ;\n  a[0] = x;\n}\n";
  try {
    nvrtc_compile(broken, "broken.cu", "sm_80");
    FAIL("a syntax error compiled");
  } catch (const UserError& e) {
    std::string msg = e.what();
    CHECK_THAT(msg, Contains("NVRTC could not compile broken.cu for sm_80:\n"));
    CHECK_THAT(msg, Contains("broken.cu(2): error: expected an expression"));
  }
  // An option NVRTC rejects is reported the same way.
  REQUIRE_THROWS_WITH(nvrtc_compile(kTileSum, "tile_sum.cu", "sm_80", {"--no-such-option"}),
                      Contains("NVRTC could not compile tile_sum.cu for sm_80:\n") && Contains("--no-such-option"));
}

TEST_CASE("NVRTC compiles from several threads at once", "[codegen][nvrtc]") {
  std::string why;
  if (!nvrtc_available(&why)) KILN_SKIP("NVRTC not found: " << why);
  std::vector<int64_t> shared(4, -1);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&shared, i] {
      try {  // an exception must not leave the thread
        NvrtcOutput out = nvrtc_compile(kTileSum, "tile_sum.cu", "sm_80", {"-DTILE=" + std::to_string(32 << i)});
        if (out.resources.size() == 1) shared[i] = out.resources[0].shared_bytes;
      } catch (const std::exception&) {
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < 4; ++i) CHECK(shared[i] == (32 << i) * 4);
}
