// Workload strings: "matmul:M=1024,N=1024,K=1024" or
// "conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1". The op name,
// then comma-separated NAME=VALUE parameters. Parsing checks the syntax;
// the op definition checks names and values (see op_registry.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compute/dtype.h"

namespace kiln {

struct Workload {
  std::string op;
  std::vector<std::pair<std::string, std::string>> params;  // as written, in order

  // Throws user_error naming the problem: empty string, missing ':', an
  // entry that is not NAME=VALUE, a parameter given twice.
  static Workload parse(const std::string& text);

  bool has(const std::string& name) const;
  const std::string* find(const std::string& name) const;
  std::string text;  // the string it was parsed from
};

}  // namespace kiln
