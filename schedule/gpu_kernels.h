// The kernels of a lowered GPU function, and their launch dimensions.
//
// After lowering for a cuda target, a function body is a sequence of kernel
// nests, one per root stage: each runs as one launch, in order (a launch
// boundary is the only grid-wide synchronization). Inside a kernel, loops
// bound to blockIdx.* are the grid and must enclose everything else; loops
// bound to threadIdx.* are the block: all loops bound to one thread tag
// share the hardware index, the block's extent along it is the largest of
// their extents, and a loop with a smaller extent runs on the first threads
// only. Every limit of the architecture is checked here, with messages in
// schedule terms (the loops' names).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "compute/function.h"
#include "schedule/gpu_limits.h"
#include "schedule/shared_memory_plan.h"

namespace kiln {

// How the threads of a block combine a reduction across them (a
// ThreadAllReduceNode), by the group's block dimension and the block's shape;
// the numbers are the strategy argument of kiln_allreduce
// (codegen/cuda_allreduce.h).
enum class AllreduceStrategy : int {
  kWarpShuffle = 0,     // a power-of-two group of at most 32 lanes along threadIdx.x
  kWarpsThenShared = 1, // whole warps along threadIdx.x: shuffles, then one value per warp
  kSharedTree = 2,      // any other group: a tree in shared memory
};
AllreduceStrategy allreduce_strategy(int dim, const std::array<int64_t, 3>& block);
// The type the threads combine: f16 and bf16 values are combined in f32,
// the type a CUDA kernel holds them in.
DType allreduce_value_type(DType t);
// The shared scratch it needs, in elements (0 for shuffles alone).
int64_t allreduce_scratch_elems(AllreduceStrategy s, const std::array<int64_t, 3>& block);

// The bytes a shared array of `elems` elements of `t` takes in a block's
// shared memory: each array starts 16-byte aligned.
inline int64_t shared_array_bytes(int64_t elems, DType t) { return (elems * t.bytes() + 15) / 16 * 16; }

struct GpuKernel {
  Stmt body;  // the kernel's nest, its block and thread loops included
  std::array<int64_t, 3> grid{{1, 1, 1}};
  std::array<int64_t, 3> block{{1, 1, 1}};
  int64_t shared_bytes = 0;  // the block's shared memory (each array 16-byte aligned)
  // Where each shared array lives in it (arrays never live together share
  // bytes); the reductions' scratch follows at shared_plan.bytes.
  SharedMemoryPlan shared_plan;
  // How much of it is dynamic shared memory: all of it when it is more than
  // an architecture allows statically (48 KiB), else none. The launch asks
  // for it and opts the kernel in to it (cuFuncSetAttribute).
  int64_t dynamic_shared_bytes = 0;
  // The mbarriers of its warp-specialized pipelines (full and empty, 8
  // bytes each per slot): static shared memory beside shared_bytes.
  int64_t mbarrier_bytes = 0;
  std::vector<int> arg_indices;  // the function's buffers the kernel uses, in argument order
  // The shared scratch of its cross-thread reductions: per element type,
  // the most elements one of them needs (reductions run one after another
  // and share it). Counted in shared_bytes.
  std::vector<std::pair<DType, int64_t>> allreduce_scratch;
};

// "threadIdx.y" -> 1; -1 for a tag that is not a thread index.
int thread_index_dim(const std::string& tag);
// "blockIdx.z" -> 2; -1 for a tag that is not a block index.
int block_index_dim(const std::string& tag);

// The top-level kernel nests of a GPU function body (no checks).
std::vector<Stmt> kernel_nests(const Stmt& body);
// The block's thread extents of one kernel nest: per threadIdx dimension,
// the largest constant extent of the loops bound to it (1 when none).
std::array<int64_t, 3> block_extents(const Stmt& kernel);

// The kernels of `f` with their launch dimensions, checked against `limits`.
// User errors: a stage with no loop bound to a block or thread index, a
// blockIdx loop inside another loop, a tag bound twice on one path, a thread
// extent that is not a constant, too many threads per block or blocks per
// grid, too much shared memory, a parallel (CPU) loop, a global-memory
// intermediate.
std::vector<GpuKernel> gpu_kernels(const LoweredFunc& f, const GpuLimits& limits);

}  // namespace kiln
