// Finding and running external tools (see subprocess.h).
#include "codegen/subprocess.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "base/error.h"

extern char** environ;

namespace kiln {

namespace {
bool is_executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }
}  // namespace

std::string find_executable(const std::string& name) {
  if (name.find('/') != std::string::npos) return is_executable(name) ? name : "";
  const char* path_env = std::getenv("PATH");
  std::istringstream dirs(path_env ? path_env : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && is_executable(dir + "/" + name)) return dir + "/" + name;
  }
  return "";
}

int run_process(const std::vector<std::string>& argv, std::string* output, const std::string& tool) {
  internal_assert(!argv.empty()) << "run_process needs a program";
  int fds[2];
  user_check(::pipe(fds) == 0) << "cannot create a pipe for " << tool << ": " << std::strerror(errno);
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
    user_error() << "cannot run " << tool << " " << argv[0] << ": " << std::strerror(rc);
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

}  // namespace kiln
