// The tensor-core schedule of the GPU GEMM template (gpu_gemm_template.h):
// f16 or bf16 inputs summed in f32 by mma.sync m16n8k16 (sm_80 and later),
// chosen by the template's `tensor_core` knob.
//
// Each block computes a BM x BN tile with warps_m x warps_n warps, each warp
// a (frags_m * 16) x (frags_n * 8) tile of m16n8 accumulator fragments:
//   for each k tile (tile_k * 16 of K):
//     the block's threads fill the shared A and B tiles (vector loads)
//     for each 16-step of k: a warp loads its A fragments (ldmatrix.x4),
//       then per column of fragments one B fragment (ldmatrix.x2), and runs
//       one mma per fragment of the column;
//   each warp stores its accumulators to an f32 staging tile in shared
//   memory; the block's threads then apply the epilogue (the cast to
//   f16/bf16, bias, relu, gelu) and write the output with vector stores.
// Knobs (besides the template's vec, unroll_k and pad, where any pad > 0
// pads the shared rows to 8 elements past a multiple of 64, which keeps
// them 16-byte aligned for ldmatrix):
//   mma_m  [blocks, warps, fragments] of M / 16
//   mma_n  [blocks, warps, fragments] of N / 8
//   mma_k  [k tiles, 16-steps per tile] of K / 16
//   stages slots of the shared A and B tiles (Stage::pipeline of the k-tile
//          loop): the tiles of k tile i + stages - 1 are copied (cp.async)
//          while k tile i is computed
//   fill_vec elements per copy of those fills: 0 keeps vec, 8 copies 16
//            bytes (a 16-byte cp.async, which bypasses L1, when pipelined)
// On sm_90a (the arch-specific target of Hopper) tensor_core may also be
// "wgmma": warpgroups of four warps run wgmma.mma_async m64nNk16 straight
// from the shared tiles, stored in 8 x 8 tiles (Stage::storage_tile) rather
// than padded rows, with no fragment loads. Its knobs replace mma_m/mma_n:
//   wgmma_m [blocks, warpgroups] of M / 64 (a warpgroup takes 64 rows)
//   wgmma_n [blocks, warpgroups, 8-column groups per warpgroup: 8, 16 or
//           32, N of 64, 128 or 256] of N / 8
//   swizzle 1 stores each operand tile whose rows are whole 128-byte strips
//           (a k tile of 64 along K, or the block's M or N along them)
//           128-byte swizzled (Stage::storage_swizzle) rather than in 8 x 8
//           tiles, filled row by row; the others keep the tiles. Its fills
//           are copies of 16 bytes or less (cp.async), or with bulk_copy 2
//           tensor copies whose maps land the rows swizzled (plain bulk
//           copies do not take swizzled slots).
// (offered where M and N are multiples of 64); mma_k, stages, producer
// warps and fill_vec as for mma. Each warp calls wgmma once per k tile for
// all of the tile's 16-steps, then waits for it.
// Past 48 KiB of shared memory a block takes dynamic shared memory, up to
// the architecture's opt-in limit (227 KiB on sm_90).
// Offered where M is a multiple of 16, N of 8 and K of 16 (whole
// fragments); the splits divide those exactly, so that no block is partial
// (every warp of a block takes part in every tile: a partial block would
// leave warps out of the barriers between the k tiles).
#pragma once

#include "kernels/gemm_common.h"
#include "kernels/op_registry.h"
#include "schedule/gpu_limits.h"

namespace kiln {

// Whether the GEMM `g` of `dtype` can run on tensor cores of `gpu`.
bool gpu_mma_offered(const GemmShape& g, DType dtype, const GpuLimits& gpu);
// Whether it can also run on wgmma (sm_90a, M and N multiples of 64), given
// gpu_mma_offered.
bool gpu_wgmma_offered(const GemmShape& g, const GpuLimits& gpu);
// Adds the tensor-core knobs to the template's space (all added later: a
// stored config without them means the plain schedule).
void define_gpu_mma_knobs(const GemmShape& g, const GpuLimits& gpu, ConfigSpace* space);
// The default's tensor-core values: for products large enough to fill the
// GPU, 128 x 256 blocks (two slots) or 128 x 128 blocks (three) in dynamic
// shared memory; else a 64 x 64 block of 2 x 2 warps, with a 3-stage
// pipeline where it fits the static shared memory of `gpu`.
void gpu_mma_default(const GemmShape& g, const GpuLimits& gpu, nlohmann::json* j);
// The shared memory the tensor-core schedule of config `j` takes with
// `stages` slots, padded rows counted at most.
int64_t gpu_mma_shared_bytes(const GemmShape& g, const nlohmann::json& j, int64_t stages);
// The schedule of `op` on tensor cores.
ScheduledOp gpu_mma_gemm_schedule(const OpInstance& op, const GemmShape& g, const Config& cfg);

}  // namespace kiln
