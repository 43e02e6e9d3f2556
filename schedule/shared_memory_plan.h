// Where each shared array of a GPU kernel lives in the block's shared memory.
//
// Arrays whose lifetimes do not overlap may share bytes, as TVM's
// StorageRewrite lets them: a GEMM's f32 staging tile of the block's outputs
// is written only after the k loop has read its last A and B tiles, so it can
// take their bytes, and the slots of a pipeline cost nothing beyond it.
//
// An array's lifetime runs from the first statement that touches it to the
// last, in the order one thread runs them, stretched over the whole of every
// serial loop (of more than one iteration) that touches it, since the next
// iteration comes back to it. Loops bound to blockIdx or threadIdx run their
// body once per thread and stretch nothing. A statement under
// thread-dependent control (a thread loop shorter than the block, a
// condition on a thread index) counts as one statement, since no barrier can
// go inside it, except a warp-specialized pipeline's region: its producer
// side, then its compute side, in that order, as its mbarriers order them.
// Two arrays may overlap in bytes
// only where their lifetimes are disjoint; insert_thread_syncs then puts a
// barrier between the last access to one and the first access to the other
// (other threads may still be on the first when one thread reaches the
// second).
//
// The plan is a pure function of the kernel nest, and barriers do not change
// it, so thread_sync, gpu_kernels and the CUDA printer each compute the same
// plan. Where sharing saves nothing the arrays are laid out one after
// another, in the order of their Allocates (post-order), as before.
#pragma once

#include <cstdint>
#include <vector>

#include "compute/stmt.h"

namespace kiln {

struct SharedArrayPlace {
  const AllocateNode* alloc = nullptr;
  int64_t offset = 0;            // bytes from the start of the block's shared memory, a multiple of `align`
  int64_t align = 16;            // 128 for the destination of tensor copies (cp.async.bulk.tensor), 1024 for
                                 // wgmma's swizzled operands
  int64_t bytes = 0;             // shared_array_bytes of the array
  int64_t first = 0, last = -1;  // its lifetime, in the kernel's access order (empty when never touched)
};

struct SharedMemoryPlan {
  std::vector<SharedArrayPlace> arrays;  // the kernel's shared Allocates, post-order
  int64_t bytes = 0;                     // the end of the last array
  bool shares_bytes = false;             // some arrays overlap in bytes
  bool over_aligned = false;             // some array's `align` is past 16
  int64_t align = 128;                   // the block's memory starts so aligned: the largest `align`, at least 128

  // Whether arrays `a` and `b` (buffer variables) are different arrays with bytes in common.
  bool overlap(const VarNode* a, const VarNode* b) const;
  const SharedArrayPlace* find(const VarNode* buffer) const;
};

// The plan of one kernel nest (a flattened GPU kernel, schedule/gpu_kernels.h).
SharedMemoryPlan plan_shared_memory(const Stmt& kernel);

}  // namespace kiln
