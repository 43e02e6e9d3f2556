// The cuda implicit-GEMM templates of conv2d (NCHW) and conv2d_nhwc on
// random configs and random small shapes (1, primes, odd sizes, strides,
// padding, 1x1 and 3x3 windows, bias and activations), without a GPU: every
// kernel's CUDA C runs on the CPU through the emulation header and is
// compared with the reference interpreter and compiles with NVRTC for sm_80
// and sm_90 within their limits (support/gpu_check.h); NVRTC also compiles
// random configs of resnet50's layer shapes.
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

// A random convolution of small, awkward sizes in either layout: 1x1 or
// 3x3 windows (sometimes 2 or 5 wide, sometimes dilated), stride 1 or 2,
// padding, with or without bias and an activation, sometimes grouped.
std::string random_conv_workload(std::mt19937_64& rng) {
  const int64_t H = pick(rng, kSizes), W = pick(rng, kSizes), pad = rng() % 3, dil = rng() % 4 == 0 ? 2 : 1;
  const std::vector<int64_t> windows{1, 3, 1, 3, 2, 5};
  const char* acts[] = {"", ",relu=1", ",relu6=1", ",hswish=1", ",hsigmoid=1"};
  // A third of them grouped: 2 or 3 groups of 1 to 5 channels each.
  const int64_t G = rng() % 3 == 0 ? 2 + static_cast<int64_t>(rng() % 2) : 1;
  const int64_t C = G > 1 ? G * pick(rng, {1, 2, 3, 5}) : pick(rng, kSizes);
  const int64_t K = G > 1 ? G * pick(rng, {1, 2, 3, 5}) : pick(rng, kSizes);
  return std::string(rng() % 2 ? "conv2d" : "conv2d_nhwc") + ":N=" + str(1 + rng() % 2) + ",C=" + str(C) +
         ",H=" + str(H) + ",W=" + str(W) + ",K=" + str(K) + (G > 1 ? ",groups=" + str(G) : "") +
         ",R=" + str(fit_window(pick(rng, windows), dil, H, pad)) +
         ",S=" + str(fit_window(pick(rng, windows), dil, W, pad)) + ",stride=" + str(1 + rng() % 2) +
         ",pad=" + str(pad) + ",dilation=" + str(dil) + (rng() % 2 ? ",bias=1" : "") + acts[rng() % 5];
}


// resnet50's layer shapes (batch 1): the stem, a 3x3 and the 1x1s of each
// stage, the strided 1x1 projection.
const std::vector<std::string> kResnetWorkloads{
    "conv2d:C=3,H=224,W=224,K=64,R=7,S=7,stride=2,pad=3,bias=1,relu=1",
    "conv2d:C=64,H=56,W=56,K=64,R=3,S=3,pad=1",
    "conv2d_nhwc:C=64,H=56,W=56,K=64,R=3,S=3,pad=1,bias=1,relu=1",
    "conv2d:C=64,H=56,W=56,K=256,R=1,S=1",
    "conv2d_nhwc:C=256,H=56,W=56,K=64,R=1,S=1",
    "conv2d_nhwc:C=128,H=28,W=28,K=128,R=3,S=3,pad=1",
    "conv2d:C=256,H=14,W=14,K=256,R=3,S=3,pad=1,bias=1,relu=1",
    "conv2d_nhwc:C=256,H=14,W=14,K=256,R=3,S=3,pad=1",
    "conv2d:C=1024,H=14,W=14,K=2048,R=1,S=1,stride=2",
    "conv2d_nhwc:C=512,H=7,W=7,K=512,R=3,S=3,pad=1",
};

}  // namespace

