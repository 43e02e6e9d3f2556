// The direct cuda templates (max_pool2d / avg_pool2d, depthwise_conv2d) on
// random configs and random small shapes (1, primes, odd sizes, strides,
// padding, dilation), without a GPU: every kernel's CUDA C runs on the CPU
// through the emulation header and is compared with the reference
// interpreter, and compiles with NVRTC for sm_80 and sm_90 within their
// limits (each emulated config: support/gpu_check.h), as do random configs
// of common CNN shapes.
#include <catch2/catch.hpp>
#include <random>

#include "support/gpu_check.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "support/test_seed.h"
#include "test_codegen_util.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Matchers::Contains;
using kiln::test::user_error_of;

namespace {

const std::vector<int64_t> kSizes{1, 2, 3, 5, 7, 13, 16};

int64_t pick(std::mt19937_64& rng, const std::vector<int64_t>& v) { return v[rng() % v.size()]; }

std::string str(int64_t v) { return std::to_string(v); }

// Shrinks a window extent until it fits the padded input (the ops reject
// windows larger than it).
int64_t fit_window(int64_t taps, int64_t dilation, int64_t input, int64_t pad) {
  while (taps > 1 && (taps - 1) * dilation + 1 > input + 2 * pad) --taps;
  return taps;
}

// A random pool of small, awkward sizes (pad < window, as the op requires).
std::string random_pool_workload(std::mt19937_64& rng) {
  const int64_t H = pick(rng, kSizes), W = pick(rng, kSizes), pad = rng() % 3;
  const int64_t R = std::max(pad + 1, fit_window(pick(rng, {1, 2, 3, 5}), 1, H, pad));
  const int64_t S = std::max(pad + 1, fit_window(pick(rng, {1, 2, 3, 5}), 1, W, pad));
  return std::string(rng() % 2 ? "avg_pool2d" : "max_pool2d") + ":N=" + str(1 + rng() % 2) +
         ",C=" + str(pick(rng, kSizes)) + ",H=" + str(H) + ",W=" + str(W) + ",R=" + str(R) + ",S=" + str(S) +
         ",stride=" + str(1 + rng() % 3) + ",pad=" + str(pad);
}

// A random depthwise convolution of small, awkward sizes, with or without
// bias and an activation.
std::string random_depthwise_workload(std::mt19937_64& rng) {
  const int64_t H = pick(rng, kSizes), W = pick(rng, kSizes), pad = rng() % 3, dil = 1 + rng() % 2;
  const char* acts[] = {"", ",relu=1", ",relu6=1", ",hswish=1", ",hsigmoid=1"};
  return "depthwise_conv2d:N=" + str(1 + rng() % 2) + ",C=" + str(pick(rng, kSizes)) + ",H=" + str(H) + ",W=" + str(W) +
         ",R=" + str(fit_window(pick(rng, {1, 2, 3, 5}), dil, H, pad)) +
         ",S=" + str(fit_window(pick(rng, {1, 2, 3, 5}), dil, W, pad)) + ",stride=" + str(1 + rng() % 2) +
         ",pad=" + str(pad) + ",dilation=" + str(dil) + (rng() % 2 ? ",bias=1" : "") + acts[rng() % 5];
}


const std::vector<std::string> kPoolNvrtcWorkloads{"max_pool2d:N=1,C=64,H=112,W=112,R=3,S=3,stride=2,pad=1",
                                                   "avg_pool2d:N=8,C=2048,H=7,W=7,R=7,S=7",
                                                   "max_pool2d:C=37,H=13,W=29,R=2,S=3,stride=2,pad=1"};
const std::vector<std::string> kDepthwiseNvrtcWorkloads{
    "depthwise_conv2d:C=32,H=112,W=112,R=3,S=3,pad=1,bias=1,relu6=1",
    "depthwise_conv2d:N=8,C=1024,H=7,W=7,R=3,S=3,pad=1", "depthwise_conv2d:C=144,H=56,W=56,R=3,S=3,stride=2,pad=1",
    "depthwise_conv2d:C=13,H=17,W=31,R=5,S=5,pad=2,dilation=2,hswish=1"};

}  // namespace

TEST_CASE("cuda pool2d template: fixed awkward shapes, emulated against the interpreter",
          "[gpu][template][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_gpu_pool");
  const std::string row = R"({"threads":32,"tile":4,"tile_mode":"row","unroll_window":"none"})";
  const std::string interleaved = R"({"threads":64,"tile":8,"tile_mode":"interleaved","unroll_window":"unroll"})";
  Tally all;
  auto add = [&](const Tally& t) {
    all.ran += t.ran;
    all.rejected += t.rejected;
  };
  add(check_emulated("max_pool2d:N=1,C=1,H=1,W=1,R=1,S=1", {row, interleaved}, 0, 21, dir.path));
  add(check_emulated("max_pool2d:N=2,C=3,H=13,W=7,R=3,S=3,stride=2,pad=1", {row, interleaved}, 1, 22, dir.path));
  add(check_emulated("avg_pool2d:N=1,C=5,H=11,W=17,R=3,S=2,stride=1,pad=1", {row, interleaved}, 1, 23, dir.path));
  add(check_emulated("avg_pool2d:N=3,C=2,H=7,W=7,R=7,S=7", {row}, 0, 24, dir.path));
  add(check_emulated("max_pool2d:C=37,H=5,W=31,R=2,S=2,stride=2", {interleaved}, 0, 25, dir.path));
  CHECK(all.ran + all.rejected == 15);
  CHECK(all.rejected == 0);  // every threads option launches on sm_90
}

