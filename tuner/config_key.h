// A 64-bit key naming a config within its space, for the search's sets of
// proposed/measured configs and its feature caches.
//
// While the space has fewer than 2^64 - 1 configs (ConfigSpace::size() does
// not saturate) the key is the config's index: exact. In larger spaces the
// index overflows, so the key is a 64-bit hash of the choices instead; two
// configs then share a key with probability ~n^2 / 2^65 after n configs
// (about 3e-8 after a million), which at worst skips one config.
#pragma once

#include <cstdint>

#include "schedule/config_space.h"

namespace kiln {

class ConfigKeyer {
 public:
  explicit ConfigKeyer(const ConfigSpace& space) : exact_(space.size() < UINT64_MAX) {}
  bool exact() const { return exact_; }
  uint64_t operator()(const Config& c) const {
    if (exact_) return c.index();
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int choice : c.choices()) h = mix(h ^ static_cast<uint64_t>(static_cast<uint32_t>(choice)));
    return h;
  }

 private:
  // splitmix64's finalizer: every input bit affects every output bit.
  static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  }
  bool exact_;
};

}  // namespace kiln
