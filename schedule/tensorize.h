// Matching a stage's loop nest against a tensor intrinsic (the tensorize
// primitive, compute/tensor_intrin.h), as schedule_ops builds the nest.
//
// The loops from the tensorized axis inward (the inner loops) must be plain
// loops of constant extent, one per axis of the intrinsic: each inner loop
// runs along one root axis of the stage with unit step (a split's inner
// part, or a whole axis), the data-parallel ones matched to the
// intrinsic's axes and the reduction ones to its reduction axes, in the
// stage's root-axis order, extent for extent. With every inner loop
// variable replaced by the matching intrinsic axis, the stage's expression
// must then be the intrinsic's: the same operations, constants, dtypes and
// reduction, where each tensor read corresponds to a read of one of the
// intrinsic's inputs with the same index pattern (the same coefficient of
// each intrinsic axis in the tensor dimensions that move, constant
// dimensions elsewhere). A reduction's condition must not depend on the
// inner loops: it then guards whole calls. The result is, per operand, the region the call
// binds to it: its first element and the tensor dimension each declared
// dimension runs along. Every mismatch is a user error that says what
// differs.
#pragma once

#include <string>
#include <vector>

#include "compute/analyzer.h"
#include "compute/tensor_intrin.h"
#include "schedule/bound.h"
#include "schedule/schedule.h"

namespace kiln {

struct TensorizeMatch {
  std::vector<TensorizeNode::Region> inputs;  // one per intrinsic input
  TensorizeNode::Region output;
  // The reduction's condition, when it has one: it reads no loop below the
  // tensorized axis, so it holds for a whole call or none of it and guards
  // each update (the "clip" border's skipped padding taps).
  Expr condition;
};

// A guard `rest + inner < bound` on the loops from `pos` inward, as a guard
// on the loops outside them when the inner part covers whole blocks:
// inner = sum(c * l) over the inner loops (c >= 0) ranges over [0, F), and
// rest and bound are multiples of F, so the condition holds for a whole
// block or for none of it. Undefined when it cannot be shown.
Expr guard_outside(const StageNode* s, int pos, const StageBounds& bounds, const Expr& cond, Analyzer& ana);

// Matches stage `s`'s nest below its leaf at `pos` (tensorized with
// `intrin`) against the intrinsic. `body` is the stage's expression over
// its leaf variables (root axes substituted), `values` the root axes'
// values, and `ana` knows the ranges of every leaf and enclosing loop.
TensorizeMatch match_tensorize(const StageNode* s, int pos, const TensorIntrin& intrin, const StageBounds& bounds,
                               const VarMap& values, const Expr& body, Analyzer& ana);

}  // namespace kiln