TEST_CASE("cuda depthwise_conv2d template: fixed awkward shapes, emulated against the interpreter",
          "[gpu][template][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_gpu_dw");
  // Register tiles with tails, each staging choice (the outer factor is
  // ceil(extent / the others)).
  Tally all;
  auto add = [&](const Tally& t) {
    all.ran += t.ran;
    all.rejected += t.rejected;
  };
  add(check_emulated("depthwise_conv2d:N=1,C=1,H=1,W=1,R=1,S=1", {}, 1, 31, dir.path));
  // 7 x 7 outputs.
  add(check_emulated("depthwise_conv2d:N=2,C=3,H=13,W=13,R=3,S=3,stride=2,pad=1,bias=1,relu6=1",
                     {R"({"tile_c":[2,2],"tile_h":[2,2,2],"tile_w":[2,2,2],"shared":"none","unroll_window":"none"})",
                      R"({"tile_c":[3,1],"tile_h":[2,1,4],"tile_w":[4,1,2],"shared":"both","unroll_window":"unroll"})"},
                     0, 32, dir.path));
  // A stride in W of its own: 7 x 13 outputs.
  add(check_emulated("depthwise_conv2d:C=3,H=13,W=13,R=3,S=3,stride=2,stride_w=1,pad=1,bias=1",
                     {R"({"tile_c":[3,1],"tile_h":[2,2,2],"tile_w":[2,4,2],"shared":"data","unroll_window":"none"})"},
                     1, 33, dir.path));
  // 7 x 13 outputs.
  add(check_emulated("depthwise_conv2d:C=4,H=7,W=17,R=3,S=5,pad=2,dilation=2,hswish=1",
                     {R"({"tile_c":[2,2],"tile_h":[2,2,2],"tile_w":[2,4,2],"shared":"none","unroll_window":"none"})",
                      R"({"tile_c":[1,4],"tile_h":[2,4,1],"tile_w":[1,13,1],"shared":"data","unroll_window":"unroll"})",
                      R"({"tile_c":[4,1],"tile_h":[2,1,4],"tile_w":[2,2,4],"shared":"both","unroll_window":"unroll"})"},
                     0, 33, dir.path));
  // 8 x 5 outputs.
  add(check_emulated("depthwise_conv2d:C=5,H=16,W=11,R=2,S=3,stride=2",
                     {R"({"tile_c":[2,4],"tile_h":[1,8,1],"tile_w":[1,5,1],"shared":"data","unroll_window":"none"})"},
                     1, 34, dir.path));
  CHECK(all.ran + all.rejected == 15);
}

TEST_CASE("cuda pool2d and depthwise_conv2d templates: random shapes and configs, emulated against the interpreter",
          "[gpu][template][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_gpu_direct_rand");
  const EmulatedNvrtcCounts nvrtc_before = emulated_nvrtc_counts();
  const uint64_t run = run_seed();
  INFO(seed_note(run));
  std::mt19937_64 rng(run);
  Tally all;
  for (int i = 0; i < 3; ++i) {
    const uint64_t seed = run + static_cast<uint64_t>(i);
    for (const std::string& w : {random_pool_workload(rng), random_depthwise_workload(rng)}) {
      Tally t = check_emulated(w, {}, 1, seed, dir.path);
      all.ran += t.ran;
      all.rejected += t.rejected;
    }
  }
  CHECK(all.ran + all.rejected == 12);
  check_nvrtc_covered(nvrtc_before);  // and NVRTC compiled each for sm_80 and sm_90
}

TEST_CASE("cuda pool2d and depthwise_conv2d templates: a longer random sweep", "[gpu][template][emulation][.slow]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_gpu_direct_sweep");
  const uint64_t run = run_seed();
  INFO(seed_note(run));
  std::mt19937_64 rng(run + 7);
  Tally all;
  for (int i = 0; i < 30; ++i) {
    const uint64_t seed = run + static_cast<uint64_t>(i);
    for (const std::string& w : {random_pool_workload(rng), random_depthwise_workload(rng)}) {
      Tally t = check_emulated(w, {}, 2, seed, dir.path);
      all.ran += t.ran;
      all.rejected += t.rejected;
    }
  }
  // Most configs of small shapes launch: rejections are the rare blocks
  // over 1024 threads or 48 KiB of shared memory.
  CHECK(all.ran > all.rejected * 4);
}

