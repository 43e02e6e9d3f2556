// Scalar and vector data types: {int, uint, float, bfloat, handle} x bits x lanes.
#pragma once

#include <cstdint>
#include <string>

namespace kiln {

struct DType {
  enum Code : uint8_t { kInt, kUInt, kFloat, kBFloat, kHandle };
  Code code = kInt;
  uint8_t bits = 32;
  uint16_t lanes = 1;

  constexpr DType() = default;
  constexpr DType(Code c, int b, int l = 1) : code(c), bits(static_cast<uint8_t>(b)), lanes(static_cast<uint16_t>(l)) {}

  static constexpr DType f16() { return {kFloat, 16}; }
  static constexpr DType bf16() { return {kBFloat, 16}; }
  static constexpr DType f32() { return {kFloat, 32}; }
  static constexpr DType f64() { return {kFloat, 64}; }
  static constexpr DType i8() { return {kInt, 8}; }
  static constexpr DType u8() { return {kUInt, 8}; }
  static constexpr DType i32() { return {kInt, 32}; }
  static constexpr DType i64() { return {kInt, 64}; }
  static constexpr DType boolean() { return {kUInt, 1}; }
  static constexpr DType handle() { return {kHandle, 64}; }

  bool is_int() const { return code == kInt; }
  bool is_uint() const { return code == kUInt; }
  bool is_bool() const { return code == kUInt && bits == 1; }
  bool is_integer() const { return (code == kInt || code == kUInt) && !is_bool(); }
  bool is_float() const { return code == kFloat || code == kBFloat; }
  bool is_handle() const { return code == kHandle; }
  bool is_scalar() const { return lanes == 1; }
  bool is_vector() const { return lanes > 1; }
  int bytes() const { return (bits + 7) / 8; }

  DType with_lanes(int l) const { return {code, bits, l}; }
  DType element_of() const { return with_lanes(1); }

  bool operator==(const DType& o) const { return code == o.code && bits == o.bits && lanes == o.lanes; }
  bool operator!=(const DType& o) const { return !(*this == o); }

  // "f32", "i8", "u1" (bool), "bf16", "f32x16", "handle".
  std::string str() const;
};

// Parses the names that str() prints; also accepts "float32", "int8", "bool".
// Throws user_error on an unknown name.
DType parse_dtype(const std::string& name);

}  // namespace kiln
