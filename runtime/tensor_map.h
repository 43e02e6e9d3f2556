// A tiled tensor map (Hopper's TMA, sm_90): the 128-byte descriptor
// (CUtensorMap) that a kernel takes by value as a __grid_constant__
// parameter and hands to cp.async.bulk.tensor. Its shape is fixed when the
// kernel is generated; only the buffer's address is not, so each launch
// encodes it for the buffer argument then (cuTensorMapEncodeTiled,
// rt::cuda::encode_tensor_map; a kiln lib library does the same in its own C).
//
// kiln's tensor maps move bytes as they are: the element type is the
// unsigned integer of the element's size, with no interleave, L2 promotion
// of 128 bytes and zeros for elements outside the tensor. The box lands
// densely, row after row; with `swizzle` 128 (CU_TENSOR_MAP_SWIZZLE_128B)
// its rows are 128 bytes and each 16-byte chunk of a row lands at chunk
// (chunk XOR (shared address / 128) % 8), the layout that
// Stage::storage_swizzle(128) gives a slot 1024-byte aligned.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace kiln::rt::cuda {

constexpr int kMaxTensorMapRank = 5;

struct TensorMapSpec {
  int rank = 0;                                           // 0: the parameter is not a tensor map
  int element_bytes = 0;                                  // 1, 2, 4 or 8
  std::array<uint64_t, kMaxTensorMapRank> dims{};         // elements, innermost first
  std::array<uint64_t, kMaxTensorMapRank - 1> strides{};  // bytes from one index of dims 1.. to the next
  std::array<uint32_t, kMaxTensorMapRank> box{};          // elements of each dim one copy moves
  int swizzle = 0;                                        // 0, or 128: the box's 128-byte rows land swizzled
  bool operator==(const TensorMapSpec& o) const {
    return rank == o.rank && element_bytes == o.element_bytes && dims == o.dims && strides == o.strides &&
           box == o.box && swizzle == o.swizzle;
  }
  bool operator!=(const TensorMapSpec& o) const { return !(*this == o); }
};

// What cuTensorMapEncodeTiled would refuse in `s` ("" when nothing): a rank
// of 1 to 5, an element of 1, 2, 4 or 8 bytes, dims of 1 to 2^32, strides
// that are multiples of 16 bytes below 2^40, box sides of 1 to 256 whose
// innermost one is a multiple of 16 bytes; a swizzle of 0 or 128, and with
// 128 rows of exactly 128 bytes (the driver takes up to 128; kiln's
// swizzled slots have whole 128-byte rows).
std::string tensor_map_problem(const TensorMapSpec& s);
// Whether `address` is where a tensor map may start (16-byte aligned).
inline bool tensor_map_address_ok(uint64_t address) { return address % 16 == 0; }
// "2-D map of 160 x 64 2-byte elements, box 32 x 64" (for messages), with
// ", 128-byte swizzle" when it swizzles.
std::string describe(const TensorMapSpec& s);

// The CUtensorMapDataType for an element of `bytes` bytes (UINT8, UINT16,
// UINT32 or UINT64).
int tensor_map_data_type(int element_bytes);
// The CUtensorMapSwizzle for `swizzle` bytes (0: NONE, 128: SWIZZLE_128B).
int tensor_map_swizzle_mode(int swizzle);

// The descriptor's bytes, as a kernel parameter holds them.
struct alignas(64) EncodedTensorMap {
  uint64_t opaque[16];
};

}  // namespace kiln::rt::cuda
