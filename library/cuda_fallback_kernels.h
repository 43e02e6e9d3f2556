// The fallback kernels of a cuda library (`kiln lib --target cuda`): for a
// shape no kernel was tuned for, the dispatchers launch one of these simple,
// correct CUDA kernels, which take the shape as arguments (tuned kernels are
// compiled for one shape). One thread per output element (per row for
// softmax and layer_norm) in a grid-stride loop, accumulated in f32.
//
// Each kernel exists once per element type D (f32, f16, bf16: the storage
// type T is float, kiln_half or kiln_bfloat16 of codegen/cuda_prelude.h's
// narrow-float prelude; values are converted to f32 on load and rounded to
// nearest even on store, as the interpreter rounds):
//   kiln_fallback_gemm_D(batch, M, N, K, A, B, bias, C, trans_b, act)
//       C[b,i,j] = act(sum_k A[b,i,k] * B[b,k,j] (B[b,j,k] when trans_b) + bias[j]),
//       bias may be NULL
//   kiln_fallback_conv2d_D(N, C, H, W, K, R, S, stride, pad, dilation, groups, OH, OW,
//                          data, weight, bias, out, nhwc, act)
//       nhwc 0: data [N,C,H,W], weight [K,C/groups,R,S], out [N,K,OH,OW]
//       nhwc 1: data [N,H,W,C], weight [R,S,C/groups,K], out [N,OH,OW,K]
//       zero padding; bias[K] may be NULL. depthwise_conv2d is groups = K = C.
//   kiln_fallback_pool2d_D(N, C, H, W, R, S, stride, pad, OH, OW, data, out, average)
//       NCHW; max: padding never wins (NaN propagates); average: the mean of
//       the taps inside the input (padding excluded from the count)
//   kiln_fallback_softmax_D(M, N, x, y)
//   kiln_fallback_layer_norm_D(M, N, x, gamma, beta, y)        (epsilon 1e-5)
// act: 0 none, 1 relu, 2 gelu (erf), 3 relu6, 4 hswish, 5 hsigmoid.
// Sizes are `long long`, flags `int`, buffers pointers to T.
#pragma once

#include <string>
#include <vector>

#include "codegen/cuda_module.h"

namespace kiln {

// The fallback activation codes.
enum class FallbackAct { kNone = 0, kRelu = 1, kGelu = 2, kRelu6 = 3, kHardSwish = 4, kHardSigmoid = 5 };

// The element types of the fallback kernels, in their order: f32, f16, bf16.
const std::vector<std::string>& cuda_fallback_dtypes();

// The kernels as CUDA C, with one launch entry per kernel (parameter
// types and indices; its dimensions are the caller's, chosen per call), so
// that the source can also be built as an emulated module for the stand-in
// driver of the tests.
CudaSource cuda_fallback_source();

// The kernel names, in cuda_fallback_source()'s order: every kind (gemm,
// conv2d, pool2d, softmax, layer_norm) for f32, then for f16, then bf16.
const std::vector<std::string>& cuda_fallback_kernels();

}  // namespace kiln
