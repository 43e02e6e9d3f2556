#include "bench/contenders/halide_client.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "bench/contenders/blocked_layout.h"
#include "base/error.h"

namespace kiln::baselines {

namespace fs = std::filesystem;

namespace {

bool is_executable(const std::string& p) { return !p.empty() && access(p.c_str(), X_OK) == 0; }

void write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    user_check(n > 0) << "the Halide helper process stopped (" << std::strerror(errno) << ")";
    done += static_cast<size_t>(n);
  }
}

}  // namespace

std::string halide_helper_path() {
  if (const char* env = std::getenv("KILN_HALIDE_BASELINE")) return is_executable(env) ? env : "";
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    std::string next = (self.parent_path() / "kiln-halide-baseline").string();
    if (is_executable(next)) return next;
  }
#ifdef KILN_HALIDE_HELPER
  if (is_executable(KILN_HALIDE_HELPER)) return KILN_HALIDE_HELPER;
#endif
  return "";
}

HalideHelper::HalideHelper(int threads) : threads_(threads) {
  std::string path = halide_helper_path();
  user_check(!path.empty()) << "the Halide baseline needs the kiln-halide-baseline helper (built with Halide 14; "
                               "set KILN_HALIDE_BASELINE to its path)";
  std::string tmpl = (fs::temp_directory_path() / "kiln-halide-XXXXXX").string();
  user_check(mkdtemp(tmpl.data()) != nullptr) << "cannot create a temporary folder: " << std::strerror(errno);
  dir_ = tmpl;
  int to[2], from[2];
  user_check(pipe2(to, O_CLOEXEC) == 0 && pipe2(from, O_CLOEXEC) == 0) << "cannot create pipes";
  signal(SIGPIPE, SIG_IGN);  // a dead helper shows as a write error, not a signal
  std::string nthreads = std::to_string(threads);
  // The autoscheduler reports its search on stderr: kept only on request
  // (errors come back in the replies).
  const bool verbose = std::getenv("KILN_HALIDE_VERBOSE") != nullptr;
  pid_ = fork();
  user_check(pid_ >= 0) << "cannot start the Halide helper: " << std::strerror(errno);
  if (pid_ == 0) {
    dup2(to[0], STDIN_FILENO);
    dup2(from[1], STDOUT_FILENO);
    if (!verbose) {
      int devnull = open("/dev/null", O_WRONLY);
      if (devnull >= 0) dup2(devnull, STDERR_FILENO);
    }
    setenv("HL_NUM_THREADS", nthreads.c_str(), 1);
    execl(path.c_str(), path.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(to[0]);
  close(from[1]);
  to_fd_ = to[1];
  from_fd_ = from[0];
}

HalideHelper::~HalideHelper() {
  if (to_fd_ >= 0) {
    std::string quit = "{\"cmd\":\"quit\"}\n";
    (void)!write(to_fd_, quit.data(), quit.size());
    close(to_fd_);
  }
  if (from_fd_ >= 0) close(from_fd_);
  if (pid_ > 0) {
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

nlohmann::json HalideHelper::request(const nlohmann::json& req) {
  write_all(to_fd_, req.dump() + "\n");
  for (;;) {
    size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      try {
        return nlohmann::json::parse(line);
      } catch (const nlohmann::json::exception&) {
        user_error() << "the Halide helper answered something that is not JSON: " << line;
      }
    }
    char chunk[4096];
    ssize_t n = read(from_fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    user_check(n > 0) << "the Halide helper process stopped without answering";
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

std::string HalideHelper::version() {
  nlohmann::json r = request({{"cmd", "version"}});
  user_check(r.value("ok", false)) << "Halide helper: " << r.value("error", std::string("no answer"));
  return r.at("version").get<std::string>();
}

std::string HalideHelper::setup(const ContenderOp& op, const std::vector<rt::NDArray>& inputs, const rt::NDArray& out) {
  user_check(op.f32) << "the Halide contender compares f32 ops only";
  // conv2d_nchwc and depthwise_conv2d_nchwc go to the helper as the NCHW
  // conv2d and depthwise_conv2d they are (the helper picks its own layouts
  // from there, outside timing); their output is blocked again here.
  const bool depthwise = op.op == "depthwise_conv2d_nchwc", pool = is_blocked_pool(op.op);
  const bool blocked = op.op == "conv2d_nchwc" || depthwise || pool;
  std::vector<rt::NDArray> in = inputs;
  rt::NDArray result = out;
  BlockedConvShape shape{};
  if (blocked) {
    shape = op.blocked;
    in[0] = unblock_data(shape, inputs[0]);
    if (!pool) in[1] = depthwise ? unblock_depthwise_weight(shape, inputs[1]) : unblock_weight(shape, inputs[1]);
    result = rt::NDArray::empty({shape.N, shape.K, shape.OH, shape.OW}, out.dtype());
  }
  nlohmann::json req = {
      {"cmd", "setup"},
      {"op", depthwise                         ? "depthwise_conv2d"
             : op.op == "max_pool2d_nchwc" ? "max_pool2d"
             : pool                        ? "avg_pool2d"
             : blocked                     ? "conv2d"
                                           : op.op},
      {"params", op.ints},
      {"parallelism", threads_}};
  req["inputs"] = nlohmann::json::array();
  for (size_t i = 0; i < in.size(); ++i) {
    std::string path = dir_ + "/input" + std::to_string(i) + ".f32";
    std::ofstream f(path, std::ios::binary);
    f.write(static_cast<const char*>(in[i].data()), static_cast<std::streamsize>(in[i].nbytes()));
    user_check(f.good()) << "cannot write " << path;
    req["inputs"].push_back({{"path", path}, {"shape", in[i].shape()}});
  }
  std::string out_path = dir_ + "/output.f32";
  req["output"] = {{"path", out_path}, {"shape", result.shape()}};
  nlohmann::json r = request(req);
  user_check(r.value("ok", false)) << "Halide cannot run " << op.canonical << ": "
                                   << r.value("error", std::string("no answer"));
  std::ifstream f(out_path, std::ios::binary);
  f.read(static_cast<char*>(result.data()), static_cast<std::streamsize>(result.nbytes()));
  user_check(f.good()) << "cannot read the Halide output " << out_path;
  if (blocked) block_output(shape, result, out);
  return r.at("impl").get<std::string>();
}

double HalideHelper::time_round(const rt::TimeOptions& o) {
  nlohmann::json r =
      request({{"cmd", "time"}, {"warmup", o.warmup}, {"repeat", o.repeat}, {"min_repeat_ms", o.min_repeat_ms}});
  user_check(r.value("ok", false)) << "Halide helper: " << r.value("error", std::string("no answer"));
  return r.at("median_ms").get<double>();
}

}  // namespace kiln::baselines
