// kiln's warpgroup tensor-core prelude (Hopper, sm_90a): wgmma.mma_async
// m64nNk16 with f16 or bf16 inputs from shared memory and f32 accumulators
// (compute/hw_instructions.h: cuda_wgmma_instruction). The code generator
// appends it after the mma prelude (codegen/cuda_mma_prelude.h), whose
// fragment layout the accumulators share, with one function per width and
// input type the kernels use. Both builds make the operands' shared memory
// descriptors (8 x 8 tiles of 16 bytes a row, or the 128-byte swizzle of
// Stage::storage_swizzle); under NVRTC it issues the instructions in inline
// PTX, and after the emulation header each thread computes its own
// accumulators from the elements the descriptors name, decoded as the
// hardware reads them, through the checked arrays.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>

namespace kiln {

// A wgmma instruction's (width N, input type "f16"/"bf16"), read from its
// name (compute/hw_instructions.h: cuda_wgmma_instruction).
std::pair<int64_t, std::string> cuda_wgmma_shape(const std::string& instruction);

// The prelude's function for a (width, input type): kiln_wgmma_m64n<N>k16_<t>.
std::string cuda_wgmma_function(int64_t n, const std::string& input);

// The prelude's text for the (width N, input type "f16"/"bf16") pairs in
// `used`. Per pair, a function
//   kiln_wgmma_m64n<N>k16_<t><AMn, BMn, ASw, BSw, Async>(acc, a, a_off, a_m, a_k, b, b_off, b_k, b_n, steps)
// that this warp of its warpgroup calls with the warp's own accumulators
// (N / 2 floats) and the offset of its 16 rows of A; see the instruction's
// semantics for the strides. It fences generic-proxy writes of shared
// memory, issues `steps` wgmma of k 16 and waits for them.
std::string cuda_wgmma_prelude(const std::set<std::pair<int64_t, std::string>>& used);

}  // namespace kiln
