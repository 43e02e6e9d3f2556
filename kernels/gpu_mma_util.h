// Pieces shared by the tensor-core schedules (gpu_mma_gemm.h,
// gpu_mma_conv2d.h): the block's threads over the output tile, and the f32
// staging tile each warp stores its accumulator fragments into.
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
