// Alignment of buffer accesses, proved from the congruence of the index
// (compute/analyzer.h's modular sets). Every kiln buffer starts 64-byte
// aligned (arguments by the runtime's contract, allocations by codegen).
#pragma once

#include <cstdint>

#include "compute/analyzer.h"

namespace kiln {

constexpr int64_t kBufferAlignment = 64;

// The largest power of two, at most `cap`, dividing elem_bytes * x for every
// x in `index` (elem_bytes is a power of two).
int64_t access_alignment(const ModularSet& index, int64_t elem_bytes, int64_t cap = kBufferAlignment);

}  // namespace kiln
