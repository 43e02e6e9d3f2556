// base/: KILN_LOG's levels.
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>

#include "base/error.h"
#include "base/log.h"

using namespace kiln;

TEST_CASE("KILN_LOG sets spdlog's level, unset or empty is info") {
  init_logging(std::string("debug"));
  CHECK(spdlog::get_level() == spdlog::level::debug);
  init_logging(std::string("WARN"));
  CHECK(spdlog::get_level() == spdlog::level::warn);
  init_logging(std::string("error"));
  CHECK(spdlog::get_level() == spdlog::level::err);
  init_logging(std::string("info"));
  CHECK(spdlog::get_level() == spdlog::level::info);
  init_logging(std::string(""));
  CHECK(spdlog::get_level() == spdlog::level::info);
  init_logging(std::nullopt);
  CHECK(spdlog::get_level() == spdlog::level::info);
  CHECK(spdlog::default_logger()->name() == "kiln");  // stderr, not stdout
}

TEST_CASE("a KILN_LOG that names no level is a user error saying which exist") {
  CHECK_THROWS_AS(init_logging(std::string("verbose")), UserError);
  CHECK_THROWS_WITH(init_logging(std::string("verbose")),
                    "KILN_LOG='verbose' names no log level; use debug, info, warn or error");
}
