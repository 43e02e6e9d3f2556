// NDArray: a dense, row-major, 64-byte-aligned host buffer with a shape and a
// data type, used to feed kernels and to check their results. Copying an
// NDArray shares the storage (a handle); copy() makes an independent array.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/data_type.h"

namespace kiln::rt {

class NDArray {
 public:
  static constexpr size_t kAlignment = 64;

  NDArray() = default;  // undefined: no storage

  // Uninitialized storage. Throws std::invalid_argument on a negative extent
  // or an unsupported data type.
  static NDArray empty(const std::vector<int64_t>& shape, DataType dtype);

  bool defined() const { return storage_ != nullptr; }
  const std::vector<int64_t>& shape() const { return shape_; }
  DataType dtype() const { return dtype_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t num_elements() const;
  size_t nbytes() const { return static_cast<size_t>(num_elements()) * dtype_.bytes(); }

  void* data() const { return storage_.get(); }
  template <class T>
  T* data_as() const {
    return static_cast<T*>(storage_.get());
  }

  // Element `flat_index` (row-major) converted to / from double.
  double get(int64_t flat_index) const;
  void set(int64_t flat_index, double value) const;

  // Deterministic pseudo-random contents for `seed`: floats uniform in
  // [-1, 1]; integers uniform over their type's whole range (accumulations
  // wrap, as integer arithmetic does everywhere in kiln); bools 0 or 1.
  void fill_random(uint64_t seed) const;
  void fill_zero() const;

  NDArray copy() const;  // deep copy

 private:
  std::vector<int64_t> shape_;
  DataType dtype_;
  std::shared_ptr<void> storage_;
};

struct CompareResult {
  bool ok = true;
  double max_abs_err = 0;
  double max_rel_err = 0;        // over elements whose expected value is non-zero
  int64_t first_bad_index = -1;  // row-major flat index, -1 when ok
  int64_t num_bad = 0;
  std::string message;  // empty when ok
};

// Element-wise |actual - expected| <= atol + rtol * |expected| (numpy's
// allclose). A NaN matches only a NaN, an infinity only the same infinity.
// Arrays of different shape or data type never match. Half-precision types are
// compared after conversion to float, integers exactly as doubles.
CompareResult compare(const NDArray& actual, const NDArray& expected, double rtol, double atol);

std::string shape_str(const std::vector<int64_t>& shape);  // "[2, 3]"

}  // namespace kiln::rt
