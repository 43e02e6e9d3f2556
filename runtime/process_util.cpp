// Forking, framed socket messages and reaping for the local builder and runner.
#include "runtime/process_util.h"

#include <dirent.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>

#include "base/error.h"

namespace kiln::proc {
namespace {

constexpr uint64_t kMaxFrameBytes = uint64_t{1} << 30;

// Default dispositions for every signal that has a handler, and no signal
// blocked: the child starts as a fresh process would.
void reset_signals() {
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0) continue;  // reserved by libc
    const bool has_handler = (old.sa_flags & SA_SIGINFO) || (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN);
    if (!has_handler) continue;
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(sig, &dfl, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

// Milliseconds until `deadline` for poll(): -1 without one, 0 when past.
int poll_timeout_ms(std::optional<Clock::time_point> deadline) {
  if (!deadline) return -1;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now()).count() + 1;
  if (left <= 0) return 0;
  return left > 1000000 ? 1000000 : static_cast<int>(left);
}

RecvStatus read_exact(int fd, char* p, size_t n, std::optional<Clock::time_point> deadline) {
  while (n > 0) {
    pollfd pfd{fd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, poll_timeout_ms(deadline));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return RecvStatus::kEof;
    }
    if (ready == 0) {
      if (deadline && Clock::now() >= *deadline) return RecvStatus::kTimeout;
      continue;
    }
    const ssize_t got = ::read(fd, p, n);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) return RecvStatus::kEof;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return RecvStatus::kOk;
}

}  // namespace

int count_threads() {
  DIR* dir = ::opendir("/proc/self/task");
  if (!dir) return -1;
  int n = 0;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(dir);
  return n;
}

void check_single_threaded(const char* who) {
  const int n = count_threads();
  internal_assert(n <= 1) << who << " forks child processes, which is only safe while this process runs a single "
                          << "thread, but it runs " << n << ": create no threads (and run no kernel in-process, which "
                          << "starts the runtime thread pool) in a tuning process";
}

Child fork_child(const std::function<void(int fd)>& body, std::string* error) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    *error = std::string("cannot create a socket pair: ") + std::strerror(errno);
    return {};
  }
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    *error = std::string("cannot fork: ") + std::strerror(errno);
    ::close(sv[0]);
    ::close(sv[1]);
    return {};
  }
  if (pid == 0) {
    ::close(sv[0]);
    ::setpgid(0, 0);
    reset_signals();
    const rlimit no_core{0, 0};  // a crashing candidate is an outcome, not something to debug
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);  // the parent died before prctl
    int code = 0;
    try {
      body(sv[1]);
    } catch (...) {
      code = 70;
    }
    std::fflush(nullptr);
    ::_exit(code);
  }
  ::setpgid(pid, pid);  // also here: whichever runs first, the group exists before anyone signals it
  ::close(sv[1]);
  return {pid, sv[0]};
}

int reap(pid_t pid, Clock::time_point deadline) {
  auto nap = std::chrono::microseconds(50);
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return status;  // not our child (already reaped)
    if (Clock::now() >= deadline) return kill_and_reap(pid);
    std::this_thread::sleep_for(nap);
    if (nap < std::chrono::milliseconds(5)) nap *= 2;
  }
}

int kill_and_reap(pid_t pid) {
  ::kill(-pid, SIGKILL);  // the child's group: a linker it started dies with it
  ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = ::strsignal(sig);
    return "was killed by signal " + std::to_string(sig) + " (" + (name ? name : "?") + ")";
  }
  return "ended with wait status " + std::to_string(status);
}

bool send_frame(int fd, const std::string& payload) {
  std::string frame(8, '\0');
  const uint64_t n = payload.size();
  std::memcpy(&frame[0], &n, 8);
  frame += payload;
  const char* p = frame.data();
  size_t left = frame.size();
  while (left > 0) {
    const ssize_t sent = ::send(fd, p, left, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    p += sent;
    left -= static_cast<size_t>(sent);
  }
  return true;
}

RecvStatus recv_frame(int fd, std::optional<Clock::time_point> deadline, std::string* payload) {
  uint64_t n = 0;
  RecvStatus s = read_exact(fd, reinterpret_cast<char*>(&n), 8, deadline);
  if (s != RecvStatus::kOk) return s;
  if (n > kMaxFrameBytes) return RecvStatus::kEof;
  payload->assign(n, '\0');
  return n == 0 ? RecvStatus::kOk : read_exact(fd, &(*payload)[0], n, deadline);
}

bool parse_frame(const std::string& bytes, std::string* payload) {
  uint64_t n = 0;
  if (bytes.size() < 8) return false;
  std::memcpy(&n, bytes.data(), 8);
  if (n != bytes.size() - 8) return false;
  payload->assign(bytes, 8, std::string::npos);
  return true;
}

Writer& Writer::i64(int64_t v) {
  raw(&v, sizeof v);
  return *this;
}

Writer& Writer::f64(double v) {
  raw(&v, sizeof v);
  return *this;
}

Writer& Writer::str(const std::string& s) {
  i64(static_cast<int64_t>(s.size()));
  raw(s.data(), s.size());
  return *this;
}

Writer& Writer::f64s(const std::vector<double>& v) {
  i64(static_cast<int64_t>(v.size()));
  raw(v.data(), v.size() * sizeof(double));
  return *this;
}

void Reader::raw(void* p, size_t n) {
  internal_assert(n <= buf_.size() - pos_) << "truncated message from a child process";
  std::memcpy(p, buf_.data() + pos_, n);
  pos_ += n;
}

int64_t Reader::i64() {
  int64_t v = 0;
  raw(&v, sizeof v);
  return v;
}

double Reader::f64() {
  double v = 0;
  raw(&v, sizeof v);
  return v;
}

std::string Reader::str() {
  const int64_t n = i64();
  internal_assert(n >= 0 && static_cast<size_t>(n) <= buf_.size() - pos_) << "truncated message from a child process";
  std::string s(buf_, pos_, static_cast<size_t>(n));
  pos_ += static_cast<size_t>(n);
  return s;
}

std::vector<double> Reader::f64s() {
  const int64_t n = i64();
  internal_assert(n >= 0 && static_cast<size_t>(n) <= (buf_.size() - pos_) / sizeof(double))
      << "truncated message from a child process";
  std::vector<double> v(static_cast<size_t>(n));
  raw(v.data(), v.size() * sizeof(double));
  return v;
}

}  // namespace kiln::proc
