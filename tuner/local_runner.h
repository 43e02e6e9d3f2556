// LocalRunner: measures built candidates on this machine, in a worker process.
//
// One persistent worker per task (forked on first use, see measure_worker.h)
// holds the task's buffers and measures one artifact at a time: load, one
// checked run against task.reference, then timing per MeasureOptions (every
// sample is returned). Outcomes: the worker dies by a signal or exits, or the
// kernel returns non-zero -> kRuntimeCrash; no answer within run_timeout_s
// (load, check and all repeats together) -> kRuntimeTimeout, the worker is
// SIGKILLed; a reference mismatch -> kWrongResult naming the first bad
// element. After a crash or a timeout the next candidate gets a fresh worker.
// Build errors pass through; a target this machine cannot run (not the host)
// gives kDeviceError. Every result has device "local", the unix time and the
// build's compile_ms.
//
// Measurements never overlap: run() measures its candidates one after the
// other, and the caller must not build while it runs (the tuning loop builds
// a batch, then runs it). The worker is forked from the calling process, so
// the single-thread rule of local_builder.h applies here too; the worker
// itself may run threads (kernels use the runtime thread pool).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "tuner/runner.h"

namespace kiln {

class LocalRunner : public Runner {
 public:
  // User errors for nonsensical options (repeat < 1, negative times...).
  explicit LocalRunner(MeasureOptions options = {});
  // Stops the worker (and reaps it).
  ~LocalRunner() override;
  LocalRunner(const LocalRunner&) = delete;
  LocalRunner& operator=(const LocalRunner&) = delete;

  std::vector<MeasureResult> run(const Task& task, const std::vector<BuildResult>& builds) override;

  // Worker processes started so far: one per task, one more after each crash
  // or timeout.
  int workers_started() const { return workers_started_; }
  // The current worker's pid, -1 when none runs.
  pid_t worker_pid() const { return worker_pid_; }

 private:
  MeasureResult measure(const Task& task, const BuildResult& build);
  // Starts the worker for `task` unless it already runs; "" or why not.
  std::string ensure_worker(const Task& task);
  void stop_worker();
  void kill_worker();

  MeasureOptions options_;
  pid_t worker_pid_ = -1;
  int worker_fd_ = -1;
  std::string worker_task_;  // identity of the task the worker holds
  int workers_started_ = 0;
};

}  // namespace kiln
