// kiln's alternatives of a bench workload (kernels/op_registry.h's
// OpAlternative: Winograd for a 3x3 convolution), run on the workload's own
// inputs: the prepare steps once, untimed (as a network transforms its
// weights once at load time), then the alternative's kernel, timed like any
// contender. `kiln bench` keeps the fastest of kiln's variants per workload.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kernels/op_registry.h"
#include "runtime/ndarray.h"

namespace kiln {

class AlternativeRun {
 public:
  // Builds the prepare steps and the kernel (each its best record in `db`,
  // else its default schedule), runs the prepare steps on `inputs` and the
  // kernel once into `out`. UserError when a step does not build.
  AlternativeRun(const OpAlternative& alternative, const std::vector<rt::NDArray>& inputs, const rt::NDArray& out,
                 const std::string& db);
  ~AlternativeRun();
  AlternativeRun(const AlternativeRun&) = delete;
  AlternativeRun& operator=(const AlternativeRun&) = delete;

  void run();  // the kernel only
  const std::string& name() const { return name_; }
  std::string impl() const;
  const std::string& config_source() const { return config_source_; }
  const nlohmann::json& config() const { return config_; }  // the kernel's tuned config (null: default)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string name_, workload_, config_source_;
  nlohmann::json config_;
};

}  // namespace kiln
