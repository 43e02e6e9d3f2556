// The activations a convolution's epilogue can fuse after its bias, chosen
// by the workload flags relu, relu6, hswish and hsigmoid (at most one):
//   relu:     max(x, 0)
//   relu6:    min(max(x, 0), 6)
//   hswish:   x * relu6(x + 3) / 6      (MobileNetV3's hard-swish)
//   hsigmoid: relu6(x + 3) / 6          (MobileNetV3's hard-sigmoid)
// min and max propagate NaN (compute/expr.h), so every activation maps NaN
// to NaN. hswish and hsigmoid need a floating-point type.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "compute/dtype.h"
#include "compute/expr.h"

namespace kiln {

enum class Activation { kNone, kRelu, kRelu6, kHardSwish, kHardSigmoid };

// The workload flag that selects `a` ("relu", ...; "" for kNone).
const char* activation_flag(Activation a);
// The activation the op's flags select: user_error when more than one is
// set, or hswish / hsigmoid on an integer type. An op with two activations
// names the second one's flags with a prefix ("dw_relu6", ...).
Activation activation_from_flags(const std::string& op, const std::map<std::string, int64_t>& ints, DType dtype,
                                 const std::string& prefix = "");
// The activation of an already built op's ints (flags missing count as 0).
Activation activation_of(const std::map<std::string, int64_t>& ints, const std::string& prefix = "");
// Sets every activation flag in `ints`: 1 for `a`, 0 for the others.
void set_activation_flags(Activation a, std::map<std::string, int64_t>* ints);
// `a` applied to v.
Expr apply_activation(Expr v, Activation a);

}  // namespace kiln
