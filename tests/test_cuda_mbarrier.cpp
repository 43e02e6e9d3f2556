// The mbarrier prelude (codegen/cuda_mbarrier_prelude.h): a warp-specialized
// pipeline (a producer warp fills the slots, two consumer warps read them,
// and full and empty barriers hand each slot back and forth, with no
// __syncthreads() in the loop) runs under the CPU emulation against the
// host, with plain stores and with cp.async copies that arrive on the
// barrier; the bugs the emulation must catch (a consumer that does not
// wait, a producer that refills a slot before it is released, a barrier
// used before its initialization is visible, a count that never completes a
// phase, other misuse) fail the launch with messages instead of hanging;
// and the same source compiles under NVRTC for sm_80 and sm_90.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "codegen/cuda_async_prelude.h"
#include "codegen/cuda_mbarrier_prelude.h"
#include "codegen/cuda_prelude.h"
#include "codegen/nvrtc.h"
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

std::string device_source(const std::string& kernels) {
  return cuda_prelude() + cuda_async_prelude() + cuda_mbarrier_prelude() + kernels;
}

// Block b sums its $TILES tiles of 448 floats through $STAGES slots. Warp 0
// (its first $PRODUCERS lanes) produces: it fills tile kt into slot
// kt % $STAGES once the consumers have released the slot's previous tile
// (empty), and arrives on full. Warps 1 and 2 consume: consumer c (thread
// 32 + c) waits for the tile (full), adds floats (c+13)%64 + 64k of it and
// subtracts floats (c+29)%64 + 64k (filled by other threads; each float is
// read by two consumers, so a refill must wait for both) to out[64b + c],
// and arrives on empty. The $-placeholders are where bugs are planted.
const char* const kPipeline = R"(
extern "C" __global__ void $NAME(const float* __restrict__ A, float* __restrict__ out) {
  KILN_SHARED(float, stage, $STAGES * 448);
  KILN_SHARED_MBARRIER(full, $STAGES);
  KILN_SHARED_MBARRIER(empty, $STAGES);
  const int t = threadIdx.x;
  if (t == 0) {
    for (int s = 0; s < $STAGES; ++s) {
      kiln_mbarrier_init(full, s, $FULL_COUNT);  // the producer warp's arrivals
      kiln_mbarrier_init(empty, s, $EMPTY_COUNT);  // the consumers'
    }
  }
  $INIT_SYNC
  const float* tiles = A + blockIdx.x * ($TILES * 448);
  if (t < $PRODUCERS) {
    for (int kt = 0; kt < $TILES; ++kt) {
      const int s = kt % $STAGES;
      if (kt >= $STAGES) {  // the slot's previous tile, use kt / S - 1, is released
        $EMPTY_WAIT
      }
      $FILL
    }
  } else if (t >= 32) {
    const int c = t - 32;
    float acc = 0.0f;
    for (int kt = 0; kt < $TILES; ++kt) {
      const int s = kt % $STAGES;
      $FULL_WAIT
      for (int k = 0; k < 7; ++k) acc += stage[s * 448 + (c + 13) % 64 + 64 * k] - stage[s * 448 + (c + 29) % 64 + 64 * k];
      $RELEASE
    }
    out[blockIdx.x * 64 + c] = acc;
  }
}
)";

const char* const kPlainFill = R"(for (int k = t; k < 448; k += 32) stage[s * 448 + k] = tiles[kt * 448 + k];
      kiln_mbarrier_arrive(full, s);)";
const char* const kAsyncFill =
    R"(for (int v = t; v < 112; v += 32) kiln_cp_async<16>(stage, s * 448 + 4 * v, tiles + kt * 448 + 4 * v);
      kiln_cp_async_mbarrier_arrive(full, s);)";
