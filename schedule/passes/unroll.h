// unroll: explicitly unrolled loops -> straight-line copies of their body.
//
// Expects: any IR (before or after flattening).
// Guarantees: no For of kind kUnrolled remains. A kUnrolled loop with a
// constant extent n becomes Seq(body[v := min], body[v := min + 1], ...,
// body[v := min + n - 1]) (nothing when n <= 0); one with a non-constant
// extent becomes a serial loop. Variables bound inside the body (inner loop
// and let vars, allocated buffers) are shared by the copies: each copy is a
// separate scope, so they are bound by sibling statements, never nested.
#pragma once

#include "compute/stmt.h"

namespace kiln {
namespace passes {

Stmt unroll(const Stmt& s);

}  // namespace passes
}  // namespace kiln
