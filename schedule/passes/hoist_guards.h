// hoist_guards: moves a condition that guards every statement of a loop's
// body, and that the loop does not change, out of the loop:
//   for (i) { if (c && a) S1; if (c && b) S2 }  ->  if (c) for (i) { if (a) S1; if (b) S2 }
// Loop partitioning cannot peel a guard whose loop variable it cannot
// bound (a row of a fused parallel loop, `floormod(f, 112) * 2 + rr >= 3`);
// once the register tile is unrolled, such a guard sits on every update of
// the tile, inside the innermost reduction loops. Hoisting it leaves one
// test per iteration of the loop that changes it.
//
// Expects: IR after unrolling (straight-line register tiles), flattened.
// Guarantees: the result computes the same thing. A conjunct is hoisted out
// of a serial or parallel loop when it appears (structurally equal) in the
// condition of every top-level statement of the body, each an IfThenElse
// without an else branch, and it mentions neither the loop variable nor any
// memory (no loads, no calls): only index arithmetic on enclosing
// variables. Loops are processed innermost first, so a condition rises
// through every loop that does not change it. Thread-binding and vectorized
// loops are left alone.
#pragma once

#include "compute/stmt.h"

namespace kiln {
namespace passes {

Stmt hoist_guards(const Stmt& s);

}  // namespace passes
}  // namespace kiln
