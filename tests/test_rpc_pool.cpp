// The device pool on loopback: a tracker and device servers in forked
// processes, the test process as the tuning job (its PoolRunner forks the
// gRPC client) or as a raw gRPC client. Covers the token, malformed and
// oversized artifacts (the server keeps serving), typed errors from the
// measuring worker, a server killed in the middle of a batch (the lost
// measurement is retried on the other device), a tracker restart (servers
// register again), TLS, and the clear errors for an unknown key or an
// unreachable tracker. Every wait is bounded.
//
// Order matters in each test: the test process forks (servers, builder,
// pool client) before it makes any gRPC call of its own, since gRPC starts
// threads and a threaded process must not fork.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <algorithm>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/interpreter.h"
#include "rpc/device_server.h"
#include "rpc/kiln.grpc.pb.h"
#include "rpc/client/measure_spec.h"
#include "rpc/measure_request.h"
#include "rpc/client/pool_runner.h"
#include "rpc/tracker.h"
#include "runtime/ndarray.h"
#include "schedule/lower.h"
#include "schedule/schedule.h"
#include "support/planted_matmul.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "tuner/local_builder.h"
#include "runtime/process_util.h"

namespace kiln::rpc {
namespace {

constexpr int kN = testing::PlantedMatmul::kN;
enum Plant : int64_t { kGood = 0, kCrash, kWrong, kHang };

// A 32x32x32 matmul task whose "plant" knob makes crashing or wrong kernels.
std::shared_ptr<Task> make_task() {
  const testing::PlantedMatmul mm;
  auto space = std::make_shared<ConfigSpace>();
  space->define_split("tile_j", kN, 2);
  space->define_choice("plant", {kGood, kCrash, kWrong, kHang});
  auto task = std::make_shared<Task>();
  task->workload = "rpc_test_matmul:N=32";
  task->op = "rpc_test_matmul";
  task->target = "llvm";
  task->flops = 2.0 * kN * kN * kN;
  task->space = space;
  task->instantiate = [mm](const Config& cfg, LowerDepth depth) -> LoweredFunc {
    switch (cfg.choice("plant")) {
      case kCrash:
        return mm.crashing(4, depth);
      case kHang:
        return mm.hanging(4, depth);
      case kWrong:
        return mm.wrong(depth);
      default:
        return mm.lower_plain(cfg.split("tile_j")[1], depth);
    }
  };
  task->args = mm.lower_plain(4, LowerDepth::kAnnotatedLoops).args;
  task->num_inputs = 2;
  task->input_seed = 3;
  task->reference = {mm.reference(task->input_seed, 7)};
  return task;
}

std::vector<Config> configs(const Task& task, int n, Plant plant = kGood) {
  std::vector<Config> out;
  const int64_t tiles[] = {1, 2, 4, 8, 16, 32};
  for (int i = 0; i < n; ++i) {
    const int64_t t = tiles[i % 6];
    out.push_back(task.space->make({{"tile_j", {kN / t, t}}, {"plant", static_cast<int64_t>(plant)}}));
  }
  return out;
}

kiln::MeasureOptions quick_measure() {
  kiln::MeasureOptions mo;
  mo.repeat = 2;
  mo.min_repeat_ms = 1;
  mo.run_timeout_s = 5;
  return mo;
}

TrackerOptions fast_tracker() {
  TrackerOptions o;
  o.heartbeat_interval_s = 0.2;
  o.heartbeat_timeout_s = 1.5;
  o.lease_timeout_s = 6;
  o.max_wait_s = 1;
  return o;
}

proc::Clock::time_point in_seconds(double s) {
  return proc::Clock::now() + std::chrono::duration_cast<proc::Clock::duration>(std::chrono::duration<double>(s));
}

// A forked tracker or device server. The child sends "port" (or "!" and an
// error), then serves until the test closes the socket or kills it.
struct Proc {
  pid_t pid = -1;
  int fd = -1;
  int port = 0;
  std::string error;
  Proc() = default;
  Proc(const Proc&) = delete;
  Proc& operator=(const Proc&) = delete;
  Proc(Proc&& o) noexcept : pid(o.pid), fd(o.fd), port(o.port), error(o.error) { o.pid = -1; }
  ~Proc() { kill(); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }
  void kill() {
    if (pid < 0) return;
    ::close(fd);
    proc::kill_and_reap(pid);
    pid = -1;
  }
  bool alive() const {
    int status = 0;
    return pid > 0 && ::waitpid(pid, &status, WNOHANG) == 0;
  }
};

// Runs a server in a forked child until the test closes the pipe: `make`
// builds it (a unique_ptr to a server with port()); the child reports its
// port, or "!" and the error when it could not start.
template <class MakeServer>
Proc start_in_child(MakeServer make) {
  Proc p;
  std::string error;
  proc::Child c = proc::fork_child(
      [&](int fd) {
        try {
          auto server = make();
          proc::send_frame(fd, std::to_string(server->port()));
          std::string eof;
          proc::recv_frame(fd, std::nullopt, &eof);
        } catch (const std::exception& e) {
          proc::send_frame(fd, std::string("!") + e.what());
        }
      },
      &error);
  REQUIRE(c.pid > 0);
  p.pid = c.pid;
  p.fd = c.fd;
  std::string msg;
  REQUIRE(proc::recv_frame(p.fd, in_seconds(30), &msg) == proc::RecvStatus::kOk);
  if (!msg.empty() && msg[0] == '!')
    p.error = msg.substr(1);
  else
    p.port = std::stoi(msg);
  return p;
}

Proc start_tracker(const Security& sec, int port = 0, TrackerOptions options = fast_tracker()) {
  return start_in_child(
      [&] { return std::make_unique<TrackerServer>("127.0.0.1:" + std::to_string(port), sec, options); });
}

Proc start_server(DeviceServerOptions o) {
  return start_in_child([&] { return std::make_unique<DeviceServer>(o); });
}

DeviceServerOptions server_options(const Proc& tracker, const Security& sec, const std::string& key = "cpu") {
  DeviceServerOptions o;
  o.key = key;
  o.tracker = tracker.address();
  o.listen = "127.0.0.1:0";
  o.security = sec;
  o.connect_timeout_s = 5;
  return o;
}

PoolOptions pool_options(const Proc& tracker, const Security& sec, const std::string& key = "cpu") {
  PoolOptions o;
  o.tracker = tracker.address();
  o.key = key;
  o.security = sec;
  o.job = "test";
  o.key_wait_s = 5;
  o.device_wait_s = 10;
  o.rpc_margin_s = 10;
  return o;
}

void context(grpc::ClientContext& ctx, const std::string& token) { prepare_context(ctx, token, 5); }

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("pool: calls without the right token are refused with UNAUTHENTICATED", "[rpc][pool]") {
  Security sec;
  sec.token = "s3cret";
  Proc tracker = start_tracker(sec);
  REQUIRE(tracker.error.empty());
  Proc server = start_server(server_options(tracker, sec));
  INFO("server: " << server.error);
  REQUIRE(server.error.empty());
  Security wrong = sec;
  wrong.token = "guess";
  Proc stranger = start_server(server_options(tracker, wrong));
  CHECK_THAT(stranger.error, Catch::Contains("refused this server") && Catch::Contains("UNAUTHENTICATED"));

  // From here on this process runs gRPC threads (no more forks).
  auto tstub = Tracker::NewStub(make_channel(tracker.address(), {}));
  auto dstub = Device::NewStub(make_channel(server.address(), {}));
  for (const std::string& token : {std::string(), std::string("guess"), std::string("s3cret")}) {
    INFO("token '" << token << "'");
    const auto want = token == "s3cret" ? grpc::StatusCode::OK : grpc::StatusCode::UNAUTHENTICATED;
    std::vector<grpc::Status> calls;
    {
      grpc::ClientContext c;
      context(c, token);
      StatusReply r;
      calls.push_back(tstub->Status(&c, StatusRequest(), &r));
      if (want == grpc::StatusCode::OK) CHECK(r.devices_size() == 1);
    }
    {
      grpc::ClientContext c;
      context(c, token);
      HeartbeatReply r;
      HeartbeatRequest q;
      q.set_device_id("nobody");
      const grpc::Status s = tstub->Heartbeat(&c, q, &r);
      calls.push_back(s.error_code() == grpc::StatusCode::NOT_FOUND ? grpc::Status::OK : s);
    }
    {
      grpc::ClientContext c;
      context(c, token);
      LeaseRequest q;
      q.set_key("cpu");
      q.set_wait_s(0.1);
      LeaseReply r;
      calls.push_back(tstub->RequestLease(&c, q, &r));
      grpc::ClientContext c2;
      context(c2, token);
      ReleaseRequest rel;
      for (const auto& l : r.leases()) rel.add_lease_ids(l.lease_id());
      rel.set_request_id(r.request_id());
      ReleaseReply rr;
      calls.push_back(tstub->Release(&c2, rel, &rr));
    }
    {
      grpc::ClientContext c;
      context(c, token);
      RenewReply r;
      calls.push_back(tstub->Renew(&c, RenewRequest(), &r));
    }
    {
      grpc::ClientContext c;
      context(c, token);
      RegisterRequest q;  // malformed: INVALID_ARGUMENT once the token passes
      RegisterReply r;
      const grpc::Status s = tstub->Register(&c, q, &r);
      calls.push_back(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ? grpc::Status::OK : s);
    }
    {
      grpc::ClientContext c;
      context(c, token);
      DeviceInfo r;
      calls.push_back(dstub->Info(&c, InfoRequest(), &r));
      if (want == grpc::StatusCode::OK) CHECK(r.key() == "cpu");
    }
    {
      grpc::ClientContext c;
      context(c, token);
      MeasureReply r;
      const grpc::Status s = dstub->Measure(&c, MeasureRequest(), &r);  // empty: INVALID_ARGUMENT past the token
      calls.push_back(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ? grpc::Status::OK : s);
    }
    for (const grpc::Status& s : calls) {
      CHECK(s.error_code() == want);
      if (want != grpc::StatusCode::OK) CHECK_THAT(s.error_message(), Catch::Contains("token"));
    }
  }
}

TEST_CASE("pool: malformed and oversized artifacts are refused while the server keeps serving", "[rpc][pool]") {
  auto task = make_task();
  Proc tracker = start_tracker({});
  REQUIRE(tracker.error.empty());
  DeviceServerOptions so = server_options(tracker, {});
  so.limits.max_artifact_bytes = 256 << 10;
  Proc server = start_server(so);
  INFO("server: " << server.error);
  REQUIRE(server.error.empty());
  LocalBuilder builder;
  std::vector<Config> cs = configs(*task, 1, kGood);
  cs.push_back(configs(*task, 1, kCrash)[0]);
  cs.push_back(configs(*task, 1, kWrong)[0]);
  cs.push_back(configs(*task, 1, kHang)[0]);
  const std::vector<BuildResult> builds = builder.build(*task, cs);
  for (const auto& b : builds) REQUIRE(b.error == kiln::ErrorKind::kNone);
  const std::string good = read_all(builds[0].artifact);
  REQUIRE(good.size() > 64);

  auto stub = Device::NewStub(make_channel(server.address(), {}));
  const MeasureRequest spec = measure_spec(*task, quick_measure());
  auto measure = [&](const std::string& artifact, const std::string& entry, MeasureReply* reply,
                     const std::function<void(MeasureRequest&)>& spoil = nullptr) {
    MeasureRequest r = spec;
    r.set_artifact(artifact);
    r.set_entry(entry);
    if (spoil) spoil(r);
    grpc::ClientContext c;
    context(c, "");
    c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return stub->Measure(&c, r, reply);
  };
  MeasureReply reply;
  grpc::Status s = measure("garbage, not a shared object", builds[0].entry, &reply);
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK_THAT(s.error_message(), Catch::Contains("not an ELF shared object"));
  s = measure(good + std::string(300 << 10, '\0'), builds[0].entry, &reply);
  CHECK(s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK_THAT(s.error_message(), Catch::Contains("over this device's limit of 262144 bytes"));
  s = measure(std::string(10 << 20, 'x'), builds[0].entry, &reply);  // past the message limit itself
  CHECK(s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  s = measure(good, builds[0].entry, &reply, [](MeasureRequest& r) { r.set_num_inputs(7); });
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK_THAT(s.error_message(), Catch::Contains("leaves no output"));

  // Well-formed requests whose artifact fails are typed errors.
  s = measure(good.substr(0, 200), builds[0].entry, &reply);  // a truncated shared object
  REQUIRE(s.ok());
  CHECK(reply.error() == RUNTIME_CRASH);
  s = measure(good, "no_such_kernel", &reply);
  REQUIRE(s.ok());
  CHECK(reply.error() == RUNTIME_CRASH);
  CHECK_THAT(reply.message(), Catch::Contains("no kernel 'no_such_kernel'"));
  s = measure(read_all(builds[1].artifact), builds[1].entry, &reply);
  REQUIRE(s.ok());
  CHECK(reply.error() == RUNTIME_CRASH);
  s = measure(read_all(builds[2].artifact), builds[2].entry, &reply);
  REQUIRE(s.ok());
  CHECK(reply.error() == WRONG_RESULT);

  s = measure(read_all(builds[3].artifact), builds[3].entry, &reply,
              [](MeasureRequest& r) { r.mutable_options()->set_run_timeout_s(0.5); });
  REQUIRE(s.ok());
  CHECK(reply.error() == RUNTIME_TIMEOUT);

  // And the server still measures.
  s = measure(good, builds[0].entry, &reply);
  REQUIRE(s.ok());
  CHECK(reply.error() == NONE);
  CHECK(reply.samples_ms_size() == 2);
  CHECK(reply.device() == "cpu@" + server.address());
  CHECK(server.alive());
}

TEST_CASE("pool: a server killed in the middle of a batch, every measurement still comes back", "[rpc][pool]") {
  auto task = make_task();
  Proc tracker = start_tracker({});
  REQUIRE(tracker.error.empty());
  Proc steady = start_server(server_options(tracker, {}));
  REQUIRE(steady.error.empty());
  DeviceServerOptions doomed_options = server_options(tracker, {});
  int measured = 0;
  doomed_options.before_measure = [&measured](const MeasureRequest&) {
    if (++measured == 2) ::raise(SIGKILL);  // dies holding its second measurement
  };
  Proc doomed = start_server(doomed_options);
  REQUIRE(doomed.error.empty());

  LocalBuilder builder;
  PoolRunner runner(pool_options(tracker, {}), quick_measure());
  CHECK(runner.device_info().key() == "cpu");
  std::vector<Config> cs = configs(*task, 12);
  cs.push_back(configs(*task, 1, kWrong)[0]);
  std::vector<BuildResult> builds = builder.build(*task, cs);
  builds.push_back(BuildResult{"", "", kiln::ErrorKind::kCompileError, "planted build error", 1.5, {}});
  const std::vector<kiln::MeasureResult> results = runner.run(*task, builds);
  REQUIRE(results.size() == 14);
  std::map<std::string, int> by_device;
  for (size_t i = 0; i < 12; ++i) {
    INFO(i << ": " << kiln::error_kind_name(results[i].error) << " " << results[i].message);
    CHECK(results[i].ok());
    CHECK(results[i].samples_ms.size() == 2);
    ++by_device[results[i].device];
  }
  CHECK(results[12].error == kiln::ErrorKind::kWrongResult);
  CHECK(results[13].error == kiln::ErrorKind::kCompileError);
  CHECK(results[13].message == "planted build error");
  CHECK(results[13].compile_ms == 1.5);
  CHECK_FALSE(doomed.alive());                        // it died mid-batch
  CHECK(by_device["cpu@" + doomed.address()] == 1);   // its first measurement came back
  CHECK(by_device["cpu@" + steady.address()] == 11);  // the rest, the lost one included
  CHECK(results[0].timestamp > 0);

  // The next batch runs on the survivor, the dead device still registered or not.
  builds = builder.build(*task, configs(*task, 3));
  for (const auto& r : runner.run(*task, builds)) {
    CHECK(r.ok());
    CHECK(r.device == "cpu@" + steady.address());
  }
}

TEST_CASE("pool: each result is reported as soon as it is measured, not at the end of the batch", "[rpc][pool]") {
  auto task = make_task();
  Proc tracker = start_tracker({});
  REQUIRE(tracker.error.empty());
  DeviceServerOptions slow_options = server_options(tracker, {});
  int measured = 0;
  slow_options.before_measure = [&measured](const MeasureRequest&) {
    if (++measured == 3) std::this_thread::sleep_for(std::chrono::seconds(2));  // the last one is slow
  };
  Proc slow = start_server(slow_options);
  REQUIRE(slow.error.empty());
  LocalBuilder builder;
  PoolRunner runner(pool_options(tracker, {}), quick_measure());
  std::vector<BuildResult> builds = builder.build(*task, configs(*task, 3));
  builds.insert(builds.begin(), BuildResult{"", "", kiln::ErrorKind::kCompileError, "planted build error", 0, {}});
  std::vector<size_t> order;
  std::vector<std::chrono::steady_clock::time_point> when;
  const std::vector<kiln::MeasureResult> results =
      runner.run(*task, builds, [&](size_t i, const kiln::MeasureResult& r) {
        order.push_back(i);
        when.push_back(std::chrono::steady_clock::now());
        CHECK(r.timestamp > 0);
        CHECK_FALSE(r.device.empty());
      });
  const auto done = std::chrono::steady_clock::now();
  REQUIRE(results.size() == 4);
  std::vector<size_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == std::vector<size_t>{0, 1, 2, 3});  // each once
  CHECK(order[0] == 0);                               // the build error first, before any measurement
  for (size_t i = 1; i < 4; ++i) CHECK(results[i].ok());
  // The two quick measurements came back while the slow one still ran.
  REQUIRE(when.size() == 4);
  CHECK(std::chrono::duration<double>(done - when[2]).count() > 1.5);
}

TEST_CASE("pool: a measurement lost on every device is a device error", "[rpc][pool]") {
  auto task = make_task();
  Proc tracker = start_tracker({});
  REQUIRE(tracker.error.empty());
  DeviceServerOptions doomed_options = server_options(tracker, {});
  doomed_options.before_measure = [](const MeasureRequest&) { ::raise(SIGKILL); };
  Proc doomed = start_server(doomed_options);
  REQUIRE(doomed.error.empty());
  LocalBuilder builder;
  PoolOptions po = pool_options(tracker, {});
  po.device_wait_s = 1;
  PoolRunner runner(po, quick_measure());
  const std::vector<BuildResult> builds = builder.build(*task, configs(*task, 3));
  const std::vector<kiln::MeasureResult> results = runner.run(*task, builds);
  REQUIRE(results.size() == 3);
  for (const auto& r : results) {
    CHECK(r.error == kiln::ErrorKind::kDeviceError);
    CHECK_THAT(r.message, Catch::Contains("no device of key 'cpu' became available within 1 s"));
  }
  CHECK_THAT(results[0].message, Catch::Contains("lost before: 127.0.0.1:"));
  CHECK_FALSE(doomed.alive());
}

TEST_CASE("pool: a restarted tracker gets its servers back", "[rpc][pool]") {
  auto task = make_task();
  Proc tracker = start_tracker({});
  REQUIRE(tracker.error.empty());
  const int port = tracker.port;
  Proc server = start_server(server_options(tracker, {}));
  INFO("server: " << server.error);
  REQUIRE(server.error.empty());
  LocalBuilder builder;
  PoolRunner runner(pool_options(tracker, {}), quick_measure());
  std::vector<BuildResult> builds = builder.build(*task, configs(*task, 2));
  for (const auto& r : runner.run(*task, builds)) CHECK(r.ok());

  tracker.kill();  // SIGKILL: the new tracker starts with no devices
  Proc again = start_tracker({}, port);
  REQUIRE(again.error.empty());
  REQUIRE(again.port == port);
  CHECK(runner.device_info().address() == server.address());  // the server registered again
  builds = builder.build(*task, configs(*task, 2));
  for (const auto& r : runner.run(*task, builds)) CHECK(r.ok());
  CHECK(server.alive());
}

TEST_CASE("pool: TLS with a self-signed certificate", "[rpc][pool][tls]") {
  if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
    KILN_SKIP("openssl not found: TLS not tested");
  }
  auto task = make_task();
  kiln::testing::TempDir dir("kiln-tls-test");
  const std::string cert = dir / "cert.pem", key = dir / "key.pem";
  const std::string cmd =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj "
      "/CN=localhost -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " +
      key + " -out " + cert + " >/dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  Security sec;
  sec.token = "t";
  sec.tls_cert = cert;
  sec.tls_key = key;
  sec.tls_ca = cert;
  Proc tracker = start_tracker(sec);
  REQUIRE(tracker.error.empty());
  Proc server = start_server(server_options(tracker, sec));
  INFO("server: " << server.error);
  REQUIRE(server.error.empty());
  Security client = sec;
  client.tls_cert.clear();
  client.tls_key.clear();
  LocalBuilder builder;
  PoolRunner runner(pool_options(tracker, client), quick_measure());
  PoolOptions plain = pool_options(tracker, {});
  plain.security.token = "t";
  plain.key_wait_s = 0.5;
  PoolRunner insecure(plain, quick_measure());
  CHECK(runner.device_info().key() == "cpu");
  for (const auto& r : runner.run(*task, builder.build(*task, configs(*task, 2)))) CHECK(r.ok());
  CHECK_THROWS_WITH(insecure.device_info(), Catch::Contains("cannot reach the tracker"));
}

TEST_CASE("pool: unknown key, unreachable tracker and bad options give clear errors", "[rpc][pool]") {
  Proc tracker = start_tracker({});
  REQUIRE(tracker.error.empty());
  Proc server = start_server(server_options(tracker, {}));
  INFO("server: " << server.error);
  REQUIRE(server.error.empty());
  DeviceServerOptions lost = server_options(tracker, {});
  lost.tracker = "127.0.0.1:1";
  lost.connect_timeout_s = 0.3;
  Proc orphan = start_server(lost);
  CHECK_THAT(orphan.error, Catch::Contains("cannot register with the tracker at 127.0.0.1:1"));
  DeviceServerOptions bad = server_options(tracker, {});
  bad.key = "no spaces";
  CHECK_THAT(start_server(bad).error, Catch::Contains("may only contain"));
  bad = server_options(tracker, {});
  bad.target = "llvm -mtriple=aarch64-linux-gnu";
  CHECK_THAT(start_server(bad).error, Catch::Contains("does not run here"));
  CHECK_THAT(start_tracker({}, tracker.port).error, Catch::Contains("cannot listen"));

  PoolOptions gpu = pool_options(tracker, {}, "gpu");
  gpu.key_wait_s = 0.5;
  PoolRunner nokey(gpu, quick_measure());
  PoolOptions far = pool_options(tracker, {});
  far.tracker = "127.0.0.1:1";
  far.key_wait_s = 0.5;
  PoolRunner unreachable(far, quick_measure());
  CHECK_THROWS_WITH(nokey.device_info(),
                    Catch::Contains("no device with key 'gpu'") && Catch::Contains("keys there: cpu"));
  CHECK_THROWS_WITH(unreachable.device_info(), Catch::Contains("cannot reach the tracker at 127.0.0.1:1"));
  PoolOptions no_key = pool_options(tracker, {}, "");
  CHECK_THROWS_WITH(PoolRunner(no_key), Catch::Contains("needs the devices' key"));
  PoolOptions bad_addr = pool_options(tracker, {});
  bad_addr.tracker = "nowhere";
  CHECK_THROWS_WITH(PoolRunner(bad_addr), Catch::Contains("'nowhere' is not an address"));
}

}  // namespace kiln::rpc
