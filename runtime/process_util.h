// Process helpers for the local builder and runner: forking an isolated child
// connected to its parent by a socket, framed messages over that socket with
// deadlines, and bounded reaping (a child is always killed and waited for,
// never left as a zombie, and the parent never blocks past a deadline).
//
// fork() copies only the calling thread. A lock (malloc's, LLVM's, the
// runtime pool's) held by another thread at that moment stays locked forever
// in the child, so forking is only safe from a single-threaded process:
// check_single_threaded() enforces it before every fork.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kiln::proc {

using Clock = std::chrono::steady_clock;

// Number of threads of this process (entries of /proc/self/task), -1 when
// that cannot be read.
int count_threads();

// InternalError naming `who` when this process runs more than one thread.
void check_single_threaded(const char* who);

// A forked child and the parent's end of the socket connecting the two.
struct Child {
  pid_t pid = -1;
  int fd = -1;
};

// Forks a child connected by a close-on-exec Unix stream socket pair. The
// child leads a new process group (so kill_and_reap also ends what it
// spawned, e.g. the linker), restores default signal dispositions (a test
// framework's crash handler must not run in it), unblocks signals, writes no
// core dumps, asks to be SIGKILLed when its parent dies, runs body(fd) and
// _exits: 0 after body returns, 70 when it throws. Returns pid -1 (and
// errno's text in *error) when the socket or the fork fails. Flushes stdio
// first so buffered output is not written twice.
Child fork_child(const std::function<void(int fd)>& body, std::string* error);

// Waits for `pid` until `deadline`; past it, SIGKILLs and reaps it. Returns
// the wait status.
int reap(pid_t pid, Clock::time_point deadline);
// SIGKILLs `pid` and its process group and reaps it; returns the wait status.
int kill_and_reap(pid_t pid);
// "exited with status 3", "was killed by signal 11 (Segmentation fault)".
std::string describe_status(int status);

// Frames: an 8-byte length, then the payload. send_frame returns false when
// the peer is gone (never raises SIGPIPE).
bool send_frame(int fd, const std::string& payload);
enum class RecvStatus { kOk, kEof, kTimeout };
// Reads one frame; kEof when the peer closed (or the frame is malformed),
// kTimeout past the deadline (none: wait as long as it takes).
RecvStatus recv_frame(int fd, std::optional<Clock::time_point> deadline, std::string* payload);
// The payload of the single frame that fills `bytes` exactly (false when
// `bytes` is not one whole frame, e.g. the sender died while writing).
bool parse_frame(const std::string& bytes, std::string* payload);

// Payload encoding: native-endian fixed-size integers and doubles,
// length-prefixed strings (both ends are the same binary).
class Writer {
 public:
  Writer& i64(int64_t v);
  Writer& f64(double v);
  Writer& str(const std::string& s);
  Writer& f64s(const std::vector<double>& v);
  const std::string& bytes() const { return buf_; }

 private:
  void raw(const void* p, size_t n) { buf_.append(static_cast<const char*>(p), n); }
  std::string buf_;
};

// Reads what a Writer wrote, in the same order; InternalError on truncation.
class Reader {
 public:
  explicit Reader(const std::string& bytes) : buf_(bytes) {}
  int64_t i64();
  double f64();
  std::string str();
  std::vector<double> f64s();

 private:
  void raw(void* p, size_t n);
  const std::string& buf_;
  size_t pos_ = 0;
};

}  // namespace kiln::proc
