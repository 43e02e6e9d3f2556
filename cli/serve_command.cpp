// The device server's command (see serve_command.h).
#include "cli/serve_command.h"

#include <pthread.h>

#include <cstdlib>
#include <iostream>
#include <thread>

#include "rpc/device_server.h"

namespace kiln::cli {

std::string token_or_env(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("KILN_TOKEN");
  return env ? env : "";
}

sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

void add_serve_options(CLI::App& sub, ServeCommandOptions& o) {
  sub.add_option("--tracker", o.tracker, "HOST:PORT of the tracker")->required();
  sub.add_option("--key", o.key, "the device's key, shared by identical devices (e.g. zen4-avx512)")->required();
  sub.add_option("--listen", o.listen, "HOST:PORT to listen on (default 0.0.0.0:0: any free port)");
  sub.add_option("--advertise", o.advertise, "HOST:PORT the pool reaches this server at (default: derived)");
  sub.add_option("--target", o.target, "target to report (default: this machine's; must run here)");
  sub.add_option("--token", o.token, "the pool's shared secret (default: $KILN_TOKEN)");
  sub.add_option("--tls-cert", o.tls_cert, "PEM certificate: serve over TLS");
  sub.add_option("--tls-key", o.tls_key, "PEM private key of --tls-cert");
  sub.add_option("--tls-ca", o.tls_ca, "PEM CA certificate to verify a TLS tracker");
  sub.add_option("--max-artifact-mb", o.max_artifact_mb, "largest artifact accepted, MiB (default 64)")
      ->check(CLI::Range(0.001, 1000.0));
  sub.add_option("--max-buffer-mb", o.max_buffer_mb, "largest total of kernel arguments, MiB (default 4096)")
      ->check(CLI::Range(0.001, 1e7));
  sub.add_option("--connect-timeout", o.connect_timeout_s, "seconds to try reaching the tracker at start (default 10)")
      ->check(CLI::Range(0.1, 3600.0));
}

int run_serve(const ServeCommandOptions& o, const std::string& program) {
  rpc::DeviceServerOptions so;
  so.key = o.key;
  so.tracker = o.tracker;
  so.listen = o.listen;
  so.advertise = o.advertise;
  so.target = o.target;
  so.security.token = token_or_env(o.token);
  so.security.tls_cert = o.tls_cert;
  so.security.tls_key = o.tls_key;
  so.security.tls_ca = o.tls_ca;
  so.limits.max_artifact_bytes = static_cast<size_t>(o.max_artifact_mb * (1 << 20));
  so.limits.max_buffer_bytes = static_cast<size_t>(o.max_buffer_mb * (1 << 20));
  so.connect_timeout_s = o.connect_timeout_s;
  const sigset_t stop = block_stop_signals();
  rpc::DeviceServer server(so);
  const std::string gpu = server.info().gpu() == "none" ? "" : ", GPU " + server.info().gpu();
  std::cout << program << ": device " << server.device_id() << " (key '" << o.key << "', " << server.info().target()
            << gpu << ") serving on " << server.info().address() << ", registered with the tracker at " << o.tracker
            << std::endl;
  std::thread([stop, &server] {
    int sig = 0;
    sigwait(&stop, &sig);
    server.shutdown();
  }).detach();
  if (!server.wait()) {
    std::cerr << program << ": error: the device's measuring process died; the server stopped\n";
    return 1;
  }
  return 0;
}

}  // namespace kiln::cli
