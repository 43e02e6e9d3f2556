// Search strategies over a task's config space.
#pragma once

#include <vector>

#include "runtime/measure.h"
#include "tuner/task.h"

namespace kiln {

class Tuner {
 public:
  virtual ~Tuner() = default;
  // Up to n configs not proposed before (fewer when the space is exhausted).
  virtual std::vector<Config> next_batch(int n) = 0;
  // Results of measured configs (also called with earlier records on resume).
  virtual void update(const std::vector<Config>& configs, const std::vector<MeasureResult>& results) = 0;
  virtual bool has_next() const = 0;
};

}  // namespace kiln
