// CUDA emulation: hand-written CUDA C (the device prelude, then kernels) built
// with build_emulated_module, loaded with rt::Module and run on real buffers:
// results against the host, and the failures the emulator reports (races,
// barrier divergence, bounds, alignment, launch limits) as messages.
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

#include "base/error.h"
#include "codegen/cuda_emulation.h"
#include "codegen/cuda_prelude.h"
#include "runtime/module.h"
#include "support/emulated_module.h"
#include "support/launch_watchdog.h"
#include "support/skip.h"
#include "support/temp_dir.h"

using namespace kiln;
using kiln::testing::build_emulated;
using kiln::testing::Emulated;

namespace {

using Param = CudaKernelLaunch::Param;

CudaKernelLaunch make_launch(const std::string& kernel, std::array<int64_t, 3> grid, std::array<int64_t, 3> block,
                             std::vector<Param> params, int64_t shared_bytes = 0) {
  CudaKernelLaunch l;
  l.kernel = kernel;
  l.grid = grid;
  l.block = block;
  l.params = std::move(params);
  l.shared_bytes = shared_bytes;
  return l;
}

Emulated build(const testing::TempDir& dir, const std::string& function, const std::string& kernels,
               std::vector<CudaKernelLaunch> launches) {
  return build_emulated(dir, function, cuda_prelude() + kernels, std::move(launches));
}

// 64-byte aligned host memory, as kiln's runtime arrays are.
template <typename T>
struct Buffer {
  explicit Buffer(size_t n) : size(n), data(static_cast<T*>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64))) {
    for (size_t i = 0; i < n; ++i) data[i] = T(0);
  }
  ~Buffer() { std::free(data); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  T& operator[](size_t i) { return data[i]; }
  size_t size;
  T* data;
};

// A = block_sum's input: blocks of 1024 small integers (sums are exact).
const char* const kBlockSum = R"(
extern "C" __global__ void __launch_bounds__(256) block_sum(const float* __restrict__ A, float* __restrict__ out) {
  KILN_SHARED(float, partial, 256);
  const int t = threadIdx.x;
  float acc = 0.0f;
  for (int i = t; i < 1024; i += 256) acc += A[blockIdx.x * 1024 + i];
  partial[t] = acc;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (t < s) partial[t] += partial[t + s];
    BARRIER
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}
)";

std::string block_sum_source(bool with_barrier) {
  std::string s = kBlockSum;
  s.replace(s.find("BARRIER"), 7, with_barrier ? "__syncthreads();" : "");
  return s;
}

// B (cols x rows) = transpose of A (rows x cols) through a padded 16 x 16 tile.
std::string transpose_kernel(const std::string& name, int rows, int cols) {
  char buf[1024];
  std::snprintf(buf, sizeof(buf), R"(
extern "C" __global__ void %s(const float* __restrict__ A, float* __restrict__ B) {
  KILN_SHARED(float, tile, 16 * 17);
  const int x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
  if (x < %d && y < %d) tile[threadIdx.y * 17 + threadIdx.x] = A[y * %d + x];
  __syncthreads();
  const int bx = blockIdx.y * 16 + threadIdx.x, by = blockIdx.x * 16 + threadIdx.y;
  if (bx < %d && by < %d) B[by * %d + bx] = tile[threadIdx.x * 17 + threadIdx.y];
}
)",
                name.c_str(), cols, rows, cols, rows, cols, rows);
  return buf;
}

// Warp-level reductions, a scan, edge lanes, a segmented broadcast and a ballot
// (64 threads: two warps); then 48 threads: a full warp and a 16-lane one.
const char* const kWarpKernels = R"(
extern "C" __global__ void warp_ops(const float* __restrict__ A, float* __restrict__ down, float* __restrict__ xr,
                                    float* __restrict__ scan, float* __restrict__ edge, int* __restrict__ bcast) {
  const int t = threadIdx.x, lane = t & 31;
  const float v = A[t];
  float d = v, x = v, s = v;
  for (int o = 16; o > 0; o >>= 1) d += __shfl_down_sync(0xffffffffu, d, o);
  if (lane == 0) down[t >> 5] = d;
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  xr[t] = x;
  for (int o = 1; o < 32; o <<= 1) {
    const float u = __shfl_up_sync(0xffffffffu, s, o);
    if (lane >= o) s += u;
  }
  scan[t] = s;
  edge[t] = __shfl_down_sync(0xffffffffu, v, 16);  // lanes 16..31 keep their own value
  bcast[t] = __shfl_sync(0xffffffffu, t * 10, 5, 16) + (__ballot_sync(0xffffffffu, lane < 3) == 7u ? 1 : 0);
}
// 48 threads: a full warp and a partial one of 16 lanes, reduced in 16-lane segments.
extern "C" __global__ void segment_sums(const float* __restrict__ A, float* __restrict__ seg) {
  float x = A[threadIdx.x];
  for (int o = 8; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o, 16);
  seg[threadIdx.x] = x;
}
)";