TEST_CASE("cuda conv2d templates: fixed awkward shapes, emulated against the interpreter",
          "[gpu][template][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_gpu_conv");
  Tally all;
  // A single element.
  all.add(check_emulated("conv2d:N=1,C=1,H=1,W=1,K=1,R=1,S=1", {}, 0, 41, dir.path));
  // A 1x1 convolution (a plain GEMM): vector fills and stores in both
  // layouts, channels per step that do not divide C.
  all.add(check_emulated(
      "conv2d:N=2,C=12,H=4,W=8,K=8,R=1,S=1,bias=1",
      {R"({"tile_k":[2,2,2],"tile_h":[1,4,1],"tile_w":[1,2,4],"tile_c":[2,8],"taps":"inner","shared":"both","vec":4,"unroll":"unroll"})"},
      0, 42, dir.path));
  all.add(check_emulated(
      "conv2d_nhwc:N=1,H=5,W=7,C=8,K=12,R=1,S=1,relu=1",
      {R"({"tile_k":[1,3,4],"tile_h":[2,2,2],"tile_w":[1,7,1],"tile_c":[1,8],"taps":"outer","shared":"both","vec":4,"unroll":"none"})"},
      0, 43, dir.path));
  // resnet-like 3x3 layers, small: tails in every tile, each staging choice
  // and tap order.
  all.add(check_emulated(
      "conv2d:N=1,C=16,H=14,W=14,K=16,R=3,S=3,pad=1,bias=1,relu=1",
      {R"({"tile_k":[2,4,2],"tile_h":[4,2,2],"tile_w":[2,4,2],"tile_c":[4,4],"taps":"outer","shared":"data","vec":2,"unroll":"unroll"})",
       R"({"tile_k":[2,8,1],"tile_h":[2,7,1],"tile_w":[1,7,2],"tile_c":[4,4],"taps":"inner","shared":"weight","vec":1,"unroll":"none"})"},
      0, 44, dir.path));
  all.add(check_emulated(
      "conv2d_nhwc:N=2,H=13,W=13,C=8,K=16,R=3,S=3,stride=2,pad=1,relu6=1",
      {R"({"tile_k":[1,4,4],"tile_h":[2,2,2],"tile_w":[1,7,1],"tile_c":[2,4],"taps":"inner","shared":"both","vec":4,"unroll":"unroll"})",
       R"({"tile_k":[1,16,1],"tile_h":[1,7,1],"tile_w":[4,1,2],"tile_c":[1,8],"taps":"outer","shared":"none","vec":1,"unroll":"none"})"},
      0, 45, dir.path));
  // A 7x7 window with stride 2 (the stem, small) and a dilated one.
  all.add(check_emulated(
      "conv2d:C=3,H=17,W=19,K=5,R=7,S=7,stride=2,pad=3",
      {R"({"tile_k":[1,5,1],"tile_h":[5,1,2],"tile_w":[1,5,2],"tile_c":[2,2],"taps":"inner","shared":"both","vec":4,"unroll":"none"})"},
      0, 46, dir.path));
  all.add(check_emulated(
      "conv2d_nhwc:N=1,H=11,W=9,C=5,K=7,R=3,S=3,pad=2,dilation=2,hswish=1",
      {R"({"tile_k":[1,7,1],"tile_h":[3,2,2],"tile_w":[2,3,2],"tile_c":[3,2],"taps":"outer","shared":"both","vec":2,"unroll":"unroll"})"},
      0, 47, dir.path));
  // Grouped: a block's channel tile spanning several groups (its staged
  // data box spans their channels), and one inside a group; both layouts.
  all.add(check_emulated(
      "conv2d:N=1,C=6,H=7,W=9,K=9,R=3,S=3,pad=1,groups=3,bias=1,relu=1",
      {R"({"tile_k":[3,4,1],"tile_h":[2,2,2],"tile_w":[2,4,2],"tile_c":[1,2],"taps":"inner","shared":"both","vec":1,"unroll":"unroll"})",
       R"({"tile_k":[3,3,1],"tile_h":[1,7,1],"tile_w":[3,3,1],"tile_c":[2,1],"taps":"outer","shared":"data","vec":1,"unroll":"none"})"},
      0, 48, dir.path));
  all.add(check_emulated(
      "conv2d_nhwc:N=2,H=6,W=5,C=8,K=12,R=3,S=3,stride=2,pad=1,groups=4,hswish=1",
      {R"({"tile_k":[1,3,4],"tile_h":[1,3,1],"tile_w":[1,3,1],"tile_c":[1,2],"taps":"inner","shared":"both","vec":4,"unroll":"unroll"})",
       R"({"tile_k":[3,2,2],"tile_h":[2,2,1],"tile_w":[1,3,1],"tile_c":[2,1],"taps":"outer","shared":"weight","vec":2,"unroll":"none"})"},
      0, 49, dir.path));
  CHECK(all.ran + all.rejected == 21);
  CHECK(all.rejected == 0);
}

TEST_CASE("cuda conv2d templates: random shapes and configs, emulated against the interpreter",
          "[gpu][template][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_gpu_conv_rand");
  const EmulatedNvrtcCounts nvrtc_before = emulated_nvrtc_counts();
  const uint64_t run = run_seed();
  INFO(seed_note(run));
  std::mt19937_64 rng(run);
  Tally all;
  for (int i = 0; i < 4; ++i) {
    const std::string w = random_conv_workload(rng);
    all.add(check_emulated(w, {}, 1, run + static_cast<uint64_t>(i), dir.path));
  }
  CHECK(all.ran + all.rejected == 8);
  check_nvrtc_covered(nvrtc_before);  // and NVRTC compiled each for sm_80 and sm_90
}

TEST_CASE("cuda conv2d templates: a longer random sweep", "[gpu][template][emulation][.slow]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_gpu_conv_sweep");
  const uint64_t run = run_seed();
  INFO(seed_note(run));
  std::mt19937_64 rng(run + 7);
  Tally all;
  for (int i = 0; i < 40; ++i) {
    const std::string w = random_conv_workload(rng);
    all.add(check_emulated(w, {}, 3, run + static_cast<uint64_t>(i), dir.path));
  }
  // Most configs of small shapes launch: rejections are the blocks over
  // 1024 threads.
  CHECK(all.ran > all.rejected * 2);
}

