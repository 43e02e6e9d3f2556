// The message of verify_pipeline_tokens on a loop nest, or "" when its
// tokens balance (shared by the pipeline and warp-specialization tests).
#pragma once

#include <string>

#include "base/error.h"
#include "schedule/verify.h"

namespace kiln {
namespace testing {

inline std::string token_error(const Stmt& s) {
  try {
    verify_pipeline_tokens(s);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace testing
}  // namespace kiln
