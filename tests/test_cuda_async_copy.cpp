// The asynchronous-copy prelude (codegen/cuda_async_prelude.h): hand-written
// pipelined kernels (2 and 3 stages, cp.async of 16, 8 and 4 bytes) run under
// the CPU emulation against the host; the pipeline bugs the emulation must
// catch (a missing wait, a missing __syncthreads(), an issue into a stage
// still being read, misaligned copies and other misuse) as failed launches
// with messages; and the same source compiled by NVRTC for sm_80 and sm_90.
#include <catch2/catch.hpp>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "codegen/cuda_async_prelude.h"
#include "codegen/cuda_emulation.h"
#include "codegen/cuda_prelude.h"
#include "codegen/nvrtc.h"
#include "runtime/module.h"
#include "support/emulated_module.h"
#include "support/launch_watchdog.h"
#include "support/skip.h"
#include "support/temp_dir.h"

using namespace kiln;
using Catch::Matchers::Contains;
using kiln::testing::build_emulated;
using kiln::testing::Emulated;
using kiln::testing::row_launch;
using kiln::testing::substitute;

namespace {

std::string device_source(const std::string& kernels) { return cuda_prelude() + cuda_async_prelude() + kernels; }

Emulated build(const testing::TempDir& dir, const std::string& function, const std::string& kernels,
               std::vector<CudaKernelLaunch> launches) {
  return build_emulated(dir, function, device_source(kernels), std::move(launches));
}


// A tile is 448 floats; thread t of 64 copies floats 4t..4t+3 (16 bytes,
// into a pointer into the array), 256+2t.. (8 bytes) and 384+t (4 bytes).
const char* const kIssueTile = R"(
template <typename B>
__device__ __forceinline__ void issue_tile(B& stage, int s, const float* src, int t) {
  kiln_cp_async<16>(stage + s * 448, t * 4, src + t * 4);
  kiln_cp_async<8>(stage, s * 448 + 256 + t * 2, src + 256 + t * 2);
  kiln_cp_async<4>(stage + s * 448 + 384, t, src + 384 + t);
}
)";

// Block b sums its $TILES tiles of A through $STAGES stages: thread t adds floats
// (t+13)%64 + 64k of each tile (copied by other threads) to out[64b + t].
// $WAIT, $BARRIER and $LATE_BARRIER are where bugs are planted.
const char* const kPipeline = R"(
extern "C" __global__ void $NAME(const float* __restrict__ A, float* __restrict__ out) {
  KILN_SHARED(float, stage, $STAGES * 448);
  const int t = threadIdx.x;
  const float* tiles = A + blockIdx.x * ($TILES * 448);
  float acc = 0.0f;
  for (int s = 0; s < $STAGES - 1 && s < $TILES; ++s) {  // prologue: the first S-1 tiles in flight
    issue_tile(stage, s, tiles + s * 448, t);
    kiln_cp_async_commit();
  }
  for (int kt = 0; kt < $TILES; ++kt) {
    // Tile kt lands; the younger ones stay in flight (fewer in the tail).
    $WAIT
    $BARRIER
    const int next = kt + $STAGES - 1;
    if (next < $TILES) {  // into the stage of iteration kt-1, whose reads the barrier above ordered
      issue_tile(stage, next % $STAGES, tiles + next * 448, t);
      kiln_cp_async_commit();
    }
    $LATE_BARRIER
    const int b = (kt % $STAGES) * 448;
    for (int k = 0; k < 7; ++k) acc += stage[b + (t + 13) % 64 + 64 * k];
  }
  out[blockIdx.x * 64 + t] = acc;
}
)";

constexpr int kTiles = 5, kBlocks = 3, kTile = 448;

enum class Bug { kNone, kNoWait, kNoSync, kIssueBeforeSync };

std::string pipeline_name(int stages, Bug bug) {
  static const char* const names[] = {"", "_no_wait", "_no_sync", "_issue_before_sync"};
  return "pipeline" + std::to_string(stages) + names[static_cast<int>(bug)];
}

