// The device-pool commands: `kiln tracker`, `kiln serve`, `kiln pool status`
// (rpc/), and the flags that every pool client shares (--token or
// KILN_TOKEN, --tls-ca), also used by `kiln tune --pool`.
#pragma once

#include <string>

#include "cli/commands.h"
#include "cli/serve_command.h"
#include "rpc/net.h"

namespace kiln::cli {

Handler add_tracker_command(CLI::App& app);
Handler add_serve_command(CLI::App& app);
Handler add_pool_command(CLI::App& app);

}  // namespace kiln::cli
