// `kiln run --check`: compares a kernel's outputs with the reference
// interpreter evaluating the op's plain tensor-expression definition.
#pragma once

#include <string>
#include <vector>

#include "kernels/op_registry.h"
#include "runtime/ndarray.h"

namespace kiln {

struct CheckResult {
  bool ok = true;
  int64_t checked = 0;  // output elements compared
  std::string detail;   // first mismatch
};

// Allowed difference from the reference for an output of type t (floats
// are compared relative to the expected value; integers exactly).
double reference_tolerance(DType t);

CheckResult check_outputs(const OpInstance& op, const std::vector<rt::NDArray>& inputs,
                          const std::vector<rt::NDArray>& outputs, uint64_t seed);

}  // namespace kiln
