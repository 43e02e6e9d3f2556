// Pieces shared by the tensor-core schedules (gpu_mma_gemm.h,
// gpu_mma_conv2d.h, gpu_wgmma_conv2d.h): the block's threads over the
// output tile, the f32 staging tile each warp stores its accumulator
// fragments into, the wgmma knobs and operand layouts, and the k loop's
// pipeline.
#pragma once

#include <vector>

#include "schedule/config_space.h"
#include "schedule/gpu_limits.h"
#include "schedule/schedule.h"

namespace kiln {

// Splits the fused tile loop `flat` of the output stage over the block's
// warps x 32 lanes (threadIdx.y, threadIdx.x), `vec` elements a lane
// (vectorized) when vec > 1.
void mma_output_threads(Stage& so, IterVar flat, int64_t warps, int64_t vec);

// Tiles the staging stage's `rows` x `cols` (after the loops `outer`) into
// warp tiles of warp_m x warp_n, binds the warps to threadIdx.y and
// tensorizes each 16 x 8 fragment with the accumulator store; returns the
// warp loop, where the accumulators are computed. Consecutive warps take
// consecutive tiles along the columns, or with `rows_first` along the rows
// (wgmma's warpgroups: four warps one above the other).
IterVar mma_staging_tile(Stage& sc, const std::vector<IterVar>& outer, const IterVar& rows, const IterVar& cols,
                         int64_t warp_m, int64_t warp_n, bool rows_first = false);

// The wgmma knobs (added later; kept in this order): wgmma_m [blocks,
// warpgroups] of `row_tiles` 64-row tiles, a block's warpgroups from
// `warpgroups`; wgmma_n [blocks, warpgroups, 8-column groups per warpgroup:
// 8, 16 or 32] of `column_groups` (N / 8); mma_in_flight (1 keeps a k tile's
// products in flight, Stage::mma_in_flight); swizzle (1 stores each operand
// tile whose rows are whole 128-byte strips 128-byte swizzled).
void define_wgmma_knobs(ConfigSpace* s, int64_t row_tiles, const std::vector<int64_t>& warpgroups,
                        int64_t column_groups);

// The block's `warps` fill a wgmma operand's shared tile `fill` elements a
// copy, and it is laid out as wgmma reads it: 128-byte swizzled
// (Stage::storage_swizzle) where the config's swizzle is 1 and its rows of
// `row_bytes` are whole 128-byte strips, else in 8 x 8 tiles
// (Stage::storage_tile). Its extents are multiples of 8, so any fill of up
// to 8 fits either.
void lay_out_wgmma_operand(Stage st, const Config& cfg, int64_t row_bytes, int64_t warps, int64_t fill);

// The knobs of the k loop's pipeline: "stages" (slots of the shared tiles,
// 1 to 5), "producer_warps" (0: every warp fills and computes; 1 or 2:
// warp specialization, that many more warps only fill the slots) and, on
// sm_90, "bulk_copy" (1: the producer warps move the fills that are row
// copies by Hopper's bulk copy engine, the others keep cp.async; 2: the
// same, but a fill that is a dense box of rows, or wgmma's operand tiles,
// moves by one tensor copy through a tensor map (TMA); no effect without
// producer warps or where no fill is such a copy).
void define_mma_pipeline_knobs(ConfigSpace* s, const GpuLimits& gpu);

// Pipelines the accumulators' k loop `k` as the config says (producer
// warps with one stage take turns with the compute on a single slot). With
// `async_products` (the compute is wgmma), the knob "mma_in_flight" 1 keeps
// a k tile's products in flight while the next ones are issued, where
// producer warps and 2 or more stages allow it (Stage::mma_in_flight).
void mma_pipeline(Stage& sa, const IterVar& k, const Config& cfg, bool async_products = false);

}  // namespace kiln
