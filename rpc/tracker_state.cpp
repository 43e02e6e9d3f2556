// The tracker's devices, queue and leases (see tracker_state.h).
#include "rpc/tracker_state.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "base/error.h"

namespace kiln::rpc {

TrackerState::TrackerState(TrackerOptions options) : options_(options) {
  user_check(options.heartbeat_interval_s > 0) << "the heartbeat interval must be positive";
  user_check(options.heartbeat_timeout_s > options.heartbeat_interval_s)
      << "the heartbeat timeout (" << options.heartbeat_timeout_s << " s) must be longer than the heartbeat interval ("
      << options.heartbeat_interval_s << " s)";
  user_check(options.lease_timeout_s > options.max_wait_s)
      << "the lease timeout (" << options.lease_timeout_s << " s) must be longer than the longest lease wait ("
      << options.max_wait_s << " s)";
  user_check(options.max_wait_s > 0) << "the longest lease wait must be positive";
  // Ids of a restarted tracker never collide with those of the last run.
  std::random_device rd;
  const uint64_t r = (uint64_t{rd()} << 32) ^ rd() ^
                     static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  static const char* digits = "0123456789abcdefghijklmnopqrstuvwxyz";
  for (uint64_t v = r; epoch_.size() < 6; v /= 36) epoch_ += digits[v % 36];
}

std::string TrackerState::register_device(const DeviceInfo& info, double now) {
  for (auto it = devices_.begin(); it != devices_.end();) {
    if (it->second.info.address() == info.address()) {
      if (!it->second.lease_id.empty()) leases_.erase(it->second.lease_id);
      it = devices_.erase(it);
    } else {
      ++it;
    }
  }
  const std::string id = "d" + std::to_string(next_id_++) + "-" + epoch_;
  Device d;
  d.info = info;
  d.last_heartbeat = now;
  devices_[id] = d;
  schedule(now);
  return id;
}

bool TrackerState::heartbeat(const std::string& device_id, double now) {
  auto it = devices_.find(device_id);
  if (it == devices_.end()) return false;
  it->second.last_heartbeat = now;
  return true;
}

bool TrackerState::has_key(const std::string& key) const {
  for (const auto& [id, d] : devices_)
    if (d.info.key() == key) return true;
  return false;
}

std::string TrackerState::enqueue(const LeaseRequest& request, double now) {
  auto it = requests_.find(request.request_id());
  if (it != requests_.end()) {
    it->second.last_seen = now;
    return it->first;
  }
  const uint64_t seq = next_id_++;
  const std::string id = "r" + std::to_string(seq) + "-" + epoch_;
  Request r;
  r.request = request;
  r.request.set_request_id(id);
  r.seq = seq;
  r.created = r.last_seen = now;
  requests_[id] = r;
  schedule(now);
  return id;
}

bool TrackerState::take_grant(const std::string& request_id, LeaseReply* reply) {
  auto it = requests_.find(request_id);
  internal_assert(it != requests_.end()) << "take_grant of an unknown request";
  reply->set_request_id(request_id);
  reply->set_lease_timeout_s(options_.lease_timeout_s);
  if (it->second.granted.empty()) {
    int position = 0;
    for (const Request* r : ordered_requests())
      if (r->request.key() == it->second.request.key()) {
        ++position;
        if (r == &it->second) break;
      }
    reply->set_queue_position(position);
    return false;
  }
  for (const std::string& lease_id : it->second.granted) {
    const LeaseEntry& l = leases_.at(lease_id);
    Lease* out = reply->add_leases();
    out->set_lease_id(lease_id);
    out->set_device_id(l.device_id);
    *out->mutable_device() = devices_.at(l.device_id).info;
  }
  requests_.erase(it);
  return true;
}

std::vector<std::string> TrackerState::renew(const std::vector<std::string>& lease_ids, const std::string& request_id,
                                             double now) {
  std::vector<std::string> lost;
  for (const std::string& id : lease_ids) {
    auto it = leases_.find(id);
    if (it == leases_.end())
      lost.push_back(id);
    else
      it->second.renewed = now;
  }
  auto r = requests_.find(request_id);
  if (r != requests_.end()) r->second.last_seen = now;
  return lost;
}

void TrackerState::release(const std::vector<std::string>& lease_ids, const std::string& request_id, double now) {
  for (const std::string& id : lease_ids) drop_lease(id);
  if (!request_id.empty()) drop_request(request_id);
  schedule(now);
}

void TrackerState::drop_lease(const std::string& lease_id) {
  auto it = leases_.find(lease_id);
  if (it == leases_.end()) return;
  auto d = devices_.find(it->second.device_id);
  if (d != devices_.end() && d->second.lease_id == lease_id) d->second.lease_id.clear();
  leases_.erase(it);
}

void TrackerState::drop_request(const std::string& request_id) {
  auto it = requests_.find(request_id);
  if (it == requests_.end()) return;
  const std::vector<std::string> granted = it->second.granted;
  requests_.erase(it);
  for (const std::string& id : granted) drop_lease(id);
}

bool TrackerState::expire(double now) {
  bool changed = false;
  for (auto it = devices_.begin(); it != devices_.end();) {
    if (now - it->second.last_heartbeat > options_.heartbeat_timeout_s) {
      const std::string lease = it->second.lease_id;
      it = devices_.erase(it);
      if (!lease.empty()) {
        leases_.erase(lease);
        for (auto& [rid, r] : requests_)
          r.granted.erase(std::remove(r.granted.begin(), r.granted.end(), lease), r.granted.end());
      }
      changed = true;
    } else {
      ++it;
    }
  }
  std::vector<std::string> stale_leases, stale_requests;
  for (const auto& [id, l] : leases_)
    if (now - l.renewed > options_.lease_timeout_s) stale_leases.push_back(id);
  for (const auto& [id, r] : requests_)
    if (now - r.last_seen > options_.lease_timeout_s) stale_requests.push_back(id);
  for (const auto& id : stale_requests) drop_request(id);
  for (const auto& id : stale_leases) drop_lease(id);
  changed = changed || !stale_leases.empty() || !stale_requests.empty();
  return schedule(now) || changed;
}

std::vector<const TrackerState::Request*> TrackerState::ordered_requests() const {
  std::vector<const Request*> order;
  for (const auto& [id, r] : requests_) order.push_back(&r);
  std::sort(order.begin(), order.end(), [](const Request* a, const Request* b) {
    if (a->request.priority() != b->request.priority()) return a->request.priority() > b->request.priority();
    return a->seq < b->seq;
  });
  return order;
}

bool TrackerState::schedule(double now) {
  bool changed = false;
  for (const Request* cr : ordered_requests()) {
    Request& r = requests_.at(cr->request.request_id());
    if (!r.granted.empty()) continue;  // granted, waiting to be picked up
    const int want = r.request.max_devices() > 0 ? r.request.max_devices() : 1 << 30;
    for (auto& [device_id, d] : devices_) {
      if (static_cast<int>(r.granted.size()) >= want) break;
      if (d.info.key() != r.request.key() || !d.lease_id.empty()) continue;
      const std::string lease_id = "l" + std::to_string(next_id_++) + "-" + epoch_;
      LeaseEntry l;
      l.device_id = device_id;
      l.job = r.request.job();
      l.granted = l.renewed = now;
      leases_[lease_id] = l;
      d.lease_id = lease_id;
      r.granted.push_back(lease_id);
      changed = true;
    }
  }
  return changed;
}

StatusReply TrackerState::status(double now) const {
  StatusReply s;
  s.set_heartbeat_timeout_s(options_.heartbeat_timeout_s);
  s.set_lease_timeout_s(options_.lease_timeout_s);
  for (const auto& [id, d] : devices_) {
    DeviceStatus* out = s.add_devices();
    out->set_device_id(id);
    *out->mutable_device() = d.info;
    out->set_since_heartbeat_s(now - d.last_heartbeat);
    if (!d.lease_id.empty()) {
      const LeaseEntry& l = leases_.at(d.lease_id);
      out->set_lease_id(d.lease_id);
      out->set_job(l.job);
      out->set_leased_s(now - l.granted);
    }
  }
  for (const Request* r : ordered_requests()) {
    QueuedRequest* q = s.add_queue();
    q->set_request_id(r->request.request_id());
    q->set_key(r->request.key());
    q->set_priority(r->request.priority());
    q->set_job(r->request.job());
    q->set_max_devices(r->request.max_devices());
    q->set_waiting_s(now - r->created);
  }
  return s;
}

}  // namespace kiln::rpc
