// HostTensor storage and element conversions, 16-bit float formats, and
// tensor comparison for the reference interpreter (compute/interpreter.h).
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "base/error.h"
#include "compute/interpreter.h"
#include "compute/interpreter_scalar.h"

namespace kiln {

// ------------------------------------------------------------------ f16 / bf16

uint16_t f16_bits_from_float(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow: infinity
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
    mant |= 0x800000u;
    int shift = 14 - e;
    uint32_t h = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;  // may carry into the smallest normal: still right
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;  // a carry may reach infinity: still right
  return static_cast<uint16_t>(sign | h);
}

float float_from_f16_bits(uint16_t h) {
  uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31)
    x = sign | 0x7f800000u | (mant << 13);
  else
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t bf16_bits_from_float(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float float_from_bf16_bits(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// ------------------------------------------------------------------ HostTensor

namespace {

bool is_f16(DType t) { return t.code == DType::kFloat && t.bits == 16; }
bool is_bf16(DType t) { return t.code == DType::kBFloat; }

std::string shape_str(const std::vector<int64_t>& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

// splitmix64: a portable deterministic generator.
uint64_t next_random(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

namespace interp {

int64_t wrap_int(DType t, int64_t v) {
  if (t.is_bool()) return v != 0;
  if (t.bits >= 64) return v;
  uint64_t mask = (uint64_t{1} << t.bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (t.is_int() && ((u >> (t.bits - 1)) & 1)) u |= ~mask;
  return static_cast<int64_t>(u);
}

int64_t float_to_int(DType t, double v) {
  if (std::isnan(v)) return 0;
  v = std::trunc(v);
  int64_t i;
  if (v >= 9223372036854775808.0) {
    bool fits_u64 = t.is_uint() && t.bits >= 64 && v < 18446744073709551616.0;
    i = fits_u64 ? static_cast<int64_t>(static_cast<uint64_t>(v)) : std::numeric_limits<int64_t>::max();
  } else if (v < -9223372036854775808.0) {
    i = std::numeric_limits<int64_t>::min();
  } else {
    i = static_cast<int64_t>(v);
  }
  return wrap_int(t, i);
}

}  // namespace interp

using interp::float_to_int;
using interp::wrap_int;

HostTensor::HostTensor(DType t, std::vector<int64_t> s) : dtype(t), shape(std::move(s)) {
  user_check(t.is_scalar() && !t.is_handle()) << "a host tensor holds scalar elements, not " << t.str();
  for (int64_t d : shape) user_check(d >= 0) << "host tensor extent " << d << " in shape " << shape_str(shape);
  bytes.assign(static_cast<size_t>(num_elements() * t.bytes()), 0);
}

int64_t HostTensor::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t HostTensor::flat_index(const std::vector<int64_t>& index) const {
  user_check(index.size() == shape.size())
      << "index with " << index.size() << " coordinates into a tensor of shape " << shape_str(shape);
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    user_check(index[d] >= 0 && index[d] < shape[d])
        << "index " << shape_str(index) << " is outside the tensor's shape " << shape_str(shape);
    flat = flat * shape[d] + index[d];
  }
  return flat;
}

void HostTensor::check_elem_size(size_t size) const {
  user_check(static_cast<int>(size) == dtype.bytes())
      << "typed access of " << size << "-byte elements to a " << dtype.str() << " tensor";
}

double HostTensor::get_float(int64_t i) const {
  internal_assert(i >= 0 && i < num_elements()) << i;
  const uint8_t* p = bytes.data() + i * dtype.bytes();
  if (dtype.is_float()) {
    if (is_f16(dtype) || is_bf16(dtype)) {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return is_f16(dtype) ? float_from_f16_bits(h) : float_from_bf16_bits(h);
    }
    if (dtype.bits == 32) {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  int64_t v = get_int(i);
  if (dtype.is_uint() && dtype.bits >= 64) return static_cast<double>(static_cast<uint64_t>(v));
  return static_cast<double>(v);
}

int64_t HostTensor::get_int(int64_t i) const {
  internal_assert(i >= 0 && i < num_elements()) << i;
  if (dtype.is_float()) return float_to_int(DType::i64(), get_float(i));
  const uint8_t* p = bytes.data() + i * dtype.bytes();
  uint64_t u = 0;
  std::memcpy(&u, p, static_cast<size_t>(dtype.bytes()));  // little-endian host
  return wrap_int(dtype, static_cast<int64_t>(u));
}

void HostTensor::set_float(int64_t i, double v) {
  internal_assert(i >= 0 && i < num_elements()) << i;
  uint8_t* p = bytes.data() + i * dtype.bytes();
  if (!dtype.is_float()) {
    set_int(i, dtype.is_bool() ? int64_t(v != 0) : float_to_int(dtype, v));
    return;
  }
  if (is_f16(dtype) || is_bf16(dtype)) {
    float f = static_cast<float>(v);
    uint16_t h = is_f16(dtype) ? f16_bits_from_float(f) : bf16_bits_from_float(f);
    std::memcpy(p, &h, 2);
  } else if (dtype.bits == 32) {
    float f = static_cast<float>(v);
    std::memcpy(p, &f, 4);
  } else {
    std::memcpy(p, &v, 8);
  }
}

void HostTensor::set_int(int64_t i, int64_t v) {
  internal_assert(i >= 0 && i < num_elements()) << i;
  if (dtype.is_float()) {
    set_float(i, static_cast<double>(v));
    return;
  }
  uint64_t u = static_cast<uint64_t>(wrap_int(dtype, v));
  std::memcpy(bytes.data() + i * dtype.bytes(), &u, static_cast<size_t>(dtype.bytes()));  // little-endian host
}

void HostTensor::fill_random(uint64_t seed, double lo, double hi) {
  uint64_t state = seed;
  int64_t n = num_elements();
  if (dtype.is_float()) {
    for (int64_t i = 0; i < n; ++i) {
      double u = static_cast<double>(next_random(&state) >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
      set_float(i, lo + (hi - lo) * u);
    }
    return;
  }
  if (dtype.is_bool()) {
    for (int64_t i = 0; i < n; ++i) set_int(i, static_cast<int64_t>(next_random(&state) & 1));
    return;
  }
  double tlo = dtype.is_uint() ? 0.0 : -std::ldexp(1.0, dtype.bits - 1);
  double thi = dtype.is_uint() ? std::ldexp(1.0, dtype.bits) - 1 : std::ldexp(1.0, dtype.bits - 1) - 1;
  double a = std::max(std::ceil(lo), tlo), b = std::min(std::floor(hi), thi);
  user_check(a <= b) << "fill_random: no " << dtype.str() << " value in [" << lo << ", " << hi << "]";
  double width = b - a;
  uint64_t span = width >= 18446744073709551615.0 ? 0 : static_cast<uint64_t>(width) + 1;  // 0: all 2^64 values
  for (int64_t i = 0; i < n; ++i) {
    uint64_t r = span == 0 ? next_random(&state) : next_random(&state) % span;
    set_int(i, static_cast<int64_t>(a) + static_cast<int64_t>(r));
  }
}

std::string compare_tensors(const HostTensor& expected, const HostTensor& actual, double rtol, double atol) {
  std::ostringstream os;
  if (expected.dtype != actual.dtype) {
    os << "dtype " << actual.dtype.str() << ", expected " << expected.dtype.str();
    return os.str();
  }
  if (expected.shape != actual.shape) {
    os << "shape " << shape_str(actual.shape) << ", expected " << shape_str(expected.shape);
    return os.str();
  }
  int64_t n = expected.num_elements(), bad = 0, first = -1;
  bool exact = !expected.dtype.is_float();
  for (int64_t i = 0; i < n; ++i) {
    bool ok;
    if (exact) {
      ok = expected.get_int(i) == actual.get_int(i);
    } else {
      double e = expected.get_float(i), a = actual.get_float(i);
      ok = (std::isnan(e) && std::isnan(a)) || e == a || std::fabs(a - e) <= atol + rtol * std::fabs(e);
    }
    if (!ok && bad++ == 0) first = i;
  }
  if (bad == 0) return "";
  std::vector<int64_t> idx(expected.shape.size());
  int64_t rest = first;
  for (size_t d = expected.shape.size(); d-- > 0;) {
    idx[d] = rest % expected.shape[d];
    rest /= expected.shape[d];
  }
  os.precision(9);
  os << bad << " of " << n << " elements differ; first at " << shape_str(idx) << ": got ";
  if (exact)
    os << actual.get_int(first) << ", expected " << expected.get_int(first);
  else
    os << actual.get_float(first) << ", expected " << expected.get_float(first);
  return os.str();
}

}  // namespace kiln
