// Golden files: generated text compared with a file under tests/golden/, so
// that a change to lowering or code generation shows its effect on real
// kernels in review. KILN_UPDATE_GOLDEN=1 rewrites the file instead; that
// run compares nothing, so it reports the test as skipped (support/skip.h).
#pragma once

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "skip.h"

namespace kiln::testing {

inline void check_golden_text(const std::string& file_name, const std::string& text) {
  const std::string path = std::string(KILN_GOLDEN_DIR) + "/" + file_name;
  const char* update = std::getenv("KILN_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(path) << text;
    KILN_SKIP("rewrote the golden file " << path << " (KILN_UPDATE_GOLDEN=1): nothing compared");
  }
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream want;
  want << in.rdbuf();
  INFO("golden file " << path << " (KILN_UPDATE_GOLDEN=1 regenerates it)");
  CHECK(text == want.str());
}

}  // namespace kiln::testing