// sm_90: lane 0 arrives expecting the tile's 1792 bytes, lanes 0-3 each
// bulk-copy a quarter (full's count is then 1). Only those lanes produce:
// lanes that waited on empty but fed no barrier could fall two phases
// behind, where a parity wait never returns (the emulation reports that
// deadlock, as the GPU would hang).
const char* const kBulkFill = R"(if (t == 0) kiln_mbarrier_arrive_expect_tx(full, s, 448 * 4);
      if (t < 4) kiln_bulk_copy(stage, s * 448 + 112 * t, tiles + kt * 448 + 112 * t, 112 * 4, full, s);)";

enum class Fill { kPlain, kAsync, kBulk };

constexpr int kTiles = 5, kBlocks = 3, kTile = 448;

// kElectedRelease: one lane per consumer warp releases the slot, after a
// __syncwarp(); kElectedNoSyncwarp forgets the __syncwarp().
enum class Bug { kNone, kNoFullWait, kNoEmptyWait, kNoInitSync, kShortCount, kElectedRelease, kElectedNoSyncwarp };

std::string pipeline_name(int stages, Fill fill, Bug bug) {
  static const char* const fills[] = {"plain", "async", "bulk"};
  static const char* const names[] = {
      "", "_no_full_wait", "_no_empty_wait", "_no_init_sync", "_short_count", "_elected", "_elected_no_syncwarp"};
  return fills[static_cast<int>(fill)] + std::to_string(stages) + names[static_cast<int>(bug)];
}

std::string pipeline_kernel(int stages, Fill fill, Bug bug) {
  const int full_count = (fill == Fill::kBulk ? 1 : 32) + (bug == Bug::kShortCount ? 1 : 0);
  return substitute(
      kPipeline,
      {{"$NAME", pipeline_name(stages, fill, bug)},
       {"$FILL", fill == Fill::kBulk    ? kBulkFill
                 : fill == Fill::kAsync ? kAsyncFill
                                        : kPlainFill},
       {"$FULL_WAIT", bug == Bug::kNoFullWait ? "" : "kiln_mbarrier_wait(full, s, (kt / $STAGES) & 1);"},
       {"$EMPTY_WAIT", bug == Bug::kNoEmptyWait ? "" : "kiln_mbarrier_wait(empty, s, (kt / $STAGES - 1) & 1);"},
       {"$INIT_SYNC", bug == Bug::kNoInitSync ? "" : "__syncthreads();"},
       {"$FULL_COUNT", std::to_string(full_count)},
       {"$PRODUCERS", fill == Fill::kBulk ? "4" : "32"},
       {"$RELEASE", bug == Bug::kElectedRelease
                        ? "__syncwarp();\n      if (t % 32 == 0) kiln_mbarrier_arrive(empty, s);"
                    : bug == Bug::kElectedNoSyncwarp ? "if (t % 32 == 0) kiln_mbarrier_arrive(empty, s);"
                                                     : "kiln_mbarrier_arrive(empty, s);"},
       {"$EMPTY_COUNT", bug == Bug::kElectedRelease || bug == Bug::kElectedNoSyncwarp ? "2" : "64"},
       {"$STAGES", std::to_string(stages)},
       {"$TILES", std::to_string(kTiles)}});
}

// Small integers: every sum is exact in f32.
std::vector<float> pipeline_input() { return testing::small_integers(kBlocks * kTiles * kTile); }

std::vector<float> pipeline_reference(const std::vector<float>& a) {
  std::vector<float> out(kBlocks * 64, 0.0f);
  for (int b = 0; b < kBlocks; ++b)
    for (int c = 0; c < 64; ++c)
      for (int kt = 0; kt < kTiles; ++kt)
        for (int k = 0; k < 7; ++k) {
          const int base = (b * kTiles + kt) * kTile + 64 * k;
          out[b * 64 + c] += a[base + (c + 13) % 64] - a[base + (c + 29) % 64];
        }
  return out;
}

