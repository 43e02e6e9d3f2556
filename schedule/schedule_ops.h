// Turns a scheduled tensor-expression graph into its initial loop nest:
// For loops over every stage's leaf axes (with their annotations), Realize
// for every materialized intermediate, Provide/TensorRead for the
// computation, guards for non-divisible splits, reduction init/update, and
// attached stages injected at their compute_at loops. The function's
// arguments are announced by passes::kBufferBind attributes at the top
// (see schedule/passes/storage_flatten.h).
#pragma once

#include <utility>
#include <vector>

#include "schedule/bound.h"

namespace kiln {

Stmt schedule_ops(const Schedule& sch, const BoundMap& bounds, const std::vector<std::pair<Tensor, Var>>& args);

}  // namespace kiln
