// Access alignment from a modular set (see alignment.h).
#include "codegen/alignment.h"

#include <cstdlib>
#include <numeric>

namespace kiln {

int64_t access_alignment(const ModularSet& index, int64_t elem_bytes, int64_t cap) {
  // Every member is coeff*k + base, so gcd(coeff, base) divides them all.
  const int64_t g = std::gcd(std::llabs(index.coeff), std::llabs(index.base));
  if (g == 0) return cap;  // exactly element 0
  int64_t a = elem_bytes;
  while (a < cap && (g * elem_bytes) % (a * 2) == 0) a *= 2;
  return a < cap ? a : cap;
}

}  // namespace kiln
