// The CPU schedule template shared by the row-wise ops over x[M, N] that
// reduce along the last axis (softmax, layer_norm): knobs, the default
// point, and the scheduling of their stages.
//
// Loop structure (knobs in quotes):
//   output stage: i -> [io, ii] ("tile_rows"), io parallel ("parallel");
//     j -> [jo, ju, jv], jv vectorized with "vector" lanes, ju unrolled
//     ("unroll" vectors per step);
//   every other stage is computed at the row loop ii: row reductions either
//     serial or split into "reduce_lanes" vector partial results (rfactor)
//     combined at the end of the row; row-wide intermediates vectorized as
//     the output.
#pragma once

#include <cstdint>

#include "kernels/op_registry.h"
#include "schedule/config_space.h"

namespace kiln {

struct RowParams {
  int64_t rows = 1;          // rows per block of the parallel loop
  bool parallel = true;      // blocks run in parallel
  int64_t vector = 1;        // lanes of the vectorized column loops
  int64_t unroll = 1;        // vectors per unrolled column step
  int64_t reduce_lanes = 1;  // partial results of a row reduction (1: serial)
};

// Adds the knobs above to `space` for a [M, N] op of element type `t`.
void define_row_knobs(ConfigSpace& space, int64_t M, int64_t N, DType t, const CpuInfo& cpu);
// The knobs' hand-tuned values: one row per block, parallel over rows when
// there are several threads and rows, whole vectors along N.
void default_row_knobs(nlohmann::json& j, const ConfigSpace& space, int64_t N, DType t, const CpuInfo& cpu);
RowParams decode_row_knobs(const Config& cfg);

// Schedules the [M, N] output stage; returns the row loop ii that the other
// stages are computed at.
IterVar schedule_row_output(Schedule& s, const Tensor& out, const RowParams& p);
// A [M] reduction over N at the row loop: rfactor'd into vector partials
// when p.reduce_lanes > 1.
void schedule_row_reduction(Schedule& s, const Tensor& t, const Tensor& out, const IterVar& row, const RowParams& p);
// A [M, N] element-wise stage (a row buffer) at the row loop, vectorized.
void schedule_row_elementwise(Schedule& s, const Tensor& t, const Tensor& out, const IterVar& row, const RowParams& p);
// A [M] per-row value at the row loop.
void schedule_row_scalar(Schedule& s, const Tensor& t, const Tensor& out, const IterVar& row);

}  // namespace kiln
