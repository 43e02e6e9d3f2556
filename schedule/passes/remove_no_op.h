// remove_no_op: drops statements that do nothing.
//
// Expects: any IR. Expressions have no side effects (true of kiln's IR).
// Guarantees: removes Evaluate of a constant; loops whose body does nothing
// or whose extent is a constant <= 0; IfThenElse with a constant condition
// (replaced by the taken branch) or with empty branches (an empty then-branch
// with a non-empty else becomes `if (!cond) else`); LetStmt whose var is
// unused; Allocate whose buffer is never used; AttrStmt and Realize whose
// body does nothing. Seq entries that vanished are dropped. The result is a
// no-op Evaluate(0) when nothing is left.
#pragma once

#include "compute/stmt.h"

namespace kiln {
namespace passes {

Stmt remove_no_op(const Stmt& s);

}  // namespace passes
}  // namespace kiln
