// LocalBuilder: one forked child per candidate, `jobs` at a time (see local_builder.h).
#include "tuner/local_builder.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>

#include "codegen/build.h"
#include "codegen/gpu_build.h"
#include "codegen/target.h"
#include "base/error.h"
#include "runtime/process_util.h"

namespace kiln {
namespace {

using proc::Clock;

constexpr size_t kMaxMessageBytes = 16 * 1024;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

std::string encode(const BuildResult& r) {
  proc::Writer w;
  w.i64(static_cast<int64_t>(r.error)).str(r.message).f64(r.compile_ms).str(r.artifact).str(r.entry);
  w.i64(static_cast<int64_t>(r.resources.size()));
  for (const KernelResources& k : r.resources)
    w.str(k.kernel).i64(k.registers).i64(k.spill_store_bytes).i64(k.spill_load_bytes).i64(k.shared_bytes);
  return w.bytes();
}

BuildResult decode(const std::string& payload) {
  proc::Reader in(payload);
  BuildResult r;
  r.error = static_cast<ErrorKind>(in.i64());
  r.message = in.str();
  r.compile_ms = in.f64();
  r.artifact = in.str();
  r.entry = in.str();
  r.resources.resize(static_cast<size_t>(in.i64()));
  for (KernelResources& k : r.resources) {
    k.kernel = in.str();
    k.registers = static_cast<int>(in.i64());
    k.spill_store_bytes = in.i64();
    k.spill_load_bytes = in.i64();
    k.shared_bytes = in.i64();
  }
  return r;
}

// Runs in the child: instantiate, compile, link.
BuildResult compile_candidate(const Task& task, const Config& config, const Target& target, const std::string& dir) {
  const auto start = Clock::now();
  BuildResult r;
  LoweredFunc f;
  try {
    f = task.instantiate(config, LowerDepth::kFull);
  } catch (const UserError& e) {
    r.error = ErrorKind::kInvalidConfig;
    r.message = e.what();
  } catch (const std::exception& e) {
    r.error = ErrorKind::kCompileError;
    r.message = std::string("lowering failed: ") + e.what();
  } catch (...) {
    r.error = ErrorKind::kCompileError;
    r.message = "lowering failed with an exception that is not a std::exception";
  }
  if (r.error == ErrorKind::kNone) {
    try {
      if (target.is_cuda()) {
        GpuBuild gb = build_gpu_artifact(f, target, dir);
        r.artifact = gb.path;
        for (const CudaKernelResources& k : gb.resources)
          r.resources.push_back({k.kernel, k.registers, k.spill_store_bytes, k.spill_load_bytes, k.shared_bytes});
      } else {
        r.artifact = build_shared_object({f}, target, dir).path;
      }
      r.entry = f.name;
    } catch (const std::exception& e) {
      r.error = ErrorKind::kCompileError;
      r.message = std::string("code generation failed: ") + e.what();
    } catch (...) {
      r.error = ErrorKind::kCompileError;
      r.message = "code generation failed with an exception that is not a std::exception";
    }
  }
  if (r.message.size() > kMaxMessageBytes) r.message.resize(kMaxMessageBytes);
  r.compile_ms = ms_since(start);
  return r;
}

BuildResult error_result(ErrorKind kind, std::string message, double ms = 0) {
  BuildResult r;
  r.error = kind;
  r.message = std::move(message);
  r.compile_ms = ms;
  return r;
}

// One compile child in flight.
struct Running {
  size_t index;
  proc::Child child;
  Clock::time_point start, deadline;
  std::string bytes;  // what the child sent so far
};

// Kills and reaps whatever still runs when build() leaves early (an exception).
struct ReapGuard {
  std::vector<Running>* running;
  ~ReapGuard() {
    for (Running& r : *running) {
      proc::kill_and_reap(r.child.pid);
      ::close(r.child.fd);
    }
  }
};

std::string default_temp_root() {
  const char* t = std::getenv("TMPDIR");
  return (t && *t) ? t : "/tmp";
}

}  // namespace

LocalBuilder::LocalBuilder(LocalBuilderOptions options) : timeout_s_(options.timeout_s) {
  user_check(options.jobs >= 0) << "the number of build jobs must be >= 0 (0: one per core), got " << options.jobs;
  user_check(options.timeout_s > 0) << "the build timeout must be positive, got " << options.timeout_s << " s";
  jobs_ = options.jobs > 0 ? options.jobs : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::string root = options.temp_root.empty() ? default_temp_root() : options.temp_root;
  std::string tmpl = root + "/kiln-build-XXXXXX";
  user_check(::mkdtemp(&tmpl[0]) != nullptr)
      << "cannot create a build directory under '" << root << "': " << std::strerror(errno);
  dir_ = tmpl;
}

LocalBuilder::~LocalBuilder() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void LocalBuilder::clear_directory() const {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) std::filesystem::remove_all(entry.path(), ec);
}

