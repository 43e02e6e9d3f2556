// Bit-level f16 / bf16 <-> f32 conversions (round to nearest even; NaN stays
// NaN, overflow becomes infinity, f16 subnormals are handled exactly).
#include "runtime/float16.h"

#include <cstring>

namespace kiln::rt {
namespace {

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace

uint16_t float_to_half(float f) {
  uint32_t x = float_bits(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN (NaN keeps a quiet payload bit)
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
  int exp = static_cast<int>(abs >> 23) - 127;
  if (exp < -25) return sign;                     // below half the smallest subnormal: +-0
  uint32_t mant = (abs & 0x7fffffu) | 0x800000u;  // 24-bit significand with the hidden bit
  // A normal half keeps 11 significant bits; a subnormal fewer.
  int shift = exp >= -14 ? 13 : 13 + (-14 - exp);
  uint32_t kept = mant >> shift;
  uint32_t rest = mant & ((1u << shift) - 1);
  uint32_t half_way = 1u << (shift - 1);
  if (rest > half_way || (rest == half_way && (kept & 1u))) ++kept;
  if (exp >= -14) {
    // kept includes the hidden bit (0x400); adding the biased exponent lets a
    // mantissa carry roll over into the exponent naturally.
    return static_cast<uint16_t>(sign | ((static_cast<uint32_t>(exp + 14) << 10) + kept));
  }
  return static_cast<uint16_t>(sign | kept);  // subnormal (a carry yields the smallest normal)
}

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return bits_float(sign);
    // Subnormal: value = mant * 2^-24, exact in float.
    float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t float_to_bfloat16(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

float bfloat16_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

}  // namespace kiln::rt
