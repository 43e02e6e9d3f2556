#include "runtime/tensor_map.h"

#include <sstream>

namespace kiln::rt::cuda {

std::string tensor_map_problem(const TensorMapSpec& s) {
  std::ostringstream os;
  if (s.rank < 1 || s.rank > kMaxTensorMapRank) {
    os << "a tensor map has 1 to " << kMaxTensorMapRank << " dimensions, not " << s.rank;
    return os.str();
  }
  if (s.element_bytes != 1 && s.element_bytes != 2 && s.element_bytes != 4 && s.element_bytes != 8) {
    os << "a tensor map's elements have 1, 2, 4 or 8 bytes, not " << s.element_bytes;
    return os.str();
  }
  for (int d = 0; d < s.rank; ++d) {
    if (s.dims[d] < 1 || s.dims[d] > (uint64_t{1} << 32)) {
      os << "dimension " << d << " of a tensor map has " << s.dims[d] << " elements, out of [1, 2^32]";
      return os.str();
    }
    if (s.box[d] < 1 || s.box[d] > 256) {
      os << "the box of a tensor map is " << s.box[d] << " elements along dimension " << d << ", out of [1, 256]";
      return os.str();
    }
  }
  for (int d = 1; d < s.rank; ++d) {
    const uint64_t st = s.strides[d - 1];
    if (st % 16 != 0 || st == 0 || st >= (uint64_t{1} << 40)) {
      os << "the stride of dimension " << d << " of a tensor map is " << st
         << " bytes; it must be a positive multiple of 16 below 2^40";
      return os.str();
    }
  }
  if (s.box[0] * static_cast<uint64_t>(s.element_bytes) % 16 != 0) {
    os << "the box's rows of a tensor map are " << s.box[0] * static_cast<uint64_t>(s.element_bytes)
       << " bytes; they must be a multiple of 16";
    return os.str();
  }
  if (s.swizzle != 0 && s.swizzle != 128) {
    os << "a tensor map swizzles 0 or 128 bytes, not " << s.swizzle;
    return os.str();
  }
  if (s.swizzle == 128 && s.box[0] * static_cast<uint64_t>(s.element_bytes) != 128) {
    os << "the box's rows of a 128-byte swizzled tensor map are " << s.box[0] * static_cast<uint64_t>(s.element_bytes)
       << " bytes; kiln swizzles whole 128-byte rows";
    return os.str();
  }
  return "";
}

std::string describe(const TensorMapSpec& s) {
  std::ostringstream os;
  os << s.rank << "-D map of ";
  for (int d = 0; d < s.rank; ++d) os << (d ? " x " : "") << s.dims[d];
  os << " " << s.element_bytes << "-byte elements, box ";
  for (int d = 0; d < s.rank; ++d) os << (d ? " x " : "") << s.box[d];
  if (s.swizzle) os << ", " << s.swizzle << "-byte swizzle";
  return os.str();
}

int tensor_map_data_type(int element_bytes) {
  switch (element_bytes) {
    case 1:
      return 0;  // CU_TENSOR_MAP_DATA_TYPE_UINT8
    case 2:
      return 1;  // UINT16
    case 4:
      return 2;  // UINT32
    default:
      return 4;  // UINT64
  }
}

int tensor_map_swizzle_mode(int swizzle) { return swizzle == 128 ? 3 : 0; }

}  // namespace kiln::rt::cuda
