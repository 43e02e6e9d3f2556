// A cost model ranks candidate configs of a task from features of their
// lowered IR, so the search can measure the promising ones first.
#pragma once

#include <string>
#include <vector>

namespace kiln {

using FeatureVector = std::vector<float>;

class CostModel {
 public:
  virtual ~CostModel() = default;
  // Trains from scratch on measured samples. `scores` are per-group
  // normalized throughputs (1 = best of its group, 0 = failed); `groups`
  // says which samples are comparable (one group per task).
  virtual void fit(const std::vector<FeatureVector>& x, const std::vector<float>& scores,
                   const std::vector<int>& groups) = 0;
  // Higher is better; only the order matters. Before any fit: all zeros.
  virtual std::vector<float> predict(const std::vector<FeatureVector>& x) const = 0;
  virtual bool trained() const = 0;
};

}  // namespace kiln
