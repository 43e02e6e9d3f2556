// The conv2d_nhwc template on Hopper's wgmma (kernels/gpu_wgmma_conv2d.h):
// the implicit GEMM over every image's positions, its im2col and weight
// tiles in 8 x 8 tiles or 128-byte swizzled, emulated against the
// interpreter with and without pipelines, producer warps, tensor copies and
// products in flight, on awkward shapes (one image of 7 x 7, batches whose
// positions are no multiple of 64, channels padded to 16, strides,
// dilation, bias and activations) and random configs; resnet50's layers at
// batch 16 through NVRTC and ptxas for sm_90a; the space.
#include <catch2/catch.hpp>
#include <random>

#include "base/error.h"
#include "kernels/conv2d.h"
#include "support/gpu_check.h"
#include "support/mma_config.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "support/test_seed.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Matchers::Contains;

TEST_CASE("wgmma conv2d: NHWC convolutions on warpgroups agree with the interpreter",
          "[gpu][tensorcore][wgmma][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_wgmma_conv");
  struct Case {
    const char* workload;
    nlohmann::json knobs;
    const char* call;  // the kernel's wgmma call
  };
  const std::vector<Case> cases = {
      // One 7 x 7 image: 49 rows padded to 64; one warpgroup, k tiles of 16
      // channels, each tap in turn.
      {"conv2d_nhwc:N=1,C=16,H=7,W=7,K=64,R=3,S=3,pad=1,dtype=f16",
       {{"wgmma_m", {1, 1}}, {"wgmma_n", {1, 1, 8}}, {"mma_k", {1, 1}}, {"stages", 1}, {"producer_warps", 0}},
       "kiln_wgmma_m64n64k16_f16<0, 1, 0, 0, 0>("},
      // Five images of 5 x 5 (125 rows, padded to 128) in a block of two
      // warpgroups; stride 2, bias and relu; three slots, one producer warp.
      {"conv2d_nhwc:N=5,C=32,H=9,W=9,K=64,R=3,S=3,stride=2,pad=1,dtype=bf16,bias=1,relu=1",
       {{"wgmma_m", {1, 2}}, {"wgmma_n", {1, 1, 8}}, {"mma_k", {1, 2}}, {"stages", 3}, {"producer_warps", 1}},
       "kiln_wgmma_m64n64k16_bf16<0, 1, 0, 0, 0>("},
      // Three input channels padded to 16 (the stem's), a 128-wide warpgroup,
      // two slots and two producer warps.
      {"conv2d_nhwc:N=2,C=3,H=11,W=11,K=128,R=3,S=3,stride=2,pad=1,dtype=f16,bias=1,relu=1",
       {{"wgmma_m", {2, 1}}, {"wgmma_n", {1, 1, 16}}, {"mma_k", {1, 1}}, {"stages", 2}, {"producer_warps", 2}},
       "kiln_wgmma_m64n128k16_f16<0, 1, 0, 0, 0>("},
      // Dilation with padding; two warpgroups side by side; 16-byte fills.
      {"conv2d_nhwc:N=1,C=32,H=9,W=9,K=128,R=3,S=3,pad=2,dilation=2,dtype=bf16,hswish=1",
       {{"wgmma_m", {2, 1}}, {"wgmma_n", {1, 2, 8}}, {"mma_k", {1, 2}}, {"stages", 2}, {"fill_vec", 8}},
       "kiln_wgmma_m64n64k16_bf16<0, 1, 0, 0, 0>("},
      // A 1x1 layer with k tiles of 64 channels: both tiles swizzled, filled
      // 16 bytes a copy, products in flight.
      {"conv2d_nhwc:N=2,C=128,H=6,W=6,K=64,R=1,S=1,dtype=f16",
       {{"wgmma_m", {2, 1}},
        {"wgmma_n", {1, 1, 8}},
        {"mma_k", {2, 4}},
        {"stages", 2},
        {"producer_warps", 1},
        {"mma_in_flight", 1},
        {"swizzle", 1},
        {"fill_vec", 8}},
       "kiln_wgmma_m64n64k16_f16<0, 1, 1, 1, 1>("},
      // Two images of 8 x 13 (208 rows, padded to 256) in two blocks of two
      // warpgroups: the second block's last 48 rows are padding.
      {"conv2d_nhwc:N=2,C=16,H=8,W=13,K=64,R=3,S=3,pad=1,dtype=f16,bias=1",
       {{"wgmma_m", {2, 2}}, {"wgmma_n", {1, 1, 8}}, {"mma_k", {1, 1}}, {"stages", 2}, {"producer_warps", 1}},
       "kiln_wgmma_m64n64k16_f16<0, 1, 0, 0, 0>("},
      // The swizzle with k tiles of 32 channels: A's rows (64 bytes) are no
      // whole strip and stay in 8 x 8 tiles, B's are swizzled.
      {"conv2d_nhwc:N=1,C=32,H=9,W=9,K=64,R=3,S=3,pad=1,dtype=bf16",
       {{"wgmma_m", {2, 1}}, {"wgmma_n", {1, 1, 8}}, {"mma_k", {1, 2}}, {"stages", 2}, {"swizzle", 1}},
       "kiln_wgmma_m64n64k16_bf16<0, 1, 0, 1, 0>("},
      // 24 channels padded to 32: whole 8-channel vectors of the input, so
      // the gather copies 16 bytes at a time; the padded weights' copy.
      {"conv2d_nhwc:N=1,C=24,H=8,W=8,K=64,R=3,S=3,pad=1,dtype=f16,relu=1",
       {{"wgmma_m", {1, 1}}, {"wgmma_n", {1, 1, 8}}, {"mma_k", {1, 2}}, {"stages", 3}, {"fill_vec", 8}},
       "kiln_wgmma_m64n64k16_f16<0, 1, 0, 0, 0>("},
      // Tensor copies (TMA): B's tiles of a 3x3 layer's weights, both
      // swizzled and in 8 x 8 tiles; A, a gather with zeros, stays cp.async.
      {"conv2d_nhwc:N=1,C=64,H=8,W=8,K=128,R=3,S=3,pad=1,dtype=bf16,bias=1",
       {{"wgmma_m", {1, 1}},
        {"wgmma_n", {1, 1, 16}},
        {"mma_k", {1, 4}},
        {"stages", 3},
        {"producer_warps", 1},
        {"bulk_copy", 2},
        {"swizzle", 1}},
       "kiln_wgmma_m64n128k16_bf16<0, 1, 1, 1, 0>("},
      {"conv2d_nhwc:N=2,C=32,H=7,W=7,K=64,R=3,S=3,pad=1,dtype=f16,relu=1",
       {{"wgmma_m", {2, 1}},
        {"wgmma_n", {1, 1, 8}},
        {"mma_k", {2, 1}},
        {"stages", 2},
        {"producer_warps", 1},
        {"bulk_copy", 2},
        {"mma_in_flight", 1}},
       "kiln_wgmma_m64n64k16_f16<0, 1, 0, 0, 1>("},
  };
  uint64_t seed = 900;
  for (const Case& c : cases) {
    const OpInstance op = build_workload(c.workload);
    const Config cfg = wgmma_config(op, c.knobs);
    INFO(c.workload << " " << cfg.str());
    const CudaSource src = gpu_source(op, cfg, sm90a());
    const std::string k = kernel_text(src);
    CHECK_THAT(k, Contains(c.call));
    CHECK(k.find("kiln_mma_load_a") == std::string::npos);
    if (c.knobs.contains("bulk_copy")) {
      CHECK_THAT(k, Contains("kiln_tensor_copy_") && Contains("d(weight_shared, "));
      CHECK(k.find("d(im2col_shared, ") == std::string::npos);
      UNSCOPED_INFO("kiln-test-note: " << c.workload << ": " << tensor_map_descriptions(src).at(0));
    }
    CHECK(emulate_sm90a(op, cfg, dir.path, seed++) == "");
  }
}

