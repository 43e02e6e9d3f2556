// `kiln tracker`, `kiln serve` and `kiln pool status`: the device pool's
// processes and its status view (see rpc/ and README "Device pool"). The
// device server itself is cli/serve_command.cpp, shared with kiln-serve.
#include "cli/pool_commands.h"

#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "codegen/target.h"
#include "rpc/device_server.h"
#include "rpc/kiln.grpc.pb.h"
#include "rpc/tracker.h"

namespace kiln::cli {

namespace {

struct TrackerCommandOptions {
  std::string listen = "0.0.0.0:9190";
  std::string token, tls_cert, tls_key;
  double heartbeat_timeout_s = 5;
  double lease_timeout_s = 15;
};

int run_tracker(const TrackerCommandOptions& o) {
  rpc::Security sec;
  sec.token = token_or_env(o.token);
  sec.tls_cert = o.tls_cert;
  sec.tls_key = o.tls_key;
  rpc::TrackerOptions to;
  to.heartbeat_timeout_s = o.heartbeat_timeout_s;
  to.heartbeat_interval_s = std::min(1.0, o.heartbeat_timeout_s / 4);
  to.lease_timeout_s = o.lease_timeout_s;
  to.max_wait_s = std::min(5.0, o.lease_timeout_s / 3);
  const sigset_t stop = block_stop_signals();
  rpc::TrackerServer tracker(o.listen, sec, to);
  std::cout << "kiln tracker listening on " << tracker.address() << (sec.tls_cert.empty() ? "" : " (TLS)")
            << (sec.token.empty() ? "" : " (token required)") << std::endl;
  std::thread([stop, &tracker] {
    int sig = 0;
    sigwait(&stop, &sig);
    tracker.shutdown();
  }).detach();
  tracker.wait();
  return 0;
}

struct PoolStatusOptions {
  std::string tracker, token, tls_ca;
  bool json = false;
};

std::string fmt_s(double s) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << s << "s";
  return os.str();
}

int run_pool_status(const PoolStatusOptions& o) {
  rpc::check_address(o.tracker, "--tracker", /*allow_port0=*/false);
  rpc::Security sec;
  sec.token = token_or_env(o.token);
  sec.tls_ca = o.tls_ca;
  auto stub = rpc::Tracker::NewStub(rpc::make_channel(o.tracker, sec));
  grpc::ClientContext ctx;
  rpc::prepare_context(ctx, sec.token, 5);
  rpc::StatusReply s;
  const grpc::Status st = stub->Status(&ctx, rpc::StatusRequest(), &s);
  user_check(st.error_code() != grpc::StatusCode::UNAUTHENTICATED)
      << "the tracker at " << o.tracker << " refused: " << rpc::describe(st);
  user_check(st.ok()) << "cannot reach the tracker at " << o.tracker << ": " << rpc::describe(st);

  std::map<std::string, std::pair<int, int>> keys;  // key -> (devices, leased)
  for (const auto& d : s.devices()) {
    auto& k = keys[d.device().key()];
    ++k.first;
    if (!d.lease_id().empty()) ++k.second;
  }
  if (o.json) {
    nlohmann::json j;
    j["tracker"] = o.tracker;
    j["heartbeat_timeout_s"] = s.heartbeat_timeout_s();
    j["lease_timeout_s"] = s.lease_timeout_s();
    j["devices"] = nlohmann::json::array();
    j["leases"] = nlohmann::json::array();
    j["queue"] = nlohmann::json::array();
    j["keys"] = nlohmann::json::object();
    for (const auto& d : s.devices()) {
      j["devices"].push_back({{"device_id", d.device_id()},
                              {"key", d.device().key()},
                              {"target", d.device().target()},
                              {"cpu", d.device().cpu()},
                              {"gpu", d.device().gpu()},
                              {"address", d.device().address()},
                              {"since_heartbeat_s", d.since_heartbeat_s()},
                              {"lease_id", d.lease_id()},
                              {"job", d.job()}});
      if (!d.lease_id().empty())
        j["leases"].push_back(
            {{"lease_id", d.lease_id()}, {"device_id", d.device_id()}, {"job", d.job()}, {"leased_s", d.leased_s()}});
    }
    for (const auto& q : s.queue())
      j["queue"].push_back({{"request_id", q.request_id()},
                            {"key", q.key()},
                            {"priority", q.priority()},
                            {"job", q.job()},
                            {"max_devices", q.max_devices()},
                            {"waiting_s", q.waiting_s()}});
    for (const auto& [k, n] : keys) j["keys"][k] = {{"devices", n.first}, {"leased", n.second}};
    std::cout << j.dump() << std::endl;
    return 0;
  }
  std::cout << "tracker " << o.tracker << ": " << s.devices_size() << " device(s), " << keys.size() << " key(s), "
            << s.queue_size() << " queued request(s)\n";
  std::cout << "keys:\n";
  for (const auto& [k, n] : keys)
    std::cout << "  " << k << ": " << n.first << " device(s), " << n.second << " leased\n";
  std::cout << "devices:\n";
  for (const auto& d : s.devices()) {
    std::cout << "  " << d.device_id() << "  " << d.device().key() << "  " << d.device().address() << "  heartbeat "
              << fmt_s(d.since_heartbeat_s()) << " ago  "
              << (d.lease_id().empty() ? std::string("free") : "leased by '" + d.job() + "' for " + fmt_s(d.leased_s()))
              << "\n    " << d.device().target() << "; " << d.device().cpu() << "; gpu " << d.device().gpu() << "\n";
  }
  std::cout << "queue:\n";
  if (s.queue().empty()) std::cout << "  (empty)\n";
  for (const auto& q : s.queue())
    std::cout << "  " << q.request_id() << "  job '" << q.job() << "'  key " << q.key() << "  priority " << q.priority()
              << "  waiting " << fmt_s(q.waiting_s()) << "\n";
  return 0;
}

}  // namespace

