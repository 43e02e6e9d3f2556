// The measuring process of a device server (see measure_host.h).
#include "rpc/measure_host.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "base/error.h"
#include "runtime/gpu_artifact.h"
#include "rpc/measure_request.h"
#include "runtime/isolated_runner.h"
#include "runtime/process_util.h"

namespace kiln::rpc {

namespace {

// Beyond the run timeout, what a measurement may take: setting up a fresh
// worker's buffers (IsolatedRunner allows 60 s) and writing the artifact.
constexpr double kSetupAllowanceS = 75;

bool write_file(const std::string& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
  if (fd < 0) return false;
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return ::close(fd) == 0;
}

// The measuring process's loop: one request, one reply, until the server
// closes the socket.
void serve(int fd, const std::string& dir) {
  std::unique_ptr<IsolatedRunner> runner;
  std::string runner_options;  // the serialized options `runner` was made with
  uint64_t count = 0;
  std::string frame;
  while (proc::recv_frame(fd, std::nullopt, &frame) == proc::RecvStatus::kOk) {
    MeasureReply reply;
    std::string path = dir + "/candidate-" + std::to_string(count++);
    try {
      MeasureRequest request;
      internal_assert(request.ParseFromString(frame)) << "the device server sent a malformed request";
      path += looks_like_gpu_artifact(request.artifact()) ? kGpuArtifactSuffix : ".so";
      if (!write_file(path, request.artifact())) {
        reply.set_error(DEVICE_ERROR);
        reply.set_message("the device cannot write the artifact to " + path + ": " + std::strerror(errno));
      } else {
        std::string options;
        request.options().SerializeToString(&options);
        if (!runner || options != runner_options) {
          runner.reset();  // stops the old worker first
          runner = std::make_unique<IsolatedRunner>(options_of_request(request));
          runner_options = options;
        }
        BuildResult build;
        build.artifact = path;
        build.entry = request.entry();
        const MeasureResult r = runner->run(job_of_request(request), {build}).at(0);
        reply.set_error(to_proto(r.error));
        reply.set_message(r.message);
        for (double s : r.samples_ms) reply.add_samples_ms(s);
      }
    } catch (const std::exception& e) {
      reply.Clear();
      reply.set_error(DEVICE_ERROR);
      reply.set_message(std::string("the device could not measure: ") + e.what());
    }
    ::unlink(path.c_str());
    std::string out;
    reply.SerializeToString(&out);
    if (!proc::send_frame(fd, out)) return;
  }
}

}  // namespace

MeasureHost::MeasureHost(const std::string& temp_root) {
  std::string root = temp_root;
  if (root.empty()) {
    const char* t = std::getenv("TMPDIR");
    root = t && *t ? t : "/tmp";
  }
  std::string pattern = root + "/kiln-serve-XXXXXX";
  user_check(::mkdtemp(&pattern[0]) != nullptr)
      << "cannot create a private directory under " << root << ": " << std::strerror(errno);
  dir_ = pattern;
  proc::check_single_threaded("the device server's measuring process");
  std::string error;
  const std::string dir = dir_;
  proc::Child child = proc::fork_child([&](int fd) { serve(fd, dir); }, &error);
  if (child.pid < 0) {
    std::filesystem::remove_all(dir_);
    user_error() << "cannot start the measuring process: " << error;
  }
  pid_ = child.pid;
  fd_ = child.fd;
}

MeasureHost::~MeasureHost() {
  if (pid_ >= 0) {
    ::close(fd_);  // the process reads end-of-file, stops its worker and exits
    proc::reap(pid_, proc::Clock::now() + std::chrono::seconds(2));
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

bool MeasureHost::measure(const MeasureRequest& request, MeasureReply* reply, std::string* error) {
  if (pid_ < 0) {
    *error = "the measuring process is gone";
    return false;
  }
  std::string bytes;
  request.SerializeToString(&bytes);
  std::string answer;
  proc::RecvStatus status = proc::RecvStatus::kEof;
  if (proc::send_frame(fd_, bytes)) {
    const double limit = request.options().run_timeout_s() + kSetupAllowanceS;
    status = proc::recv_frame(
        fd_,
        proc::Clock::now() + std::chrono::duration_cast<proc::Clock::duration>(std::chrono::duration<double>(limit)),
        &answer);
  }
  if (status == proc::RecvStatus::kOk && reply->ParseFromString(answer)) return true;
  ::close(fd_);
  const int wait_status = proc::kill_and_reap(pid_);
  pid_ = -1;
  fd_ = -1;
  *error = status == proc::RecvStatus::kTimeout ? std::string("the measuring process stopped answering")
                                                : "the measuring process " + proc::describe_status(wait_status);
  return false;
}

}  // namespace kiln::rpc
