// The fallback kernels of a cuda library (`kiln lib --target cuda`): for a
// shape no kernel was tuned for, the dispatchers launch one of these simple,
// correct CUDA kernels, which take the shape as arguments (tuned kernels are
// compiled for one shape). One thread per output element (per row for
// softmax and layer_norm) in a grid-stride loop; f32, accumulated in f32.
//
//   kiln_fallback_gemm(batch, M, N, K, A, B, bias, C, trans_b, act)
//       C[b,i,j] = act(sum_k A[b,i,k] * B[b,k,j] (B[b,j,k] when trans_b) + bias[j]),
//       bias may be NULL; act 0 none, 1 relu, 2 gelu (erf)
//   kiln_fallback_softmax(M, N, x, y)
//   kiln_fallback_layer_norm(M, N, x, gamma, beta, y)        (epsilon 1e-5)
// Sizes are `long long`, flags `int`, buffers float pointers.
#pragma once

#include <string>
#include <vector>

#include "codegen/cuda_module.h"

namespace kiln {

// The kernels as CUDA C, with one launch entry per kernel (parameter
// types and indices; its dimensions are the caller's, chosen per call), so
// that the source can also be built as an emulated module for the stand-in
// driver of the tests.
CudaSource cuda_fallback_source();

// The kernel names, in cuda_fallback_source()'s order.
const std::vector<std::string>& cuda_fallback_kernels();

}  // namespace kiln
