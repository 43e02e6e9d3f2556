// GridTuner: configs in index order 0, 1, 2, ..., skipping measured ones.
#pragma once

#include <cstdint>
#include <unordered_set>

#include "tuner/config_key.h"
#include "tuner/tuner.h"

namespace kiln {

class GridTuner : public Tuner {
 public:
  // `space` must outlive the tuner (as it must outlive its Configs).
  explicit GridTuner(const ConfigSpace& space);

  std::vector<Config> next_batch(int n) override;
  // Measured configs (e.g. earlier records on resume) are skipped.
  void update(const std::vector<Config>& configs, const std::vector<MeasureResult>& results) override;
  bool has_next() const override { return next_ < size_; }

 private:
  void skip_measured();

  const ConfigSpace* space_;  // outlives the search, like the Configs it makes
  ConfigKeyer keyer_;
  uint64_t size_;
  uint64_t next_ = 0;
  std::unordered_set<uint64_t> measured_;  // ConfigKeyer keys
};

}  // namespace kiln
