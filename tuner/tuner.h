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
  // The search's score of each config before it is measured (higher is
  // better; NaN for a config it cannot score), stored with the records for
  // the report's search-health charts. Empty when the tuner has no model, or
  // its model is not trained yet.
  virtual std::vector<double> predict(const std::vector<Config>& configs) {
    (void)configs;
    return {};
  }
};

}  // namespace kiln
