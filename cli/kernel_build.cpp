#include "cli/kernel_build.h"

#include <thread>

#include "runtime/c_api.h"
#include "schedule/lower.h"

namespace kiln::cli {

CpuInfo cpu_info_for(const Target& target) {
  CpuInfo cpu;
  cpu.vector_bits = target.vector_bits();
  cpu.num_threads = target.is_host() ? kiln_num_threads() : 1;
  return cpu;
}

BuiltKernel build_kernel(const std::string& workload, const std::string& target_str) {
  BuiltKernel k;
  k.target = target_str.empty() ? Target::host() : Target::parse(target_str);
  k.op = build_workload(workload);
  k.scheduled = find_op(k.op.op).hand_schedule(k.op, cpu_info_for(k.target));
  k.func = lower(*k.scheduled.schedule, k.scheduled.args, "kiln_" + k.op.op);
  return k;
}

}  // namespace kiln::cli
