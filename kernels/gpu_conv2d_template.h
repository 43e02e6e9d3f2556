// The GPU template of conv2d (NCHW) and conv2d_nhwc (f32, f16, bf16): both
// formulations of a GPU convolution in one space, chosen by the "taps"
// knob below. The output is viewed as a GEMM whose rows are the output
// positions (n, oh, ow) and whose columns are the output channels k,
// reduced over the input channels and the taps (c, r, s).
//   taps=inner: the direct convolution (TVM's conv2d_direct schedule): a
//     block stages the input box its outputs read, halo included, for a
//     step of input channels, and every tap reads it there;
//   taps=outer: the implicit GEMM (CUTLASS's, with the tap loops outside):
//     each step is an exact GEMM tile, the input shifted by one tap.
//
// A block computes the output of one image over a TH x TW box of output
// positions (the GEMM rows, kept two-dimensional so that the input the
// block needs is a small box) and TK output channels. Its threads are laid
// out as spatial threads x channel threads; each thread computes a register
// tile of th x tw adjacent positions x tk adjacent channels, accumulated in
// registers. The reduction runs in steps of `ct` input channels; per step
// the block's threads copy the input box the step reads (padding filled as
// it is copied) and the step's weights into shared memory cooperatively,
// meet at a barrier and update their register tiles from shared memory.
//
// Coalescing: threadIdx.x runs along the innermost dimension of the output
// (NCHW: the output row, spatial threads with the column fastest; NHWC: the
// output channels), threadIdx.y along the other; the shared fills give
// adjacent threads adjacent elements of the innermost input dimension.
// All block loops (batch included) are fused into blockIdx.x.
//
// Knobs:
//   tile_k   [blocks, threads, channels per thread] of K
//   tile_h   [blocks, threads, rows per thread] of OH
//   tile_w   [blocks, threads, columns per thread] of OW
//            thread counts are powers of two or exact fits of the axis
//            (7 threads for a 7-wide output)
//   tile_c   [steps, channels per step] of C
//   taps     "inner": a step covers ct channels and every tap (r, s), so
//            the staged input box has the window's halo and each input
//            element is loaded from global memory about once; "outer": the
//            tap loops run outside the channel steps, each step an exact
//            GEMM tile (TH x TW positions shifted by the tap, ct x TK
//            weights), more steps with smaller shared tiles
//   shared   which operands are staged in shared memory ("both", "data",
//            "weight", "none"; unstaged ones are read from global memory,
//            the padding as a guarded read)
//   vec      vector width of the stores of the register tile and of the
//            shared fills, where rows are whole vectors (NCHW: columns;
//            NHWC: channels)
//   unroll   whether a step's reduction loops are unrolled (innermost first,
//            as far as the unrolled body stays within 2048 multiply-adds)
//   tensor_core  conv2d_nhwc in f16/bf16 on sm_80+: "mma" runs the
//            implicit GEMM on tensor cores instead (gpu_mma_conv2d.h, with
//            its own mma_m, mma_n, mma_k and pad_rows knobs); on sm_90a
//            "wgmma" runs it on warpgroups (gpu_wgmma_conv2d.h)
// Bias and the activation are applied as the register tile is stored.
// groups must be 1.
#pragma once

#include <memory>

#include "kernels/op_registry.h"
#include "schedule/gpu_limits.h"

namespace kiln {

std::shared_ptr<ConfigSpace> gpu_conv2d_space(const OpInstance& op, const GpuLimits& gpu);
Config gpu_conv2d_default(const OpInstance& op, const GpuLimits& gpu, const ConfigSpace& space);
ScheduledOp gpu_conv2d_schedule(const OpInstance& op, const Config& cfg);

// Sets d.gpu to this template (d: conv2d or conv2d_nhwc).
void set_gpu_conv2d_template(OpDef& d);

}  // namespace kiln
