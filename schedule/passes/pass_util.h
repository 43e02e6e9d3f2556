// Small IR utilities shared by the lowering passes under schedule/passes/.
#pragma once

#include <unordered_set>
#include <vector>

#include "compute/expr.h"
#include "compute/stmt.h"

namespace kiln {
namespace passes {

// True for a statement that does nothing: undefined, an Evaluate of a
// constant, or a Seq/For/IfThenElse/LetStmt/AttrStmt/Allocate/Realize whose bodies
// do nothing.
bool is_no_op(const Stmt& s);

// A statement that does nothing, for a pass whose whole result vanished.
Stmt make_no_op();

// Whether `s` reads and writes any of `buffers` (loads, stores, and tensor
// instructions' operands, read or written as the instruction says),
// buffers allocated inside `s` included.
struct BufferUse {
  bool reads = false, writes = false;
};
BufferUse buffer_use(const Stmt& s, const std::unordered_set<const VarNode*>& buffers);

// The operands of a chain of &&, in order (e itself when it is not one).
void split_conjuncts(const Expr& e, std::vector<Expr>* out);

// The push of the full token that ends one iteration of a warp-specialized
// producer (inject_pipeline: pop free, the fills, push full), or null when
// `s` is not such an iteration.
const TokenNode* producer_full_push(const SeqNode* s);

}  // namespace passes
}  // namespace kiln