std::vector<BuildResult> LocalBuilder::build(const Task& task, const std::vector<Config>& configs) {
  std::vector<BuildResult> results(configs.size());
  clear_directory();
  if (configs.empty()) return results;

  // Parsed here, not in each child: LLVM's target setup is then inherited.
  Target target;
  try {
    target = Target::parse(task.target);
  } catch (const std::exception& e) {
    for (BuildResult& r : results) r = error_result(ErrorKind::kCompileError, e.what());
    return results;
  }
  proc::check_single_threaded("LocalBuilder");

  const auto timeout = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
  std::vector<Running> running;
  ReapGuard guard{&running};
  size_t next = 0;

  auto finish = [&](size_t slot) {
    Running r = std::move(running[slot]);
    running.erase(running.begin() + static_cast<long>(slot));
    ::close(r.child.fd);
    // The child closed its end, so it is exiting; still, never wait past its deadline.
    const int status = proc::reap(r.child.pid, std::max(r.deadline, Clock::now() + std::chrono::milliseconds(100)));
    std::string payload;
    if (proc::parse_frame(r.bytes, &payload)) {
      results[r.index] = decode(payload);
    } else {
      results[r.index] =
          error_result(ErrorKind::kCompileError,
                       "the compile process " + proc::describe_status(status) + " without a result", ms_since(r.start));
    }
  };

  while (next < configs.size() || !running.empty()) {
    while (static_cast<int>(running.size()) < jobs_ && next < configs.size()) {
      const size_t i = next++;
      std::string error;
      const Config& config = configs[i];
      const std::string& dir = dir_;
      proc::Child child = proc::fork_child(
          [&](int fd) { proc::send_frame(fd, encode(compile_candidate(task, config, target, dir))); }, &error);
      if (child.pid < 0) {
        results[i] = error_result(ErrorKind::kCompileError, "cannot start a compile process: " + error);
        continue;
      }
      const auto now = Clock::now();
      running.push_back(Running{i, child, now, now + timeout, {}});
    }
    if (running.empty()) continue;

    std::vector<pollfd> fds;
    Clock::time_point first_deadline = running[0].deadline;
    for (const Running& r : running) {
      fds.push_back(pollfd{r.child.fd, POLLIN, 0});
      first_deadline = std::min(first_deadline, r.deadline);
    }
    const auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(first_deadline - Clock::now()).count();
    const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<int64_t>(wait_ms + 1, 0, 1000000)));
    if (ready < 0 && errno != EINTR) internal_error() << "poll failed: " << std::strerror(errno);

    // Collect output; a child whose socket reached end-of-file is done.
    for (size_t k = fds.size(); k-- > 0;) {
      if (fds[k].revents == 0) continue;
      char buf[64 * 1024];
      const ssize_t n = ::read(fds[k].fd, buf, sizeof buf);
      if (n > 0) {
        running[k].bytes.append(buf, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        finish(k);
      }
    }
    // Enforce the time limits.
    const auto now = Clock::now();
    for (size_t k = running.size(); k-- > 0;) {
      if (now < running[k].deadline) continue;
      Running r = std::move(running[k]);
      running.erase(running.begin() + static_cast<long>(k));
      ::close(r.child.fd);
      proc::kill_and_reap(r.child.pid);
      std::ostringstream msg;
      msg << "compiling took longer than the build timeout (" << timeout_s_ << " s)";
      results[r.index] = error_result(ErrorKind::kCompileTimeout, msg.str(), ms_since(r.start));
    }
  }
  return results;
}

}  // namespace kiln
