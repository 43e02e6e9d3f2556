// The GPU template of the GEMM family (matmul, dense, batch_matmul): the
// classic shared-memory tiling of a CUDA GEMM.
//
// Each block computes a (threads_y * tile_y) x (threads_x * tile_x) tile of
// the output; each thread a tile_y x tile_x register tile, accumulated over
// K in local memory. Per step of the k-tile loop the block's threads copy the
// A and B tiles it needs into shared memory cooperatively (vector loads when
// rows allow), meet at a barrier, and run the register-tile updates from
// shared memory. Knobs:
//   tile_y, tile_x   [blocks, threads, per-thread tile] of M and N
//   tile_k           [k steps, k-tile] of K
//   shared           which operands are staged in shared memory
//   vec              vector width of the shared-memory fills and the stores
//   pad              row padding of the shared tiles (bank conflicts)
//   unroll_k         whether the k-tile loop is unrolled
//   warp_cols        the warp tile: 0 keeps the threads row-major (a warp is
//                    32 / threads_x rows of the block's thread columns); L
//                    cuts the thread grid into warps of lanes L columns wide
//                    and 32 / L rows high (threadIdx.x the lane, threadIdx.y
//                    the warp), so that e.g. 16 x 16 threads become 4 x 2
//                    warps of 4 x 8 lanes: each warp reads 4 rows of the A
//                    tile and 8 thread columns of B per k.
//   tensor_core      f16/bf16 on sm_80+, whole fragments: "mma" runs the
//                    tensor-core schedule instead (gpu_mma_gemm.h, with its
//                    own mma_m, mma_n, mma_k knobs); on sm_90a, where M
//                    and N are multiples of 64, also "wgmma" (warpgroup
//                    products from shared memory, knobs wgmma_m, wgmma_n)
// The epilogue (bias, relu, gelu) is applied as the register tile is
// stored. The grid: blockIdx.x the block's columns, .y its rows, .z the
// batch; a shape with more row blocks or batches than y and z allow (65535:
// M = 20000000 with one row per block, B = 65536) has every block loop
// fused into blockIdx.x instead, so that every config of the space can
// launch.
#pragma once

#include <memory>

#include "kernels/gemm_common.h"
#include "kernels/op_registry.h"
#include "schedule/gpu_limits.h"

namespace kiln {

std::shared_ptr<ConfigSpace> gpu_gemm_space(const GemmShape& g, DType dtype, const GpuLimits& gpu);
Config gpu_gemm_default(const GemmShape& g, DType dtype, const GpuLimits& gpu, const ConfigSpace& space);
// The schedule of `op` (built by gemm_define from `g`) for a config.
ScheduledOp gpu_gemm_schedule(const OpInstance& op, const GemmShape& g, const Config& cfg);

// Sets d.gpu to this template, with `shape` giving the GEMM of an instance.
void set_gpu_gemm_template(OpDef& d, std::function<GemmShape(const OpInstance&)> shape);

}  // namespace kiln
