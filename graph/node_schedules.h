// How the executor and task extraction schedule a network's nodes on a
// target: an operator family's node with its template (the best record of a
// tuning database, else the template's default config), the rest with the
// generic schedule, lowered for the target's CPU or GPU.
#pragma once

#include <string>
#include <vector>

#include "codegen/target.h"
#include "compute/function.h"
#include "kernels/op_registry.h"
#include "schedule/gpu_limits.h"

namespace kiln {
class Database;
}

namespace kiln::graph {

struct NodeTarget {
  Target target;
  CpuInfo cpu;    // llvm targets
  GpuLimits gpu;  // cuda targets: the first GPU's limits when it has the target's architecture
  bool cuda() const { return target.is_cuda(); }
  // user_error on a bad target string ("" is this machine).
  static NodeTarget parse(const std::string& target);
};

// Whether the op's family has a template for the target that takes this
// instance (on a GPU: the cuda templates take conv2d with groups=1 only,
// matrix products with B unpacked, ...). What a tuning task needs.
bool template_takes(const OpInstance& op, const NodeTarget& t);

// An op node's schedule: its template with the database's best record for
// the target (config_source "database"), else the template's default
// ("default"); on a GPU an instance no cuda template takes gets the generic
// schedule of the op's tensors ("generic").
ScheduledOp schedule_op(const OpInstance& op, const NodeTarget& t, Database* db, std::string* config_source);

// kernels/generic_schedule.h on a CPU, kernels/generic_gpu_schedule.h on a GPU.
ScheduledOp schedule_generic(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                             const NodeTarget& t);

// lower() or lower_gpu() for the target.
LoweredFunc lower_for(const ScheduledOp& s, const NodeTarget& t, const std::string& name);

}  // namespace kiln::graph