// float4/float2 loads, stores and arithmetic on global and shared memory; then
// a float4 load one element off its alignment.
const char* const kVectorKernels = R"(
extern "C" __global__ void vec_ops(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                   float* __restrict__ D) {
  KILN_SHARED(float, stage, 64 * 4);
  const int t = threadIdx.x;
  const float4 a = kiln_ld<float4>(A, t * 4), b = kiln_ld<float4>(B, t * 4);
  kiln_st(stage, t * 4, a * b + a);
  __syncthreads();
  float4 r = kiln_ld<float4>(stage, ((t + 1) % 64) * 4);  // the next thread's vector
  r -= b / make_float4(2.0f, 2.0f, 2.0f, 2.0f);
  kiln_st(C, t * 4, kiln_max(r, make_float4(1.0f, 1.0f, 1.0f, 1.0f)));
  const float2 p = kiln_ld<float2>(A, t * 4 + 2), q = kiln_ld<float2>(stage + 2, ((t + 63) % 64) * 4);
  kiln_st(D, t * 2, kiln_min(p - q, make_float2(0.5f, 0.5f)) * make_float2(2.0f, 3.0f));
}
extern "C" __global__ void misaligned(const float* __restrict__ A, float* __restrict__ C) {
  kiln_st(C, threadIdx.x * 4, kiln_ld<float4>(A, threadIdx.x * 4 + 1));
}
)";

}  // namespace

TEST_CASE("emulated tiled transpose through shared memory matches the host", "[codegen][cuda][emulation]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_emu");
  const int rows = 70, cols = 45;  // partial edge tiles in both directions
  // A -> B = A^T, then B -> C = A: two launches of one entry point.
  Emulated e =
      build(dir, "transpose_twice", transpose_kernel("t_ab", rows, cols) + transpose_kernel("t_bc", cols, rows),
            {make_launch("t_ab", {3, 5, 1}, {16, 16, 1}, {{"const float*", 0}, {"float*", 1}}, 1088),
             make_launch("t_bc", {5, 3, 1}, {16, 16, 1}, {{"const float*", 1}, {"float*", 2}}, 1088)});
  Buffer<float> A(rows * cols), B(rows * cols), C(rows * cols);
  for (int i = 0; i < rows * cols; ++i) A[i] = static_cast<float>(i) * 0.5f - 7.0f;
  REQUIRE(e.run({A.data, B.data, C.data}) == 0);
  CHECK(e.error().empty());
  int bad_b = 0, bad_c = 0;
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      bad_b += B[c * rows + r] != A[r * cols + c];
      bad_c += C[r * cols + c] != A[r * cols + c];
    }
  }
  CHECK(bad_b == 0);
  CHECK(bad_c == 0);
}

TEST_CASE("emulated shared-memory block reduction with barriers matches the host", "[codegen][cuda][emulation]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_emu");
  const int blocks = 96;
  Emulated e =
      build(dir, "sum_blocks", block_sum_source(true),
            {make_launch("block_sum", {blocks, 1, 1}, {256, 1, 1}, {{"const float*", 0}, {"float*", 1}}, 1024)});
  Buffer<float> A(blocks * 1024), out(blocks);
  for (size_t i = 0; i < A.size; ++i) A[i] = static_cast<float>(static_cast<int>(i * 7919 % 23) - 11);
  for (int round = 0; round < 2; ++round) {  // the module's shared arrays are reused by the second launch
    const auto start = std::chrono::steady_clock::now();
    REQUIRE(e.run({A.data, out.data}) == 0);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    INFO("96 blocks of 256 threads, 9 barriers each: " << ms << " ms");
    int bad = 0;
    for (int b = 0; b < blocks; ++b) {
      double sum = 0;
      for (int i = 0; i < 1024; ++i) sum += A[b * 1024 + i];
      bad += out[b] != static_cast<float>(sum);
    }
    CHECK(bad == 0);
    out[0] = 12345.0f;
  }
}

