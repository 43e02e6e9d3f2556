// A transposed convolution whose kernel equals its stride (2-D, one group,
// undilated, no padding: the 2x2 stride-2 upsampling of detection and
// segmentation heads) is a matrix product followed by a rearrangement.
// Every output pixel takes exactly one tap, so with the weights W[c, k, ph,
// pw] as the matrix Wt[(k, ph, pw), c], fixed at compile time,
//   Y[(k, ph, pw), (ih, iw)] = sum_c Wt[(k, ph, pw), c] * X[c, (ih, iw)]
//   out[k, ih * sh + ph, iw * sw + pw] = Y[(k, ph, pw), (ih, iw)] (+ bias[k])
// The product is a MatMul node (kiln's matmul family, a tuning task); the
// rearrangement is a Transpose between Reshapes (views), with the bias added
// in the same generic kernel. This runs after shape inference (the input's
// extents are needed) and before layout planning.
#pragma once

#include "graph/graph.h"
#include "graph/passes.h"

namespace kiln::graph {

// Rewrites every such ConvTranspose of a batch of one; counts them in
// stats->gemm_conv_transposes.
void conv_transpose_as_gemm(Graph& g, PassStats* stats);

}  // namespace kiln::graph
