#include "tasks/kernel_build.h"

#include "codegen/runtime_dtype.h"
#include "runtime/amx.h"
#include "runtime/cuda_driver.h"
#include "tasks/gpu_runner.h"

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
  cpu.avx512_vnni = target.has_feature("avx512vnni");
  cpu.avx512_bf16 = target.has_feature("avx512bf16");
  // AMX also needs the OS's leave (Linux 5.16+) where the kernels run here.
  const bool amx_allowed = !target.is_host() || rt::request_amx_tiles();
  cpu.amx_int8 = amx_allowed && target.has_feature("amx-int8");
  cpu.amx_bf16 = amx_allowed && target.has_feature("amx-bf16");
  // The configured thread count, without starting the pool (tuning
  // processes fork and must stay single-threaded).
  cpu.num_threads = target.is_host() ? rt::default_num_threads() : 1;
  return cpu;
}

GpuLimits gpu_limits_for(const Target& target) {
  internal_assert(target.is_cuda()) << "gpu_limits_for(" << target.str() << ")";
  // The device's own limits when the target is the first GPU's architecture.
  if (rt::cuda::available()) {
    const rt::cuda::DeviceInfo d = rt::cuda::devices().at(0);
    if (d.arch() == target.arch || d.arch() + "a" == target.arch) return gpu_limits_from_device(d, target.arch);
  }
  return gpu_limits_for_arch(target.arch);
}

const GpuTemplate& gpu_template_of(const OpDef& def) {
  if (!def.gpu.defined()) {
    std::string with;
    for (auto& d : op_registry())
      if (d.gpu.defined()) with += (with.empty() ? "" : ", ") + d.name;
    user_error() << "op '" << def.name << "' has no cuda schedule template yet (ops with one: " << with << ")";
  }
  return def.gpu;
}

nlohmann::json template_default_config(const OpInstance& op, const Target& target) {
  const OpDef& def = find_op(op.op);
  if (target.is_cuda()) {
    const GpuLimits gpu = gpu_limits_for(target);
    const GpuTemplate& t = gpu_template_of(def);
    return t.default_config(op, gpu, *t.define_space(op, gpu)).to_json();
  }
  const CpuInfo cpu = cpu_info_for(target);
  return def.default_config(op, cpu, *def.define_space(op, cpu)).to_json();
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
  const bool cuda = k.target.is_cuda();
  if (cuda) k.gpu = gpu_limits_for(k.target);
  if (cuda) gpu_template_of(def);  // an op without a cuda template fails here, config or not
  if (!config_text.empty()) {
    user_check(cuda || def.define_space) << "op '" << k.op.op << "' has no tunable template, so it takes no config";
    nlohmann::json given;
    try {
      given = nlohmann::json::parse(config_text);
    } catch (const nlohmann::json::exception& e) {
      user_error() << "config is not valid JSON: " << e.what();
    }
    user_check(given.is_object()) << "a config must be a JSON object of knob values, got " << given.dump();
    if (!best) k.config = template_default_config(k.op, k.target);
    for (auto it = given.begin(); it != given.end(); ++it) k.config[it.key()] = it.value();
    k.config_source = "given";
  }
  if (cuda) {
    if (k.config_source == "default") k.config = template_default_config(k.op, k.target);
    k.scheduled = apply_task_config(k.op.canonical, k.target, k.config);
    k.func = lower_gpu(*k.scheduled.schedule, k.scheduled.args, "kiln_" + k.op.op, k.gpu);
    return k;
  }
  if (k.config_source == "default")
    k.scheduled = def.default_schedule(k.op, cpu_info_for(k.target));
  else
    k.scheduled = apply_task_config(k.op.canonical, k.target, k.config);
  k.func = lower(*k.scheduled.schedule, k.scheduled.args, "kiln_" + k.op.op);
  return k;
}

std::vector<rt::NDArray> random_arguments(const BuiltKernel& k, uint64_t seed) {
  std::vector<rt::NDArray> arrays;
  for (size_t i = 0; i < k.func.args.size(); ++i) {
    const BufferArg& a = k.func.args[i];
    rt::NDArray arr = rt::NDArray::empty(a.shape, to_runtime_dtype(a.dtype));
    if (i < k.op.inputs.size())
      arr.fill_random(seed + i);
    else
      arr.fill_zero();
    arrays.push_back(arr);
  }
  return arrays;
}

}  // namespace kiln
