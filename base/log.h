// Logging set-up shared by every executable (DESIGN.md): KILN_LOG sets
// spdlog's level. Messages go to stderr, so that a command's output on
// stdout stays machine-readable.
#pragma once

#include <optional>
#include <string>

namespace kiln {

// The level named by KILN_LOG ("debug", "info", "warn" or "error"; case
// does not matter), or the default (info, which the commands use only for
// events a server operator wants to see) when it is unset or empty.
// A value that names no level is a user_error saying which ones exist.
void init_logging_from_env();

// Same, from a given value (nullopt: unset); the tested core of the above.
void init_logging(const std::optional<std::string>& kiln_log);

}  // namespace kiln
