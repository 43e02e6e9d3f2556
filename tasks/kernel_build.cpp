#include "tasks/kernel_build.h"

#include <optional>
#include <thread>

#include "tasks/task_factory.h"
#include "runtime/thread_pool.h"
#include "schedule/lower.h"
#include "tuner/database.h"

namespace kiln {

CpuInfo cpu_info_for(const Target& target) {
  CpuInfo cpu;
  cpu.vector_bits = target.vector_bits();
  // The configured thread count, without starting the pool (tuning
  // processes fork and must stay single-threaded).
  cpu.num_threads = target.is_host() ? rt::default_num_threads() : 1;
  return cpu;
}

BuiltKernel build_kernel(const std::string& workload, const std::string& target_str, const std::string& db_path) {
  BuiltKernel k;
  k.target = target_str.empty() ? Target::host() : Target::parse(target_str);
  k.op = build_workload(workload);
  std::optional<Database::Record> best;
  if (!db_path.empty()) best = Database::open_for_reading(db_path)->best(k.op.canonical + " @ " + k.target.str());
  if (best) {
    k.scheduled = apply_task_config(k.op.canonical, k.target, best->config);
    k.config_source = "database";
    k.config = best->config;
  } else {
    k.scheduled = find_op(k.op.op).default_schedule(k.op, cpu_info_for(k.target));
  }
  k.func = lower(*k.scheduled.schedule, k.scheduled.args, "kiln_" + k.op.op);
  return k;
}

}  // namespace kiln
