// Configs of the tensor-core templates with a pipelined k loop, for the
// tests of pipelines (test_pipeline, test_warp_specialization,
// test_bulk_copy).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gpu_check.h"

namespace kiln::testing {

// The template's default for `op` on sm_90 with tensor cores, 5 k tiles of
// 32 (a matmul), `stages` slots and `producers` producer warps (0: no warp
// specialization), then
// `knobs`. A config refers to its space, which must outlive it.
inline Config mma_config(const OpInstance& op, int stages, int producers = 0,
                         const nlohmann::json& knobs = nlohmann::json::object()) {
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  const GpuTemplate& t = find_op(op.op).gpu;
  static std::vector<std::shared_ptr<ConfigSpace>> spaces;
  auto space = spaces.emplace_back(t.define_space(op, gpu));
  nlohmann::json j = t.default_config(op, gpu, *space).to_json();
  j["tensor_core"] = "mma";
  if (op.op == "matmul") j["mma_k"] = {5, 2};
  j["stages"] = stages;
  j["producer_warps"] = producers;
  j.update(knobs);
  return space->from_json(j);
}

// The kernel's text after the preludes.
inline std::string kernel_text(const CudaSource& src) {
  const size_t k = src.code.find("__global__ void");
  REQUIRE(k != std::string::npos);
  return src.code.substr(k);
}

}  // namespace kiln::testing