TEST_CASE(
    "cuda pool2d and depthwise_conv2d templates: NVRTC compiles random configs for sm_80 and sm_90 within "
    "limits",
    "[gpu][template][nvrtc]") {
  std::string why;
  if (!nvrtc_available(&why)) KILN_SKIP("NVRTC is not available: " << why);
  const uint64_t run = run_seed();
  INFO(seed_note(run));
  CHECK(check_nvrtc(kPoolNvrtcWorkloads, 3, run).ran > 0);
  CHECK(check_nvrtc(kDepthwiseNvrtcWorkloads, 3, run + 1).ran > 0);
}

TEST_CASE("cuda pool2d and depthwise_conv2d templates: defaults of common CNN shapes", "[gpu][template]") {
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  auto default_launch = [&](const std::string& w) {
    OpInstance op = build_workload(w);
    const GpuTemplate& t = find_op(op.op).gpu;
    auto space = t.define_space(op, gpu);
    CudaSource src = gpu_source(op, t.default_config(op, gpu, *space), gpu);
    REQUIRE(src.launches.size() == 1);
    return src.launches[0];
  };
  // Pool: 256 threads, one output each.
  CudaKernelLaunch pool = default_launch("max_pool2d:N=1,C=64,H=112,W=112,R=3,S=3,stride=2,pad=1");
  CHECK(pool.block == std::array<int64_t, 3>{256, 1, 1});
  CHECK(pool.grid[0] == 64 * 56 * 56 / 256);
  CHECK(pool.shared_bytes == 0);
  // Depthwise: 16 columns (a divisor of 112: no tail) x 8 x 2 rows x 2
  // channels; the padded input box (2 x 18 x 18 floats) in shared memory.
  CudaKernelLaunch wide = default_launch("depthwise_conv2d:C=32,H=112,W=112,R=3,S=3,pad=1");
  CHECK(wide.block == std::array<int64_t, 3>{16, 8, 2});
  CHECK(wide.grid[0] == 16 * 7 * 7);
  CHECK(wide.shared_bytes == 2 * 18 * 18 * 4);
  // A small late layer: the whole 7 x 7 output of 4 channels per block.
  CudaKernelLaunch small = default_launch("depthwise_conv2d:C=1024,H=7,W=7,R=3,S=3,pad=1");
  CHECK(small.block == std::array<int64_t, 3>{7, 7, 4});
  CHECK(small.grid[0] == 256);
}

TEST_CASE("cuda pool2d template: the threads knob stays within the architecture's limit", "[gpu][template]") {
  GpuLimits small = gpu_limits_for_arch("sm_90");
  small.max_threads_per_block = 256;
  OpInstance op = build_workload("max_pool2d:C=3,H=9,W=9,R=3,S=3");
  auto space = find_op("max_pool2d").gpu.define_space(op, small);
  for (const auto& option : space->knob("threads").options) CHECK(option[0] <= 256);
}

TEST_CASE("cuda pool2d and depthwise_conv2d templates: user errors", "[gpu][template][errors]") {
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  auto space_error = [&](const std::string& w) {
    OpInstance op = build_workload(w);
    return user_error_of([&] { find_op(op.op).gpu.define_space(op, gpu); });
  };
  CHECK_THAT(space_error("max_pool2d:C=3,H=9,W=9,R=3,S=3,dtype=f64"),
             Contains("the cuda max_pool2d template computes f32, or f16/bf16") && Contains("f64"));
  CHECK_THAT(space_error("depthwise_conv2d:C=3,H=9,W=9,R=3,S=3,dtype=f64"),
             Contains("the cuda depthwise_conv2d template computes f32, or f16/bf16"));
  OpInstance avg = build_workload("avg_pool2d:C=3,H=9,W=9,R=3,S=3");
  auto space = find_op("avg_pool2d").gpu.define_space(avg, gpu);
  CHECK_THAT(user_error_of([&] { find_op("max_pool2d").gpu.apply_config(avg, space->get(0)); }),
             Contains("the max_pool2d cuda template cannot schedule op 'avg_pool2d'"));
}

// An unrolled loop that holds a stage computed at it repeats the stage's
// local allocation: the CUDA C must declare each repeat in its own scope
// (it once declared the array twice in one scope, which does not compile).
TEST_CASE("cuda codegen: an unrolled loop holding a local stage runs, emulated against the interpreter",
          "[gpu][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  Tensor A = placeholder({8}, DType::f32(), "A");
  Tensor B = compute(
      {8}, [&](Var i) { return A(i) + 1.0f; }, "B");
  Tensor O = compute(
      {8}, [&](Var i) { return B(i) * 2.0f; }, "O");
  Schedule s({O});
  IterVar t, i;
  s[O].split(s[O].axis()[0], 2, &t, &i);
  s[O].bind(t, "threadIdx.x");
  s[O].unroll(i);
  s[B].set_scope(MemScope::kLocal);
  s[B].compute_at(s[O], i);
  CudaSource src = emit_cuda(lower_gpu(s, {A, O}, "unrolled_local", gpu), gpu);
  OpInstance op;
  op.op = "unrolled_local";
  op.inputs = {A};
  op.outputs = {O};
  TempDir dir("kiln_gpu_unroll_local");
  CHECK(run_emulated_and_check(op, src, dir.path, 5) == "");
}
