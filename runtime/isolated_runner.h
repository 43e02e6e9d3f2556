// IsolatedRunner: measures built kernels on this machine, each in a worker
// process, for anything that measures (the tuner's LocalRunner and the
// device server) without needing the compiler.
//
// One persistent worker per job (forked on first use, see measure_worker.h)
// holds the job's buffers and measures one artifact at a time: load, one
// checked run against job.reference, then timing per MeasureOptions (every
// sample is returned). Outcomes: the worker dies by a signal or exits, or the
// kernel returns non-zero -> kRuntimeCrash; no answer within run_timeout_s
// (load, check and all repeats together) -> kRuntimeTimeout, the worker is
// SIGKILLed; a reference mismatch -> kWrongResult naming the first bad
// element. After a crash or a timeout the next candidate gets a fresh worker.
// Build errors pass through. Every result has device "local", the unix time
// and the build's compile_ms.
//
// The worker is forked from the calling process, so that process must run
// one thread when a worker starts (process_util.h); the worker itself may run
// threads (kernels use the runtime thread pool).
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "runtime/measure.h"
#include "runtime/measure_job.h"

namespace kiln {

class IsolatedRunner {
 public:
  // Called with each result as soon as it is measured (index into builds).
  using OnResult = std::function<void(size_t index, const MeasureResult& result)>;

  // User errors for nonsensical options (repeat < 1, negative times...).
  explicit IsolatedRunner(MeasureOptions options = {});
  // Stops the worker (and reaps it).
  ~IsolatedRunner();
  IsolatedRunner(const IsolatedRunner&) = delete;
  IsolatedRunner& operator=(const IsolatedRunner&) = delete;

  // One result per build, in order, measured one after the other.
  std::vector<MeasureResult> run(const MeasureJob& job, const std::vector<BuildResult>& builds,
                                 const OnResult& on_result = nullptr);

  // Stops the worker: the next run starts a new one, whose buffers are
  // allocated anew.
  void restart() { stop_worker(); }

  // Worker processes started so far: one per job, one more after each crash
  // or timeout.
  int workers_started() const { return workers_started_; }
  // The current worker's pid, -1 when none runs.
  pid_t worker_pid() const { return worker_pid_; }

 private:
  MeasureResult measure(const MeasureJob& job, const BuildResult& build);
  // Starts the worker for `job` unless it already runs; "" or why not.
  std::string ensure_worker(const MeasureJob& job);
  void stop_worker();
  void kill_worker();

  MeasureOptions options_;
  pid_t worker_pid_ = -1;
  int worker_fd_ = -1;
  std::string worker_job_;  // identity of the job the worker holds
  int workers_started_ = 0;
};

// A result carrying only an error (device, time stamp and compile time unset).
MeasureResult error_result(ErrorKind kind, std::string message);
// Marks a result measured here for `build`: device "local", the unix time,
// the build's compile time.
void stamp_local(MeasureResult& r, const BuildResult& build);

}  // namespace kiln
