// conv2d_winograd_nchwc: a 3x3, stride-1 convolution on the NCHW[x]c layout
// by Winograd's F(m x m, 3 x 3) (kernels/winograd_matrices.h), with the
// weights already transformed (winograd_weight_nchwc, done once ahead of
// time, as TVM's conv2d_winograd_without_weight_transform takes them):
//   data   [N, C/cb, H, W, cb]
//   weight [alpha, alpha, K/kb, C/cb, cb, kb]   (alpha = m + 2: G g G^T)
//   out    [N, K/kb, OH, OW, kb]                (OH = H + 2 pad - 2)
// The output is cut into tH x tW tiles of m x m (tH = ceil(OH / m)); the
// input, zero-padded to cover every tile, is read as overlapping
// alpha x alpha tiles. Three stages, each a tensor expression:
//   input transform   V[e, f, n, th, tw, co, ci] = (BT d B)[e][f]
//   batched GEMM      M[e, f, n, ko, th, tw, ki] = sum_{co, ci} V[e, f, n, th, tw, co, ci] * U[e, f, ko, co, ci, ki]
//   output transform  out[n, ko, oh, ow, ki] = (AT M A)[oh % m][ow % m] of tile (oh / m, ow / m)
//                     (+ bias[k], activation)
// Its FLOPs are the direct convolution's (2 N K OH OW C 9), as everyone
// counts Winograd's: GFLOP/s are effective.
//
// The template: V at the root (the (n, th) rows in parallel, its row
// transform computed per channel block, the alpha x alpha outputs
// unrolled, cb vectorized); M either at the root or fused into the output
// transform's loop over output-channel blocks and tile rows ("gemm_at");
// M's register tile of "tile_kb" output-channel blocks x "tile_th" x
// "tile_tw" tiles accumulates over (co, ci) (ci unrolled or not:
// "unroll_ci"), its loop band in one of a few orders ("gemm_order") with the
// first "parallel" loops in parallel; the output transform tiles m x m
// unrolled, kb vectorized.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "kernels/activation.h"
#include "kernels/op_registry.h"
#include "schedule/config_space.h"

namespace kiln {

OpDef conv2d_winograd_nchwc_op_def();
// The same on NHWC data [N,H,W,C], weights [alpha,alpha,C,K] (from
// winograd_weight_nhwc) and output [N,OH,OW,K]; cb and kb block the channels
// inside the kernel (its transformed input and GEMM are blocked as above).
OpDef conv2d_winograd_nhwc_op_def();

struct WinogradConvShape {
  int64_t N, C, H, W, K, pad, m, alpha, cb, kb, OH, OW, tH, tW;
  bool nhwc;  // conv2d_winograd_nhwc
  bool bias;
  Activation act;
};
WinogradConvShape winograd_conv_shape(const OpInstance& op);

// A 3x3 stride-1 convolution layer that Winograd can compute.
struct WinogradLayer {
  bool nhwc;
  int64_t N, C, H, W, K, pad, cb, kb;
  bool bias;
  Activation act;
};
// Its alternatives F(2x2,3x3) and F(4x4,3x3) (kernels/op_registry.h): the
// weight transform (winograd_weight_nchwc or _nhwc) on the op's input 1
// once, then conv2d_winograd_nchwc or _nhwc on data, transformed weights
// and bias; none for a dtype Winograd cannot take.
std::vector<OpAlternative> winograd_alternatives(const WinogradLayer& layer, DType dtype);

std::shared_ptr<ConfigSpace> conv2d_winograd_nchwc_space(const OpInstance& op, const CpuInfo& cpu);
Config conv2d_winograd_nchwc_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space);
ScheduledOp conv2d_winograd_nchwc_apply(const OpInstance& op, const Config& cfg);

}  // namespace kiln
