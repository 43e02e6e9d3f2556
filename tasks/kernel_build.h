// Shared by the CLI commands: a workload string -> its op, its hand (or
// given) schedule, and the lowered function, for a target.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "codegen/target.h"
#include "compute/function.h"
#include "kernels/op_registry.h"
#include "runtime/ndarray.h"

namespace kiln {

struct BuiltKernel {
  // For a cuda target: the architecture's limits the template and lowering used.
  GpuLimits gpu;
  OpInstance op;
  ScheduledOp scheduled;
  LoweredFunc func;
  Target target;
  std::string config_source = "default";  // "database" when a tuned record was used, "given" for --config
  nlohmann::json config;                  // the config used (every knob)
};

CpuInfo cpu_info_for(const Target& target);
// The limits of a cuda target's architecture: the GPU's own when the first
// GPU has that architecture, else kiln's per-arch table.
GpuLimits gpu_limits_for(const Target& target);
// The op's GPU template, or user_error naming the ops that have one.
const GpuTemplate& gpu_template_of(const OpDef& def);
// The template's default config of `op` for `target` (every knob), as JSON.
nlohmann::json template_default_config(const OpInstance& op, const Target& target);
// user_error on a bad workload or target string. With a database, the best
// record of the workload on the target is used when there is one. A given
// config (a JSON object of knob values, `config_text` not empty) overrides
// the knobs it names, over the database's record or the template's default;
// a knob the template lacks or a value it does not offer is a user_error.
BuiltKernel build_kernel(const std::string& workload, const std::string& target_str, const std::string& db_path = "",
                         const std::string& config_text = "");

// Host arrays for every argument of the kernel's function: inputs filled
// with rt::NDArray::fill_random(seed + i), outputs with zeros.
std::vector<rt::NDArray> random_arguments(const BuiltKernel& k, uint64_t seed);

}  // namespace kiln