// Runs one pipeline kernel on pipeline_input(); returns the launch's error ("" on success).
std::string run_pipeline(const testing::TempDir& dir, int stages, Fill fill, Bug bug,
                         std::vector<float>* out = nullptr) {
  const std::string name = pipeline_name(stages, fill, bug);
  Emulated e = build_emulated(dir, "run_" + name, device_source(pipeline_kernel(stages, fill, bug)),
                              {row_launch(name, kBlocks, 96, {{"const float*", 0}, {"float*", 1}})});
  std::vector<float> a = pipeline_input(), result(kBlocks * 64, -1.0f);
  kiln::testing::LaunchWatchdog watchdog("test_cuda_mbarrier", 120);
  const int rc = e.run({a.data(), result.data()});
  if (out) *out = result;
  return rc == 0 ? "" : e.error();
}

// Misuse, one kind per mode; one block of 64 threads.
const char* const kMisuse = R"(
extern "C" __global__ void misuse(float* __restrict__ out, int mode) {
  KILN_SHARED(float, buf, 64);
  KILN_SHARED_MBARRIER(bar, 2);
  const int t = threadIdx.x;
  if (mode == 0 && t == 0) kiln_mbarrier_arrive(bar, 0);            // never initialized
  if (mode == 1 && t == 0) kiln_mbarrier_init(bar, 2, 1);           // out of bounds
  // No arrivals (out[0] is 0: NVRTC 13 crashes compiling a count it knows is 0 for sm_90).
  if (mode == 2 && t == 0) kiln_mbarrier_init(bar, 0, (unsigned)out[0]);
  if (mode == 3 && t < 2) kiln_mbarrier_init(bar, 0, 1);            // initialized twice
  if (mode == 4) {  // every thread waits for a phase nobody arrives on
    if (t == 0) kiln_mbarrier_init(bar, 0, 1);
    __syncthreads();
    kiln_mbarrier_wait(bar, 0, 0);
  }
  if (mode == 5) {  // thread 1 hands buf[0] to thread 40 through the barrier
    if (t == 0) kiln_mbarrier_init(bar, 1, 1);
    __syncthreads();
    if (t == 1) {
      buf[0] = 5.0f;
      kiln_mbarrier_arrive(bar, 1);
    }
    if (t == 40) {
      kiln_mbarrier_wait(bar, 1, 0);
      out[0] = buf[0];
    }
  }
  if (mode == 6) {  // the same, but thread 40 waits on the other barrier, whose phase thread 2 completes
    if (t == 0) {
      kiln_mbarrier_init(bar, 0, 1);
      kiln_mbarrier_init(bar, 1, 1);
    }
    __syncthreads();
    if (t == 1) {
      buf[0] = 5.0f;
      kiln_mbarrier_arrive(bar, 1);
    }
    if (t == 2) kiln_mbarrier_arrive(bar, 0);
    if (t == 40) {
      kiln_mbarrier_wait(bar, 0, 0);
      out[0] = buf[0];
    }
  }
  if (mode == 8) {  // a parity is 0 or 1
    if (t == 0) kiln_mbarrier_init(bar, 0, 1);
    __syncthreads();
    if (t == 3) kiln_mbarrier_wait(bar, 0, 2);
  }
  if (mode == 7) {  // a wait for the phase before the first returns at once (PTX's parity rule)
    if (t == 0) kiln_mbarrier_init(bar, 0, 1);
    __syncthreads();
    if (t == 3) {
      kiln_mbarrier_wait(bar, 0, 1);
      out[0] = 7.0f;
    }
  }
}
)";

