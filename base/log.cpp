// KILN_LOG handling (see log.h).
#include "base/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "base/error.h"

namespace kiln {

void init_logging(const std::optional<std::string>& kiln_log) {
  spdlog::level::level_enum level = spdlog::level::info;
  if (kiln_log && !kiln_log->empty()) {
    std::string name = *kiln_log;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    if (name == "debug") level = spdlog::level::debug;
    else if (name == "info") level = spdlog::level::info;
    else if (name == "warn" || name == "warning") level = spdlog::level::warn;
    else if (name == "error") level = spdlog::level::err;
    else user_error() << "KILN_LOG='" << *kiln_log << "' names no log level; use debug, info, warn or error";
  }
  // One stderr logger for the whole process (spdlog's default one writes to
  // stdout, which carries command output such as `kiln tune --json`).
  if (!spdlog::get("kiln")) spdlog::set_default_logger(spdlog::stderr_color_mt("kiln"));
  spdlog::set_level(level);
}

void init_logging_from_env() {
  const char* v = std::getenv("KILN_LOG");
  init_logging(v ? std::optional<std::string>(v) : std::nullopt);
}

}  // namespace kiln
