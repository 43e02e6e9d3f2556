// LocalRunner: a task's candidates measured by runtime's IsolatedRunner.
#include "tuner/local_runner.h"

#include "base/error.h"
#include "codegen/runtime_dtype.h"
#include "codegen/target.h"
#include "runtime/cuda_driver.h"

namespace kiln {

MeasureJob measure_job_of(const Task& task) {
  MeasureJob job;
  job.identity = task.key() + " #seed " + std::to_string(task.input_seed);
  for (const BufferArg& a : task.args) job.args.push_back(ArgSpec{a.name, to_runtime_dtype(a.dtype), a.shape});
  job.num_inputs = task.num_inputs;
  job.input_seed = task.input_seed;
  job.reference = task.reference;
  return job;
}

LocalRunner::LocalRunner(MeasureOptions options) : runner_(options) {}

std::vector<MeasureResult> LocalRunner::run(const Task& task, const std::vector<BuildResult>& builds,
                                            const OnResult& on_result) {
  std::string cannot_run;  // why this machine cannot run the task's target
  try {
    const Target t = Target::parse(task.target);
    std::string why;
    if (t.is_cuda() && !rt::cuda::available(&why))
      cannot_run = "the local runner cannot run code for target '" + task.target + "': " + why;
    else if (!t.is_cuda() && !t.is_host())
      cannot_run = "the local runner cannot run code for target '" + task.target + "' on this machine";
  } catch (const std::exception& e) {
    cannot_run = e.what();
  }
  if (cannot_run.empty()) {
    MeasureJob job = measure_job_of(task);
    job.screen_ms = screen_ms();
    return runner_.run(job, builds, on_result);
  }

  std::vector<MeasureResult> results;
  for (const BuildResult& b : builds) {
    MeasureResult r = b.error != ErrorKind::kNone ? error_result(b.error, b.message)
                                                  : error_result(ErrorKind::kDeviceError, cannot_run);
    stamp_local(r, b);
    results.push_back(std::move(r));
    if (on_result) on_result(results.size() - 1, results.back());
  }
  return results;
}

}  // namespace kiln
