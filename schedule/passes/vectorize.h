// vectorize: vectorized loops -> vector expressions.
//
// Expects: flattened IR (storage_flatten has run: Load/Store, no
// Provide/TensorRead), scalar except where an inner vectorized loop has
// already been turned into vectors. The schedule guarantees that a
// vectorized loop runs over a data-parallel axis: distinct iterations write
// distinct elements.
//
// Guarantees: no For of kind kVectorized remains. A vectorized loop with a
// constant extent n >= 2 whose body can be widened is replaced by its body
// with the loop var replaced by ramp(min, 1, n):
//  - arithmetic, comparisons, Select, Cast, Call and Let are widened (scalar
//    operands broadcast); ramp +,-,* scalar stays a ramp;
//  - a Load whose index varies across lanes becomes a vector Load; a Load
//    with a lane-invariant index stays scalar and is broadcast;
//  - every Store must have a lane-varying index (else: serial fallback);
//  - an inner loop whose bounds do not depend on the var stays a loop and its
//    body is widened; a lane-invariant IfThenElse stays;
//  - an IfThenElse (without else) whose condition varies across lanes becomes
//    a predicate on the Stores and Loads beneath it (lane-invariant
//    conjuncts stay a scalar IfThenElse; a lane-invariant Load beneath it
//    becomes a predicated load of a broadcast index, so no lane reads memory
//    the scalar loop would not have read);
//  - a vector Load in a branch of a Select gets the Select's condition (or
//    its negation) as predicate, so lanes whose branch is not taken read
//    nothing (padding reads out of bounds there, which a scalar select
//    never evaluated).
// The loop falls back to a serial loop (body unchanged) when the extent is
// not a constant >= 2 or the body holds something not widenable: an inner
// loop with var-dependent bounds, an Allocate, a lane-varying IfThenElse with
// an else branch, an attribute whose value depends on the var, a Store with
// a lane-invariant index, a Load from a buffer written in the loop at an
// index different from every Store index to it (a cross-lane dependence),
// integer division by a lane-varying divisor under a predicate, or vector
// types already present (nested vectorized loops: the inner one wins).
#pragma once

#include "compute/stmt.h"

namespace kiln {
namespace passes {

Stmt vectorize(const Stmt& s);

}  // namespace passes
}  // namespace kiln