Handler add_tracker_command(CLI::App& app) {
  auto* sub = app.add_subcommand("tracker", "run the device pool's tracker (devices, leases, queue)");
  auto o = std::make_shared<TrackerCommandOptions>();
  sub->add_option("--listen", o->listen, "HOST:PORT to listen on (default 0.0.0.0:9190; port 0: any free port)");
  sub->add_option("--token", o->token, "shared secret every call must carry (default: $KILN_TOKEN)");
  sub->add_option("--tls-cert", o->tls_cert, "PEM certificate: serve over TLS");
  sub->add_option("--tls-key", o->tls_key, "PEM private key of --tls-cert");
  sub->add_option("--heartbeat-timeout", o->heartbeat_timeout_s,
                  "seconds of silence before a device is dropped (default 5)")
      ->check(CLI::Range(0.2, 3600.0));
  sub->add_option("--lease-timeout", o->lease_timeout_s, "seconds a lease lives without renewal (default 15)")
      ->check(CLI::Range(1.0, 86400.0));
  return [o]() { return run_tracker(*o); };
}

Handler add_serve_command(CLI::App& app) {
  auto* sub = app.add_subcommand("serve", "serve this machine as a device of the pool (measures candidates)");
  auto o = std::make_shared<ServeCommandOptions>();
  add_serve_options(*sub, *o);
  return [o]() {
    // kiln has the compiler, so it reports the host's exact LLVM target
    // (CPU name included), as local tuning uses it; kiln-serve cannot.
    ServeCommandOptions resolved = *o;
    // A GPU server's target is the first GPU's (rpc/device_target.h).
    if (o->target.rfind("cuda", 0) == 0) return run_serve(resolved, "kiln serve");
    const Target target = o->target.empty() ? Target::host() : Target::parse(o->target);
    user_check(target.is_host()) << "a device server measures on this machine; target '" << target.str()
                                 << "' does not run here";
    resolved.target = target.str();
    return run_serve(resolved, "kiln serve");
  };
}

Handler add_pool_command(CLI::App& app) {
  auto* sub = app.add_subcommand("pool", "inspect the device pool");
  sub->require_subcommand(1);
  auto* status = sub->add_subcommand("status", "devices, keys, leases and queue of a tracker");
  auto o = std::make_shared<PoolStatusOptions>();
  status->add_option("--tracker", o->tracker, "HOST:PORT of the tracker")->required();
  status->add_option("--token", o->token, "the pool's shared secret (default: $KILN_TOKEN)");
  status->add_option("--tls-ca", o->tls_ca, "PEM CA certificate to verify a TLS tracker");
  status->add_flag("--json", o->json, "print one JSON object");
  return [o]() { return run_pool_status(*o); };
}

}  // namespace kiln::cli
