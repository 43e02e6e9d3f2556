// The Tracker service (rpc/kiln.proto) and its server.
#include "rpc/tracker.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/error.h"
#include "rpc/kiln.grpc.pb.h"

namespace kiln::rpc {

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

class TrackerService final : public Tracker::Service {
 public:
  TrackerService(TrackerOptions options, std::string token) : state_(options), token_(std::move(token)) {}

  grpc::Status Register(grpc::ServerContext* ctx, const RegisterRequest* req, RegisterReply* reply) override {
    if (auto s = check_token(*ctx, token_); !s.ok()) return s;
    const DeviceInfo& d = req->device();
    if (d.key().empty() || d.target().empty() || d.address().empty())
      return {grpc::StatusCode::INVALID_ARGUMENT, "a device registers with a key, a target and an address"};
    std::lock_guard<std::mutex> lock(mu_);
    const std::string id = state_.register_device(d, now_s());
    reply->set_device_id(id);
    reply->set_heartbeat_interval_s(state_.options().heartbeat_interval_s);
    spdlog::info("tracker: device {} registered: key '{}' at {} ({})", id, d.key(), d.address(), d.target());
    cv_.notify_all();
    return grpc::Status::OK;
  }

  grpc::Status Heartbeat(grpc::ServerContext* ctx, const HeartbeatRequest* req, HeartbeatReply*) override {
    if (auto s = check_token(*ctx, token_); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    if (!state_.heartbeat(req->device_id(), now_s()))
      return {grpc::StatusCode::NOT_FOUND,
              "this tracker does not know device '" + req->device_id() + "'; register again"};
    return grpc::Status::OK;
  }

  grpc::Status RequestLease(grpc::ServerContext* ctx, const LeaseRequest* req, LeaseReply* reply) override {
    if (auto s = check_token(*ctx, token_); !s.ok()) return s;
    if (req->key().empty()) return {grpc::StatusCode::INVALID_ARGUMENT, "a lease request needs a device key"};
    if (req->max_devices() < 0) return {grpc::StatusCode::INVALID_ARGUMENT, "max_devices must be >= 0"};
    std::unique_lock<std::mutex> lock(mu_);
    if (!state_.has_key(req->key())) {
      state_.release({}, req->request_id(), now_s());
      return {grpc::StatusCode::NOT_FOUND, "no device with key '" + req->key() + "' is registered"};
    }
    const double wait = std::clamp(req->wait_s(), 0.0, state_.options().max_wait_s);
    const auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(wait));
    const std::string id = state_.enqueue(*req, now_s());
    for (;;) {
      if (state_.take_grant(id, reply)) {
        spdlog::info("tracker: job '{}' leased {} device(s) of key '{}'", req->job(), reply->leases_size(), req->key());
        return grpc::Status::OK;
      }
      if (stopping_ || ctx->IsCancelled() || std::chrono::steady_clock::now() >= deadline) return grpc::Status::OK;
      cv_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(200)));
      if (!state_.has_key(req->key())) {
        state_.release({}, id, now_s());
        return {grpc::StatusCode::NOT_FOUND, "no device with key '" + req->key() + "' is registered any more"};
      }
      state_.renew({}, id, now_s());
    }
  }

  grpc::Status Renew(grpc::ServerContext* ctx, const RenewRequest* req, RenewReply* reply) override {
    if (auto s = check_token(*ctx, token_); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& id :
         state_.renew({req->lease_ids().begin(), req->lease_ids().end()}, req->request_id(), now_s()))
      reply->add_lost_lease_ids(id);
    return grpc::Status::OK;
  }

  grpc::Status Release(grpc::ServerContext* ctx, const ReleaseRequest* req, ReleaseReply*) override {
    if (auto s = check_token(*ctx, token_); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    state_.release({req->lease_ids().begin(), req->lease_ids().end()}, req->request_id(), now_s());
    cv_.notify_all();
    return grpc::Status::OK;
  }

  grpc::Status Status(grpc::ServerContext* ctx, const StatusRequest*, StatusReply* reply) override {
    if (auto s = check_token(*ctx, token_); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    *reply = state_.status(now_s());
    return grpc::Status::OK;
  }

  // The sweeper: runs until stop().
  void sweep() {
    std::unique_lock<std::mutex> lock(mu_);
    const auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(std::min(0.25, state_.options().heartbeat_timeout_s / 4)));
    while (!stopping_) {
      const size_t before = state_.num_devices();
      if (state_.expire(now_s())) {
        if (state_.num_devices() < before)
          spdlog::warn("tracker: dropped {} device(s) that stopped heartbeating", before - state_.num_devices());
        cv_.notify_all();
      }
      sweep_cv_.wait_for(lock, period, [&] { return stopping_; });
    }
  }

  void stop() {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
    sweep_cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;        // the state changed (grants may be waiting)
  std::condition_variable sweep_cv_;  // wakes the sweeper for stop()
  TrackerState state_;
  std::string token_;
  bool stopping_ = false;
};

}  // namespace

struct TrackerServer::Impl {
  std::unique_ptr<TrackerService> service;
  std::unique_ptr<grpc::Server> server;
  std::thread sweeper;
  std::string host;
  int port = 0;
  std::mutex mu;
  bool shut = false;
};

TrackerServer::TrackerServer(const std::string& listen, const Security& security, TrackerOptions options)
    : impl_(std::make_unique<Impl>()) {
  check_address(listen, "the tracker's listen address", /*allow_port0=*/true);
  impl_->service = std::make_unique<TrackerService>(options, security.token);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, server_credentials(security), &impl_->port);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // a second server on the port must fail, not share it
  builder.RegisterService(impl_->service.get());
  impl_->server = builder.BuildAndStart();
  user_check(impl_->server && impl_->port > 0)
      << "the tracker cannot listen on " << listen << " (address in use, or not an address of this machine)";
  impl_->host = address_host(listen);
  impl_->sweeper = std::thread([s = impl_->service.get()] { s->sweep(); });
}

TrackerServer::~TrackerServer() {
  shutdown();
  if (impl_->sweeper.joinable()) impl_->sweeper.join();
}

int TrackerServer::port() const { return impl_->port; }

std::string TrackerServer::address() const { return join_host_port(impl_->host, impl_->port); }

void TrackerServer::wait() { impl_->server->Wait(); }

void TrackerServer::shutdown() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->shut) return;
    impl_->shut = true;
  }
  impl_->service->stop();
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
}

}  // namespace kiln::rpc