TEST_CASE("a block reduction without its barrier is reported as a shared-memory race", "[codegen][cuda][emulation]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_emu");
  Emulated e = build(dir, "sum_racy", block_sum_source(false),
                     {make_launch("block_sum", {4, 1, 1}, {256, 1, 1}, {{"const float*", 0}, {"float*", 1}}, 1024)});
  Buffer<float> A(4 * 1024), out(4);
  CHECK(e.run({A.data, out.data}) != 0);
  const std::string msg = e.error();
  CHECK_THAT(msg, Catch::Contains("shared-memory race on partial[") && Catch::Contains("in block (0,0,0)") &&
                      Catch::Contains("of kernel block_sum") && Catch::Contains("no __syncthreads() in between"));
}

TEST_CASE("barrier divergence fails the launch instead of hanging", "[codegen][cuda][emulation]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_emu");
  Emulated e = build(dir, "diverge", R"(
extern "C" __global__ void half_barrier(float* __restrict__ out) {
  if (threadIdx.x < 16) __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}
extern "C" __global__ void fine(float* __restrict__ out) { out[threadIdx.x] += 1.0f; }
)",
                     {make_launch("half_barrier", {2, 1, 1}, {64, 1, 1}, {{"float*", 0}}),
                      make_launch("fine", {1, 1, 1}, {64, 1, 1}, {{"float*", 0}})});
  Buffer<float> out(128);
  kiln::testing::LaunchWatchdog watchdog("test_cuda_emulation", 120);
  CHECK(e.run({out.data}) != 0);  // stops at the first launch
  CHECK_THAT(e.error(), Catch::Contains("barrier divergence in block (0,0,0) of kernel half_barrier") &&
                            Catch::Contains("__syncthreads() on line") && Catch::Contains("finished the kernel"));
  CHECK(out[0] == 0.0f);  // the launch after the failed one did not run
  // The module's launches are usable again after a failure.
  CHECK(e.run({out.data}) != 0);
  CHECK_THAT(e.error(), Catch::Contains("kernel half_barrier"));
}

TEST_CASE("threads reaching different numbers of barriers are reported", "[codegen][cuda][emulation]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_emu");
  Emulated e = build(dir, "uneven", R"(
extern "C" __global__ void uneven_barriers(float* __restrict__ out) {
  for (unsigned i = 0; i <= threadIdx.x % 2; ++i) __syncthreads();
  out[threadIdx.x] = 2.0f;
}
)",
                     {make_launch("uneven_barriers", {1, 1, 1}, {64, 1, 1}, {{"float*", 0}})});
  Buffer<float> out(64);
  kiln::testing::LaunchWatchdog watchdog("test_cuda_emulation", 120);
  CHECK(e.run({out.data}) != 0);
  CHECK_THAT(e.error(), Catch::Contains("barrier divergence") && Catch::Contains("kernel uneven_barriers"));
}

TEST_CASE("emulated warp shuffles follow CUDA's semantics", "[codegen][cuda][emulation]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_emu");
  Emulated e = build(
      dir, "warps", kWarpKernels,
      {make_launch("warp_ops", {1, 1, 1}, {64, 1, 1},
                   {{"const float*", 0}, {"float*", 1}, {"float*", 2}, {"float*", 3}, {"float*", 4}, {"int*", 5}}),
       make_launch("segment_sums", {1, 1, 1}, {48, 1, 1}, {{"const float*", 0}, {"float*", 6}})});
  Buffer<float> A(64), down(2), xr(64), scan(64), edge(64), seg(48);
  Buffer<int> bcast(64);
  for (int i = 0; i < 64; ++i) A[i] = static_cast<float>((i * 37) % 19 - 9);
  REQUIRE(e.run({A.data, down.data, xr.data, scan.data, edge.data, bcast.data, seg.data}) == 0);
  for (int w = 0; w < 2; ++w) {
    float sum = 0, prefix = 0;
    for (int l = 0; l < 32; ++l) sum += A[w * 32 + l];
    CHECK(down[w] == sum);
    for (int l = 0; l < 32; ++l) {
      const int t = w * 32 + l;
      prefix += A[t];
      CHECK(xr[t] == sum);
      CHECK(scan[t] == prefix);
      CHECK(edge[t] == (l < 16 ? A[t + 16] : A[t]));
      CHECK(bcast[t] == (w * 32 + (l & 16) + 5) * 10 + 1);
    }
  }
  for (int t = 0; t < 48; ++t) {
    float sum = 0;
    for (int l = t / 16 * 16; l < t / 16 * 16 + 16; ++l) sum += A[l];
    CHECK(seg[t] == sum);
  }
}

