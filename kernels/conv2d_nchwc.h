// conv2d_nchwc: 2-D convolution on the packed NCHW[x]c layout (TVM's
// conv2d_NCHWc, oneDNN's nChw16c / OIhw16i16o), the layout a network keeps
// its activations in from one convolution to the next and its weights in
// once, at load time:
//   data   [N, C/cb, H, W, cb]                 (channel c = co*cb + ci)
//   weight [K/kb, C/groups/cb, R, S, cb, kb]   (output channel k = ko*kb + ki)
//   out    [N, K/kb, OH, OW, kb]
//   out[n, ko, oh, ow, ki] = sum_{co, r, s, ci} pad(data)[n, g*Cg/cb + co,
//       oh*stride + r*dilation, ow*stride + s*dilation, ci] * weight[ko, co, r, s, ci, ki]
// with g = ko*kb / (K/groups) the group of the output block, then optional
// + bias[k] and an activation (kernels/activation.h). cb must divide C/groups and kb must divide K/groups,
// so that no block straddles a group and no channel is padding.
//
// Its CPU template needs no packing stage: the reduction reads the weights
// contiguously as they are. Each (kbi blocks of kb channels) x ohi x owi
// output tile accumulates in registers (kb vectorized) over the reduction
// (loop order "reduce_order", kernel width unrolled or not: "unroll_kw")
// and is written out with the epilogue fused. Knobs: "tile_kb" (output
// channel blocks per register tile), "tile_oh" ([oho, ohm, ohi]),
// "tile_ow" ([owo, owi]), the order of the band {n, kbo, oho, ohm, owo}
// ("order"), the accumulator's band position ("acc_at"), the band loops
// fused into the parallel loop ("parallel"), how the taps meet the padding
// ("border": "pad" reads a zero-padded copy of the data, "clip" reads the
// data with each tap conditioned on its bounds, so that loop partitioning
// leaves the interior unguarded and the border tiles skip their padding
// taps), whether a 1x1 strided layer first copies the pixels it reads into
// a dense buffer ("unit_stride": "strided" or "dense"), and where the
// zero-padded or dense copy is computed ("data_at": at the root or at a band
// position; no effect without a copy).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "kernels/activation.h"
#include "kernels/op_registry.h"
#include "schedule/config_space.h"

namespace kiln {

OpDef conv2d_nchwc_op_def();

struct Conv2dNchwcShape {
  int64_t N, C, H, W, K, R, S, stride, pad, dil, OH, OW;
  int64_t G, Cg, Kg, cb, kb;
  bool bias;
  Activation act;
};
Conv2dNchwcShape conv2d_nchwc_shape(const OpInstance& op);
// The 1x1 stride-1 layer over the output's extent that reads a strided
// layer's dense copy (the "unit_stride" knob's "dense": see
// unit_stride_offered in conv2d_common.h).
Conv2dNchwcShape unit_stride_shape(const Conv2dNchwcShape& s);
// What a config's kernel reads: the op's data and shape, or, where the
// config's "unit_stride" knob says "dense" (configs without it read in
// place), the dense copy of the strided pixels ("data_dense", then also in
// `dense`, for the schedule to place) and unit_stride_shape.
struct NchwcRead {
  Conv2dNchwcShape shape;
  Tensor data, dense;
};
NchwcRead nchwc_read(const OpInstance& op, const Config& cfg);

// The op from its parameters (the workload's, defaults filled in).
OpInstance conv2d_nchwc_define(const std::map<std::string, int64_t>& params, DType dtype);

std::shared_ptr<ConfigSpace> conv2d_nchwc_space(const OpInstance& op, const CpuInfo& cpu);
// The register-tile knobs conv2d_nchwc's template shares with
// qconv2d_nchwc's (everything but "border"), and their hand-tuned values,
// for `lanes` accumulators of type `acc` per vector.
std::shared_ptr<ConfigSpace> nchwc_tile_space(const Conv2dNchwcShape& c, int lanes);
nlohmann::json nchwc_tile_default(const Conv2dNchwcShape& c, DType acc, const CpuInfo& cpu, const ConfigSpace& space);
Config conv2d_nchwc_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space);
ScheduledOp conv2d_nchwc_apply(const OpInstance& op, const Config& cfg);

// The alternatives of a layer: a 3x3, stride-1, undilated, ungrouped fp
// convolution's Winograd kernels, F(2x2,3x3) and F(4x4,3x3)
// (conv2d_winograd_nchwc with the weights transformed once by
// winograd_weight_nchwc); a 1x1 stride-1 unpadded convolution over more
// than one row as one row of H*W pixels ("flat": the same op with H = 1,
// W = H*W, on the same buffers); none for other layers.
std::vector<OpAlternative> conv2d_nchwc_alternatives(const OpInstance& op);

}  // namespace kiln
