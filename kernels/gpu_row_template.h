// The cuda template of the row-wise ops over x[M, N] that reduce along the
// last axis (softmax, layer_norm): one kernel, a block per group of rows.
//
// Loop structure (knobs in quotes):
//   output stage: i -> [block (blockIdx.x), row (threadIdx.y)] with "tile_rows"
//     rows per block; j -> [column thread (threadIdx.x), step, lanes] with
//     "threads" / rows threads per row and "vec" lanes per access: a thread
//     handles vectors t, t + threads_x, ... of its row, so a warp's accesses
//     are contiguous;
//   every other stage is computed at the row loop: the row reductions split
//     the same way, each thread folding its columns, then combined across the
//     row's threads (warp shuffles, and shared memory past a warp); their
//     results and the per-row scalars in every thread's registers;
//   "cache": the block's rows of x copied once into shared memory at the
//     block loop (each stage then reads x from there), or read from global
//     memory by each stage.
// Softmax recomputes its exponential where it is used: storing it per row
// would need a row loop that bound inference knows to be the thread's own.
#pragma once

#include <memory>

#include "kernels/op_registry.h"
#include "schedule/gpu_limits.h"

namespace kiln {

struct GpuRowParams {
  int64_t rows = 1;       // rows per block (threadIdx.y)
  int64_t threads_x = 32; // threads per row (threadIdx.x)
  int64_t vec = 1;        // lanes per column access
  bool cache_x = false;   // x's rows in shared memory
};

// Sets d.gpu for an op with params M and N: the knobs below, the default,
// and `schedule` (which uses the gpu_row_* functions).
void set_gpu_row_template(OpDef& d, std::function<ScheduledOp(const OpInstance&, const Config&)> schedule);

// The knobs above for an [M, N] op of type `t`.
std::shared_ptr<ConfigSpace> gpu_row_space(int64_t M, int64_t N, DType t, const GpuLimits& gpu);
// A warp-multiple block per row sized to N (at least 32 threads, up to 256),
// whole vectors when N allows, x cached when the rows fit in shared memory.
nlohmann::json gpu_row_default(int64_t M, int64_t N, const GpuLimits& gpu);
GpuRowParams decode_gpu_row_knobs(const Config& cfg);

struct GpuRowLoops {
  IterVar block;  // blockIdx.x: the block's rows
  IterVar row;    // threadIdx.y: one row
};

// Schedules the [M, N] output stage; returns the loops the other stages are
// computed at.
GpuRowLoops gpu_row_output(Schedule& s, const Tensor& out, const GpuRowParams& p);
// A [M] reduction over N at the row loop, across the row's threads.
void gpu_row_reduction(Schedule& s, const Tensor& t, const Tensor& out, const IterVar& row, const GpuRowParams& p);
// A [M] per-row value at the row loop, in each thread's registers.
void gpu_row_scalar(Schedule& s, const Tensor& t, const Tensor& out, const IterVar& row);
// Caches `x` (read by `readers`) in shared memory at the block loop, each
// row filled by its threads.
void gpu_row_cache_input(Schedule& s, const Tensor& x, const std::vector<Tensor>& readers, const Tensor& out,
                         const GpuRowLoops& loops, const GpuRowParams& p);

}  // namespace kiln
