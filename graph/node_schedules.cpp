#include "graph/node_schedules.h"

#include <optional>

#include "base/error.h"
#include "kernels/generic_gpu_schedule.h"
#include "kernels/generic_schedule.h"
#include "schedule/lower.h"
#include "tasks/kernel_build.h"
#include "tasks/task_factory.h"
#include "tuner/database.h"

namespace kiln::graph {

NodeTarget NodeTarget::parse(const std::string& target) {
  NodeTarget t;
  t.target = target.empty() ? Target::host() : Target::parse(target);
  if (t.cuda())
    t.gpu = gpu_limits_for(t.target);
  else
    t.cpu = cpu_info_for(t.target);
  return t;
}

bool template_takes(const OpInstance& op, const NodeTarget& t) {
  const OpDef& def = find_op(op.op);
  if (!t.cuda()) return static_cast<bool>(def.define_space) || static_cast<bool>(def.hand_schedule);
  if (!def.gpu.defined()) return false;
  // The cuda templates say what they refuse (a grouped convolution, a
  // packed B) when they build their space.
  try {
    def.gpu.define_space(op, t.gpu);
    return true;
  } catch (const UserError&) {
    return false;
  }
}

ScheduledOp schedule_op(const OpInstance& op, const NodeTarget& t, Database* db, std::string* config_source) {
  if (t.cuda() && !template_takes(op, t)) {
    *config_source = "generic";
    return schedule_generic(op.inputs, op.outputs, t);
  }
  std::optional<Database::Record> best;
  if (db) best = db->best(op.canonical + " @ " + t.target.str());
  if (best) {
    *config_source = "database";
    return apply_task_config(op.canonical, t.target, best->config);
  }
  *config_source = "default";
  const OpDef& def = find_op(op.op);
  if (!t.cuda()) return def.default_schedule(op, t.cpu);
  const auto space = def.gpu.define_space(op, t.gpu);
  return def.gpu.apply_config(op, def.gpu.default_config(op, t.gpu, *space));
}

ScheduledOp schedule_generic(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                             const NodeTarget& t) {
  return t.cuda() ? generic_gpu_schedule(inputs, outputs, t.gpu) : generic_schedule(inputs, outputs, t.cpu);
}

LoweredFunc lower_for(const ScheduledOp& s, const NodeTarget& t, const std::string& name) {
  return t.cuda() ? lower_gpu(*s.schedule, s.args, name, t.gpu) : lower(*s.schedule, s.args, name);
}

}  // namespace kiln::graph
