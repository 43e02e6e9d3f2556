// The tensor-core intrinsics of cuda targets (sm_80 and later): the warp-
// level mma.sync m16n8k16 with f16 or bf16 inputs and f32 accumulators, the
// ldmatrix loads of its operands and the accumulator's store.
//
// Fragments live in warp scope (compute/stmt.h: MemScope::kWarp): a warp
// buffer holds whole fragments, each spread over the 32 lanes in the
// instruction's layout, and only these intrinsics touch it. A GEMM on
// tensor cores is therefore a chain of tensorized stages:
//   shared A/B tiles -> load_a / load_b -> fragments (warp)
//   -> mma (reset: zero, update: acc += a * b) -> accumulator (warp)
//   -> store -> an f32 tile in shared or global memory.
// Every call runs on all 32 lanes of a warp together: tensorized stages are
// computed at a loop bound to whole warps, never under a lane loop.
#pragma once

#include "compute/tensor_intrin.h"

namespace kiln {

// frag[16, 16] = src[16, 16]: A as [m, k] (k_major false) or [k, m] (true),
// src a shared tile with unit-stride rows.
TensorIntrin cuda_mma_load_a(DType input, bool k_major);
// frag = src: B as [k, n] = [16, 8] (n_major false) or [n, k] = [8, 16].
TensorIntrin cuda_mma_load_b(DType input, bool n_major);
// acc[16, 8] (+)= sum_k f32(a) * f32(b), a and b fragments in the layouts
// above; reset zeroes the accumulator.
TensorIntrin cuda_mma_m16n8k16(DType input, bool a_k_major, bool b_n_major);
// out[16, 8] = acc (f32): out in shared or global memory, unit-stride rows.
TensorIntrin cuda_mma_store();
// Hopper (sm_90a): acc[16, n] (+)= sum over k < 16 * steps of f32(a) * f32(b)
// by wgmma, a and b read from shared memory stored in 8 x 8 tiles
// (Stage::storage_tile(8, 8)): a as [m, k] (a_k_major false) or [k, m],
// b as [k, n] (b_n_major false) or [n, k]. acc is the warp's n / 8
// accumulator fragments (the layout cuda_mma_m16n8k16 and cuda_mma_store
// use), a the warp's 16 rows of A; the block's warps run it by warpgroups
// (compute/hw_instructions.h). Reset zeroes the fragments.
TensorIntrin cuda_wgmma(DType input, int64_t n, int64_t steps, bool a_k_major, bool b_n_major);

}  // namespace kiln
