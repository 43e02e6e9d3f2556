// Names of runtime data types.
#include "runtime/data_type.h"

#include <stdexcept>

namespace kiln::rt {

bool DataType::is_supported() const {
  switch (code) {
    case kInt:
      return bits == 8 || bits == 16 || bits == 32 || bits == 64;
    case kUInt:
      return bits == 1 || bits == 8 || bits == 16 || bits == 32 || bits == 64;
    case kFloat:
      return bits == 16 || bits == 32 || bits == 64;
    case kBFloat:
      return bits == 16;
  }
  return false;
}

std::string DataType::str() const {
  const char* prefix = "?";
  switch (code) {
    case kInt:
      prefix = "i";
      break;
    case kUInt:
      prefix = "u";
      break;
    case kFloat:
      prefix = "f";
      break;
    case kBFloat:
      prefix = "bf";
      break;
  }
  return prefix + std::to_string(bits);
}

DataType parse_data_type(const std::string& name) {
  struct Prefix {
    const char* text;
    DataType::Code code;
  };
  // "bf" before "f" so that "bf16" is not read as a float prefix.
  static const Prefix prefixes[] = {
      {"bf", DataType::kBFloat}, {"i", DataType::kInt}, {"u", DataType::kUInt}, {"f", DataType::kFloat}};
  for (const Prefix& p : prefixes) {
    std::string pre = p.text;
    if (name.size() <= pre.size() || name.compare(0, pre.size(), pre) != 0) continue;
    std::string digits = name.substr(pre.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 2) break;
    DataType t(p.code, std::stoi(digits));
    if (t.is_supported()) return t;
    break;
  }
  throw std::invalid_argument("unknown data type '" + name + "' (expected e.g. f32, f16, bf16, i8, i32, u8)");
}

}  // namespace kiln::rt
