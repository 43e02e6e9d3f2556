// Leasing, spreading and retrying for a tuning job (see pool_client.h).
#include "rpc/client/pool_client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "rpc/kiln.grpc.pb.h"

namespace kiln::rpc {

namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point after(double s) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}
double seconds_until(Clock::time_point t) { return std::chrono::duration<double>(t - Clock::now()).count(); }

constexpr double kPollS = 2;      // one RequestLease call waits at most this long
constexpr double kRpcSlackS = 5;  // deadline beyond the time a call is meant to take
constexpr double kProbeS = 3;     // Info probe of a granted device
constexpr auto kRetryNap = std::chrono::milliseconds(200);

MeasureReply device_error(const std::string& message, const std::string& device) {
  MeasureReply r;
  r.set_error(DEVICE_ERROR);
  r.set_message(message);
  r.set_device(device);
  return r;
}

}  // namespace

struct PoolClient::Impl {
  PoolOptions o;
  std::unique_ptr<Tracker::Stub> tracker;
  std::mutex channels_mu;
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels;  // by device address
  double lease_timeout_s = 15;

  std::shared_ptr<grpc::Channel> channel(const std::string& address) {
    std::lock_guard<std::mutex> lock(channels_mu);
    auto& c = channels[address];
    if (!c) c = make_channel(address, o.security);
    return c;
  }

  [[noreturn]] void refused(const grpc::Status& s) {
    user_error() << "the tracker at " << o.tracker << " refused this job: " << describe(s);
  }

  // Leases granted before `deadline`, or none (and why in *why).
  std::vector<Lease> acquire(Clock::time_point deadline, std::string* why) {
    std::string request_id;
    for (;;) {
      const double left = seconds_until(deadline);
      if (left <= 0) {
        if (!request_id.empty()) release({}, request_id);
        return {};
      }
      LeaseRequest req;
      req.set_key(o.key);
      req.set_priority(o.priority);
      req.set_job(o.job);
      req.set_max_devices(o.max_devices);
      req.set_request_id(request_id);
      req.set_wait_s(std::min(left, kPollS));
      grpc::ClientContext ctx;
      prepare_context(ctx, o.security.token, req.wait_s() + kRpcSlackS);
      LeaseReply reply;
      const grpc::Status s = tracker->RequestLease(&ctx, req, &reply);
      if (s.ok()) {
        request_id = reply.request_id();
        if (reply.lease_timeout_s() > 0) lease_timeout_s = reply.lease_timeout_s();
        if (reply.leases_size() > 0) return {reply.leases().begin(), reply.leases().end()};
        *why = "waiting in the queue at position " + std::to_string(reply.queue_position());
        continue;
      }
      if (s.error_code() == grpc::StatusCode::UNAUTHENTICATED) refused(s);
      request_id.clear();
      *why = s.error_code() == grpc::StatusCode::NOT_FOUND ? "no device with key '" + o.key + "' is registered"
                                                           : "the tracker does not answer: " + describe(s);
      std::this_thread::sleep_for(kRetryNap);
    }
  }

  void release(const std::vector<std::string>& lease_ids, const std::string& request_id) {
    grpc::ClientContext ctx;
    prepare_context(ctx, o.security.token, kRpcSlackS);
    ReleaseRequest req;
    for (const auto& id : lease_ids) req.add_lease_ids(id);
    req.set_request_id(request_id);
    ReleaseReply reply;
    tracker->Release(&ctx, req, &reply);  // a lost release is reclaimed by the lease timeout
  }
};

PoolClient::PoolClient(PoolOptions options) : impl_(std::make_unique<Impl>()) {
  check_address(options.tracker, "--pool", /*allow_port0=*/false);
  user_check(!options.key.empty()) << "a tuning job on a pool needs the devices' key (--key)";
  user_check(options.max_attempts >= 1) << "max_attempts must be >= 1";
  user_check(options.key_wait_s >= 0 && options.device_wait_s >= 0) << "pool wait times must be >= 0";
  impl_->o = std::move(options);
  impl_->tracker = Tracker::NewStub(make_channel(impl_->o.tracker, impl_->o.security));
}

PoolClient::~PoolClient() = default;

DeviceInfo PoolClient::device_info() {
  Impl& m = *impl_;
  const auto deadline = after(m.o.key_wait_s);
  std::string why;
  std::set<std::string> keys;
  for (;;) {
    grpc::ClientContext ctx;
    prepare_context(ctx, m.o.security.token, kRpcSlackS);
    StatusReply reply;
    const grpc::Status s = m.tracker->Status(&ctx, StatusRequest(), &reply);
    if (s.ok()) {
      keys.clear();
      for (const DeviceStatus& d : reply.devices()) {
        if (d.device().key() == m.o.key) return d.device();
        keys.insert(d.device().key());
      }
      why.clear();
    } else if (s.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
      m.refused(s);
    } else {
      why = describe(s);
    }
    if (seconds_until(deadline) <= 0) break;
    std::this_thread::sleep_for(kRetryNap);
  }
  user_check(why.empty()) << "cannot reach the tracker at " << m.o.tracker << ": " << why;
  std::ostringstream known;
  for (const auto& k : keys) known << (known.tellp() ? ", " : "") << k;
  user_error() << "no device with key '" << m.o.key << "' registered at the tracker " << m.o.tracker << " within "
               << m.o.key_wait_s << " s ("
               << (keys.empty() ? std::string("it has no devices") : "keys there: " + known.str()) << ")";
}

