// The client side of the Halide contender: starts the kiln-halide-baseline
// helper process (halide/main.cpp describes its JSON-lines protocol), hands
// it an op and its inputs (raw f32 files in a private temporary folder),
// and asks it to time one round at a time, so that Halide is interleaved
// with the in-process contenders round by round.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/contenders/contender.h"
#include "runtime/ndarray.h"
#include "runtime/time_evaluator.h"

namespace kiln::baselines {

// The helper executable: $KILN_HALIDE_BASELINE, else kiln-halide-baseline
// next to the running executable, else where the build put it; "" when none
// of them exists. The helper's stderr (the autoscheduler's search log) is
// discarded unless $KILN_HALIDE_VERBOSE is set.
std::string halide_helper_path();

class HalideHelper {
 public:
  // Starts the helper with `threads` Halide threads. UserError when it
  // cannot be found or started.
  explicit HalideHelper(int threads);
  ~HalideHelper();
  HalideHelper(const HalideHelper&) = delete;
  HalideHelper& operator=(const HalideHelper&) = delete;

  std::string version();
  // Autoschedules, compiles and runs the op once on `inputs`, writing its
  // result into `out`; returns the implementation description. UserError
  // with the helper's message when it fails.
  std::string setup(const ContenderOp& op, const std::vector<rt::NDArray>& inputs, const rt::NDArray& out);
  // Times the op of the last setup; returns the median time of one call.
  double time_round(const rt::TimeOptions& options);

 private:
  nlohmann::json request(const nlohmann::json& req);
  pid_t pid_ = -1;
  int to_fd_ = -1, from_fd_ = -1;
  std::string buffer_, dir_;
  int threads_ = 1;
};

}  // namespace kiln::baselines