TEST_CASE("wgmma conv2d: random shapes and configs agree with the interpreter", "[gpu][tensorcore][wgmma][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  TempDir dir("kiln_wgmma_conv_rand");
  const uint64_t run = run_seed();
  INFO(seed_note(run));
  std::mt19937_64 rng(run);
  auto pick = [&](std::vector<int64_t> v) { return v[rng() % v.size()]; };
  int ran = 0, drawn = 0;
  for (int i = 0; i < 4 && drawn < 200; ++drawn) {
    // Sizes of 1, primes and odd: channels that are no multiple of 16 (or
    // of 8, so that A's gather is not vectorized), windows that leave the
    // image, strides and dilation.
    const int64_t H = pick({1, 3, 5, 7, 8, 11}), W = pick({1, 2, 5, 7, 9, 13}), pad = static_cast<int64_t>(rng() % 2);
    const int64_t dil = rng() % 4 == 0 ? 2 : 1;
    auto fit = [&](int64_t taps, int64_t input) {  // a window that fits the padded input
      while (taps > 1 && (taps - 1) * dil + 1 > input + 2 * pad) --taps;
      return taps;
    };
    const int64_t R = fit(pick({1, 3}), H), S = fit(pick({1, 3}), W);
    const std::string w =
        "conv2d_nhwc:N=" + std::to_string(pick({1, 2, 3})) + ",C=" + std::to_string(pick({1, 5, 16, 24, 40})) +
        ",H=" + std::to_string(H) + ",W=" + std::to_string(W) + ",K=" + std::to_string(pick({64, 128})) +
        ",R=" + std::to_string(R) + ",S=" + std::to_string(S) + ",stride=" + std::to_string(pick({1, 2})) +
        ",pad=" + std::to_string(pad) + ",dilation=" + std::to_string(dil) +
        (rng() % 2 ? ",dtype=f16" : ",dtype=bf16") + (rng() % 2 ? ",bias=1,relu=1" : "");
    const OpInstance op = build_workload(w);
    auto space = find_op(op.op).gpu.define_space(op, sm90a());
    const Config drawn_cfg = space->random(rng);
    if (!drawn_cfg.has("wgmma_m")) continue;  // too few positions: drawn again
    ++i;
    nlohmann::json j = drawn_cfg.to_json();
    j["tensor_core"] = "wgmma";
    const Config cfg = space->from_json(j);
    INFO(w << " " << cfg.str());
    const std::string err = emulate_sm90a(op, cfg, dir.path, run + static_cast<uint64_t>(drawn));
    if (is_launch_limit(err)) continue;
    CHECK(err == "");
    ++ran;
  }
  CHECK(ran >= 2);
  CHECK(drawn < 200);
}

