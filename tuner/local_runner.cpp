// LocalRunner: the parent side; the worker's loop is in measure_worker.cpp.
#include "tuner/local_runner.h"

#include <unistd.h>

#include <ctime>
#include <optional>
#include <sstream>

#include "codegen/target.h"
#include "compute/error.h"
#include "tuner/measure_worker.h"
#include "tuner/process_util.h"

namespace kiln {
namespace {

using proc::Clock;

// Setting up a worker fills the task's inputs; generous, since it happens
// once per task and a big conv input takes a while to fill.
constexpr double kWorkerStartTimeoutS = 60;

Clock::time_point after_seconds(double s) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

MeasureResult error_result(ErrorKind kind, std::string message) {
  MeasureResult r;
  r.error = kind;
  r.message = std::move(message);
  return r;
}

// The reference samples must fit the task's outputs (a kiln bug otherwise).
void check_reference(const Task& task) {
  internal_assert(task.num_inputs <= task.args.size()) << "task " << task.key() << " has more inputs than arguments";
  for (const ReferenceSample& ref : task.reference) {
    internal_assert(ref.output >= 0 && task.num_inputs + static_cast<size_t>(ref.output) < task.args.size())
        << "task " << task.key() << ": reference for output " << ref.output << ", which does not exist";
    internal_assert(ref.flat_index.size() == ref.expected.size())
        << "task " << task.key() << ": reference indices and values differ in number";
    int64_t n = 1;
    for (int64_t d : task.args[task.num_inputs + static_cast<size_t>(ref.output)].shape) n *= d;
    for (int64_t i : ref.flat_index)
      internal_assert(i >= 0 && i < n) << "task " << task.key() << ": reference index " << i << " out of range";
  }
}

}  // namespace

LocalRunner::LocalRunner(MeasureOptions options) : options_(options) {
  user_check(options.repeat >= 1) << "measure repeat must be >= 1, got " << options.repeat;
  user_check(options.number >= 0) << "measure number must be >= 0 (0: grown to min_repeat_ms), got " << options.number;
  user_check(options.warmup >= 0) << "measure warmup must be >= 0, got " << options.warmup;
  user_check(options.min_repeat_ms >= 0) << "min_repeat_ms must be >= 0, got " << options.min_repeat_ms;
  user_check(options.cooldown_ms >= 0) << "cooldown_ms must be >= 0, got " << options.cooldown_ms;
  user_check(options.run_timeout_s > 0) << "the run timeout must be positive, got " << options.run_timeout_s << " s";
}

LocalRunner::~LocalRunner() { stop_worker(); }

std::vector<MeasureResult> LocalRunner::run(const Task& task, const std::vector<BuildResult>& builds) {
  check_reference(task);
  std::vector<MeasureResult> results;
  results.reserve(builds.size());
  std::optional<std::string> cannot_run;  // why this machine cannot run the task's target ("" when it can)
  for (const BuildResult& b : builds) {
    MeasureResult r;
    if (b.error != ErrorKind::kNone) {
      r = error_result(b.error, b.message);
    } else if (b.artifact.empty()) {
      r = error_result(ErrorKind::kCompileError, "the build produced no artifact");
    } else {
      if (!cannot_run) {
        try {
          cannot_run = Target::parse(task.target).is_host()
                           ? ""
                           : "the local runner cannot run code for target '" + task.target + "' on this machine";
        } catch (const std::exception& e) {
          cannot_run = e.what();
        }
      }
      r = cannot_run->empty() ? measure(task, b) : error_result(ErrorKind::kDeviceError, *cannot_run);
    }
    r.device = "local";
    r.timestamp = static_cast<int64_t>(std::time(nullptr));
    r.compile_ms = b.compile_ms;
    results.push_back(std::move(r));
  }
  return results;
}

MeasureResult LocalRunner::measure(const Task& task, const BuildResult& build) {
  std::string error = ensure_worker(task);
  if (!error.empty()) return error_result(ErrorKind::kDeviceError, "cannot start a measuring worker: " + error);
  const std::string request = encode_measure_request(build);
  if (!proc::send_frame(worker_fd_, request)) {
    // The worker died while idle; one fresh try.
    kill_worker();
    error = ensure_worker(task);
    if (!error.empty()) return error_result(ErrorKind::kDeviceError, "cannot start a measuring worker: " + error);
    if (!proc::send_frame(worker_fd_, request))
      return error_result(ErrorKind::kDeviceError, "the measuring worker does not accept requests");
  }
  std::string reply;
  switch (proc::recv_frame(worker_fd_, after_seconds(options_.run_timeout_s), &reply)) {
    case proc::RecvStatus::kOk:
      return decode_measure_reply(reply);
    case proc::RecvStatus::kTimeout: {
      kill_worker();
      std::ostringstream msg;
      msg << "the kernel ran longer than the run timeout (" << options_.run_timeout_s
          << " s for loading, checking and all timing runs)";
      return error_result(ErrorKind::kRuntimeTimeout, msg.str());
    }
    case proc::RecvStatus::kEof:
      break;
  }
  ::close(worker_fd_);
  const int status = proc::reap(worker_pid_, after_seconds(1));
  worker_pid_ = -1;
  worker_fd_ = -1;
  return error_result(ErrorKind::kRuntimeCrash,
                      "the kernel crashed its worker process, which " + proc::describe_status(status));
}

std::string LocalRunner::ensure_worker(const Task& task) {
  const std::string id = task.key() + " #seed " + std::to_string(task.input_seed);
  if (worker_pid_ >= 0 && worker_task_ == id) return "";
  stop_worker();
  proc::check_single_threaded("LocalRunner");
  std::string error;
  const MeasureOptions options = options_;
  proc::Child child = proc::fork_child([&](int fd) { serve_measurements(fd, task, options); }, &error);
  if (child.pid < 0) return error;
  ++workers_started_;
  worker_pid_ = child.pid;
  worker_fd_ = child.fd;
  worker_task_ = id;

  std::string ready;
  const proc::RecvStatus s = proc::recv_frame(worker_fd_, after_seconds(kWorkerStartTimeoutS), &ready);
  if (s == proc::RecvStatus::kOk) {
    error = decode_worker_ready(ready);
    if (error.empty()) return "";
    stop_worker();
    return error;
  }
  if (s == proc::RecvStatus::kTimeout) {
    kill_worker();
    return "the worker did not set up the task's buffers within " + std::to_string(int(kWorkerStartTimeoutS)) + " s";
  }
  ::close(worker_fd_);
  const int status = proc::reap(worker_pid_, after_seconds(1));
  worker_pid_ = -1;
  worker_fd_ = -1;
  return "the worker " + proc::describe_status(status) + " while setting up";
}

void LocalRunner::stop_worker() {
  if (worker_pid_ < 0) return;
  ::close(worker_fd_);  // the worker reads end-of-file and exits
  proc::reap(worker_pid_, after_seconds(1));
  worker_pid_ = -1;
  worker_fd_ = -1;
}

void LocalRunner::kill_worker() {
  if (worker_pid_ < 0) return;
  ::close(worker_fd_);
  proc::kill_and_reap(worker_pid_);
  worker_pid_ = -1;
  worker_fd_ = -1;
}

}  // namespace kiln
