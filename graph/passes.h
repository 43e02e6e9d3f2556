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
  int packed_weights = 0;    // MatMul weights packed once, at compile time
  int padded_inputs = 0;     // Conv inputs zero-padded by a kPadSpatial node (padding unequal across sides)
  int gemm_conv_transposes = 0;  // upsampling ConvTransposes run as a MatMul (graph/conv_transpose_gemm.h)
  // graph/layout_planning.h
  int blocked_convs = 0;       // convolutions run on NCHW[x]c, their weights packed at compile time
  int blocked_nodes = 0;       // element-wise nodes and global pools run on NCHW[x]c tensors
  int layout_conversions = 0;  // kToBlocked and kFromBlocked nodes between the layouts (not counting folded ones)
};

// The attributes the passes set on a node (not ONNX's; node builders read them).
inline const std::string kFusedActivation = "kiln_activation";  // "relu", "relu6", "hswish", "hsigmoid"
// A MatMul whose B input comes packed in panels of this many columns, by a
// kPackMatmulB node (kiln's pack_matmul_b op) the folding runs at compile
// time; kPackedColumns keeps B's column count.
inline const std::string kPackedPanel = "kiln_packed_nb";
inline const std::string kPackedColumns = "kiln_packed_n";
inline const std::string kPackMatmulB = "kiln.PackMatmulB";  // not an ONNX operator: the passes insert it
inline constexpr int64_t kPackPanelColumns = 32;
// Zeros around the two spatial axes of an NCHW tensor, kSpatialPads =
// [top, left, bottom, right]: what a 2-D Conv padded differently on its
// sides reads instead, so that it pads nothing itself.
inline const std::string kPadSpatial = "kiln.PadSpatial";  // not an ONNX operator: the passes insert it
inline const std::string kSpatialPads = "kiln_pads";

// Rewrites `g` in place: the nodes a pass removes are gone, the node that
// absorbed them writes their output. The values a pass creates (folded
// weights) are constants. `pack_weights` false leaves MatMul weights as the
// model has them (the cuda templates read B unpacked).
PassStats optimize(Graph& g, bool pack_weights = true);

}  // namespace kiln::graph
