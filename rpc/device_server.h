// A device server: the Device service (Info, Measure) of one machine, which
// registers with a tracker under a key and heartbeats; when the tracker
// answers that it does not know the device (dropped, or the tracker
// restarted), it registers again.
//
// Measurements are serialized (one at a time: timings must not overlap) and
// run in the measuring process (measure_host.h), forked when the server is
// constructed: construct it while the process runs one thread. Requests are
// checked first (measure_request.h): malformed -> INVALID_ARGUMENT, over the
// limits -> RESOURCE_EXHAUSTED, and the server keeps serving.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "rpc/kiln.pb.h"
#include "rpc/measure_request.h"
#include "rpc/net.h"

namespace kiln::rpc {

struct DeviceServerOptions {
  std::string key;                   // the device class, e.g. "zen4-avx512"
  std::string tracker;               // HOST:PORT of the tracker
  std::string listen = "0.0.0.0:0";  // where the Device service listens (port 0: any free one)
  std::string advertise;             // HOST:PORT given to the tracker; "": derived from listen
  std::string target;                // what to report (device_target.h): "": this machine's; else one that runs here
  Security security;                 // token, TLS cert/key for serving, CA for the tracker
  RequestLimits limits;
  double connect_timeout_s = 10;  // how long the first registration may try
  std::string temp_root;          // where artifacts are written ("": $TMPDIR, else /tmp)
  // Called on the serving thread before each measurement (tests use it to
  // kill the server in the middle of a batch).
  std::function<void(const MeasureRequest&)> before_measure;
};

class DeviceServer {
 public:
  // Forks the measuring process, starts serving, registers with the
  // tracker. user_error for a bad key, address or target, an address that
  // cannot be bound, a tracker that cannot be reached within
  // connect_timeout_s or that refuses the token.
  explicit DeviceServer(DeviceServerOptions options);
  ~DeviceServer();
  DeviceServer(const DeviceServer&) = delete;
  DeviceServer& operator=(const DeviceServer&) = delete;

  const DeviceInfo& info() const;
  int port() const;
  std::string device_id() const;
  // Blocks until shutdown(), or until the measuring process died (the
  // server then stops: it cannot measure any more). Returns false in that
  // case.
  bool wait();
  void shutdown();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// This machine's CPU, e.g. "AMD EPYC 9R14 96-Core Processor (2 threads)".
std::string describe_cpu();
// Its NVIDIA GPUs as the driver lists them ("NVIDIA H100 80GB HBM3"), or
// "none". Informational: kiln's runtime measures CPU kernels only so far.
std::string describe_gpu();

}  // namespace kiln::rpc