std::string pipeline_kernel(int stages, Bug bug) {
  const std::string s = std::to_string(stages), n = std::to_string(kTiles);
  const std::string wait = "kiln_cp_async_wait(kt + " + s + " - 2 < " + n + " ? " + s + " - 2 : " + n + " - 1 - kt);";
  return substitute(kPipeline,
                    {{"$NAME", pipeline_name(stages, bug)},
                     {"$WAIT", bug == Bug::kNoWait ? "" : wait},
                     {"$LATE_BARRIER", bug == Bug::kIssueBeforeSync ? "__syncthreads();" : ""},
                     {"$BARRIER", bug == Bug::kNoSync || bug == Bug::kIssueBeforeSync ? "" : "__syncthreads();"},
                     {"$STAGES", s},
                     {"$TILES", n}});
}

// Small integers: every sum is exact in f32.
std::vector<float> pipeline_input() { return testing::small_integers(kBlocks * kTiles * kTile); }

std::vector<float> pipeline_reference(const std::vector<float>& a) {
  std::vector<float> out(kBlocks * 64, 0.0f);
  for (int b = 0; b < kBlocks; ++b) {
    for (int t = 0; t < 64; ++t) {
      for (int kt = 0; kt < kTiles; ++kt) {
        for (int k = 0; k < 7; ++k) out[b * 64 + t] += a[(b * kTiles + kt) * kTile + (t + 13) % 64 + 64 * k];
      }
    }
  }
  return out;
}

// Runs one pipeline kernel on pipeline_input(); returns the launch's error ("" on success).
std::string run_pipeline(const testing::TempDir& dir, int stages, Bug bug, std::vector<float>* out = nullptr) {
  const std::string name = pipeline_name(stages, bug);
  Emulated e = build(dir, "run_" + name, kIssueTile + pipeline_kernel(stages, bug),
                     {row_launch(name, kBlocks, 64, {{"const float*", 0}, {"float*", 1}})});
  std::vector<float> a = pipeline_input(), result(kBlocks * 64, -1.0f);
  kiln::testing::LaunchWatchdog watchdog("test_cuda_async_copy", 120);
  const int rc = e.run({a.data(), result.data()});
  if (out) *out = result;
  return rc == 0 ? "" : e.error();
}

// Thread 0 copies A[0..3] into buf[0..3], then after a __syncthreads() waits
// for it; thread 32 (the other warp) reads buf[1] once thread 0 has raised
// *flag, with a __syncthreads() in between only when $SYNC is one. (The copy
// lands after the first barrier: it counts as written there, not at issue.)
const char* const kWaitThenRead = R"(
extern "C" __global__ void $NAME(const float* __restrict__ A, float* __restrict__ out, int* __restrict__ flag) {
  KILN_SHARED(float, buf, 64);
  const int t = threadIdx.x;
  if (t == 0) {
    kiln_cp_async<16>(buf, 0, A);
    kiln_cp_async_commit();
  }
  __syncthreads();
  if (t == 0) {
    kiln_cp_async_wait(0);
    atomicExch(flag, 1);
  }
  $SYNC
  if (t == 32) {
    while (atomicAdd(flag, 0) == 0) {
    }
    out[0] = buf[1];
  }
}
)";