TEST_CASE("cuda conv2d templates: NVRTC compiles random configs of resnet50's layers for sm_80 and sm_90 within "
          "limits",
          "[gpu][template][nvrtc]") {
  std::string why;
  if (!nvrtc_available(&why)) KILN_SKIP("NVRTC is not available: " << why);
  const uint64_t run = run_seed();
  INFO(seed_note(run));
  Tally t = check_nvrtc(kResnetWorkloads, 1, run);
  CHECK(t.ran + t.rejected == 40);
  CHECK(t.ran >= 20);  // every default, at least
}

TEST_CASE("cuda conv2d templates: a longer NVRTC sweep of resnet50's layers", "[gpu][template][nvrtc][.slow]") {
  std::string why;
  if (!nvrtc_available(&why)) KILN_SKIP("NVRTC is not available: " << why);
  const uint64_t run = run_seed();
  INFO(seed_note(run));
  Tally t = check_nvrtc(kResnetWorkloads, 8, run + 3);
  CHECK(t.ran > t.rejected);
}


TEST_CASE("cuda conv2d templates: defaults of resnet50's layers", "[gpu][template]") {
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  auto default_launch = [&](const std::string& w) {
    OpInstance op = build_workload(w);
    const GpuTemplate& t = find_op(op.op).gpu;
    auto space = t.define_space(op, gpu);
    CudaSource src = gpu_source(op, t.default_config(op, gpu, *space), gpu);
    REQUIRE(src.launches.size() == 1);
    return src.launches[0];
  };
  // A 4 x 14 box of a 56 x 56 output (7 x 2 threads of 2 x 2 positions) x
  // 16 channel threads, one channel each (more would leave SMs idle); steps
  // of 4 channels: a 4 x 6 x 16 input box and 16 x 4 x 3 x 3 weights.
  CudaKernelLaunch nchw = default_launch("conv2d:C=64,H=56,W=56,K=64,R=3,S=3,pad=1");
  CHECK(nchw.block == std::array<int64_t, 3>{14, 16, 1});
  CHECK(nchw.grid[0] == 14 * 4 * 4);
  CHECK(nchw.shared_bytes == (4 * 6 * 16 + 16 * 4 * 9) * 4);
  // NHWC: the channel threads on threadIdx.x; a 1x1 layer with K = 256
  // keeps 4 channels per thread (64 per block); steps of 16 channels.
  CudaKernelLaunch wide = default_launch("conv2d_nhwc:C=64,H=56,W=56,K=256,R=1,S=1");
  CHECK(wide.block == std::array<int64_t, 3>{16, 14, 1});
  CHECK(wide.grid[0] == 14 * 4 * 4);
  CHECK(wide.shared_bytes == (4 * 14 * 16 + 16 * 64) * 4);
  // The whole 7 x 7 output per block, 8 channels.
  CudaKernelLaunch small = default_launch("conv2d_nhwc:C=512,H=7,W=7,K=512,R=3,S=3,pad=1");
  CHECK(small.block == std::array<int64_t, 3>{8, 49, 1});
  CHECK(small.grid[0] == 64);
  CHECK(small.shared_bytes == (9 * 9 * 4 + 3 * 3 * 4 * 8) * 4);
}

TEST_CASE("cuda conv2d templates: user errors", "[gpu][template][errors]") {
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  auto space_error = [&](const std::string& w) {
    OpInstance op = build_workload(w);
    return user_error_of([&] { find_op(op.op).gpu.define_space(op, gpu); });
  };
  CHECK_THAT(space_error("conv2d:C=4,H=9,W=9,K=4,R=3,S=3,dtype=f64"),
             Contains("the cuda conv2d template computes f32, or f16/bf16") && Contains("f64"));
  OpInstance nhwc = build_workload("conv2d_nhwc:C=4,H=9,W=9,K=4,R=3,S=3");
  auto space = find_op("conv2d_nhwc").gpu.define_space(nhwc, gpu);
  CHECK_THAT(user_error_of([&] { find_op("conv2d").gpu.apply_config(nhwc, space->get(0)); }),
             Contains("the conv2d cuda template cannot schedule op 'conv2d_nhwc'"));
  // A block over the limits is the lowering's user error (the tuner records
  // it): 32 x 64 threads, or a 32-channel step of a 7x7 window's weights
  // for 256 channels (1.6 MB).
  OpInstance stem = build_workload("conv2d:C=64,H=56,W=56,K=256,R=7,S=7,pad=3");
  auto stem_space = find_op("conv2d").gpu.define_space(stem, gpu);
  auto lower_error = [&](const std::string& cfg) {
    return user_error_of([&] { gpu_source(stem, stem_space->from_json_string(cfg), gpu); });
  };
  CHECK_THAT(
      lower_error(
          R"({"tile_k":[8,32,1],"tile_h":[7,8,1],"tile_w":[4,8,2],"tile_c":[2,32],"taps":"outer","shared":"none","vec":1,"unroll":"none"})"),
      Contains("allows at most 1024 threads per block"));
  CHECK_THAT(
      lower_error(
          R"({"tile_k":[1,32,8],"tile_h":[56,1,1],"tile_w":[56,1,1],"tile_c":[2,32],"taps":"inner","shared":"weight","vec":1,"unroll":"none"})"),
      Contains("sm_90 allows at most 232448 bytes per block"));
}

