// The wgmma schedule of the GPU conv2d template for conv2d_nhwc
// (gpu_conv2d_template.h), chosen by `tensor_core` "wgmma" on sm_90a: the
// implicit GEMM of the convolution on Hopper's warpgroup product
// (wgmma.mma_async m64nNk16, f16 or bf16 summed in f32), its operands read
// straight from shared tiles stored in 8 x 8 tiles or 128-byte swizzled.
//
// Unlike the mma schedule (gpu_mma_conv2d.h), whose blocks take positions of
// one image, the GEMM's rows are the output positions of all the images,
// m = n * OH * OW + oh * OW + ow, padded to a whole number of 64-row
// warpgroup tiles (Mp rows; padded rows read zeros and are never stored):
// a batch of 7 x 7 images wastes a few rows at the end rather than 15 of
// every 64. Its columns are the output channels, its reduction the taps and
// input channels (r, s, c), the channels padded with zeros to whole
// 16-channel steps. The im2col tile is stored [r][s][m][c], so that one
// tap's tile is the last two dimensions (what storage_tile and
// storage_swizzle lay out). Per tap and k tile of channels the block's
// threads gather its rows' input into the shared A tile (zeros where the
// window leaves the image) and the weights into B; each warp of a
// warpgroup then issues one wgmma for its 16 rows over the tile's 16-steps.
// The output is written from the f32 staging tile with the bias and
// activation applied, as the mma schedule does.
// Knobs (besides the mma schedule's mma_k, stages, producer_warps and
// bulk_copy, and the template's vec):
//   wgmma_m  [blocks, warpgroups] of Mp / 64 (a warpgroup takes 64 rows)
//   wgmma_n  [blocks, warpgroups, 8-column groups: 8, 16 or 32] of K / 8
//   swizzle  1 stores a tile whose rows are whole 128-byte strips (A with k
//            tiles of 64 channels; B always) 128-byte swizzled
//   mma_in_flight  1 keeps a k tile's products in flight (producer warps
//            and two or more stages)
//   fill_vec 8 fills the shared tiles 16 bytes a copy where the channels
//            allow it (C a multiple of 8 for A), 0 keeps vec
// Offered on sm_90a where K is a multiple of 64, the images have more than
// 48 output positions in all (a warpgroup's four 16-row steps), and the mma
// schedule is offered.
#pragma once

#include "kernels/op_registry.h"
#include "schedule/gpu_limits.h"

namespace kiln {

bool gpu_wgmma_conv2d_offered(const OpInstance& op, const GpuLimits& gpu);
// The wgmma knobs (tensor_core itself is the mma schedule's knob).
void define_gpu_wgmma_conv2d_knobs(const OpInstance& op, ConfigSpace* space);
ScheduledOp gpu_wgmma_conv2d_schedule(const OpInstance& op, const Config& cfg);

}  // namespace kiln
