// The device-pool commands: `kiln tracker`, `kiln serve`, `kiln pool status`
// (rpc/), and the flags that every pool client shares (--token or
// KILN_TOKEN, --tls-ca), also used by `kiln tune --pool`.
#pragma once

#include <string>

#include "cli/commands.h"
#include "rpc/net.h"

namespace kiln::cli {

Handler add_tracker_command(CLI::App& app);
Handler add_serve_command(CLI::App& app);
Handler add_pool_command(CLI::App& app);

// --token when given, else $KILN_TOKEN, else "".
std::string token_or_env(const std::string& flag);

}  // namespace kiln::cli
