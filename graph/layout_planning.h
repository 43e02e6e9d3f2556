// Layout planning (after graph/passes.h, as TVM's alter_op_layout): a
// network's convolutions run on kiln's blocked NCHW[x]c templates
// (conv2d_nchwc, depthwise_conv2d_nchwc), and the tensors between them stay
// blocked. Element-wise nodes and global pools over blocked tensors run
// blocked too; a tensor is converted back to NCHW only where a node needs
// that layout (a reshape, a matrix product, a graph output), and an NCHW
// tensor is blocked only where a blocked node reads it. Convolution weights
// are packed into the templates' blocks by a node that folds at compile
// time, so no kernel packs them per call.
#pragma once

#include <string>

#include "graph/graph.h"
#include "graph/passes.h"

namespace kiln::graph {

// kiln's own node types and attributes for blocked layouts (not ONNX
// operators: only this pass inserts them).
//   kToBlocked     [N, C, H, W] -> [N, C/b, H, W, b], b = attribute kBlock
//   kFromBlocked   [N, C/b, H, W, b] -> [N, C, H, W]
//   kPackConvWeight  a Conv's weights [K, C/groups, R, S] in the template's
//                  blocks: [K/kb, C/cb, R, S, cb, kb] (kBlockIn = cb,
//                  kBlockOut = kb), depthwise [C/cb, R, S, cb] (kDepthwise)
//   kConvBlocked   the convolution as kiln workload kWorkload (blocked data,
//                  packed weights, bias[K])
inline const std::string kToBlocked = "kiln.ToNCHWc";
inline const std::string kFromBlocked = "kiln.FromNCHWc";
inline const std::string kPackConvWeight = "kiln.PackConvWeight";
inline const std::string kConvBlocked = "kiln.ConvNCHWc";
inline const std::string kBlock = "kiln_block";
inline const std::string kBlockIn = "kiln_cb";
inline const std::string kBlockOut = "kiln_kb";
inline const std::string kDepthwise = "kiln_depthwise";
inline const std::string kWorkload = "kiln_workload";
// On a GlobalAveragePool or GlobalMaxPool: the input is blocked, its last
// axis holds channels (the pool reduces the axes between 2 and it).
inline const std::string kBlockedLayout = "kiln_blocked";

// The channels per block: the vector lanes of f32 on the AVX-512 machines
// kiln targets, oneDNN's choice too; channel counts that are multiples of
// half of it only get blocks of half.
inline constexpr int64_t kChannelBlock = 16;

// Rewrites `g` in place (shapes are inferred first; the caller infers
// again). Counts what it did in `stats`. Convolutions it cannot block (other
// element types, grouped but not depthwise, channels that are not a
// multiple of 8, except a first layer's fewer than 16 input channels) stay
// NCHW.
void plan_layouts(Graph& g, PassStats* stats);

}  // namespace kiln::graph
