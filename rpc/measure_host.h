// The device server's measuring process. A gRPC server runs threads, and a
// threaded process must not fork (tuner/process_util.h), so the server forks
// this process first, while it still runs one thread. It serves one request
// at a time: write the artifact into a private directory, measure it with an
// IsolatedRunner (whose worker process isolates crashes and timeouts, and
// whose reference check is the tuner's local one, tolerance included), reply.
#pragma once

#include <sys/types.h>

#include <string>

#include "rpc/kiln.pb.h"

namespace kiln::rpc {

class MeasureHost {
 public:
  // Forks the process (InternalError when this process already runs threads;
  // user_error when the private directory cannot be made).
  explicit MeasureHost(const std::string& temp_root);
  // Stops the process and removes its directory.
  ~MeasureHost();
  MeasureHost(const MeasureHost&) = delete;
  MeasureHost& operator=(const MeasureHost&) = delete;

  // Measures a validated request. False (and why in *error) when the
  // measuring process is gone or stopped answering; it is not restarted (a
  // threaded server cannot fork it again). One call at a time.
  bool measure(const MeasureRequest& request, MeasureReply* reply, std::string* error);

  pid_t pid() const { return pid_; }
  const std::string& directory() const { return dir_; }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string dir_;
};

}  // namespace kiln::rpc
