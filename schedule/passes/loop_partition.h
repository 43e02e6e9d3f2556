// loop_partition: peels the guarded iterations off loops so that the bulk of
// the iterations runs without the guards that non-divisible splits add.
//
// Expects: any IR (before or after flattening). Guards are IfThenElse whose
// condition is a conjunction (&&, or nested IfThenElse) of integer
// comparisons; the ones this pass can use are affine in the loop var, like
// the split-tail guard `i.outer*16 + i.inner < 1000`. A store whose whole
// value is a select on a scalar condition (a padded copy: `pad[i] =
// select(inside, data[...], 0)`) is guarded by that condition too, except
// for splitting parallel loops (their whole body would be branched for it).
//
// Guarantees: the result computes the same thing. For a serial, parallel,
// vectorized or unrolled loop with constant min and extent, the iterations
// in which every affine guard of its body is provably true (given the
// constant ranges of the enclosing and inner loops) form the main part, in
// which those guards are removed; the iterations before and after it keep
// them.
//  - serial / unrolled / vectorized loops are split into consecutive loops:
//    the main loop keeps the kind, the peeled loops keep it too except that a
//    vectorized loop's peeled parts become serial; a peeled part of one
//    iteration is emitted without a loop, with the var replaced by its value;
//  - a parallel loop stays one parallel loop (splitting it would run the
//    peeled iterations after the parallel part, serialized) whose body
//    branches on the loop var: `if (v < lo) pre else if (v <= hi) main else
//    post`.
//  - a serial or unrolled loop in which no iteration passes every guard is
//    split where the guards turn true and where they turn false in every
//    inner iteration (at most four pieces); a peeled part is split where
//    they turn false. A split's last partial tile then becomes a piece of
//    its own, its guards decided, and the empty tiles after it vanish
//    (rows 10..12 of 13 in tiles of 5: tile 0 keeps 3 rows, tile 1 none).
// In every loop with constant bounds, guard conjuncts that are provably true
// are dropped, and guards provably false are replaced by their else branch
// (or removed; a select guard stores its false value). Guards that are not affine in the var, or that mention
// variables of unknown range, are left alone. Loops with non-constant bounds
// and thread-binding loops are not partitioned (their bodies are still
// processed).
#pragma once

#include "compute/stmt.h"

namespace kiln {
namespace passes {

Stmt loop_partition(const Stmt& s);

}  // namespace passes
}  // namespace kiln
