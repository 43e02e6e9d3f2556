// Shared by the CLI commands: a workload string -> its op, its hand (or
// given) schedule, and the lowered function, for a target.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "codegen/target.h"
#include "compute/function.h"
#include "kernels/op_registry.h"

namespace kiln {

struct BuiltKernel {
  OpInstance op;
  ScheduledOp scheduled;
  LoweredFunc func;
  Target target;
  std::string config_source = "default";  // "database" when a tuned record was used
  nlohmann::json config;                  // the tuned config, when from the database
};

CpuInfo cpu_info_for(const Target& target);
// user_error on a bad workload or target string. With a database, the best
// record of the workload on the target is used when there is one.
BuiltKernel build_kernel(const std::string& workload, const std::string& target_str, const std::string& db_path = "");

}  // namespace kiln