// Threads 0 and 1 poll flags that threads of the other warp raise after
// writing what the pollers then read: by atomicAdd (thread 0) and by
// atomicCAS after a __threadfence() (thread 1). The emulation's threads run
// one at a time until they wait, so an atomic or a fence must let the
// others run, or thread 0 would poll forever.
TEST_CASE("a thread polling a flag that a later thread raises through atomics finishes", "[codegen][cuda][emulation]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_emu");
  Emulated e = build(dir, "polling", R"(
extern "C" __global__ void poll_flags(float* __restrict__ data, int* __restrict__ flags, float* __restrict__ out) {
  const int t = threadIdx.x;
  if (t == 0) {
    while (atomicAdd(flags, 0) == 0) {
    }
    out[0] = data[0];
  } else if (t == 1) {
    while (atomicCAS(flags + 1, 1, 2) != 1) {
      __threadfence();
    }
    out[1] = data[1];
  } else if (t == 63) {
    data[0] = 7.0f;
    __threadfence();
    atomicExch(flags, 1);
  } else if (t == 62) {
    data[1] = 9.0f;
    atomicExch(flags + 1, 1);
  }
}
)",
                     {make_launch("poll_flags", {2, 1, 1}, {64, 1, 1}, {{"float*", 0}, {"int*", 1}, {"float*", 2}})});
  Buffer<float> data(2), out(2);
  Buffer<int> flags(2);
  kiln::testing::LaunchWatchdog watchdog("test_cuda_emulation", 120);
  REQUIRE(e.run({data.data, flags.data, out.data}) == 0);
  CHECK(out[0] == 7.0f);
  CHECK(out[1] == 9.0f);
  CHECK(flags[0] == 1);
  CHECK(flags[1] == 2);  // the second block's poller found it raised and moved it on
}

TEST_CASE("kiln_ld and kiln_st move float4 and float2 through global and shared memory", "[codegen][cuda][emulation]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_emu");
  Emulated e = build(dir, "vectors", kVectorKernels,
                     {make_launch("vec_ops", {1, 1, 1}, {64, 1, 1},
                                  {{"const float*", 0}, {"const float*", 1}, {"float*", 2}, {"float*", 3}}, 1024),
                      make_launch("misaligned", {1, 1, 1}, {8, 1, 1}, {{"const float*", 0}, {"float*", 2}})});
  Buffer<float> A(256 + 4), B(256), C(256), D(128);
  for (int i = 0; i < 256; ++i) {
    A[i] = static_cast<float>(i % 13) * 0.25f - 1.0f;
    B[i] = static_cast<float>(i % 7) - 2.0f;
  }
  CHECK(e.run({A.data, B.data, C.data, D.data}) != 0);  // the second launch is misaligned
  CHECK_THAT(e.error(), Catch::Contains("misaligned vector load of 16 bytes") &&
                            Catch::Contains("needs 16-byte alignment") && Catch::Contains("kernel misaligned"));
  auto stage = [&](int i) { return A[i] * B[i] + A[i]; };
  for (int t = 0; t < 64; ++t) {
    for (int k = 0; k < 4; ++k) {
      const int n = ((t + 1) % 64) * 4 + k;
      CHECK(C[t * 4 + k] == std::fmax(stage(n) - B[t * 4 + k] / 2.0f, 1.0f));
    }
    for (int k = 0; k < 2; ++k) {
      const float q = stage(2 + ((t + 63) % 64) * 4 + k);
      CHECK(D[t * 2 + k] == std::fmin(A[t * 4 + 2 + k] - q, 0.5f) * (k == 0 ? 2.0f : 3.0f));
    }
  }
}

