// NDArray storage, element access, deterministic random fill and comparison.
#include "runtime/ndarray.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "runtime/float16.h"

namespace kiln::rt {
namespace {

// SplitMix64: a tiny, well-mixed generator; element i of seed s depends only
// on (s, i), so fills are reproducible everywhere.
uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <class T>
T load(const void* base, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

template <class T>
void store(void* base, int64_t i, T v) {
  std::memcpy(static_cast<char*>(base) + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

double read_element(const void* p, DataType t, int64_t i) {
  switch (t.code) {
    case DataType::kInt:
      switch (t.bits) {
        case 8:
          return load<int8_t>(p, i);
        case 16:
          return load<int16_t>(p, i);
        case 32:
          return load<int32_t>(p, i);
        case 64:
          return static_cast<double>(load<int64_t>(p, i));
      }
      break;
    case DataType::kUInt:
      switch (t.bits) {
        case 1:
        case 8:
          return load<uint8_t>(p, i);
        case 16:
          return load<uint16_t>(p, i);
        case 32:
          return load<uint32_t>(p, i);
        case 64:
          return static_cast<double>(load<uint64_t>(p, i));
      }
      break;
    case DataType::kFloat:
      switch (t.bits) {
        case 16:
          return half_to_float(load<uint16_t>(p, i));
        case 32:
          return load<float>(p, i);
        case 64:
          return load<double>(p, i);
      }
      break;
    case DataType::kBFloat:
      if (t.bits == 16) return bfloat16_to_float(load<uint16_t>(p, i));
      break;
  }
  throw std::invalid_argument("unsupported data type " + t.str());
}

// Integers: saturated to the type's range, rounded to nearest.
template <class T>
T to_int(double v) {
  if (std::isnan(v)) return 0;
  double lo = static_cast<double>(std::numeric_limits<T>::min());
  double hi = static_cast<double>(std::numeric_limits<T>::max());
  if (v <= lo) return std::numeric_limits<T>::min();
  if (v >= hi) return std::numeric_limits<T>::max();
  return static_cast<T>(std::llround(v));
}

void write_element(void* p, DataType t, int64_t i, double v) {
  switch (t.code) {
    case DataType::kInt:
      switch (t.bits) {
        case 8:
          return store(p, i, to_int<int8_t>(v));
        case 16:
          return store(p, i, to_int<int16_t>(v));
        case 32:
          return store(p, i, to_int<int32_t>(v));
        case 64:
          return store(p, i, to_int<int64_t>(v));
      }
      break;
    case DataType::kUInt:
      switch (t.bits) {
        case 1:
          return store<uint8_t>(p, i, v != 0 ? 1 : 0);
        case 8:
          return store(p, i, to_int<uint8_t>(v));
        case 16:
          return store(p, i, to_int<uint16_t>(v));
        case 32:
          return store(p, i, to_int<uint32_t>(v));
        case 64:
          if (!(v > 0)) return store(p, i, uint64_t{0});  // also NaN
          if (v >= 18446744073709551615.0) return store(p, i, std::numeric_limits<uint64_t>::max());
          return store(p, i, static_cast<uint64_t>(std::round(v)));
      }
      break;
    case DataType::kFloat:
      switch (t.bits) {
        case 16:
          return store(p, i, float_to_half(static_cast<float>(v)));
        case 32:
          return store(p, i, static_cast<float>(v));
        case 64:
          return store(p, i, v);
      }
      break;
    case DataType::kBFloat:
      if (t.bits == 16) return store(p, i, float_to_bfloat16(static_cast<float>(v)));
      break;
  }
  throw std::invalid_argument("unsupported data type " + t.str());
}

bool element_close(double a, double e, double rtol, double atol) {
  if (std::isnan(a) || std::isnan(e)) return std::isnan(a) && std::isnan(e);
  if (std::isinf(a) || std::isinf(e)) return a == e;
  return std::fabs(a - e) <= atol + rtol * std::fabs(e);
}

std::string index_str(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return shape_str(idx);
}

}  // namespace

std::string shape_str(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

NDArray NDArray::empty(const std::vector<int64_t>& shape, DataType dtype) {
  if (!dtype.is_supported()) throw std::invalid_argument("NDArray: unsupported data type " + dtype.str());
  for (int64_t e : shape) {
    if (e < 0) throw std::invalid_argument("NDArray: negative extent in shape " + shape_str(shape));
  }
  NDArray a;
  a.shape_ = shape;
  a.dtype_ = dtype;
  // aligned_alloc needs a size that is a multiple of the alignment; keep at
  // least one block so that data() is never null, even for empty arrays.
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  size_t bytes = static_cast<size_t>(n) * dtype.bytes();
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (!p) throw std::bad_alloc();
  a.storage_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  return a;
}

int64_t NDArray::num_elements() const {
  if (!defined()) return 0;
  int64_t n = 1;
  for (int64_t e : shape_) n *= e;
  return n;
}

double NDArray::get(int64_t flat_index) const {
  if (flat_index < 0 || flat_index >= num_elements()) throw std::out_of_range("NDArray::get: index out of range");
  return read_element(data(), dtype_, flat_index);
}

void NDArray::set(int64_t flat_index, double value) const {
  if (flat_index < 0 || flat_index >= num_elements()) throw std::out_of_range("NDArray::set: index out of range");
  write_element(data(), dtype_, flat_index, value);
}

void NDArray::fill_random(uint64_t seed) const {
  int64_t n = num_elements();
  uint64_t base = splitmix64(seed);
  void* p = data();
  for (int64_t i = 0; i < n; ++i) {
    uint64_t r = splitmix64(base + static_cast<uint64_t>(i));
    double v;
    if (dtype_.is_float()) {
      v = static_cast<double>(r >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0;  // 53 bits -> [-1, 1)
    } else if (dtype_.bits == 1) {
      v = static_cast<double>(r & 1);
    } else {
      // Integers span their type's whole range (the low bytes of r), so that
      // wrap-around is exercised; compute/expr.h says integer arithmetic wraps.
      std::memcpy(static_cast<char*>(p) + i * dtype_.bytes(), &r, static_cast<size_t>(dtype_.bytes()));
      continue;
    }
    write_element(p, dtype_, i, v);
  }
}

void NDArray::fill_zero() const {
  if (defined()) std::memset(data(), 0, nbytes());
}

NDArray NDArray::copy() const {
  if (!defined()) return NDArray();
  NDArray c = empty(shape_, dtype_);
  std::memcpy(c.data(), data(), nbytes());
  return c;
}

CompareResult compare(const NDArray& actual, const NDArray& expected, double rtol, double atol) {
  CompareResult r;
  if (!actual.defined() || !expected.defined()) {
    r.ok = false;
    r.message = "cannot compare an undefined array";
    return r;
  }
  if (actual.shape() != expected.shape() || actual.dtype() != expected.dtype()) {
    r.ok = false;
    r.message = "array mismatch: actual is " + actual.dtype().str() + shape_str(actual.shape()) + ", expected " +
                expected.dtype().str() + shape_str(expected.shape());
    return r;
  }
  int64_t n = actual.num_elements();
  DataType t = actual.dtype();
  double first_a = 0, first_e = 0;
  for (int64_t i = 0; i < n; ++i) {
    double a = read_element(actual.data(), t, i);
    double e = read_element(expected.data(), t, i);
    bool close = element_close(a, e, rtol, atol);
    if (!close) {
      if (r.num_bad == 0) {
        r.first_bad_index = i;
        first_a = a;
        first_e = e;
      }
      ++r.num_bad;
    }
    double err = std::fabs(a - e);
    if (std::isnan(err)) {
      if (close) continue;  // NaN == NaN or inf == inf
      err = std::numeric_limits<double>::infinity();
    }
    r.max_abs_err = std::max(r.max_abs_err, err);
    if (e != 0) r.max_rel_err = std::max(r.max_rel_err, err / std::fabs(e));
  }
  if (r.num_bad > 0) {
    r.ok = false;
    std::ostringstream os;
    os.precision(9);
    os << r.num_bad << " of " << n << " elements differ (rtol " << rtol << ", atol " << atol << "); first at "
       << index_str(actual.shape(), r.first_bad_index) << ": actual " << first_a << ", expected " << first_e
       << "; max abs err " << r.max_abs_err << ", max rel err " << r.max_rel_err;
    r.message = os.str();
  }
  return r;
}

}  // namespace kiln::rt