// Bulk copies (sm_90) and transaction bytes, one kind per mode; one block of 64 threads.
const char* const kBulkMisuse = R"(
extern "C" __global__ void bulk_misuse(const float* __restrict__ A, float* __restrict__ out, int mode) {
  KILN_SHARED(float, buf, 64);
  KILN_SHARED_MBARRIER(bar, 1);
  const int t = threadIdx.x;
  if (t == 0) kiln_mbarrier_init(bar, 0, 1);
  __syncthreads();
  if (mode == 0 && t == 0) kiln_bulk_copy(buf, 0, A, 24, bar, 0);      // not a multiple of 16 bytes
  if (mode == 1 && t == 0) kiln_bulk_copy(buf, 2, A, 16, bar, 0);      // buf[2]: 8 bytes past 16-byte alignment
  if (mode == 2 && t == 0) {  // the issuing thread reads before the phase (16 of 32 bytes) completes
    kiln_mbarrier_arrive_expect_tx(bar, 0, 32);
    kiln_bulk_copy(buf, 0, A, 16, bar, 0);
    out[0] = buf[1];
  }
  if (mode == 3 && t == 0) {  // the phase's one arrival is made; a second arrival is a bug
    kiln_mbarrier_arrive_expect_tx(bar, 0, 16);
    kiln_mbarrier_arrive(bar, 0);
  }
  if (mode == 4 || mode == 5) {  // two copies of 16 bytes; with mode 5 one of them is missing
    if (t == 0) kiln_mbarrier_arrive_expect_tx(bar, 0, 32);
    if (t == 1 || (t == 2 && mode == 4)) kiln_bulk_copy(buf, 4 * t, A + 4 * t, 16, bar, 0);
    if (t == 40) {
      kiln_mbarrier_wait(bar, 0, 0);
      out[0] = buf[5] + buf[9];
    }
  }
}
)";

}  // namespace

TEST_CASE("emulated warp-specialized mbarrier pipelines match the host", "[codegen][cuda][emulation][mbarrier]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_mbarrier");
  const std::vector<float> expected = pipeline_reference(pipeline_input());
  for (Fill fill : {Fill::kPlain, Fill::kAsync, Fill::kBulk}) {
    for (int stages : {2, 3}) {
      INFO(pipeline_name(stages, fill, Bug::kNone));
      std::vector<float> out;
      REQUIRE(run_pipeline(dir, stages, fill, Bug::kNone, &out) == "");
      int bad = 0;
      for (size_t i = 0; i < out.size(); ++i) bad += out[i] != expected[i];
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("one lane per consumer warp may release a slot after a __syncwarp(), not without one",
          "[codegen][cuda][emulation][mbarrier]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_mbarrier");
  const std::vector<float> expected = pipeline_reference(pipeline_input());
  for (int stages : {2, 3}) {
    INFO(stages << " stages");
    std::vector<float> out;
    REQUIRE(run_pipeline(dir, stages, Fill::kPlain, Bug::kElectedRelease, &out) == "");
    CHECK(out == expected);
  }
  // The producer then refills a slot other lanes of the warp may still read.
  CHECK_THAT(run_pipeline(dir, 2, Fill::kPlain, Bug::kElectedNoSyncwarp),
             Contains("shared-memory race on stage[") && Contains("of kernel plain2_elected_no_syncwarp") &&
                 Contains("no mbarrier phase that orders them"));
}

TEST_CASE("a consumer that does not wait for its slot, or a producer that refills it early, is a race",
          "[codegen][cuda][emulation][mbarrier]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_mbarrier");
  for (Fill fill : {Fill::kPlain, Fill::kAsync}) {
    for (Bug bug : {Bug::kNoFullWait, Bug::kNoEmptyWait}) {
      const std::string name = pipeline_name(2, fill, bug);
      INFO(name);
      // (A cp.async consumer may instead read while the copy is in flight.)
      const std::string msg = run_pipeline(dir, 2, fill, bug);
      CHECK_THAT(msg, Contains("of kernel " + name) && ((Contains("shared-memory race on stage[") &&
                                                         Contains("no mbarrier phase that orders them")) ||
                                                        Contains("was read before its cp.async copy arrived")));
    }
  }
  // Bulk copies: a consumer that does not wait reads a slot whose copy is
  // in flight, or one the producer has not filled yet; a producer that does
  // not wait for the release copies over a slot the consumers read, or
  // over its own copy in flight, or runs a phase ahead on full.
  CHECK_THAT(run_pipeline(dir, 2, Fill::kBulk, Bug::kNoFullWait),
             Contains("of kernel bulk2_no_full_wait") &&
                 (Contains("was read before its bulk copy arrived") || Contains("no mbarrier phase that orders them")));
  CHECK_THAT(run_pipeline(dir, 2, Fill::kBulk, Bug::kNoEmptyWait),
             Contains("of kernel bulk2_no_empty_wait") &&
                 ((Contains("shared-memory race on stage[") && Contains("no mbarrier phase that orders them")) ||
                  Contains("while an earlier copy into it, issued by this thread, is in flight") ||
                  Contains("arrives on mbarrier full[0], whose phase has all its 1 arrivals already")));
}

