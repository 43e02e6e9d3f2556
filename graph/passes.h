// Graph rewrites that run before shapes are inferred and nodes compiled:
// they fold constant arithmetic into a convolution's weights and fuse
// activations and biases into the epilogues of kiln's operator families,
// so the fused node is one kernel (and one tuning task).
#pragma once

#include <string>

#include "graph/graph.h"

namespace kiln::graph {

struct PassStats {
  int folded_affine = 0;     // BatchNormalization, per-channel Mul and Add folded into a Conv
  int fused_activation = 0;  // Relu, Clip(0, 6), hard-swish, hard-sigmoid fused into a Conv
  int fused_bias = 0;        // Add of a constant row fused into a MatMul
};

// The attributes the passes set on a node (not ONNX's; node builders read them).
inline const std::string kFusedActivation = "kiln_activation";  // "relu", "relu6", "hswish", "hsigmoid"

// Rewrites `g` in place: the nodes a pass removes are gone, the node that
// absorbed them writes their output. The values a pass creates (folded
// weights) are constants.
PassStats optimize(Graph& g);

}  // namespace kiln::graph
