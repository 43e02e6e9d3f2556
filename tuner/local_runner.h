// LocalRunner: measures a task's built candidates on this machine, each in
// an isolated worker process (runtime/isolated_runner.h says how: crashes,
// timeouts and wrong results become error records).
//
// Measurements never overlap: run() measures its candidates one after the
// other, and the caller must not build while it runs (the tuning loop builds
// a batch, then runs it). The worker is forked from the calling process, so
// the single-thread rule of local_builder.h applies here too. A target this
// machine cannot run (not the host) gives kDeviceError for every candidate.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "runtime/isolated_runner.h"
#include "tuner/runner.h"

namespace kiln {

class LocalRunner : public Runner {
 public:
  // User errors for nonsensical options (repeat < 1, negative times...).
  explicit LocalRunner(MeasureOptions options = {});

  using Runner::run;
  std::vector<MeasureResult> run(const Task& task, const std::vector<BuildResult>& builds,
                                 const OnResult& on_result) override;

  // The next run starts a new worker (fresh buffers).
  void measure_afresh() override { runner_.restart(); }

  // Worker processes started so far: one per task, one more after each crash
  // or timeout.
  int workers_started() const { return runner_.workers_started(); }
  // The current worker's pid, -1 when none runs.
  pid_t worker_pid() const { return runner_.worker_pid(); }

 private:
  IsolatedRunner runner_;
};

// The runtime's view of a task: its arguments, inputs and reference.
MeasureJob measure_job_of(const Task& task);

}  // namespace kiln