// Misuse, one kind per mode (thread 0 unless said otherwise); 2 blocks of 64 threads.
const char* const kMisuse = R"(
extern "C" __global__ void misuse(const float* __restrict__ A, float* __restrict__ out, int mode) {
  KILN_SHARED(float, buf, 64);
  const int t = threadIdx.x;
  if (mode == 0 && t == 0) kiln_cp_async<16>(buf, 2, A);      // destination not 16-byte aligned
  if (mode == 1 && t == 0) kiln_cp_async<16>(buf, 4, A + 1);  // source not 16-byte aligned
  if (mode == 2 && t == 0) kiln_cp_async<8>(buf + 1, 2, A);   // destination buf[3]: not 8-byte aligned
  if (mode == 3 && t == 0) kiln_cp_async<16>(buf, 64, A);     // out of bounds
  if (mode == 4 && t == 0) {  // a plain write to an element in flight
    kiln_cp_async<16>(buf, 0, A);
    kiln_cp_async_commit();
    buf[1] = 1.0f;
  }
  if (mode == 5) kiln_cp_async_wait(8);
  if (mode >= 100) kiln_cp_async_wait(mode - 100);  // a count known at run time only
  if (mode == 6 && t == 0) {  // a second copy into an element in flight
    kiln_cp_async<16>(buf, 0, A);
    kiln_cp_async<8>(buf, 2, A);
  }
  if (mode == 7 && t == 0) {  // wait_group does not wait for copies never committed
    kiln_cp_async<16>(buf, 0, A);
    kiln_cp_async_wait(0);
    out[0] = buf[0];
  }
  if (mode == 8 && t == 0) {  // wait(1) lands the older of two groups only
    kiln_cp_async<16>(buf, 0, A);
    kiln_cp_async_commit();
    kiln_cp_async<16>(buf, 4, A + 4);
    kiln_cp_async_commit();
    kiln_cp_async_wait(1);
    out[0] = buf[0];
    out[1] = buf[4];
  }
  if (mode == 9) {  // thread 1's copy, read by thread 0 after a barrier but no wait
    if (t == 1) {
      kiln_cp_async<16>(buf, 0, A);
      kiln_cp_async_commit();
    }
    __syncthreads();
    if (t == 0) out[0] = buf[2];
  }
  if (mode == 10) {  // copies never waited for are dropped when the block ends
    if (t == 0) buf[1] = 1.0f;
    __syncthreads();
    if (t == 2) {
      kiln_cp_async<16>(buf, 0, A);
      kiln_cp_async_commit();
    }
  }
  if (mode == 12 && t == 0) {  // zero-filling copies: the source read only where the flag holds
    kiln_cp_async<16>(buf, 0, A, true);
    kiln_cp_async<16>(buf, 4, (const float*)0, false);  // nothing is read
    kiln_cp_async<8>(buf, 8, A + 2, blockIdx.x == 0);
    kiln_cp_async_commit();
    kiln_cp_async_wait(0);
    for (int i = 0; i < 10; ++i) out[16 * blockIdx.x + i] = buf[i];
  }
  if (mode == 11) {  // correct: wait, then a barrier, then another thread reads
    if (t == 1) {
      kiln_cp_async<8>(buf, 2, A + 2);
      kiln_cp_async_commit();
      kiln_cp_async_wait(0);
    }
    __syncthreads();
    if (t == 33) out[blockIdx.x] = buf[3];
  }
}
)";

}  // namespace

TEST_CASE("emulated 2- and 3-stage cp.async pipelines match the host", "[codegen][cuda][emulation][async]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_async");
  const std::vector<float> expected = pipeline_reference(pipeline_input());
  for (int stages : {2, 3}) {
    INFO(stages << " stages");
    std::vector<float> out;
    REQUIRE(run_pipeline(dir, stages, Bug::kNone, &out) == "");
    int bad = 0;
    for (size_t i = 0; i < out.size(); ++i) bad += out[i] != expected[i];
    CHECK(bad == 0);
  }
}

TEST_CASE("a stage read with no cp.async wait is reported with the element", "[codegen][cuda][emulation][async]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_async");
  for (int stages : {2, 3}) {
    INFO(stages << " stages");
    const std::string msg = run_pipeline(dir, stages, Bug::kNoWait);
    CHECK_THAT(msg, Contains("shared-memory element stage[") && Contains("was read before its cp.async copy arrived") &&
                        Contains("in block (0,0,0) of kernel " + pipeline_name(stages, Bug::kNoWait)) &&
                        Contains("cp.async.wait_group") && Contains("__syncthreads()"));
  }
}

