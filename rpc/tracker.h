// The tracker server: the Tracker gRPC service over a TrackerState, plus a
// sweeper thread that drops silent devices and reclaims stale leases.
// Starts gRPC threads: fork nothing after constructing one.
#pragma once

#include <memory>
#include <string>

#include "rpc/net.h"
#include "rpc/tracker_state.h"

namespace kiln::rpc {

class TrackerServer {
 public:
  // Listens on `listen` (HOST:PORT, port 0 picks a free one); user_error when
  // the address is malformed or cannot be bound.
  TrackerServer(const std::string& listen, const Security& security, TrackerOptions options = {});
  ~TrackerServer();
  TrackerServer(const TrackerServer&) = delete;
  TrackerServer& operator=(const TrackerServer&) = delete;

  int port() const;
  // HOST:PORT with the chosen port.
  std::string address() const;
  // Blocks until shutdown() (from another thread or a signal handler thread).
  void wait();
  void shutdown();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::rpc
