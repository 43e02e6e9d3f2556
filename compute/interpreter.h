// Reference interpreter: evaluates tensor-expression definitions (the bodies
// of compute operations) element by element on host tensors. It is the
// independent oracle for codegen tests, so it shares nothing with the lowering
// path beyond the IR node definitions, and nothing with runtime/.
//
// Semantics (per operation, on scalars):
//   f32        computed in float, rounded to float after every operation.
//   f64        computed in double.
//   f16, bf16  computed in float; rounded to the 16-bit format (nearest even)
//              only by a cast to that type, an immediate of that type, and
//              the store into a tensor.
//   integers   wrap to their width (i8/i16/i32/i64, u8/u16/u32/u64); / and %
//              truncate (C), floordiv/floormod round toward -inf
//              (compute/expr.h); integer division by zero is a user error.
//   bool       0 / 1.
//   casts      C semantics: float -> int truncates toward zero (then wraps to
//              the width; NaN becomes 0), int -> float rounds to nearest.
//   select     evaluates only the chosen branch.
//   math       exp log sqrt tanh erf pow fabs floor ceil in the argument's
//              precision (float functions for f32/f16/bf16); round is C's
//              round (halfway cases away from zero), round_even rounds them
//              to even (nearbyint); sigmoid(x) = 1/(1+exp(-x)).
//   reduce     folds the points of its axes in order (first axis outermost),
//              starting from combiner_identity, skipping points where the
//              condition is false.
// Reading a tensor outside its shape is a user error naming the tensor.
// (Implementation: interpreter.cpp drives the evaluator of interpreter_eval.h;
// HostTensor and scalar conversions live in interpreter_tensor.cpp.)
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compute/dtype.h"
#include "compute/tensor.h"

namespace kiln {

// A dense row-major host tensor. f16 and bf16 elements are stored as their
// 16-bit patterns, bool as one byte holding 0 or 1.
struct HostTensor {
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  HostTensor() = default;
  // Zero-filled. user_error on a vector or handle dtype or a negative extent.
  HostTensor(DType dtype, std::vector<int64_t> shape);

  int64_t num_elements() const;
  int64_t flat_index(const std::vector<int64_t>& index) const;  // row-major; user_error when out of range

  // Raw typed view: sizeof(T) must be the element size (uint16_t for f16/bf16).
  template <class T>
  T* data() {
    check_elem_size(sizeof(T));
    return reinterpret_cast<T*>(bytes.data());
  }
  template <class T>
  const T* data() const {
    check_elem_size(sizeof(T));
    return reinterpret_cast<const T*>(bytes.data());
  }

  // Element i (flat) converted to double / int64 (f16 and bf16 decoded,
  // floats truncated by get_int).
  double get_float(int64_t i) const;
  int64_t get_int(int64_t i) const;
  // Stores v converted to the element type (rounded to nearest for f32, f16
  // and bf16; integers wrap; bool is v != 0).
  void set_float(int64_t i, double v);
  void set_int(int64_t i, int64_t v);

  // Deterministic pseudo-random contents (same on every platform): floats
  // uniform in [lo, hi), integers uniform in [ceil(lo), floor(hi)] clamped to
  // the type, bools 0/1.
  void fill_random(uint64_t seed, double lo = -1.0, double hi = 1.0);

 private:
  void check_elem_size(size_t size) const;
};

// "" when every element of `actual` is within atol + rtol*|expected| of
// `expected` (same dtype and shape, NaN matches NaN); otherwise a message
// naming the first mismatching element and the number of mismatches.
std::string compare_tensors(const HostTensor& expected, const HostTensor& actual, double rtol = 1e-5,
                            double atol = 1e-6);

// Computes `outputs` from the placeholder values in `inputs`, evaluating every
// operation in post_dfs_order. Throws user_error when a placeholder the
// outputs need has no value, a value has the wrong shape or dtype, a given
// tensor is not a placeholder, or the definition reads out of bounds.
std::vector<HostTensor> interpret(const std::vector<Tensor>& outputs,
                                  const std::vector<std::pair<Tensor, HostTensor>>& inputs);

// Sampled evaluation: the elements of `output` at `points` (each a full index
// tuple), as a 1-D tensor of output's dtype with one value per point,
// bit-identical to the same elements of interpret({output}, inputs).
// Elements are computed on demand: reading a computed tensor evaluates just
// that element (once per call; e.g. a padding stage read by many conv taps),
// so checking a few thousand points of a large kernel is cheap. Only the
// elements the points depend on are evaluated, so errors elsewhere (an
// out-of-bounds read, division by zero) go unnoticed. Input validation as
// interpret(); user_error for a point with the wrong number of coordinates or
// outside output's shape.
HostTensor interpret_at(const Tensor& output, const std::vector<std::pair<Tensor, HostTensor>>& inputs,
                        const std::vector<std::vector<int64_t>>& points);

// IEEE half and bfloat16 conversions, rounding to nearest even (NaN stays NaN).
uint16_t f16_bits_from_float(float f);
float float_from_f16_bits(uint16_t h);
uint16_t bf16_bits_from_float(float f);
float float_from_bf16_bits(uint16_t b);

}  // namespace kiln
