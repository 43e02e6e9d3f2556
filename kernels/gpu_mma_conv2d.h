// The tensor-core schedule of the GPU conv2d template for conv2d_nhwc
// (gpu_conv2d_template.h): the implicit GEMM of an NHWC convolution on
// mma.sync m16n8k16, f16 or bf16 inputs summed in f32 (sm_80 and later),
// chosen by the template's `tensor_core` knob.
//
// The GEMM's rows are each image's output positions m = oh * OW + ow,
// padded to a whole number of 16-row fragments (Pp rows; padded rows read
// zeros and are never stored), its columns the output channels, its
// reduction the taps and input channels (r, s, c), the channels padded with
// zeros to whole 16-channel steps (C=3 computes 16). A block computes BM
// positions of one image x BN channels with warps of fm x fn fragments.
// Per tap and k tile of input channels, the block's threads gather its
// positions' input into a shared tile (the zero padding filled as it is
// copied) and the weights into another; each warp then loads its A
// fragments with ldmatrix, one B fragment per column, and runs the mmas;
// the output is written from an f32 staging tile in shared memory with the
// bias and activation applied. The output stage walks its positions in
// 16-row steps of the padded rows, so that every tile it reads from the
// staging tile is whole fragments.
// The sum is f32 and the bias is added to it before the one rounding to
// f16/bf16 (the plain template, like the op's definition, adds the bias to
// the 16-bit conv result): the two differ in the last bit, as tests allow.
// Knobs: mma_m [blocks, warps, fragments] of Pp / 16, mma_n [blocks,
// warps, fragments] of K / 8, mma_k [steps, 16-steps per step] of C / 16
// (all exact), plus vec, unroll and pad_rows (16-byte padding of the
// shared rows). Offered where groups is 1, K is a multiple of 8 and an
// image has at least 16 output positions. On sm_90a, where K is a multiple
// of 64 and the images have more than 48 positions in all, tensor_core may
// also be "wgmma" (gpu_wgmma_conv2d.h).
#pragma once

#include <functional>

#include "kernels/op_registry.h"
#include "schedule/gpu_limits.h"

namespace kiln {

struct ConvShape;  // kernels/conv2d.h

bool gpu_mma_conv2d_offered(const OpInstance& op, const GpuLimits& gpu);
void define_gpu_mma_conv2d_knobs(const OpInstance& op, const GpuLimits& gpu, ConfigSpace* space);
void gpu_mma_conv2d_default(const OpInstance& op, nlohmann::json* j);
ScheduledOp gpu_mma_conv2d_schedule(const OpInstance& op, const Config& cfg);

// Pieces of the implicit GEMM that the mma and wgmma schedules share.
// The input channels padded to whole 16-channel k steps (zeros past C).
int64_t implicit_gemm_channels(const ConvShape& c);
// The weights [R, S, Cp, K] as the GEMM's B: the op's own where C needs no
// padding, else a zero-filled copy.
Tensor implicit_gemm_weights(const OpInstance& op, const ConvShape& c);
// The op's output: `sums(n, oh, ow, k)` (the f32 sums of that output) plus
// the bias, activated, cast to the op's type; the bias is added to the f32
// sum before the one rounding.
Tensor implicit_gemm_output(const OpInstance& op, const ConvShape& c,
                            const std::function<Expr(const Var&, const Var&, const Var&, const Var&)>& sums);
// The weights' shared tile for the accumulators `acc`: a cache of the op's
// weights, or the zero-filled copy `B` itself computed in shared memory.
Tensor shared_implicit_gemm_weights(Schedule& s, const OpInstance& op, const Tensor& B, const Tensor& acc);

}  // namespace kiln