TEST_CASE(
    "an mbarrier used before its initialization is visible, or one whose phase never completes, fails the "
    "launch",
    "[codegen][cuda][emulation][mbarrier]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_mbarrier");
  CHECK_THAT(run_pipeline(dir, 2, Fill::kPlain, Bug::kNoInitSync),
             Contains("mbarrier full[0]") &&
                 (Contains("which thread (0,0,0) initialized with no __syncthreads() in between") ||
                  Contains("before it is initialized in this block")));
  // 33 arrivals expected, 32 made: the consumers wait for ever, and so does
  // the producer once it needs a slot back.
  const std::string msg = run_pipeline(dir, 2, Fill::kPlain, Bug::kShortCount);
  CHECK_THAT(msg, Contains("deadlock in block (0,0,0) of kernel plain2_short_count") &&
                      Contains("64 threads wait on mbarrier full[0]") &&
                      Contains("32 threads wait on mbarrier empty[0]") &&
                      Contains("each phase needs its whole arrival count"));
}

TEST_CASE("misused mbarriers fail the launch with a message", "[codegen][cuda][emulation][mbarrier]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_mbarrier");
  Emulated e = build_emulated(dir, "run_misuse", device_source(kMisuse),
                              {row_launch("misuse", 1, 64, {{"float*", 0}, {"int", 1}})});
  float out[1] = {0};
  kiln::testing::LaunchWatchdog watchdog("test_cuda_mbarrier", 120);
  auto run_mode = [&](int mode) {
    INFO("mode " << mode);
    out[0] = 0;
    const bool ok = e.run({out, &mode}) == 0;
    return ok ? std::string("ok") : e.error();
  };
  CHECK_THAT(run_mode(0), Contains("thread (0,0,0) in block (0,0,0) of kernel misuse arrives on mbarrier bar[0] "
                                   "before it is initialized in this block"));
  CHECK_THAT(run_mode(1), Contains("initializes mbarrier bar[2], out of bounds of bar[2]"));
  CHECK_THAT(run_mode(2), Contains("initializes mbarrier bar[0] with an arrival count of 0; PTX allows 1 to 2^20 - 1"));
  CHECK_THAT(run_mode(3), Contains("already initialized in this block"));
  CHECK_THAT(run_mode(4), Contains("deadlock in block (0,0,0) of kernel misuse: 64 threads wait on mbarrier bar[0]"));
  CHECK(run_mode(5) == "ok");
  CHECK(out[0] == 5.0f);
  // Reported at whichever of the two accesses comes second.
  CHECK_THAT(run_mode(6), Contains("shared-memory race on buf[0]") &&
                              (Contains("thread (40,0,0) reads what thread (1,0,0) wrote with no __syncthreads()") ||
                               Contains("thread (1,0,0) writes what thread (40,0,0) read with no __syncthreads()")));
  CHECK(run_mode(7) == "ok");
  CHECK(out[0] == 7.0f);
  CHECK_THAT(run_mode(8), Contains("waits on mbarrier bar[0] with parity 2; a phase's parity is 0 or 1"));
  // Each launch starts with no barrier initialized.
  CHECK(run_mode(5) == "ok");
}

