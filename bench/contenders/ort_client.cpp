#include "bench/contenders/ort_client.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "codegen/subprocess.h"
#include "runtime/process_util.h"

namespace kiln::baselines {

namespace fs = std::filesystem;

namespace {

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The last `max` bytes of a file (the helper's log), "" when unreadable.
std::string file_tail(const std::string& path, size_t max) {
  std::ifstream f(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return s.size() > max ? "..." + s.substr(s.size() - max) : s;
}

}  // namespace

std::string ort_helper_script() {
  if (const char* env = std::getenv("KILN_ORT_HELPER")) return is_file(env) ? env : "";
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (fs::path dir = self.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    if (is_file(dir / "ort" / "ort_helper.mjs")) return (dir / "ort" / "ort_helper.mjs").string();
    if (dir == dir.root_path()) break;
  }
  return "";
}

std::string ort_unavailable_reason() {
  if (find_executable("node").empty()) {
    return "the ONNX Runtime baseline needs Node.js (20 or later): node is not on PATH";
  }
  std::string script = ort_helper_script();
  if (script.empty()) {
    return "cannot find the ONNX Runtime helper ort/ort_helper.mjs in a folder above this executable "
           "(set KILN_ORT_HELPER to its path)";
  }
  fs::path dir = fs::path(script).parent_path();
  std::error_code ec;
  if (!fs::is_directory(dir / "node_modules" / "onnxruntime-node", ec)) {
    return "onnxruntime-node is not installed in " + dir.string() + ": run scripts/setup.sh, or npm ci --prefix " +
           dir.string() + " --onnxruntime-node-install=skip";
  }
  return "";
}

OrtHelper::OrtHelper(int threads) : threads_(threads) {
  user_check(threads >= 1) << "the ONNX Runtime baseline needs at least one thread, got " << threads;
  std::string reason = ort_unavailable_reason();
  user_check(reason.empty()) << reason;
  try {
    start();
  } catch (...) {
    shutdown();  // no destructor runs for a half-made object
    throw;
  }
}

void OrtHelper::start() {
  // Everything the child needs is prepared here: between fork and exec it
  // only moves file descriptors.
  const std::string node = find_executable("node"), script = ort_helper_script();
  std::string tmpl = (fs::temp_directory_path() / "kiln-ort-XXXXXX").string();
  user_check(mkdtemp(tmpl.data()) != nullptr) << "cannot create a temporary folder: " << std::strerror(errno);
  dir_ = tmpl;
  int to[2], from[2];
  user_check(pipe2(to, O_CLOEXEC) == 0) << "cannot create a pipe: " << std::strerror(errno);
  to_fd_ = to[1];
  if (pipe2(from, O_CLOEXEC) != 0) {
    close(to[0]);
    user_error() << "cannot create a pipe: " << std::strerror(errno);
  }
  from_fd_ = from[0];
  const bool verbose = std::getenv("KILN_ORT_VERBOSE") != nullptr;
  int log = verbose ? -1 : open((dir_ + "/helper.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  signal(SIGPIPE, SIG_IGN);  // a dead helper shows as a write error, not a signal
  const char* argv[] = {node.c_str(), script.c_str(), nullptr};
  pid_ = fork();
  if (pid_ == 0) {
    // No PR_SET_PDEATHSIG (it fires when the forking thread ends): the
    // helper ends by itself when this process dies and its stdin closes.
    dup2(to[0], STDIN_FILENO);  // dup2 clears close-on-exec on the copies
    dup2(from[1], STDOUT_FILENO);
    if (log >= 0) dup2(log, STDERR_FILENO);
    execv(argv[0], const_cast<char* const*>(argv));
    _exit(127);
  }
  const int fork_errno = errno;
  close(to[0]);
  close(from[1]);
  if (log >= 0) close(log);
  user_check(pid_ > 0) << "cannot start the ONNX Runtime helper: " << std::strerror(fork_errno);
}

OrtHelper::~OrtHelper() { shutdown(); }

void OrtHelper::shutdown() {
  if (to_fd_ >= 0) {
    if (pid_ > 0) {
      std::string quit = "{\"cmd\":\"quit\"}\n";
      (void)!write(to_fd_, quit.data(), quit.size());
    }
    close(to_fd_);  // the end of stdin ends the helper too
    to_fd_ = -1;
  }
  if (pid_ > 0) proc::reap(pid_, proc::Clock::now() + std::chrono::seconds(3));  // killed past the grace
  pid_ = -1;
  if (from_fd_ >= 0) close(from_fd_);
  from_fd_ = -1;
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
  dir_.clear();
}

void OrtHelper::helper_stopped() {
  std::string how = "stopped";
  if (pid_ > 0) {
    how = proc::describe_status(proc::reap(pid_, proc::Clock::now() + std::chrono::seconds(3)));
    pid_ = -1;
  }
  std::string log = file_tail(dir_ + "/helper.log", 2000);
  user_error() << "the ONNX Runtime helper " << how << " without answering"
               << (log.empty() ? std::string() : "; its log ends with:\n" + log);
}

nlohmann::json OrtHelper::request(const nlohmann::json& req, const std::string& context) {
  if (pid_ <= 0) helper_stopped();
  const std::string line = req.dump() + "\n";
  for (size_t done = 0; done < line.size();) {
    ssize_t n = write(to_fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) helper_stopped();
    done += static_cast<size_t>(n);
  }
  for (;;) {
    size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string reply = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      nlohmann::json r;
      try {
        r = nlohmann::json::parse(reply);
      } catch (const nlohmann::json::exception&) {
        user_error() << "the ONNX Runtime helper answered something that is not JSON: " << reply;
      }
      user_check(r.is_object()) << "the ONNX Runtime helper answered " << reply;
      if (r.contains("error")) {
        const nlohmann::json& e = r["error"];
        user_error() << context << ": " << (e.is_string() ? e.get<std::string>() : e.dump());
      }
      return r;
    }
    char chunk[4096];
    ssize_t n = read(from_fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) helper_stopped();
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

std::string OrtHelper::version() { return request({{"cmd", "version"}}).at("version").get<std::string>(); }

std::vector<std::string> OrtHelper::load(const std::string& model) {
  nlohmann::json r =
      request({{"cmd", "load"}, {"model", model}, {"threads", threads_}}, "ONNX Runtime cannot load " + model);
  return r.at("outputs").get<std::vector<std::string>>();
}

std::vector<rt::NDArray> OrtHelper::run(const std::vector<std::pair<std::string, rt::NDArray>>& inputs) {
  nlohmann::json req = {{"cmd", "run"}, {"inputs", nlohmann::json::array()}, {"outputs_dir", dir_ + "/outputs"}};
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto& [name, array] = inputs[i];
    user_check(array.defined()) << "ONNX Runtime input " << name << " has no data";
    user_check(array.dtype() == rt::DataType::f32())
        << "ONNX Runtime input " << name << " is " << array.dtype().str() << ": the helper takes float32 inputs only";
    std::string path = dir_ + "/input" + std::to_string(i) + ".bin";
    std::ofstream f(path, std::ios::binary);
    f.write(static_cast<const char*>(array.data()), static_cast<std::streamsize>(array.nbytes()));
    user_check(f.good()) << "cannot write " << path;
    req["inputs"].push_back({{"name", name}, {"file", path}, {"dtype", "float32"}, {"shape", array.shape()}});
  }
  nlohmann::json r = request(req);
  std::vector<rt::NDArray> outputs;
  for (const nlohmann::json& o : r.at("outputs")) {
    const auto name = o.at("name").get<std::string>(), dtype = o.at("dtype").get<std::string>(),
               path = o.at("file").get<std::string>();
    user_check(dtype == "float32") << "ONNX Runtime output " << name << " is " << dtype
                                   << ": the helper's client reads float32 outputs only";
    rt::NDArray out = rt::NDArray::empty(o.at("shape").get<std::vector<int64_t>>(), rt::DataType::f32());
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    user_check(f && static_cast<size_t>(f.tellg()) == out.nbytes())
        << "the ONNX Runtime output file " << path << " does not hold a float32 " << rt::shape_str(out.shape());
    f.seekg(0);
    f.read(static_cast<char*>(out.data()), static_cast<std::streamsize>(out.nbytes()));
    user_check(f.good()) << "cannot read the ONNX Runtime output " << path;
    outputs.push_back(out);
  }
  return outputs;
}

rt::TimeResult OrtHelper::time_round(const rt::TimeOptions& o) {
  user_check(!o.flush_cache) << "the ONNX Runtime baseline cannot flush caches between measurements";
  nlohmann::json r = request({{"cmd", "time"},
                              {"warmup", o.warmup},
                              {"repeat", o.repeat},
                              {"number", o.number},
                              {"min_repeat_ms", o.min_repeat_ms},
                              {"cooldown_ms", o.cooldown_ms}});
  rt::TimeResult result;
  result.samples_ms = r.at("samples_ms").get<std::vector<double>>();
  result.number = r.at("number").get<int>();
  rt::summarize(result);
  return result;
}

}  // namespace kiln::baselines
