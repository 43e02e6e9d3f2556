// Element data types of runtime buffers. A deliberately small mirror of
// compute/dtype.h (runtime/ must not depend on compute/): scalar types only,
// with the same Code numbering so a DType converts by copying code and bits.
#pragma once

#include <cstdint>
#include <string>

namespace kiln::rt {

struct DataType {
  enum Code : uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kBFloat = 3 };
  Code code = kFloat;
  uint8_t bits = 32;

  constexpr DataType() = default;
  constexpr DataType(Code c, int b) : code(c), bits(static_cast<uint8_t>(b)) {}

  static constexpr DataType f16() { return {kFloat, 16}; }
  static constexpr DataType bf16() { return {kBFloat, 16}; }
  static constexpr DataType f32() { return {kFloat, 32}; }
  static constexpr DataType f64() { return {kFloat, 64}; }
  static constexpr DataType i8() { return {kInt, 8}; }
  static constexpr DataType i16() { return {kInt, 16}; }
  static constexpr DataType i32() { return {kInt, 32}; }
  static constexpr DataType i64() { return {kInt, 64}; }
  static constexpr DataType u8() { return {kUInt, 8}; }
  static constexpr DataType u16() { return {kUInt, 16}; }
  static constexpr DataType u32() { return {kUInt, 32}; }
  static constexpr DataType u64() { return {kUInt, 64}; }
  static constexpr DataType boolean() { return {kUInt, 1}; }

  // Storage size of one element; a bool (u1) takes one byte.
  constexpr int bytes() const { return (bits + 7) / 8; }
  constexpr bool is_float() const { return code == kFloat || code == kBFloat; }
  constexpr bool is_int() const { return code == kInt; }
  constexpr bool is_uint() const { return code == kUInt; }

  // Whether NDArray can store, fill and compare this type: i8/16/32/64,
  // u1/8/16/32/64, f16/32/64, bf16.
  bool is_supported() const;

  constexpr bool operator==(const DataType& o) const { return code == o.code && bits == o.bits; }
  constexpr bool operator!=(const DataType& o) const { return !(*this == o); }

  // "f32", "i8", "u8", "i32", "f64", "f16", "bf16", "u1" (the names compute/dtype.h prints).
  std::string str() const;
};

// Parses the names str() prints. Throws std::invalid_argument on anything else.
DataType parse_data_type(const std::string& name);

}  // namespace kiln::rt
