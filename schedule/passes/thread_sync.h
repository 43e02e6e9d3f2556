// Barriers between the threads of a GPU block (__syncthreads).
//
// Expects: a flattened GPU function body (schedule/gpu_kernels.h: a sequence
// of kernel nests), vectorized and unrolled. Shared buffers are the
// Allocates of shared scope.
//
// A kernel's statements run on every thread of the block at once, so a
// statement that reads a shared buffer that an earlier statement wrote (or
// writes one that an earlier statement read or wrote) may see another
// thread's access unless a barrier separates them. insert_thread_syncs puts
// a barrier before each such statement, at the outermost level where every
// thread of the block runs the same code (uniform control flow: sequences,
// loops and conditions that do not depend on a thread index, and thread
// loops that span the whole block), and also at the top of a loop body whose
// end conflicts with its beginning (the next iteration overwrites a tile the
// previous one still reads). A loop whose body conflicts with what came
// before it gets its barrier before the loop, not in every iteration. Writes
// that no two iterations or threads make to the same element (a shared tile
// filled in rounds: one store whose index is an affine mixed radix of the
// loop variables, the thread indices and the vector lanes) are no conflict
// from one iteration to the next. A statement under thread-dependent control
// (a thread loop shorter than the block, a condition on a thread index) is
// one unit: a barrier cannot go inside it. Two shared arrays that share
// bytes (their lifetimes are disjoint: schedule/shared_memory_plan.h) conflict
// on any access, the one before the other: the bytes change hands. A
// warp-specialized pipeline's region (attr::kWarpSpecialized) is one unit
// whose inside the pipeline's mbarriers order.
//
// Guarantees: verify_thread_syncs passes on the result.
#pragma once

#include "compute/stmt.h"

namespace kiln {
namespace passes {

Stmt insert_thread_syncs(const Stmt& body);

// User error when a statement accesses a shared buffer in conflict with
// another statement's access since the last barrier (a missing barrier, also
// between two arrays that share bytes), or
// when a barrier sits under thread-dependent control flow (some threads
// would never reach it: a deadlock), or when one unit under thread-dependent
// control both writes and reads a shared buffer (no barrier can order them).
void verify_thread_syncs(const Stmt& body);

}  // namespace passes
}  // namespace kiln
