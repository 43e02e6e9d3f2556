// Seeds of the property tests: besides their fixed regression seeds, every
// run draws a fresh seed, so that repeated runs explore new cases. The seed
// is printed once per process and in each failure message (INFO);
// KILN_SEED=<n> uses n instead of a fresh seed and so reproduces a run.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

namespace kiln::testing {

// This run's seed: KILN_SEED when set, else a fresh one (the same for the
// whole process).
inline uint64_t run_seed() {
  static const uint64_t seed = [] {
    uint64_t s;
    const char* env = std::getenv("KILN_SEED");
    if (env && *env) {
      s = std::strtoull(env, nullptr, 0);
    } else {
      std::random_device rd;
      s = (static_cast<uint64_t>(rd()) << 32 | rd()) % 1000000000000ULL;  // short enough to type
    }
    std::printf("kiln-test-seed: %llu (KILN_SEED=%llu reproduces this run)\n", static_cast<unsigned long long>(s),
                static_cast<unsigned long long>(s));
    std::fflush(stdout);
    return s;
  }();
  return seed;
}

// For failure messages.
inline std::string seed_note(uint64_t run) {
  return "run seed " + std::to_string(run) + ": KILN_SEED=" + std::to_string(run) + " reproduces it";
}

}  // namespace kiln::testing
