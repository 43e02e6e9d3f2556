// PoolRunner: the tuning process's side of the pool client (see pool_runner.h).
#include "rpc/client/pool_runner.h"

#include <unistd.h>

#include <ctime>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "rpc/client/measure_spec.h"
#include "rpc/measure_request.h"
#include "runtime/process_util.h"

namespace kiln::rpc {

namespace {

// The pool client's loop: one request, one answer, until the parent closes
// the socket. Answers: 'O' + payload, 'U' + a user error, 'X' + anything else.
void serve_client(int fd, const PoolOptions& options) {
  std::unique_ptr<PoolClient> client;
  std::string frame;
  while (proc::recv_frame(fd, std::nullopt, &frame) == proc::RecvStatus::kOk) {
    std::string answer;
    try {
      if (!client) client = std::make_unique<PoolClient>(options);
      internal_assert(!frame.empty()) << "empty request to the pool client";
      const std::string payload = frame.substr(1);
      if (frame[0] == 'I') {
        client->device_info().SerializeToString(&answer);
      } else {
        internal_assert(frame[0] == 'B') << "unknown request to the pool client";
        PoolBatch batch;
        internal_assert(batch.ParseFromString(payload)) << "malformed batch for the pool client";
        // Each reply goes back as soon as it is final ('R' + index + reply),
        // so that the tuner stores it before the batch ends.
        client->run(batch, [fd](size_t index, const MeasureReply& reply) {
          std::string bytes;
          reply.SerializeToString(&bytes);
          proc::send_frame(fd, "R" + proc::Writer().i64(static_cast<int64_t>(index)).str(bytes).bytes());
        }).SerializeToString(&answer);
      }
      answer.insert(0, 1, 'O');
    } catch (const UserError& e) {
      answer = std::string("U") + e.what();
    } catch (const std::exception& e) {
      answer = std::string("X") + e.what();
    }
    if (!proc::send_frame(fd, answer)) return;
  }
}

bool read_artifact(const std::string& path, std::string* bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *bytes = ss.str();
  return in.good() || in.eof();
}

}  // namespace

PoolRunner::PoolRunner(PoolOptions pool, kiln::MeasureOptions options) : pool_(std::move(pool)), options_(options) {
  check_address(pool_.tracker, "--pool", /*allow_port0=*/false);
  user_check(!pool_.key.empty()) << "a tuning job on a pool needs the devices' key (--key)";
  user_check(options.repeat >= 1) << "measure repeat must be >= 1, got " << options.repeat;
  user_check(options.number >= 0) << "measure number must be >= 0, got " << options.number;
  user_check(options.run_timeout_s > 0) << "the run timeout must be positive";
  start_client();
}

PoolRunner::~PoolRunner() { stop_client(false); }

void PoolRunner::start_client() {
  proc::check_single_threaded("PoolRunner");
  std::string error;
  const PoolOptions pool = pool_;
  proc::Child child = proc::fork_child([&](int fd) { serve_client(fd, pool); }, &error);
  user_check(child.pid >= 0) << "cannot start the pool client process: " << error;
  pid_ = child.pid;
  fd_ = child.fd;
}

void PoolRunner::stop_client(bool kill) {
  if (pid_ < 0) return;
  ::close(fd_);
  if (kill)
    proc::kill_and_reap(pid_);
  else
    proc::reap(pid_, proc::Clock::now() + std::chrono::seconds(5));
  pid_ = -1;
  fd_ = -1;
}

bool PoolRunner::call(char type, const std::string& payload, double timeout_s, std::string* answer,
                      std::string* failure, const std::function<void(const std::string&)>& on_partial) {
  if (pid_ < 0) start_client();
  std::string reply;
  proc::RecvStatus status = proc::RecvStatus::kEof;
  const auto deadline = proc::Clock::now() + std::chrono::duration_cast<proc::Clock::duration>(
                                                 std::chrono::duration<double>(timeout_s));
  if (proc::send_frame(fd_, std::string(1, type) + payload)) {
    for (;;) {
      status = proc::recv_frame(fd_, deadline, &reply);
      if (status != proc::RecvStatus::kOk || reply.empty() || reply[0] != 'R') break;
      if (on_partial) on_partial(reply.substr(1));
    }
  }
  if (status != proc::RecvStatus::kOk || reply.empty()) {
    const int wait_status = proc::kill_and_reap(pid_);
    ::close(fd_);
    pid_ = -1;
    fd_ = -1;
    *failure = status == proc::RecvStatus::kTimeout ? "the pool client process overran its time bound"
                                                    : "the pool client process " + proc::describe_status(wait_status);
    return false;
  }
  if (reply[0] == 'U') user_error() << reply.substr(1);
  internal_assert(reply[0] == 'O') << "pool client: " << reply.substr(1);
  *answer = reply.substr(1);
  return true;
}

DeviceInfo PoolRunner::device_info() {
  std::string answer, failure;
  user_check(call('I', "", pool_.key_wait_s + 30, &answer, &failure)) << failure;
  DeviceInfo info;
  internal_assert(info.ParseFromString(answer)) << "malformed device info from the pool client";
  return info;
}

std::vector<kiln::MeasureResult> PoolRunner::run(const kiln::Task& task, const std::vector<kiln::BuildResult>& builds,
                                                 const OnResult& on_result) {
  std::vector<kiln::MeasureResult> results(builds.size());
  std::vector<bool> reported(builds.size(), false);
  auto report = [&](size_t i) {
    kiln::MeasureResult& r = results[i];
    if (r.device.empty()) r.device = "pool:" + pool_.key;
    r.timestamp = static_cast<int64_t>(std::time(nullptr));
    r.compile_ms = builds[i].compile_ms;
    r.resources = builds[i].resources;
    reported[i] = true;
    if (on_result) on_result(i, r);
  };
  auto fill = [&](size_t i, const MeasureReply& m) {
    kiln::MeasureResult& r = results[i];
    r.error = from_proto(m.error());
    r.message = m.message();
    r.samples_ms.assign(m.samples_ms().begin(), m.samples_ms().end());
    r.device = m.device();
  };
  PoolBatch batch;
  *batch.mutable_spec() = measure_spec(task, options_);
  batch.mutable_spec()->set_screen_ms(screen_ms());
  std::vector<size_t> sent;  // indices of builds in the batch
  for (size_t i = 0; i < builds.size(); ++i) {
    const kiln::BuildResult& b = builds[i];
    kiln::MeasureResult& r = results[i];
    if (b.error != kiln::ErrorKind::kNone) {
      r.error = b.error;
      r.message = b.message;
      report(i);
    } else if (b.artifact.empty() || !read_artifact(b.artifact, batch.add_artifacts())) {
      if (!b.artifact.empty()) batch.mutable_artifacts()->RemoveLast();
      r.error = kiln::ErrorKind::kCompileError;
      r.message = b.artifact.empty() ? "the build produced no artifact" : "cannot read the artifact " + b.artifact;
      report(i);
    } else {
      batch.add_entries(b.entry);
      sent.push_back(i);
    }
  }
  if (!sent.empty()) {
    // The client bounds every wait itself; this bound only catches a client
    // that hangs regardless.
    const double per = options_.run_timeout_s + pool_.rpc_margin_s;
    const double bound = static_cast<double>(sent.size()) * per * pool_.max_attempts +
                         pool_.device_wait_s * (pool_.max_attempts + 1) + 60;
    std::string payload, answer, failure;
    batch.SerializeToString(&payload);
    auto streamed = [&](const std::string& frame) {
      proc::Reader in(frame);
      const int64_t k = in.i64();
      MeasureReply m;
      internal_assert(k >= 0 && static_cast<size_t>(k) < sent.size() && m.ParseFromString(in.str()))
          << "malformed streamed reply from the pool client";
      const size_t i = sent[static_cast<size_t>(k)];
      if (reported[i]) return;
      fill(i, m);
      report(i);
    };
    PoolBatchReply reply;
    if (call('B', payload, bound, &answer, &failure, streamed) && reply.ParseFromString(answer) &&
        reply.results_size() == static_cast<int>(sent.size())) {
      for (size_t k = 0; k < sent.size(); ++k)
        if (!reported[sent[k]]) {
          fill(sent[k], reply.results(static_cast<int>(k)));
          report(sent[k]);
        }
    } else {
      if (failure.empty()) failure = "the pool client answered a malformed batch reply";
      for (size_t i : sent) {
        if (reported[i]) continue;
        results[i].error = kiln::ErrorKind::kDeviceError;
        results[i].message = failure;
        report(i);
      }
    }
  }
  return results;
}

}  // namespace kiln::rpc