TEST_CASE("an out-of-bounds shared index fails the launch with a message", "[codegen][cuda][emulation]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_emu");
  Emulated e = build(dir, "oob", R"(
extern "C" __global__ void overflow(float* __restrict__ out) {
  KILN_SHARED(float, buf, 32);
  buf[threadIdx.x] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = buf[threadIdx.x % 32];
}
)",
                     {make_launch("overflow", {1, 1, 1}, {64, 1, 1}, {{"float*", 0}}, 128)});
  Buffer<float> out(64);
  kiln::testing::LaunchWatchdog watchdog("test_cuda_emulation", 120);
  CHECK(e.run({out.data}) != 0);
  CHECK_THAT(e.error(), Catch::Contains("is out of bounds of buf[32] in block (0,0,0) of kernel overflow"));
}

TEST_CASE("launch configurations CUDA refuses fail the emulated launch", "[codegen][cuda][emulation]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_emu");
  const char* kernel = R"(
extern "C" __global__ void touch(float* __restrict__ out) { out[0] = 1.0f; }
)";
  Buffer<float> out(1);
  Emulated big = build(dir, "big_block", kernel, {make_launch("touch", {1, 1, 1}, {1025, 1, 1}, {{"float*", 0}})});
  CHECK(big.run({out.data}) != 0);
  CHECK_THAT(big.error(), Catch::Contains("1025 threads; CUDA allows at most 1024"));
  CHECK(out[0] == 0.0f);
  Emulated smem = build(dir, "big_smem", kernel, {make_launch("touch", {1, 1, 1}, {32, 1, 1}, {{"float*", 0}}, 65536)});
  CHECK(smem.run({out.data}) != 0);
  CHECK_THAT(smem.error(), Catch::Contains("65536 bytes of static shared memory exceed the 48 KiB CUDA allows"));
  // Dynamic shared memory past 48 KiB: the entry point opts the kernel in,
  // up to the 227 KiB a block may have.
  CudaKernelLaunch dyn = make_launch("touch", {1, 1, 1}, {32, 1, 1}, {{"float*", 0}}, 65536);
  dyn.dynamic_shared_bytes = 65536;
  Emulated opted = build(dir, "dynamic_smem", kernel, {dyn});
  CHECK(opted.run({out.data}) == 0);
  CHECK(out[0] == 1.0f);
  dyn.shared_bytes = dyn.dynamic_shared_bytes = 228 * 1024;
  Emulated huge = build(dir, "huge_smem", kernel, {dyn});
  CHECK(huge.run({out.data}) != 0);
  CHECK_THAT(huge.error(), Catch::Contains("233472 bytes of shared memory exceed the 227 KiB a block may have"));
}

TEST_CASE("emulated source that does not compile is a user error with the compiler output",
          "[codegen][cuda][emulation]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_emu");
  CudaSource src;
  src.function = "broken";
  src.code = cuda_prelude() + "extern \"C\" __global__ void k(float* out) { out[0] = no_such_name; }\n";
  src.launches = {make_launch("k", {1, 1, 1}, {1, 1, 1}, {{"float*", 0}})};
  try {
    build_emulated_module(src, dir.path);
    FAIL("expected a user error");
  } catch (const UserError& err) {
    CHECK_THAT(std::string(err.what()), Catch::Contains("could not compile the emulated CUDA source") &&
                                            Catch::Contains("no_such_name") && Catch::Contains("broken.cu:"));
  }
}

TEST_CASE("KILN_HOST_CXX naming no compiler is a user error", "[codegen][cuda][emulation]") {
  const char* old = std::getenv("KILN_HOST_CXX");
  const std::string saved = old ? old : "";
  ::setenv("KILN_HOST_CXX", "/nonexistent/kiln-no-such-c++", 1);
  CudaSource src;
  src.function = "f";
  CHECK_THROWS_AS(host_cxx_compiler(), UserError);
  try {
    build_emulated_module(src, "/tmp");
    FAIL("expected a user error");
  } catch (const UserError& err) {
    CHECK_THAT(std::string(err.what()), Catch::Contains("KILN_HOST_CXX") && Catch::Contains("host C++ compiler"));
  }
  if (old) {
    ::setenv("KILN_HOST_CXX", saved.c_str(), 1);
  } else {
    ::unsetenv("KILN_HOST_CXX");
  }
}
