// The GPU template of max_pool2d and avg_pool2d (NCHW, f32): a direct
// kernel, one thread per few outputs, the window reduced serially in
// registers.
//
// The output [N, C, OH, OW] is one flat range of elements (ow innermost)
// spread over 1-D blocks of `threads` threads, each thread computing `tile`
// outputs. Knobs:
//   threads        threads per block (warp multiples up to the arch's limit)
//   tile           outputs per thread
//   tile_mode      "interleaved": a thread's outputs are `threads` elements
//                  apart, so the 32 threads of a warp load and store adjacent
//                  addresses (coalesced); "row": `tile` adjacent outputs of
//                  one row, reduced together (window loops outside the tile
//                  loop), so that overlapping windows (stride < window) share
//                  their loads in registers
//   unroll_window  whether the R x S window loops are unrolled
// The padded input is inlined (padding never reaches memory); the average
// divides each window sum by its taps inside the input as it is stored.
#pragma once

#include <memory>

#include "kernels/op_registry.h"
#include "schedule/gpu_limits.h"

namespace kiln {

std::shared_ptr<ConfigSpace> gpu_pool2d_space(const OpInstance& op, const GpuLimits& gpu);
Config gpu_pool2d_default(const OpInstance& op, const GpuLimits& gpu, const ConfigSpace& space);
ScheduledOp gpu_pool2d_schedule(const OpInstance& op, const Config& cfg);

// Sets d.gpu to this template (d: max_pool2d or avg_pool2d).
void set_gpu_pool2d_template(OpDef& d);

}  // namespace kiln