TEST_CASE("a cp.async wait without __syncthreads before another thread reads is a race",
          "[codegen][cuda][emulation][async]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_async");
  Emulated e = build(dir, "wait_then_read",
                     substitute(kWaitThenRead, {{"$NAME", "no_barrier"}, {"$SYNC", ""}}) +
                         substitute(kWaitThenRead, {{"$NAME", "barrier"}, {"$SYNC", "__syncthreads();"}}),
                     {row_launch("barrier", 1, 64, {{"const float*", 0}, {"float*", 1}, {"int*", 2}}),
                      row_launch("no_barrier", 1, 64, {{"const float*", 0}, {"float*", 1}, {"int*", 3}})});
  alignas(16) float a[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  float out[1] = {0.0f};
  int flags[2] = {0, 0};
  kiln::testing::LaunchWatchdog watchdog("test_cuda_async_copy", 120);
  // The first launch (with the barrier) succeeds; the second reports the race.
  CHECK(e.run({a, out, &flags[0], &flags[1]}) != 0);
  CHECK(out[0] == 2.0f);
  CHECK(flags[1] == 1);  // the second launch ran up to the read
  CHECK_THAT(e.error(), Contains("shared-memory race on buf[1] in block (0,0,0) of kernel no_barrier") &&
                            Contains("thread (32,0,0) reads what thread (0,0,0) wrote (a cp.async copy)") &&
                            Contains("no __syncthreads() in between"));

  // The same bug in a pipeline, and an issue into a stage other threads may
  // still be reading: whichever thread gets there first, it is reported.
  for (Bug bug : {Bug::kNoSync, Bug::kIssueBeforeSync}) {
    for (int stages : {2, 3}) {
      INFO(pipeline_name(stages, bug));
      CHECK_THAT(run_pipeline(dir, stages, bug),
                 Contains("kernel " + pipeline_name(stages, bug)) &&
                     (Contains("shared-memory race on stage[") || Contains("before its cp.async copy arrived")));
    }
  }
}

TEST_CASE("misaligned and misused cp.async fail the launch with a message", "[codegen][cuda][emulation][async]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_async");
  Emulated e = build(dir, "run_misuse", kMisuse,
                     {row_launch("misuse", 2, 64, {{"const float*", 0}, {"float*", 1}, {"int", 2}})});
  alignas(16) float a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  float out[2] = {0, 0};
  kiln::testing::LaunchWatchdog watchdog("test_cuda_async_copy", 300);
  auto run_mode = [&](int mode) {
    INFO("mode " << mode);
    out[0] = out[1] = 0;
    const bool ok = e.run({a, out, &mode}) == 0;
    return ok ? std::string("ok") : e.error();
  };
  CHECK_THAT(run_mode(0), Contains("misaligned cp.async of 16 bytes into buf[2] (needs 16-byte alignment") &&
                              Contains("in block (0,0,0) of kernel misuse") && Contains("the GPU would fault"));
  CHECK_THAT(run_mode(1), Contains("misaligned cp.async source of 16 bytes") && Contains("needs 16-byte alignment") &&
                              Contains("the GPU would fault"));
  CHECK_THAT(run_mode(2), Contains("misaligned cp.async of 8 bytes into buf[3]") && Contains("multiple of 2"));
  CHECK_THAT(run_mode(3), Contains("shared-memory index 64 (a vector of 4) is out of bounds of buf[64]"));
  CHECK_THAT(run_mode(4), Contains("thread (0,0,0) writes buf[1]") &&
                              Contains("cp.async issued into it by this thread") &&
                              Contains("the copy would overwrite the value"));
  CHECK_THAT(run_mode(5), Contains("kiln_cp_async_wait(8)") && Contains("0 to 7"));
  CHECK_THAT(run_mode(6), Contains("issues a cp.async into buf[2] while an earlier cp.async into it"));
  CHECK_THAT(run_mode(7),
             Contains("buf[0] was read before its cp.async copy arrived") && Contains("issued by this thread"));
  CHECK_THAT(run_mode(8), Contains("buf[4] was read before its cp.async copy arrived"));
  CHECK(out[0] == 1.0f);  // buf[0], of the older group, had landed
  CHECK_THAT(run_mode(9), Contains("buf[2] was read before its cp.async copy arrived") &&
                              Contains("thread (0,0,0) reads it while the cp.async issued by thread (1,0,0)") &&
                              Contains("The issuing thread (1,0,0) must wait for the copy"));
  // Both blocks, and a second launch, start with nothing in flight.
  CHECK(run_mode(10) == "ok");
  CHECK(run_mode(10) == "ok");
  CHECK(run_mode(107) == "ok");
  CHECK(run_mode(11) == "ok");
  CHECK(out[0] == 4.0f);
  CHECK(out[1] == 4.0f);
}

