// Runners measure built candidates (locally in worker processes, or on a
// remote device pool) and check each output against the task's reference.
#pragma once

#include <functional>
#include <vector>

#include "runtime/measure.h"
#include "tuner/task.h"

namespace kiln {

class Runner {
 public:
  // Called with each result as soon as it is measured (index into builds),
  // so that the caller can store it before the rest of the batch is done.
  using OnResult = std::function<void(size_t index, const MeasureResult& result)>;

  virtual ~Runner() = default;
  // One result per build result, in order. A build error passes through as
  // the measure result's error; never throws for a bad candidate.
  virtual std::vector<MeasureResult> run(const Task& task, const std::vector<BuildResult>& builds,
                                         const OnResult& on_result) = 0;
  std::vector<MeasureResult> run(const Task& task, const std::vector<BuildResult>& builds) {
    return run(task, builds, nullptr);
  }

  // Asks that the next run() measure in fresh processes, with buffers
  // allocated anew, where the runner keeps processes between runs (the
  // local runner's worker): a kernel's speed can depend on where its
  // buffers landed in the caches, and a confirmation (tuning_loop.h's
  // confirm_task) should not inherit a lucky placement. Others ignore it.
  virtual void measure_afresh() {}

  // Screening, set by the tuning loop before each batch: a candidate whose
  // first timing sample is slower than `ms` per call is not timed again
  // (rt::TimeOptions::screen_ms; 0, the default: every candidate gets all its
  // repeats). Runners that cannot screen ignore it.
  void screen_slower_than(double ms) { screen_ms_ = ms > 0 ? ms : 0; }
  double screen_ms() const { return screen_ms_; }

 private:
  double screen_ms_ = 0;
};

}  // namespace kiln
