// inject_prefetch: software prefetch for the loops Stage::prefetch marks.
//
// Expects: flattened, not yet vectorized IR (scalar indices), in which a
// loop to prefetch for sits under AttrStmt "prefetch" (node: the buffer's
// handle Var, value: the distance d >= 1).
//
// Guarantees: at the start of each iteration k of the loop, where k + d is
// still an iteration, the cache lines of the buffer's region that
// iteration k + d reads are prefetched: per load of the buffer in the body
// (and per operand of a tensor instruction that reads a constant run of it),
// the loops around it whose step moves its index by more than a cache
// line become loops of the prefetch too (the rows of a tile), the others
// span each row (one Prefetch per 64-byte line). A load whose rows and lines
// are not constant, or come to more than 512 lines (32 KiB, an L1 data
// cache), gets none, and so does a loop gone (one iteration). The
// attribute is removed. With `gpu` an attribute is a user error: prefetch
// is a CPU primitive.
#pragma once

#include "compute/stmt.h"

namespace kiln {
namespace passes {

Stmt inject_prefetch(const Stmt& body, bool gpu);

}  // namespace passes
}  // namespace kiln
