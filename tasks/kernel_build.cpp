#include "tasks/kernel_build.h"

#include <optional>
#include <thread>

#include "base/error.h"
#include "tasks/task_factory.h"
#include "kernels/op_registry.h"
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

BuiltKernel build_kernel(const std::string& workload, const std::string& target_str, const std::string& db_path,
                         const std::string& config_text) {
  BuiltKernel k;
  k.target = target_str.empty() ? Target::host() : Target::parse(target_str);
  k.op = build_workload(workload);
  const OpDef& def = find_op(k.op.op);
  std::optional<Database::Record> best;
  if (!db_path.empty()) best = Database::open_for_reading(db_path)->best(k.op.canonical + " @ " + k.target.str());
  if (best) {
    k.config_source = "database";
    k.config = best->config;
  }
  if (!config_text.empty()) {
    user_check(def.define_space) << "op '" << k.op.op << "' has no tunable template, so it takes no config";
    nlohmann::json given;
    try {
      given = nlohmann::json::parse(config_text);
    } catch (const nlohmann::json::exception& e) {
      user_error() << "config is not valid JSON: " << e.what();
    }
    user_check(given.is_object()) << "a config must be a JSON object of knob values, got " << given.dump();
    if (!best) {
      auto space = def.define_space(k.op, cpu_info_for(k.target));
      k.config = def.default_config(k.op, cpu_info_for(k.target), *space).to_json();
    }
    for (auto it = given.begin(); it != given.end(); ++it) k.config[it.key()] = it.value();
    k.config_source = "given";
  }
  if (k.config_source == "default")
    k.scheduled = def.default_schedule(k.op, cpu_info_for(k.target));
  else
    k.scheduled = apply_task_config(k.op.canonical, k.target, k.config);
  k.func = lower(*k.scheduled.schedule, k.scheduled.args, "kiln_" + k.op.op);
  return k;
}

}  // namespace kiln
