// Conversions between float and the 16-bit float formats (IEEE half and
// bfloat16), both rounding to nearest even. Used to fill and compare f16/bf16
// buffers on hosts without native half-precision arithmetic.
#pragma once

#include <cstdint>

namespace kiln::rt {

uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
uint16_t float_to_bfloat16(float f);
float bfloat16_to_float(uint16_t b);

}  // namespace kiln::rt
