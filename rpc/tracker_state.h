// The tracker's bookkeeping, without any networking: registered devices,
// the queue of lease requests, the leases. Time is passed in (seconds on any
// monotonic clock) so tests can drive it. Not thread-safe: the tracker
// service holds one lock around it.
//
// Scheduling: requests are served by priority (higher first), then in the
// order they were first made. A request is granted every free device of its
// key it asked for (max_devices, 0 = all) as soon as at least one is free;
// a lower request for the same key only gets devices the higher ones left.
// The grant waits in the request until its job picks it up.
//
// Expiry (expire()): a device silent for heartbeat_timeout is dropped and
// its lease reclaimed; a lease not renewed for lease_timeout is reclaimed; a
// request (or an unclaimed grant) whose job stopped polling for
// lease_timeout is withdrawn.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "rpc/kiln.pb.h"

namespace kiln::rpc {

struct TrackerOptions {
  double heartbeat_interval_s = 1;  // asked of device servers
  double heartbeat_timeout_s = 5;   // silence after which a device is dropped
  double lease_timeout_s = 15;      // leases and queued requests must be renewed within this
  double max_wait_s = 5;            // longest a RequestLease call waits for a grant
};

class TrackerState {
 public:
  explicit TrackerState(TrackerOptions options);  // user_error on nonsensical times

  const TrackerOptions& options() const { return options_; }

  // Returns the device id. An address already registered is replaced (a
  // restarted server): its old entry and lease go.
  std::string register_device(const DeviceInfo& info, double now);
  // False when the device is unknown.
  bool heartbeat(const std::string& device_id, double now);
  bool has_key(const std::string& key) const;

  // Queues a new request (request_id "" or unknown, e.g. after a tracker
  // restart) or refreshes an existing one; returns its id.
  std::string enqueue(const LeaseRequest& request, double now);
  // When the request has been granted: fills reply->leases, forgets the
  // request and returns true. Else fills the queue position.
  bool take_grant(const std::string& request_id, LeaseReply* reply);
  // Returns the ids among lease_ids that no longer exist.
  std::vector<std::string> renew(const std::vector<std::string>& lease_ids, const std::string& request_id, double now);
  // Gives leases back, withdraws a request, and grants what is now free.
  void release(const std::vector<std::string>& lease_ids, const std::string& request_id, double now);

  // Drops the silent devices and stale leases and requests, then grants
  // what can be granted. Returns true when anything changed.
  bool expire(double now);
  // Grants free devices to queued requests (also called by expire()).
  bool schedule(double now);

  StatusReply status(double now) const;
  size_t num_devices() const { return devices_.size(); }
  size_t num_leases() const { return leases_.size(); }
  size_t num_requests() const { return requests_.size(); }

 private:
  struct Device {
    DeviceInfo info;
    double last_heartbeat = 0;
    std::string lease_id;  // "" when free
  };
  struct LeaseEntry {
    std::string device_id;
    std::string job;
    double granted = 0, renewed = 0;
  };
  struct Request {
    LeaseRequest request;
    uint64_t seq = 0;
    double created = 0, last_seen = 0;
    std::vector<std::string> granted;  // lease ids waiting to be picked up
  };

  void drop_lease(const std::string& lease_id);
  void drop_request(const std::string& request_id);
  // Requests in service order.
  std::vector<const Request*> ordered_requests() const;

  TrackerOptions options_;
  std::map<std::string, Device> devices_;
  std::map<std::string, LeaseEntry> leases_;
  std::map<std::string, Request> requests_;
  uint64_t next_id_ = 1;
  std::string epoch_;  // distinguishes ids of tracker runs
};

}  // namespace kiln::rpc
