// Configs of the tensor-core templates with a pipelined k loop, for the
// tests of pipelines (test_pipeline, test_warp_specialization,
// test_bulk_copy, test_tensor_copy, test_wgmma).
#pragma once

#include <iterator>
#include <memory>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "gpu_check.h"
#include "runtime/tensor_map.h"

namespace kiln::testing {

// Hopper's arch-specific target, where wgmma is offered.
inline const GpuLimits& sm90a() {
  static const GpuLimits gpu = gpu_limits_for_arch("sm_90a");
  return gpu;
}

// What the emulation of `src` reports against the interpreter ("" when it
// agrees), a thrown error as "exception: " and its message.
inline std::string emulation_problem(const OpInstance& op, const CudaSource& src, const std::string& dir,
                                     uint64_t seed) {
  try {
    return run_emulated_and_check(op, src, dir, seed);
  } catch (const std::exception& e) {
    return std::string("exception: ") + e.what();
  }
}

// What the emulation of `op`'s kernel for `cfg` on sm_90a reports against
// the interpreter ("" when it agrees).
inline std::string emulate_sm90a(const OpInstance& op, const Config& cfg, const std::string& dir, uint64_t seed) {
  return emulation_problem(op, gpu_source(op, cfg, sm90a()), dir, seed);
}

// The template's default config for `op` on `arch`, as JSON to edit, and
// the space to read it back with (kept alive here: a config refers to its
// space, which must outlive it).
inline std::pair<ConfigSpace*, nlohmann::json> default_config_json(const OpInstance& op, const char* arch) {
  const GpuLimits gpu = gpu_limits_for_arch(arch);
  const GpuTemplate& t = find_op(op.op).gpu;
  static std::vector<std::shared_ptr<ConfigSpace>> spaces;
  ConfigSpace* space = spaces.emplace_back(t.define_space(op, gpu)).get();
  return {space, t.default_config(op, gpu, *space).to_json()};
}

// The template's default for `op` on sm_90 with tensor cores, 5 k tiles of
// 32 (a matmul), `stages` slots and `producers` producer warps (0: no warp
// specialization), then
// `knobs`. A config refers to its space, which must outlive it.
inline Config mma_config(const OpInstance& op, int stages, int producers = 0,
                         const nlohmann::json& knobs = nlohmann::json::object()) {
  auto [space, j] = default_config_json(op, "sm_90");
  j["tensor_core"] = "mma";
  if (op.op == "matmul") j["mma_k"] = {5, 2};
  j["stages"] = stages;
  j["producer_warps"] = producers;
  j.update(knobs);
  return space->from_json(j);
}

// The template's default for `op` on sm_90a with tensor_core "wgmma", then
// `knobs`. A config refers to its space, which must outlive it.
inline Config wgmma_config(const OpInstance& op, const nlohmann::json& knobs) {
  auto [space, j] = default_config_json(op, "sm_90a");
  j["tensor_core"] = "wgmma";
  j.update(knobs);
  return space->from_json(j);
}

// The tensor maps the first launch of `src` takes, described
// (rt::cuda::describe), in parameter order.
inline std::vector<std::string> tensor_map_descriptions(const CudaSource& src) {
  std::vector<std::string> maps;
  for (const CudaKernelLaunch::Param& p : src.launches.at(0).params)
    if (p.tensor_map.rank > 0) maps.push_back(rt::cuda::describe(p.tensor_map));
  return maps;
}

// The 4096^3 f16 GEMM on sm_90 in 128 x 128 blocks of 8 warps (64 x 32
// each), k tiles of 32 in 3 slots filled by one producer warp, then `knobs`.
inline CudaSource hopper_gemm_4096(const nlohmann::json& knobs) {
  const OpInstance op = build_workload("matmul:M=4096,N=4096,K=4096,dtype=f16");
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  const GpuTemplate& t = find_op(op.op).gpu;
  auto space = t.define_space(op, gpu);
  nlohmann::json j = t.default_config(op, gpu, *space).to_json();
  j.update({{"mma_m", {32, 2, 4}}, {"mma_n", {32, 4, 4}}, {"mma_k", {128, 2}}, {"stages", 3}, {"producer_warps", 1}});
  j.update(knobs);
  return gpu_source(op, space->from_json(j), gpu);
}

// How many times `pattern` (a regex) matches in `text`.
inline size_t count_matches(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<size_t>(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

// The kernel's text after the preludes.
inline std::string kernel_text(const CudaSource& src) {
  const size_t k = src.code.find("__global__ void");
  REQUIRE(k != std::string::npos);
  return src.code.substr(k);
}

}  // namespace kiln::testing
