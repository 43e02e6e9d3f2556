// Shared by the CLI commands: a workload string -> its op, its hand (or
// given) schedule, and the lowered function, for a target.
#pragma once

#include <string>

#include "codegen/target.h"
#include "compute/function.h"
#include "kernels/op_registry.h"

namespace kiln::cli {

struct BuiltKernel {
  OpInstance op;
  ScheduledOp scheduled;
  LoweredFunc func;
  Target target;
};

CpuInfo cpu_info_for(const Target& target);
// user_error on a bad workload or target string.
BuiltKernel build_kernel(const std::string& workload, const std::string& target_str);

}  // namespace kiln::cli
