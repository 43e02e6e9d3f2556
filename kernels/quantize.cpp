#include "kernels/quantize.h"

#include <cmath>

#include "base/error.h"
#include "compute/expr_ops.h"

namespace kiln {

Expr requantize(Expr sum, Expr scale, DType out, bool relu) {
  if (out == DType::i32()) return relu ? max(sum, make_zero(sum.dtype())) : sum;
  Expr f = cast(DType::f32(), sum) * scale;
  if (out == DType::f32()) return relu ? max(f, make_zero(f.dtype())) : f;
  const double lo = relu || out.is_uint() ? 0.0 : -std::ldexp(1.0, out.bits - 1);
  const double hi = out.is_uint() ? std::ldexp(1.0, out.bits) - 1 : std::ldexp(1.0, out.bits - 1) - 1;
  return cast(out, min(max(round_even(f), make_const(DType::f32(), lo)), make_const(DType::f32(), hi)));
}

void check_quantized_output(const std::string& op, DType out) {
  user_check(out == DType::u8() || out == DType::i8() || out == DType::i32() || out == DType::f32())
      << op << ": the output is u8 or i8 (requantized), i32 (the sums) or f32 (dequantized), not " << out.str();
}

OpParam quantized_out_param() {
  return {OpParam::kDType, "out",
          "output type: u8 or i8 (requantized by scale, rounded to nearest even, saturated), f32 (dequantized), i32 "
          "(the sums)",
          "u8"};
}

}  // namespace kiln
