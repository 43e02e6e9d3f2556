// Internal to the reference interpreter: scalar conversions shared by the
// evaluator (interpreter_eval.cpp) and HostTensor (interpreter_tensor.cpp).
#pragma once

#include <cstdint>

#include "compute/dtype.h"

namespace kiln {
namespace interp {

// v wrapped to the width of integer type t (sign-extended for signed types;
// bool becomes v != 0).
int64_t wrap_int(DType t, int64_t v);
// C-style float -> integer t: truncate toward zero, NaN -> 0, saturate to the
// 64-bit range, then wrap to t's width.
int64_t float_to_int(DType t, double v);

}  // namespace interp
}  // namespace kiln
