#include "compute/dtype.h"

#include "base/error.h"

namespace kiln {

std::string DType::str() const {
  std::string s;
  switch (code) {
    case kInt:
      s = "i" + std::to_string(bits);
      break;
    case kUInt:
      s = "u" + std::to_string(bits);
      break;
    case kFloat:
      s = "f" + std::to_string(bits);
      break;
    case kBFloat:
      s = "bf" + std::to_string(bits);
      break;
    case kHandle:
      return "handle";
  }
  if (lanes > 1) s += "x" + std::to_string(lanes);
  return s;
}

DType parse_dtype(const std::string& name) {
  static const struct {
    const char* name;
    DType t;
  } table[] = {{"f16", DType::f16()},
               {"float16", DType::f16()},
               {"bf16", DType::bf16()},
               {"bfloat16", DType::bf16()},
               {"f32", DType::f32()},
               {"float32", DType::f32()},
               {"f64", DType::f64()},
               {"float64", DType::f64()},
               {"i8", DType::i8()},
               {"int8", DType::i8()},
               {"u8", DType::u8()},
               {"uint8", DType::u8()},
               {"i32", DType::i32()},
               {"int32", DType::i32()},
               {"i64", DType::i64()},
               {"int64", DType::i64()},
               {"bool", DType::boolean()},
               {"u1", DType::boolean()},
               {"i16", DType(DType::kInt, 16)},
               {"u16", DType(DType::kUInt, 16)},
               {"u32", DType(DType::kUInt, 32)}};
  for (const auto& e : table)
    if (name == e.name) return e.t;
  user_error() << "unknown dtype '" << name << "' (expected one of f32, f64, f16, bf16, i8, u8, i32, i64)";
}

}  // namespace kiln
