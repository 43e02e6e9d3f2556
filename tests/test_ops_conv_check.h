// Shared by the sliding-window op tests (test_ops_conv.cpp,
// test_ops_pool.cpp): random small extents and the default-schedule check (the
// config checks are in support/template_check.h).
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "compute/printer.h"
#include "kernels/activation.h"
#include "kernels/op_registry.h"
#include "schedule/lower.h"
#include "support/kernel_check.h"
#include "support/template_check.h"

namespace kiln::testing {

// The constant shape of a tensor.
inline std::vector<int64_t> shape_of(const Tensor& t) {
  std::vector<int64_t> s;
  for (auto& e : t.shape()) s.push_back(*as_const_int(e));
  return s;
}

// An activation in plain arithmetic (kernels/activation.h).
inline double activate(double x, Activation a) {
  auto relu6 = [](double v) { return std::min(std::max(v, 0.0), 6.0); };
  switch (a) {
    case Activation::kNone:
      return x;
    case Activation::kRelu:
      return std::max(x, 0.0);
    case Activation::kRelu6:
      return relu6(x);
    case Activation::kHardSwish:
      return x * relu6(x + 3) / 6;
    case Activation::kHardSigmoid:
      return relu6(x + 3) / 6;
  }
  return x;
}

// A workload suffix selecting a random activation (or none): ",relu6=1"...
inline std::string random_activation(std::mt19937_64& rng) {
  static const char* kFlags[] = {"", ",relu=1", ",relu6=1", ",hswish=1", ",hsigmoid=1"};
  return kFlags[std::uniform_int_distribution<int>(0, 4)(rng)];
}

// 1, primes and odd sizes.
inline int64_t odd_extent(std::mt19937_64& rng, int64_t at_least = 1) {
  static const int64_t kExtents[] = {1, 2, 3, 5, 7, 9, 11, 13, 17};
  int64_t v = kExtents[std::uniform_int_distribution<int>(0, 8)(rng)];
  return v < at_least ? at_least : v;
}

inline int pick(std::mt19937_64& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

// The default schedule (the template's default config, which round-trips
// through JSON) and a different random config agree with the reference
// interpreter (support/template_check.h).
inline void check_default_schedule(const std::string& workload, uint64_t seed = 77) {
  check_default_and_random_config(workload, seed);
}

}  // namespace kiln::testing
