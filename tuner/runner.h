// Runners measure built candidates (locally in worker processes, or on a
// remote device pool) and check each output against the task's reference.
#pragma once

#include <vector>

#include "tuner/measure.h"
#include "tuner/task.h"

namespace kiln {

class Runner {
 public:
  virtual ~Runner() = default;
  // One result per build result, in order. A build error passes through as
  // the measure result's error; never throws for a bad candidate.
  virtual std::vector<MeasureResult> run(const Task& task, const std::vector<BuildResult>& builds) = 0;
};

}  // namespace kiln
