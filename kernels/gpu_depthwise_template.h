// The GPU template of depthwise_conv2d (NCHW, f32): a direct convolution,
// each thread accumulating a small register tile of one channel's outputs
// over the R x S taps.
//
// A block computes a channels x rows x columns box of the output; its
// threads are laid out threadIdx.z (channels) x threadIdx.y (rows) x
// threadIdx.x (columns, innermost in memory), each thread a th x tw tile of
// adjacent outputs; all block loops (batch included) are fused into
// blockIdx.x. The taps are serial loops outside the register tile, so each
// weight is loaded once per tile and, at stride 1, overlapping windows share
// input loads. Knobs:
//   tile_c         [blocks, threads] of C (threads: threadIdx.z)
//   tile_h         [blocks, threads, rows per thread] of OH (threads: threadIdx.y)
//   tile_w         [blocks, threads, columns per thread] of OW (threads: threadIdx.x)
//                  thread counts are powers of two or an exact fit of the
//                  axis (7 threads for a 7-wide output), so that small CNN
//                  layers need no tail
//   shared         "none": taps read global memory (the padding inlined as a
//                  guarded read); "data": the block's padded input box is
//                  first copied to shared memory by all its threads (adjacent
//                  threads copy adjacent elements of a row), so the taps read
//                  shared memory and never test the border; "both": the
//                  block's weights too
//   unroll_window  whether the tap loops are unrolled
// Bias and the activation are applied as the register tile is stored.
#pragma once

#include <memory>

#include "kernels/op_registry.h"
#include "schedule/gpu_limits.h"

namespace kiln {

std::shared_ptr<ConfigSpace> gpu_depthwise_space(const OpInstance& op, const GpuLimits& gpu);
Config gpu_depthwise_default(const OpInstance& op, const GpuLimits& gpu, const ConfigSpace& space);
ScheduledOp gpu_depthwise_schedule(const OpInstance& op, const Config& cfg);

// Sets d.gpu to this template (d: depthwise_conv2d).
void set_gpu_depthwise_template(OpDef& d);

}  // namespace kiln
