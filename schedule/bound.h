// Bound inference: the range of every loop of every stage, and the region
// of each materialized intermediate, derived from what its consumers read
// (interval arithmetic over their index expressions, with the loops that
// enclose the producer fixed and the others relaxed over their ranges).
#pragma once

#include <unordered_map>
#include <vector>

#include "compute/ir_functor.h"
#include "schedule/schedule.h"

namespace kiln {

struct StageBounds {
  // Range of every iter var of the stage (root and derived), keyed by node.
  // Ends may mention the variables of loops that enclose the stage.
  std::unordered_map<const IterVarNode*, Range> dom;
  // Storage region of the stage's output: one Range per dimension with a
  // constant extent (an upper bound of what the loops touch).
  std::vector<Range> realize;
  // The stage's body with inlined producers substituted (undefined for
  // placeholders).
  Expr body;
};

struct BoundMap {
  std::unordered_map<const StageNode*, StageBounds> stages;
  const StageBounds& at(const StageNode* s) const { return stages.at(s); }
};

// Infers bounds for every stage. User errors: compute_at whose target does
// not enclose every consumer, attachment cycles, inline stages used as
// attachment targets.
BoundMap infer_bounds(const Schedule& sch);

// The range a leaf's loop runs over: [0, extent of its domain).
Range loop_range(const StageBounds& b, const IterVar& leaf);

// Value of every iter var of the stage (root and derived) in terms of its
// leaf vars (split: parent = outer * inner_extent + inner + parent_min).
VarMap iter_var_values(const StageNode* s, const StageBounds& b);

// Leaves (stage, position) whose loops enclose the computation of s, from
// the outermost; empty for root stages.
std::vector<std::pair<const StageNode*, int>> enclosing_loops(const StageNode* s);

}  // namespace kiln
