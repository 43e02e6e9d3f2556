// The client side of the device pool: leases devices of a key from the
// tracker, spreads a batch of measurements over them and retries a lost
// measurement on another device. It runs gRPC (threads), so a tuning
// process uses it through PoolRunner (pool_runner.h), which runs it in a
// forked process.
//
// A batch: ask the tracker for every device of the key (or max_devices);
// probe each granted device (Info); one thread per device takes candidates
// from a shared queue; a candidate whose device fails in transit (the
// server died, UNAVAILABLE, DEADLINE_EXCEEDED) goes back to the queue for
// another device, and that device is not used again in this batch (its
// lease is kept until the batch ends so the tracker does not hand it back).
// After max_attempts losses a candidate is a device error. When every
// device is lost and work remains, new leases are requested; when none comes
// within device_wait_s, what remains is a device error. A device that
// refuses a request (INVALID_ARGUMENT, RESOURCE_EXHAUSTED...) makes that
// candidate a device error with its message, without retry. Leases are
// renewed while the batch runs and released after it, so other jobs get the
// devices between batches. Every RPC has a deadline.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "rpc/kiln.pb.h"
#include "rpc/net.h"

namespace kiln::rpc {

struct PoolOptions {
  std::string tracker;  // HOST:PORT
  std::string key;
  Security security;          // token and tls_ca (cert/key unused)
  int priority = 0;           // higher first
  std::string job;            // name shown in `kiln pool status`
  int max_devices = 0;        // 0: every device of the key it can get
  double key_wait_s = 10;     // how long to wait for a device of the key to exist
  double device_wait_s = 60;  // how long a batch waits for a lease before failing its work
  int max_attempts = 3;       // devices a measurement may be lost on
  double rpc_margin_s = 90;   // measure deadline = run timeout + this (setup, transfer, queueing)
};

class PoolClient {
 public:
  // user_error for bad addresses or a missing key.
  explicit PoolClient(PoolOptions options);
  ~PoolClient();
  PoolClient(const PoolClient&) = delete;
  PoolClient& operator=(const PoolClient&) = delete;

  // A device of the key as the tracker knows it (its target is what to
  // build for). Waits up to key_wait_s for one to register; user_error when
  // none does, or the tracker is unreachable or refuses the token.
  DeviceInfo device_info();
  // Measures every artifact of the batch; one reply per artifact, in order.
  // `on_reply`, when given, is called with each artifact's index and reply as
  // soon as that reply is final (one call at a time, from any thread).
  // user_error when the tracker refuses the token.
  PoolBatchReply run(const PoolBatch& batch,
                     const std::function<void(size_t index, const MeasureReply& reply)>& on_reply = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::rpc
