// The Device service and its registration with the tracker.
#include "rpc/device_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "base/error.h"
#include "rpc/kiln.grpc.pb.h"
#include "rpc/device_target.h"
#include "rpc/measure_host.h"
#include "runtime/cuda_driver.h"

namespace kiln::rpc {

namespace {

// The address of this machine that the tracker's host is reached from (so a
// server listening on every interface advertises one the pool can use).
std::string local_address_towards(const std::string& tracker) {
  const std::string host = address_host(tracker);
  const std::string port = tracker.substr(tracker.rfind(':') + 1);
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || !res) return "";
  std::string out;
  const int fd = ::socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0) {  // UDP: sends nothing
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    char buf[INET6_ADDRSTRLEN] = {};
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      if (local.ss_family == AF_INET)
        ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&local)->sin_addr, buf, sizeof buf);
      else
        ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr, buf, sizeof buf);
      out = buf;
    }
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(res);
  return out;
}

class DeviceService final : public Device::Service {
 public:
  DeviceService(DeviceInfo* info, const DeviceServerOptions& options, MeasureHost* host, std::atomic<bool>* broken)
      : info_(info),
        options_(options),
        host_(host),
        broken_(broken),
        machine_(host_elf_machine()),
        gpu_(info->target().rfind("cuda", 0) == 0) {}

  grpc::Status Info(grpc::ServerContext* ctx, const InfoRequest*, DeviceInfo* reply) override {
    if (auto s = check_token(*ctx, options_.security.token); !s.ok()) return s;
    *reply = *info_;
    return grpc::Status::OK;
  }

  grpc::Status Measure(grpc::ServerContext* ctx, const MeasureRequest* req, MeasureReply* reply) override {
    if (auto s = check_token(*ctx, options_.security.token); !s.ok()) return s;
    if (auto s = validate_request(*req, options_.limits, gpu_ ? 0 : machine_); !s.ok()) {
      spdlog::warn("serve: refused a request of job '{}': {}", req->job(), s.error_message());
      return s;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (ctx->IsCancelled()) return {grpc::StatusCode::CANCELLED, "the client gave up before the measurement started"};
    spdlog::debug("serve: measuring '{}' for job '{}'", req->entry(), req->job());
    if (options_.before_measure) options_.before_measure(*req);
    std::string error;
    if (!host_->measure(*req, reply, &error)) {
      spdlog::error("serve: {}; this server stops", error);
      broken_->store(true);
      return {grpc::StatusCode::UNAVAILABLE, "the device cannot measure any more: " + error};
    }
    reply->set_device(info_->key() + "@" + info_->address());
    return grpc::Status::OK;
  }

 private:
  const DeviceInfo* info_;
  const DeviceServerOptions& options_;
  MeasureHost* host_;
  std::atomic<bool>* broken_;
  const int machine_;
  const bool gpu_;  // a cuda server: artifacts are GPU artifacts
  std::mutex mu_;  // one measurement at a time
};

}  // namespace

std::string describe_cpu() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      model = line.substr(line.find(':') + 1);
      model.erase(0, model.find_first_not_of(" \t"));
      break;
    }
  }
  if (model.empty()) model = "unknown CPU";
  return model + " (" + std::to_string(std::thread::hardware_concurrency()) + " threads)";
}

std::string describe_gpu() {
  std::error_code ec;
  std::vector<std::string> models;
  for (const auto& e : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    std::ifstream in(e.path() / "information");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("Model:", 0) == 0) {
        std::string m = line.substr(6);
        m.erase(0, m.find_first_not_of(" \t"));
        models.push_back(m);
      }
  }
  if (models.empty()) return "none";
  std::sort(models.begin(), models.end());
  std::string out;
  for (const auto& m : models) out += (out.empty() ? "" : ", ") + m;
  return out;
}

// The GPU a cuda server measures on: "NVIDIA H100 80GB HBM3, sm_90, 132 SMs,
// 80 GiB".
std::string describe_cuda_gpu() {
  const rt::cuda::DeviceInfo d = rt::cuda::devices().at(0);
  return d.name + ", " + d.arch() + ", " + std::to_string(d.sm_count) + " SMs, " +
         std::to_string((d.total_memory + (int64_t{1} << 29)) >> 30) + " GiB";
}

struct DeviceServer::Impl {
  DeviceServerOptions options;
  DeviceInfo info;
  std::unique_ptr<MeasureHost> host;
  std::atomic<bool> broken{false};
  std::unique_ptr<DeviceService> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::unique_ptr<Tracker::Stub> tracker;

  mutable std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  bool shut = false;
  std::string device_id;
  double heartbeat_interval_s = 1;
  std::thread heartbeat;

  // One Register call; OK or why not.
  grpc::Status register_once() {
    grpc::ClientContext ctx;
    prepare_context(ctx, options.security.token, 2);
    RegisterRequest req;
    *req.mutable_device() = info;
    RegisterReply reply;
    grpc::Status s = tracker->Register(&ctx, req, &reply);
    if (s.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      device_id = reply.device_id();
      heartbeat_interval_s = reply.heartbeat_interval_s() > 0 ? reply.heartbeat_interval_s() : 1;
    }
    return s;
  }

