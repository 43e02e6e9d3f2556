// The device server's command line, shared by `kiln serve` and the
// compiler-free `kiln-serve` executable (cli/serve_main.cpp), and the flags
// every pool client shares (--token or KILN_TOKEN).
#pragma once

#include <signal.h>

#include <CLI/CLI.hpp>
#include <string>

namespace kiln::cli {

struct ServeCommandOptions {
  std::string tracker, key, listen = "0.0.0.0:0", advertise, target;
  std::string token, tls_cert, tls_key, tls_ca;
  double max_artifact_mb = 64;
  double max_buffer_mb = 4096;
  double connect_timeout_s = 10;
};

// Registers the server's options on `app` (a subcommand or a whole program).
void add_serve_options(CLI::App& app, ServeCommandOptions& o);

// Serves until SIGINT or SIGTERM; `program` names the command in its
// banner. Exit code 1 when the measuring process died.
int run_serve(const ServeCommandOptions& o, const std::string& program);

// --token when given, else $KILN_TOKEN, else "".
std::string token_or_env(const std::string& flag);

// Blocks SIGINT and SIGTERM in this thread (and so in every thread started
// after it: gRPC's) so that one thread can wait for them with sigwait.
sigset_t block_stop_signals();

}  // namespace kiln::cli