TEST_CASE("wgmma conv2d: resnet50's layers at batch 16 compile with NVRTC and ptxas for sm_90a",
          "[gpu][wgmma][nvrtc]") {
  if (!nvrtc_available()) KILN_SKIP("NVRTC is not available");
  struct Case {
    const char* workload;
    nlohmann::json knobs;
  };
  // Two warpgroups a block (one where the rows make an odd number of
  // warpgroup tiles) of up to 256 columns, k tiles of 64 channels stored
  // swizzled, the weights by tensor copies, products in flight; and up to
  // 128 columns in 8 x 8 tiles filled by cp.async.
  const nlohmann::json big = {{"stages", 3},  {"producer_warps", 1}, {"bulk_copy", 2},
                              {"swizzle", 1}, {"mma_in_flight", 1},  {"fill_vec", 8}};
  const nlohmann::json tiles = {{"stages", 4}, {"producer_warps", 1}, {"fill_vec", 8}};
  int compiled = 0;
  for (const char* w : {"conv2d_nhwc:N=16,C=64,H=56,W=56,K=64,R=3,S=3,pad=1,dtype=f16,bias=1,relu=1",
                        "conv2d_nhwc:N=16,C=256,H=14,W=14,K=256,R=3,S=3,pad=1,dtype=f16",
                        "conv2d_nhwc:N=16,C=512,H=7,W=7,K=2048,R=1,S=1,dtype=bf16,bias=1",
                        "conv2d_nhwc:N=16,C=3,H=224,W=224,K=64,R=7,S=7,stride=2,pad=3,dtype=f16,bias=1,relu=1"}) {
    const OpInstance op = build_workload(w);
    const ConvShape c = conv_shape(op);
    const int64_t rows64 = (c.N * c.OH * c.OW + 63) / 64, channels16 = (c.C + 15) / 16;
    const int64_t groups = rows64 % 2 == 0 ? 2 : 1;
    for (const auto& [base, widest, k_steps] : {std::make_tuple(big, 256, 4), std::make_tuple(tiles, 128, 2)}) {
      const int64_t bn = std::min<int64_t>(widest, c.K), steps = std::min<int64_t>(k_steps, channels16);
      nlohmann::json knobs = base;
      knobs["wgmma_m"] = {rows64 / groups, groups};
      knobs["wgmma_n"] = {c.K / bn, 1, bn / 8};
      knobs["mma_k"] = {channels16 / steps, steps};
      const Config cfg = wgmma_config(op, knobs);
      INFO(w << " " << cfg.str());
      const CudaSource src = gpu_source(op, cfg, sm90a());
      CHECK(compile_for_gpu(src, sm90a(), kDefaultConfigSpillBytes) == "");
      const NvrtcOutput r = nvrtc_compile(src.code, "wgmma_conv.cu", "sm_90a");
      CHECK(count_matches(r.ptx, "wgmma\\.mma_async\\.sync\\.aligned\\.m64n" + std::to_string(bn) + "k16\\.f32") >= 1);
      // The weights by tensor copies where C is whole 16-channel steps (a
      // padded copy of them is computed, not copied).
      if (base.contains("bulk_copy") && c.C % 16 == 0)
        CHECK(count_matches(r.ptx, R"(cp\.async\.bulk\.tensor\.[2345]d)") >= 1);
      REQUIRE(r.resources.size() == 1);
      UNSCOPED_INFO("kiln-test-note: " << w << ", " << 64 * groups << " x " << bn
                                       << " blocks: " << r.resources[0].registers << " registers, "
                                       << r.resources[0].spill_store_bytes << " bytes of spill stores, "
                                       << src.launches.at(0).shared_bytes << " bytes of shared memory");
      ++compiled;
    }
  }
  CHECK(compiled == 8);
}

