// link_shared_object: runs LLVM's ELF linker (ld.lld) as a subprocess.
#include <dlfcn.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "codegen/build.h"
#include "compute/error.h"

extern char** environ;

namespace kiln {
namespace {

bool is_executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

std::string find_linker() {
  const char* path_env = std::getenv("PATH");
  const std::string path = path_env ? path_env : "";
  for (const char* name : {"ld.lld-14", "ld.lld"}) {
    std::istringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      if (dir.empty()) continue;
      const std::string candidate = dir + "/" + name;
      if (is_executable(candidate)) return candidate;
    }
  }
  const std::string fallback = "/usr/lib/llvm-14/bin/ld.lld";
  user_check(is_executable(fallback)) << "cannot link a shared object: no ld.lld-14 or ld.lld on PATH and no "
                                      << fallback << " (install Debian's lld-14 package)";
  return fallback;
}

// The libm this process uses, so host modules can record it as DT_NEEDED.
std::string host_libm_path() {
  Dl_info info{};
  auto* fn = reinterpret_cast<void*>(static_cast<float (*)(float)>(&::tanhf));
  if (::dladdr(fn, &info) == 0 || info.dli_fname == nullptr) return "";
  const std::string path = info.dli_fname;
  return path.find("libm") != std::string::npos ? path : "";
}

// Runs argv, returns (exit status, combined stdout+stderr).
int run_process(const std::vector<std::string>& argv, std::string* output) {
  int fds[2];
  user_check(::pipe(fds) == 0) << "cannot create a pipe for the linker: " << std::strerror(errno);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    user_error() << "cannot run the linker " << argv[0] << ": " << std::strerror(rc);
  }
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n > 0) {
      output->append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

void link_shared_object(const std::vector<std::string>& objects, const std::string& out_so, const Target& target) {
  user_check(!objects.empty()) << "link_shared_object needs at least one object file";
  std::vector<std::string> argv = {find_linker(), "-shared", "-o", out_so};
  argv.insert(argv.end(), objects.begin(), objects.end());
  if (target.is_host()) {
    const std::string libm = host_libm_path();
    if (!libm.empty()) {
      argv.push_back("--as-needed");
      argv.push_back(libm);
    }
  }
  std::string output;
  const int status = run_process(argv, &output);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::ostringstream cmd;
    for (const auto& a : argv) cmd << a << ' ';
    user_error() << "linking " << out_so << " failed (" << cmd.str() << "):\n" << output;
  }
}

}  // namespace kiln
