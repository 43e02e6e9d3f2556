// kiln's tensor-core prelude: warp-level matrix products on 16-bit inputs
// with f32 accumulators (mma.sync m16n8k16, fragments loaded by ldmatrix).
// The code generator appends it after cuda_prelude() and
// cuda_narrow_float_prelude() (codegen/cuda_prelude.h) to kernels that use
// tensor cores. It compiles under NVRTC for sm_80 and later, and as host C++
// after the emulation header (codegen/cuda_emulation.h), where ldmatrix and
// mma exchange rows and fragments across the warp's 32 lanes as the PTX ISA
// specifies, reading shared memory through the race- and bounds-checked
// arrays.
#pragma once

#include <string>

namespace kiln {

// The prelude's CUDA C text (ends with a newline). Per lane, with
// g = lane / 4 and t = lane % 4 (the PTX ISA's fragment layout):
//   A (16 x 16): unsigned short[8]: a0,a1 = (g, 2t..2t+1), a2,a3 = (g+8, 2t..),
//                a4,a5 = (g, 2t+8..), a6,a7 = (g+8, 2t+8..)
//   B (16 x 8, k x n): unsigned short[4]: b0,b1 = (k 2t..2t+1, n g), b2,b3 = (k 2t+8.., n g)
//   C (16 x 8): float[4]: c0,c1 = (g, 2t..2t+1), c2,c3 = (g+8, 2t..)
// Functions (src/dst: a KILN_SHARED array; dst may also be a float* in global memory):
//   kiln_lane_id()
//   kiln_mma_load_a<Trans>(frag, src, offset, ld)  A(m,k) at src[offset + (Trans ? k*ld + m : m*ld + k)]
//   kiln_mma_load_b<Trans>(frag, src, offset, ld)  B(k,n) at src[offset + (Trans ? n*ld + k : k*ld + n)]
//   kiln_mma_f16(acc, a, b), kiln_mma_bf16(acc, a, b)  acc += A * B
//   kiln_mma_zero(acc)
//   kiln_mma_store(dst, offset, ld, acc)  C(m,n) to dst[offset + m*ld + n]
// Loads are warp-collective (every lane of a full warp calls them together)
// and need 16-byte aligned rows: offset and ld multiples of 8 elements.
const std::string& cuda_mma_prelude();

}  // namespace kiln
