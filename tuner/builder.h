// Builders compile candidates into loadable artifacts.
#pragma once

#include <vector>

#include "runtime/measure.h"
#include "tuner/task.h"

namespace kiln {

class Builder {
 public:
  virtual ~Builder() = default;
  // One result per config, in order; failures are results, never throws.
  virtual std::vector<BuildResult> build(const Task& task, const std::vector<Config>& configs) = 0;
};

}  // namespace kiln
