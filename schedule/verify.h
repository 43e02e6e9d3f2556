// IR verifier: structural invariants that every lowering pass must keep.
// lower() runs it after each pass (when KILN_VERIFY_IR is set, as in tests);
// a violation is a kiln bug, reported as InternalError naming the pass.
//
// Checked:
//  - every Var used is in scope: bound by an enclosing For, Let/LetStmt,
//    Allocate (buffer), buffer_bind attribute (handle), Reduce (axis vars),
//    or listed in `free_vars` (the function's argument handles once
//    buffer_bind attributes are gone);
//  - no Var is bound again while already in scope (sibling scopes may reuse
//    a var, nested ones may not);
//  - types: binary operands equal, comparison/logic results bool,
//    Store value lanes == index lanes, Load lanes == index lanes, predicates
//    bool with the same lanes, indices integer, For min/extent types == loop
//    var type (a scalar integer), IfThenElse condition a scalar bool,
//    Let/LetStmt var type == value type, Ramp/Broadcast well formed, Load and
//    Store element types match the Allocate of their buffer;
//  - Allocate extents are scalar integers, and positive when constant;
//  - `flattened`: no Realize, Provide, TensorRead, Reduce or buffer_bind
//    attribute remains;
//  - `vectorized`: no For of kind kVectorized remains.
#pragma once

#include <string>
#include <vector>

#include "compute/stmt.h"

namespace kiln {

struct VerifyOptions {
  bool flattened = false;      // storage_flatten has run
  bool vectorized = false;     // vectorize has run
  std::vector<Var> free_vars;  // defined outside the statement (function arguments)
};

void verify_ir(const Stmt& s, const std::string& after_pass, const VerifyOptions& options);
void verify_ir(const Stmt& s, const std::string& after_pass, bool flattened, const std::vector<Var>& free_vars = {});

}  // namespace kiln

namespace kiln {

// Checks the dependency tokens of software pipelines (TokenNode) by running
// their loops: every slot starts with one free token; the access stage pops
// a slot's free token before it fills the slot and pushes its full token
// after; the execute stage pops the full token before it reads and pushes
// the free token back when done. A pop with no token to take (the pipeline
// would deadlock), a slot filled without taking its free token (reused
// before it was released), a full token pushed twice, a release of a slot
// not taken, and tokens left over at the end are user errors that say
// which pipeline, slot and iteration. Loops around tokens must have
// constant bounds, and conditions around them must depend only on those
// loops (a thread-bound loop is one thread's view: it is not iterated).
// In a warp-specialized region (attr::kWarpSpecialized) the producer's and
// the compute's tokens run side by side, each side going on while it can:
// both stuck is a deadlock, and each phased token must name the use of its
// slot it belongs to (the parity the GPU waits on). Asynchronous wgmma
// products (Stage::mma_in_flight) read the slot whose full token the compute
// took last, until a wgmma commit-and-wait retires their group: releasing
// that slot before, or leaving products in flight at the end, is an error.
void verify_pipeline_tokens(const Stmt& s);

}  // namespace kiln