  void heartbeat_loop() {
    bool warned = false;
    std::unique_lock<std::mutex> lock(mu);
    while (!stopping) {
      const auto period = std::chrono::duration<double>(heartbeat_interval_s);
      cv.wait_for(lock, period, [&] { return stopping; });
      if (stopping) break;
      if (broken.load()) {
        lock.unlock();
        stop_serving();
        return;
      }
      const std::string id = device_id;
      lock.unlock();
      grpc::ClientContext ctx;
      prepare_context(ctx, options.security.token, 2);
      HeartbeatRequest req;
      req.set_device_id(id);
      HeartbeatReply reply;
      grpc::Status s = tracker->Heartbeat(&ctx, req, &reply);
      if (s.error_code() == grpc::StatusCode::NOT_FOUND) {
        s = register_once();
        if (s.ok()) spdlog::info("serve: the tracker did not know this device; registered again as {}", device_id);
      }
      if (!s.ok() && !warned)
        spdlog::warn("serve: the tracker at {} does not answer ({}); retrying", options.tracker, describe(s));
      warned = !s.ok();
      lock.lock();
    }
  }

  void stop_serving() {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (shut) return;
      shut = true;
      stopping = true;
    }
    cv.notify_all();
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }
};

DeviceServer::DeviceServer(DeviceServerOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  user_check(!options.key.empty()) << "a device server needs a key (--key), e.g. --key zen4-avx512";
  for (char c : options.key)
    user_check(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')
        << "the key '" << options.key << "' may only contain letters, digits, '-', '_' and '.'";
  check_address(options.tracker, "--tracker", /*allow_port0=*/false);
  check_address(options.listen, "--listen", /*allow_port0=*/true);
  if (!options.advertise.empty()) check_address(options.advertise, "--advertise", /*allow_port0=*/false);
  user_check(options.connect_timeout_s > 0) << "the connect timeout must be positive";
  const std::string target = device_target(options.target);
  m.options = std::move(options);
  m.info.set_key(m.options.key);
  m.info.set_target(target);
  m.info.set_cpu(describe_cpu());
  m.info.set_gpu(target.rfind("cuda", 0) == 0 ? describe_cuda_gpu() : describe_gpu());

  // Fork before gRPC starts its threads.
  m.host = std::make_unique<MeasureHost>(m.options.temp_root);

  m.service = std::make_unique<DeviceService>(&m.info, m.options, m.host.get(), &m.broken);
  grpc::ServerBuilder builder;
  // An artifact and the whole reference output (8 bytes a value), plus room
  // for the rest of the request.
  const size_t limit =
      m.options.limits.max_artifact_bytes + m.options.limits.max_reference_points * 8 + (size_t{8} << 20);
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<size_t>(limit, size_t{1} << 30)));
  builder.AddListeningPort(m.options.listen, server_credentials(m.options.security), &m.port);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // a second server on the port must fail, not share it
  builder.RegisterService(m.service.get());
  m.server = builder.BuildAndStart();
  user_check(m.server && m.port > 0) << "the device server cannot listen on " << m.options.listen
                                     << " (address in use, or not an address of this machine)";
  std::string advertise = m.options.advertise;
  if (advertise.empty()) {
    std::string host = address_host(m.options.listen);
    if (is_wildcard_host(host)) host = local_address_towards(m.options.tracker);
    if (host.empty()) {
      char name[256] = {};
      ::gethostname(name, sizeof name - 1);
      host = name;
    }
    advertise = join_host_port(host, m.port);
  }
  m.info.set_address(advertise);

  m.tracker = Tracker::NewStub(make_channel(m.options.tracker, m.options.security));
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                             std::chrono::duration<double>(m.options.connect_timeout_s));
  for (;;) {
    grpc::Status s = m.register_once();
    if (s.ok()) break;
    if (s.error_code() == grpc::StatusCode::UNAUTHENTICATED || !is_transport_failure(s) ||
        std::chrono::steady_clock::now() >= give_up) {
      m.server->Shutdown(std::chrono::system_clock::now());
      user_error() << (s.error_code() == grpc::StatusCode::UNAUTHENTICATED
                           ? "the tracker at " + m.options.tracker + " refused this server: "
                           : "cannot register with the tracker at " + m.options.tracker + ": ")
                   << describe(s);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  m.heartbeat = std::thread([&m] { m.heartbeat_loop(); });
}

DeviceServer::~DeviceServer() {
  shutdown();
  if (impl_->heartbeat.joinable()) impl_->heartbeat.join();
  impl_->server.reset();
  impl_->host.reset();
}

const DeviceInfo& DeviceServer::info() const { return impl_->info; }
int DeviceServer::port() const { return impl_->port; }

std::string DeviceServer::device_id() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->device_id;
}

bool DeviceServer::wait() {
  impl_->server->Wait();
  return !impl_->broken.load();
}

void DeviceServer::shutdown() { impl_->stop_serving(); }

}  // namespace kiln::rpc
