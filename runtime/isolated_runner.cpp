// IsolatedRunner: the parent side; the worker's loop is in measure_worker.cpp.
#include "runtime/isolated_runner.h"

#include <unistd.h>

#include <ctime>
#include <sstream>

#include "base/error.h"
#include "runtime/measure_worker.h"
#include "runtime/process_util.h"

namespace kiln {
namespace {

using proc::Clock;

// Setting up a worker fills the job's inputs; generous, since it happens
// once per job and a big conv input takes a while to fill.
constexpr double kWorkerStartTimeoutS = 60;

Clock::time_point after_seconds(double s) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

MeasureResult error_result(ErrorKind kind, std::string message) {
  MeasureResult r;
  r.error = kind;
  r.message = std::move(message);
  return r;
}

void stamp_local(MeasureResult& r, const BuildResult& build) {
  r.device = "local";
  r.timestamp = static_cast<int64_t>(std::time(nullptr));
  r.compile_ms = build.compile_ms;
  r.resources = build.resources;
}

void check_measure_job(const MeasureJob& job) {
  internal_assert(job.num_inputs <= job.args.size()) << "job " << job.identity << " has more inputs than arguments";
  for (const ReferenceSample& ref : job.reference) {
    internal_assert(ref.output >= 0 && job.num_inputs + static_cast<size_t>(ref.output) < job.args.size())
        << "job " << job.identity << ": reference for output " << ref.output << ", which does not exist";
    int64_t n = 1;
    for (int64_t d : job.args[job.num_inputs + static_cast<size_t>(ref.output)].shape) n *= d;
    if (ref.whole()) {
      internal_assert(static_cast<int64_t>(ref.expected.size()) == n)
          << "job " << job.identity << ": a whole-output reference of " << ref.expected.size() << " values for "
          << n << " elements";
      continue;
    }
    internal_assert(ref.flat_index.size() == ref.expected.size())
        << "job " << job.identity << ": reference indices and values differ in number";
    for (int64_t i : ref.flat_index)
      internal_assert(i >= 0 && i < n) << "job " << job.identity << ": reference index " << i << " out of range";
  }
}

IsolatedRunner::IsolatedRunner(MeasureOptions options) : options_(options) {
  user_check(options.repeat >= 1) << "measure repeat must be >= 1, got " << options.repeat;
  user_check(options.number >= 0) << "measure number must be >= 0 (0: grown to min_repeat_ms), got " << options.number;
  user_check(options.warmup >= 0) << "measure warmup must be >= 0, got " << options.warmup;
  user_check(options.min_repeat_ms >= 0) << "min_repeat_ms must be >= 0, got " << options.min_repeat_ms;
  user_check(options.cooldown_ms >= 0) << "cooldown_ms must be >= 0, got " << options.cooldown_ms;
  user_check(options.run_timeout_s > 0) << "the run timeout must be positive, got " << options.run_timeout_s << " s";
}

IsolatedRunner::~IsolatedRunner() { stop_worker(); }

std::vector<MeasureResult> IsolatedRunner::run(const MeasureJob& job, const std::vector<BuildResult>& builds,
                                               const OnResult& on_result) {
  check_measure_job(job);
  std::vector<MeasureResult> results;
  results.reserve(builds.size());
  for (const BuildResult& b : builds) {
    MeasureResult r;
    if (b.error != ErrorKind::kNone) {
      r = error_result(b.error, b.message);
    } else if (b.artifact.empty()) {
      r = error_result(ErrorKind::kCompileError, "the build produced no artifact");
    } else {
      r = measure(job, b);
    }
    stamp_local(r, b);
    results.push_back(std::move(r));
    if (on_result) on_result(results.size() - 1, results.back());
  }
  return results;
}

MeasureResult IsolatedRunner::measure(const MeasureJob& job, const BuildResult& build) {
  std::string error = ensure_worker(job);
  if (!error.empty()) return error_result(ErrorKind::kDeviceError, "cannot start a measuring worker: " + error);
  const std::string request = encode_measure_request(build, job.screen_ms);
  if (!proc::send_frame(worker_fd_, request)) {
    // The worker died while idle; one fresh try.
    kill_worker();
    error = ensure_worker(job);
    if (!error.empty()) return error_result(ErrorKind::kDeviceError, "cannot start a measuring worker: " + error);
    if (!proc::send_frame(worker_fd_, request))
      return error_result(ErrorKind::kDeviceError, "the measuring worker does not accept requests");
  }
  std::string reply;
  switch (proc::recv_frame(worker_fd_, after_seconds(options_.run_timeout_s), &reply)) {
    case proc::RecvStatus::kOk: {
      MeasureResult r = decode_measure_reply(reply);
      // A kernel that failed may have left its worker unusable (a lost GPU
      // context, corrupted memory): the next candidate gets a fresh one.
      if (r.error == ErrorKind::kRuntimeCrash) stop_worker();
      return r;
    }
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

std::string IsolatedRunner::ensure_worker(const MeasureJob& job) {
  if (worker_pid_ >= 0 && worker_job_ == job.identity) return "";
  stop_worker();
  proc::check_single_threaded("the measuring runner");
  std::string error;
  const MeasureOptions options = options_;
  proc::Child child = proc::fork_child([&](int fd) { serve_measurements(fd, job, options); }, &error);
  if (child.pid < 0) return error;
  ++workers_started_;
  worker_pid_ = child.pid;
  worker_fd_ = child.fd;
  worker_job_ = job.identity;

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
    return "the worker did not set up the kernel's buffers within " + std::to_string(int(kWorkerStartTimeoutS)) +
           " s";
  }
  ::close(worker_fd_);
  const int status = proc::reap(worker_pid_, after_seconds(1));
  worker_pid_ = -1;
  worker_fd_ = -1;
  return "the worker " + proc::describe_status(status) + " while setting up";
}

void IsolatedRunner::stop_worker() {
  if (worker_pid_ < 0) return;
  ::close(worker_fd_);  // the worker reads end-of-file and exits
  proc::reap(worker_pid_, after_seconds(1));
  worker_pid_ = -1;
  worker_fd_ = -1;
}

void IsolatedRunner::kill_worker() {
  if (worker_pid_ < 0) return;
  ::close(worker_fd_);
  proc::kill_and_reap(worker_pid_);
  worker_pid_ = -1;
  worker_fd_ = -1;
}

}  // namespace kiln
