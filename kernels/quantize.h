// Requantization, shared by kiln's int8 ops (qmatmul, qdense,
// qconv2d_nchwc): an i32 sum (bias already added) times an f32 scale into
// the op's output type, the rule the interpreter states and the kernels
// follow exactly:
//   u8, i8  round_even(f32(sum) * scale), saturated to the type (relu: at 0)
//   f32     f32(sum) * scale (relu: max 0)
//   i32     the sum itself (relu: max 0); no scale.
// One f32 multiply and no add after it, so no backend can fuse it into
// something that rounds differently.
#pragma once

#include <string>

#include "compute/expr.h"
#include "kernels/op_registry.h"

namespace kiln {

// `scale` is ignored (may be undefined) for an i32 output.
Expr requantize(Expr sum, Expr scale, DType out, bool relu);

// user_error unless `out` is u8, i8, i32 or f32 (`op` names the op).
void check_quantized_output(const std::string& op, DType out);

// The output-type parameter of the int8 ops ("out", default u8).
OpParam quantized_out_param();

}  // namespace kiln