TEST_CASE("wgmma conv2d: offered on sm_90a where K is a multiple of 64, the default stays on mma",
          "[gpu][wgmma][space]") {
  // The default config of `w` on `arch` with tensor_core "wgmma" and
  // `knobs`, read back by the template's space; "" or the space's error.
  auto refused = [](const char* w, const char* arch, const nlohmann::json& knobs) -> std::string {
    const OpInstance op = build_workload(w);
    auto [space, j] = default_config_json(op, arch);
    j["tensor_core"] = "wgmma";
    j.update(knobs);
    try {
      space->from_json(j);
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  };
  const char* layer = "conv2d_nhwc:N=2,C=64,H=14,W=14,K=128,R=3,S=3,pad=1,dtype=f16";
  // 2 x 14 x 14 = 392 positions pad to 448 rows, 7 warpgroup tiles.
  CHECK(refused(layer, "sm_90a", {{"wgmma_m", {7, 1}}, {"wgmma_n", {2, 1, 8}}}) == "");
  CHECK_THAT(refused(layer, "sm_90a", {{"wgmma_m", {1, 7}}, {"wgmma_n", {2, 1, 8}}}), Contains("wgmma_m"));
  // Not on sm_90 (wgmma is an sm_90a instruction), nor for K = 96, nor in
  // f32, nor for 3 images of 4 x 4 (48 positions: no warpgroup's worth).
  for (const auto& [w, arch] : {std::make_pair(layer, "sm_90"),
                                std::make_pair("conv2d_nhwc:N=2,C=64,H=14,W=14,K=96,R=3,S=3,pad=1,dtype=f16", "sm_90a"),
                                std::make_pair("conv2d_nhwc:N=2,C=64,H=14,W=14,K=128,R=3,S=3,pad=1", "sm_90a"),
                                std::make_pair("conv2d_nhwc:N=3,C=16,H=4,W=4,K=64,R=1,S=1,dtype=f16", "sm_90a")}) {
    INFO(w << " " << arch);
    const std::string why = refused(w, arch, nlohmann::json::object());
    CHECK_THAT(why, Contains("\"wgmma\" is not an option of knob 'tensor_core'") ||
                        Contains("no knob named 'tensor_core'"));  // f32: no tensor cores at all
  }
  // 100 positions (128 rows) do not fill two warpgroups' 16-row steps: one
  // warpgroup a block. 125 do.
  CHECK_THAT(refused("conv2d_nhwc:N=4,C=16,H=5,W=5,K=64,R=1,S=1,dtype=f16", "sm_90a",
                     {{"wgmma_m", {1, 2}}, {"wgmma_n", {1, 1, 8}}}),
             Contains("not an option of knob 'wgmma_m'"));
  CHECK(refused("conv2d_nhwc:N=5,C=16,H=5,W=5,K=64,R=1,S=1,dtype=f16", "sm_90a",
                {{"wgmma_m", {1, 2}}, {"wgmma_n", {1, 1, 8}}}) == "");
  // The default stays on mma.sync: no GPU has measured wgmma's convolutions.
  const OpInstance op = build_workload(layer);
  auto space = find_op(op.op).gpu.define_space(op, sm90a());
  CHECK(find_op(op.op).gpu.default_config(op, sm90a(), *space).annotate("tensor_core") == "mma");
}
