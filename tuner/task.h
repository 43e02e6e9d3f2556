// A tuning task: one workload on one target, its config space, and how to
// turn a config into a lowered kernel. The caller (cli/) builds tasks from
// the kernel templates; the tuner layer knows nothing of particular ops.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compute/function.h"
#include "runtime/measure_job.h"
#include "schedule/config_space.h"
#include "schedule/lower.h"

namespace kiln {

struct Task {
  std::string workload;  // canonical workload string, e.g. "matmul:M=512,...,relu=0"
  std::string op;        // op name ("matmul"): records of the same op warm-start the model
  std::string target;    // canonical target string
  double flops = 0;
  std::shared_ptr<const ConfigSpace> space;
  // The template applied with a config, lowered to `depth` (kAnnotatedLoops
  // for cost-model features); throws UserError for a config the template
  // rejects. Must be callable in a forked child.
  std::function<LoweredFunc(const Config&, LowerDepth depth)> instantiate;
  // Kernel arguments (inputs first); inputs are filled with
  // rt::NDArray::fill_random(input_seed + i).
  std::vector<BufferArg> args;
  size_t num_inputs = 0;
  uint64_t input_seed = 1;
  // Computed once per task from the inputs above (reference interpreter).
  std::vector<ReferenceSample> reference;

  // Stable canonical key: "<workload> @ <target>".
  std::string key() const { return workload + " @ " + target; }
};

}  // namespace kiln