TEST_CASE("misused bulk copies and transaction counts fail the launch with a message",
          "[codegen][cuda][emulation][mbarrier]") {
  SKIP_WITHOUT_COMPILER();
  testing::TempDir dir("kiln_mbarrier");
  Emulated e = build_emulated(dir, "run_bulk_misuse", device_source(kBulkMisuse),
                              {row_launch("bulk_misuse", 1, 64, {{"const float*", 0}, {"float*", 1}, {"int", 2}})});
  alignas(16) float a[16];
  for (int i = 0; i < 16; ++i) a[i] = static_cast<float>(i + 1);
  float out[1] = {0};
  kiln::testing::LaunchWatchdog watchdog("test_cuda_mbarrier", 120);
  auto run_mode = [&](int mode) {
    INFO("mode " << mode);
    out[0] = 0;
    const bool ok = e.run({a, out, &mode}) == 0;
    return ok ? std::string("ok") : e.error();
  };
  const std::string rule = "the size must be a positive multiple of 16 bytes, and both addresses 16-byte aligned";
  CHECK_THAT(run_mode(0), Contains("issues a bulk copy of 24 bytes into buf[0]: " + rule));
  CHECK_THAT(run_mode(1), Contains("issues a bulk copy of 16 bytes into buf[2]: " + rule));
  CHECK_THAT(run_mode(2), Contains("buf[1] was read before its bulk copy arrived") &&
                              Contains("issued by this thread") && Contains("kiln_mbarrier_wait"));
  CHECK_THAT(run_mode(3), Contains("arrives on mbarrier bar[0], whose phase has all its 1 arrivals already and "
                                   "waits only for 16 bytes of bulk copies"));
  CHECK(run_mode(4) == "ok");
  CHECK(out[0] == 6.0f + 10.0f);
  CHECK_THAT(run_mode(5), Contains("deadlock in block (0,0,0) of kernel bulk_misuse: 1 thread waits on mbarrier "
                                   "bar[0]"));
  CHECK(run_mode(4) == "ok");  // the copy left in flight was dropped with the launch
}

TEST_CASE("NVRTC compiles the mbarrier prelude for sm_80 and sm_90", "[codegen][cuda][nvrtc][mbarrier]") {
  std::string why;
  if (!nvrtc_available(&why)) KILN_SKIP("NVRTC is not available: " << why);
  const std::string kernels =
      pipeline_kernel(2, Fill::kPlain, Bug::kNone) + pipeline_kernel(3, Fill::kAsync, Bug::kNone) + kMisuse;
  for (const char* arch : {"sm_80", "sm_90"}) {
    INFO(arch);
    NvrtcOutput out = nvrtc_compile(device_source(kernels), "mbarrier.cu", arch);
    CHECK(!out.cubin.empty());
    for (const char* insn :
         {"mbarrier.init.shared.b64", "mbarrier.arrive.shared.b64", "mbarrier.test_wait.parity.shared.b64",
          "cp.async.mbarrier.arrive.noinc.shared.b64", "cp.async.cg.shared.global"}) {
      INFO(insn);
      CHECK(out.ptx.find(insn) != std::string::npos);
    }
    REQUIRE(out.resources.size() == 3);
    for (const CudaKernelResources& r : out.resources) {
      INFO(r.kernel);
      CHECK(r.stack_bytes == 0);
    }
  }
  // Transaction bytes and bulk copies: sm_90 only.
  NvrtcOutput out =
      nvrtc_compile(device_source(pipeline_kernel(2, Fill::kBulk, Bug::kNone) + kBulkMisuse), "bulk.cu", "sm_90");
  CHECK(!out.cubin.empty());
  for (const char* insn : {"mbarrier.arrive.expect_tx.shared::cta.b64",
                           "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"}) {
    INFO(insn);
    CHECK(out.ptx.find(insn) != std::string::npos);
  }
  CHECK(out.resources.size() == 2);
}