TEST_CASE("a zero-filling cp.async lands zeros where its flag is false, and reads nothing",
          "[codegen][cuda][emulation][async]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_async");
  Emulated e =
      build(dir, "run_zfill", kMisuse, {row_launch("misuse", 2, 64, {{"const float*", 0}, {"float*", 1}, {"int", 2}})});
  alignas(16) float a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> out(32, -1.0f);
  int mode = 12;
  REQUIRE(e.run({a, out.data(), &mode}) == 0);
  for (int b = 0; b < 2; ++b) {
    INFO("block " << b);
    const float* o = out.data() + 16 * b;
    CHECK(std::vector<float>(o, o + 4) == std::vector<float>{1, 2, 3, 4});
    CHECK(std::vector<float>(o + 4, o + 8) == std::vector<float>{0, 0, 0, 0});
    CHECK(std::vector<float>(o + 8, o + 10) == (b == 0 ? std::vector<float>{3, 4} : std::vector<float>{0, 0}));
  }
}

TEST_CASE("NVRTC compiles the async-copy prelude to cp.async for sm_80 and sm_90", "[codegen][cuda][nvrtc][async]") {
  std::string why;
  if (!nvrtc_available(&why)) KILN_SKIP("NVRTC is not available: " << why);
  const std::string kernels = kIssueTile + pipeline_kernel(2, Bug::kNone) + pipeline_kernel(3, Bug::kNone) +
                              substitute(kWaitThenRead, {{"$NAME", "wait_then_read"}, {"$SYNC", ""}}) + kMisuse;
  for (const char* arch : {"sm_80", "sm_90"}) {
    INFO(arch);
    NvrtcOutput out = nvrtc_compile(device_source(kernels), "async_copy.cu", arch);
    CHECK(!out.cubin.empty());
    // misuse waits with a count known only at run time: every immediate appears.
    for (const char* insn : {"cp.async.cg.shared.global", "cp.async.ca.shared.global", "cp.async.commit_group",
                             "cp.async.wait_group 0", "cp.async.wait_group 1", "cp.async.wait_group 7"}) {
      INFO(insn);
      CHECK(out.ptx.find(insn) != std::string::npos);
    }
    CHECK(out.ptx.find("], 16;") != std::string::npos);
    CHECK(out.ptx.find("], 8;") != std::string::npos);
    CHECK(out.ptx.find("], 4;") != std::string::npos);
    // The zero-filling form: the source size in a register.
    CHECK(std::regex_search(out.ptx, std::regex(R"(cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16, %r\d+;)")));
    CHECK(std::regex_search(out.ptx, std::regex(R"(cp\.async\.ca\.shared\.global \[%r\d+\], \[%rd\d+\], 8, %r\d+;)")));
    REQUIRE(out.resources.size() == 4);
    for (const CudaKernelResources& r : out.resources) {
      INFO(r.kernel);
      CHECK(r.stack_bytes == 0);
    }
  }
}
