// The CUDA C spellings of kiln's types, names, literals and math functions
// (see cuda_c_spelling.h).
#include "codegen/cuda_c_spelling.h"

#include <cctype>
#include <cmath>
#include <cstdio>

#include "base/error.h"
#include "codegen/build.h"
#include "compute/interpreter.h"

namespace kiln {
namespace cuda_c {

bool is_narrow_float(DType t) { return t.is_float() && t.bits == 16; }

std::string c_type(DType t) {
  internal_assert(t.lanes == 1) << "c_type of a vector";
  if (t.is_bool()) return "bool";
  if (t.is_float() && t.bits <= 32) return "float";
  if (t.is_float() && t.code == DType::kFloat && t.bits == 64) return "double";
  if (t.is_int()) {
    switch (t.bits) {
      case 8:
        return "signed char";
      case 16:
        return "short";
      case 32:
        return "int";
      case 64:
        return "long long";
    }
  }
  if (t.is_uint()) {
    switch (t.bits) {
      case 8:
        return "unsigned char";
      case 16:
        return "unsigned short";
      case 32:
        return "unsigned int";
      case 64:
        return "unsigned long long";
    }
  }
  user_error() << "the cuda backend does not handle element type " << t.str()
               << " (f16, bf16, f32, f64, bool and integers)";
}

std::string storage_type(DType t) {
  if (is_narrow_float(t)) return t.code == DType::kBFloat ? "kiln_bfloat16" : "kiln_half";
  return c_type(t);
}

std::string narrow_suffix(DType t) { return t.code == DType::kBFloat ? "bf16" : "f16"; }

std::string sanitize(const std::string& name) {
  std::string s = c_identifier_chars(name);
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "v_" + s;
  return s;
}

std::string float_literal(double v, DType t) {
  const bool f32 = t.bits <= 32;
  if (is_narrow_float(t) && std::isfinite(v))
    v = t.code == DType::kBFloat ? float_from_bf16_bits(bf16_bits_from_float(static_cast<float>(v)))
                                 : float_from_f16_bits(f16_bits_from_float(static_cast<float>(v)));
  if (std::isnan(v)) return f32 ? "kiln_bits_f32(0x7fc00000u)" : "kiln_bits_f64(0x7ff8000000000000ull)";
  if (std::isinf(v)) {
    if (f32) return v > 0 ? "kiln_bits_f32(0x7f800000u)" : "kiln_bits_f32(0xff800000u)";
    return v > 0 ? "kiln_bits_f64(0x7ff0000000000000ull)" : "kiln_bits_f64(0xfff0000000000000ull)";
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), f32 ? "%.9g" : "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  if (f32) s += "f";
  return v < 0 ? "(" + s + ")" : s;
}

const char* math_name(MathOp op, bool f32) {
  switch (op) {
    case MathOp::kExp:
      return f32 ? "expf" : "exp";
    case MathOp::kLog:
      return f32 ? "logf" : "log";
    case MathOp::kSqrt:
      return f32 ? "sqrtf" : "sqrt";
    case MathOp::kTanh:
      return f32 ? "tanhf" : "tanh";
    case MathOp::kErf:
      return f32 ? "erff" : "erf";
    case MathOp::kPow:
      return f32 ? "powf" : "pow";
    case MathOp::kFabs:
      return f32 ? "fabsf" : "fabs";
    case MathOp::kFloor:
      return f32 ? "floorf" : "floor";
    case MathOp::kCeil:
      return f32 ? "ceilf" : "ceil";
    case MathOp::kRound:
      return f32 ? "roundf" : "round";
    case MathOp::kRoundEven:
      return f32 ? "rintf" : "rint";  // the default rounding mode: to nearest even
    case MathOp::kSigmoid:
      return "";
  }
  return "";
}

}  // namespace cuda_c
}  // namespace kiln