PoolBatchReply PoolClient::run(const PoolBatch& batch,
                               const std::function<void(size_t index, const MeasureReply& reply)>& on_reply) {
  Impl& m = *impl_;
  internal_assert(batch.artifacts_size() == batch.entries_size()) << "a pool batch needs one entry per artifact";
  const size_t n = static_cast<size_t>(batch.artifacts_size());
  std::vector<MeasureReply> results(n);
  std::vector<int> attempts(n, 0);
  std::vector<std::string> last_error(n);
  std::deque<size_t> queue;
  for (size_t i = 0; i < n; ++i) queue.push_back(i);
  int in_flight = 0;
  std::mutex mu;
  std::condition_variable cv;
  const double measure_s = batch.spec().options().run_timeout_s() + m.o.rpc_margin_s;
  std::vector<std::string> held;  // every lease of this batch, released at its end

  while (!queue.empty()) {
    std::string why;
    const std::vector<Lease> leases = m.acquire(after(m.o.device_wait_s), &why);
    if (leases.empty()) {
      for (size_t i : queue) {
        std::string msg = "no device of key '" + m.o.key + "' became available within " +
                          std::to_string(static_cast<int>(m.o.device_wait_s)) + " s (" + why + ")";
        if (!last_error[i].empty()) msg += "; the measurement was lost before: " + last_error[i];
        results[i] = device_error(msg, "pool:" + m.o.key);
        if (on_reply) on_reply(i, results[i]);
      }
      queue.clear();
      break;
    }
    std::vector<std::unique_ptr<std::atomic<bool>>> lost;
    std::vector<std::string> ids;
    for (const Lease& l : leases) {
      held.push_back(l.lease_id());
      ids.push_back(l.lease_id());
      lost.push_back(std::make_unique<std::atomic<bool>>(false));
    }
    // Keep the leases alive while the devices work.
    bool renewing = true;
    std::thread renewer([&] {
      std::unique_lock<std::mutex> lock(mu);
      const auto period = std::chrono::duration<double>(std::max(0.1, m.lease_timeout_s / 3));
      while (renewing) {
        if (cv.wait_for(lock, period, [&] { return !renewing; })) break;
        lock.unlock();
        grpc::ClientContext ctx;
        prepare_context(ctx, m.o.security.token, kRpcSlackS);
        RenewRequest req;
        for (const auto& id : ids) req.add_lease_ids(id);
        RenewReply reply;
        if (m.tracker->Renew(&ctx, req, &reply).ok())
          for (const auto& gone : reply.lost_lease_ids())
            for (size_t k = 0; k < ids.size(); ++k)
              if (ids[k] == gone) lost[k]->store(true);
        lock.lock();
      }
    });
    std::vector<std::thread> workers;
    for (size_t k = 0; k < leases.size(); ++k) {
      workers.emplace_back([&, k] {
        const DeviceInfo& dev = leases[k].device();
        auto stub = Device::NewStub(m.channel(dev.address()));
        {
          grpc::ClientContext ctx;
          prepare_context(ctx, m.o.security.token, kProbeS);
          DeviceInfo info;
          const grpc::Status s = stub->Info(&ctx, InfoRequest(), &info);
          if (!s.ok()) {
            spdlog::warn("pool: device {} does not answer ({}); not using it", dev.address(), describe(s));
            return;
          }
        }
        std::unique_lock<std::mutex> lock(mu);
        for (;;) {
          cv.wait(lock, [&] { return !queue.empty() || in_flight == 0; });
          if (queue.empty()) return;
          const size_t i = queue.front();
          queue.pop_front();
          ++in_flight;
          lock.unlock();
          MeasureRequest req = batch.spec();
          req.set_artifact(batch.artifacts(static_cast<int>(i)));
          req.set_entry(batch.entries(static_cast<int>(i)));
          req.set_job(m.o.job);
          grpc::ClientContext ctx;
          prepare_context(ctx, m.o.security.token, measure_s);
          MeasureReply reply;
          const grpc::Status s = stub->Measure(&ctx, req, &reply);
          lock.lock();
          --in_flight;
          if (s.ok()) {
            results[i] = reply;
            if (on_reply) on_reply(i, results[i]);
          } else if (is_transport_failure(s) || s.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
            // The device is gone (or was replaced by a stranger): retry the
            // measurement elsewhere and stop using this device.
            last_error[i] = dev.address() + ": " + describe(s);
            if (++attempts[i] < m.o.max_attempts) {
              queue.push_front(i);
            } else {
              results[i] = device_error(
                  "the measurement was lost on " + std::to_string(attempts[i]) + " devices; last: " + last_error[i],
                  dev.key() + "@" + dev.address());
              if (on_reply) on_reply(i, results[i]);
            }
            spdlog::warn("pool: lost a measurement on {} ({}); {}", dev.address(), describe(s),
                         attempts[i] < m.o.max_attempts ? "retrying elsewhere" : "giving up on it");
            cv.notify_all();
            return;
          } else {
            results[i] = device_error("device " + dev.address() + " refused the request: " + describe(s),
                                      dev.key() + "@" + dev.address());
            if (on_reply) on_reply(i, results[i]);
          }
          cv.notify_all();
          if (lost[k]->load()) return;  // the tracker reclaimed the device: let it go
        }
      });
    }
    for (auto& w : workers) w.join();
    {
      std::lock_guard<std::mutex> lock(mu);
      renewing = false;
    }
    cv.notify_all();
    renewer.join();
  }
  if (!held.empty()) m.release(held, "");
  PoolBatchReply out;
  for (auto& r : results) *out.add_results() = std::move(r);
  return out;
}

}  // namespace kiln::rpc
