// Pieces shared by the sliding-window ops (conv2d, conv2d_nhwc,
// depthwise_conv2d, max_pool2d, avg_pool2d) and their CPU templates: output
// extents, the padded input stage, group and epilogue helpers, the common
// parameter declarations, and the scheduling steps the templates share
// (a register-tiled accumulator, a producer stage placed at the root or in
// the loop band).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/activation.h"
#include "kernels/op_registry.h"
#include "kernels/template_util.h"

namespace kiln {

// Output extent of a window of `kernel` taps spaced `dilation` apart, moved
// by `stride` over an input of `in` elements padded by `pad` on both sides.
int64_t window_out_extent(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation);

// The input padded by `pad` on both sides of dimensions `h_dim` and `w_dim`
// with `fill` (a stage named "data_pad", tagged "pad"), or the input itself
// when pad == 0. h and w are clamped into the input so that every read is in
// bounds whatever the select does.
Tensor pad_spatial(const Tensor& data, int h_dim, int w_dim, int64_t pad, Expr fill);

// A window tap read from the unpadded input: at padded coordinates (h, w)
// it is input element (h - pad, w - pad), which exists when `inside`
// (undefined when pad == 0). A reduction conditioned on `inside` skips the
// taps that fall on padding instead of multiplying zeros, and loop
// partitioning drops the condition from the interior: the "clip" border of
// the convolution templates. Skipping a tap and adding 0 * w agree for every
// finite weight; with an inf or NaN weight the skipped tap stays finite.
struct InputTap {
  Expr h, w, inside;
};
InputTap input_tap(Expr h, Expr w, int64_t pad, int64_t H, int64_t W);

// How a template's taps reach the padding: "pad" reads a zero-padded copy,
// "clip" reads the input through input_tap's condition. The options of its
// "border" knob: both when the window is padded, else "pad" alone.
std::vector<std::string> border_options(int64_t pad);

// The "flat" alternative of a 1x1 stride-1 unpadded convolution over more
// than one row (conv2d_nchwc, conv2d_nhwc): the same op with H = 1 and
// W = H*W. Both layouts keep a pixel's row and column adjacent
// ([.., H, W, ..]), so its data and output buffers are the original's, and
// its register tiles run across rows (the GEMM view vendor libraries take
// of 1x1 layers). None for other layers.
std::vector<OpAlternative> flat_alternative(const OpInstance& op);

// Reducing to unit stride: a 1x1 window moved by a stride over unpadded
// data reads only every stride-th row and column. Such a layer may first
// copy those pixels into a dense buffer and read it as a 1x1 stride-1 layer
// over OH x OW (oneDNN's "rtus"): each strided pixel is then read once
// rather than once per output channel tile, and the buffer is 1/stride^2
// of the input, so it stays in cache across the channel tiles.
bool unit_stride_offered(int64_t R, int64_t S, int64_t stride, int64_t pad);
// The options of a template's "unit_stride" knob: "strided" (read the input
// in place), and "dense" where unit_stride_offered.
std::vector<std::string> unit_stride_options(int64_t R, int64_t S, int64_t stride, int64_t pad);
// data_dense[.., oh, .., ow, ..] = data[.., oh * stride, .., ow * stride, ..]
// over OH x OW (a stage named "data_dense", tagged "pack").
Tensor dense_spatial(const Tensor& data, int h_dim, int w_dim, int64_t stride, int64_t OH, int64_t OW);

// NCHW data repacked as NCHW[cb]c, padding included (a stage named
// "data_pack", tagged "pack"): data_pack[n, g*CB + co, h, w, ci] =
// pad(data)[n, g*Cg + co*cb + ci, h, w] for each of `groups` groups of
// Cg = C/groups channels in CB = ceil(Cg/cb) blocks; zero in the padding
// and past a group's channels.
Tensor pack_nchwc(const Tensor& data, int64_t groups, int64_t cb, int64_t pad, DType dtype);

// user_error unless `groups` divides both channel counts.
void check_groups(const std::string& op, int64_t C, int64_t K, int64_t groups);
// user_error unless the window fits the padded input.
void check_window(const std::string& op, int64_t H, int64_t W, int64_t R, int64_t S, int64_t pad, int64_t dilation);
// A workload's stride_w (0: the stride) is given only where it differs from
// the stride, so each layer has one spelling, one task key; user_error else.
void check_stride_w(const std::string& op, int64_t stride, int64_t stride_w);

// v (+ bias[index]), then the activation, in v's (the accumulator's) type,
// rounded to `out` once at the end: the fused element-wise epilogue.
Expr conv_epilogue(Expr v, const Tensor* bias, Expr index, Activation act, DType out);
// conv_epilogue over a blocked output [N, C/block, OH, OW, block]: element
// (n, co, oh, ow, ci) is channel co * block + ci.
Tensor blocked_conv_epilogue(const Tensor& conv, const Tensor* bias, int64_t block, Activation act, DType out,
                             const std::string& name, const std::string& tag);
// The op's bias input (bias_type, one value per output channel).
Tensor bias_placeholder(int64_t K, DType dtype);

// Parameter declarations, in the order ops list them.
OpParam int_param(const std::string& name, const std::string& meaning, const std::string& default_value = "");
std::vector<OpParam> window_params(bool with_dilation);  // stride, pad[, dilation]
OpParam dtype_param();
OpParam groups_param();
// bias (`bias_meaning` says what it adds) and the activations (relu, relu6,
// hswish, hsigmoid): flags, left out of canonical strings at 0.
std::vector<OpParam> epilogue_params(
    const std::string& bias_meaning = "1: add bias[K] (one value per output channel)");

// Orders of the band {n, channel block, row tile, column tile} of the
// channel-blocked window templates (depthwise, pooling): plane by plane, row
// blocks outside the channel blocks, or channel blocks outside the batch.
const std::vector<std::vector<int64_t>>& channel_band_orders();
// The taps of a window starting at output position o that fall inside an
// input of `extent` elements (an average's count, padding excluded).
Expr taps_inside(Expr o, int64_t stride, int64_t pad, int64_t window, int64_t extent);
// Vector registers one block of `block` channels takes (a narrow block
// still fills one).
int64_t vectors_per_block(int64_t block, int lanes);
// Output channel blocks per register tile: at most four vector registers
// of channels.
std::vector<int64_t> block_tile_candidates(int64_t blocks, int64_t block, int lanes);

// Register-tile candidates of an output row (at most 32 columns).
std::vector<int64_t> row_tile_candidates(int64_t extent);
// The vector registers a register tile's accumulators may take: all but
// four (for the weights, the broadcast input and addresses).
int64_t accumulator_registers(const CpuInfo& cpu);
// The register tile's width along an output row for `kb` vectorized
// channels: the widest block (at most 14) that divides OW and keeps the
// accumulators within the vector registers (but four); when only a narrow
// divisor fits, as many columns as the registers hold.
int64_t register_tile_cols(int64_t OW, int64_t kb, const CpuInfo& cpu, DType acc);
// Vector tiles of a channel axis whose blocks must not straddle groups of
// `group_size` channels: its divisors up to four vectors.
std::vector<int64_t> group_tile_candidates(int64_t group_size, int lanes);

// Cuts a local accumulator stage into register tiles: axis d is split by
// tile[d] when tile[d] > 0. Loop order: unsplit axes and the outer parts
// (in axis order), the reduce axes in `reduce_order`, then the inner parts
// (unrolled), with axis `vec_axis` (its inner part if split) last and
// vectorized. The reduce axis `unroll_reduce` (-1: none) is unrolled.
// `channels_axis` (-1: none), an output-channel axis split into several
// blocks, runs innermost of the unrolled loops: each input value is then
// loaded (broadcast) once and used by every block at once, so one register
// holds it; with the channel blocks outside, each of a block's values stays
// live until the last block uses it, and a wide tile runs out of registers.
void tile_accumulator(Stage acc, const std::vector<int64_t>& tile, const std::vector<int64_t>& reduce_order,
                      int vec_axis, int unroll_reduce, int channels_axis = -1);

// The tiling the channel-blocked window templates share
// (depthwise_conv2d_nchwc, max/avg_pool2d_nchwc): the output
// [N, C/cb, OH, OW, cb] cut into ohi x owi tiles, the band {n, co, oho, owo}
// in the config's "order" with its first "parallel" loops fused into a
// parallel loop, the cb lanes vectorized, and the local accumulator `acc`
// at band position "acc_at" (clamped to the band) as ohi x owi register
// tiles over the window taps ("reduce_order"; the window width unrolled
// when "unroll_kw" says so).
struct ChannelTiles {
  LoopBand band;
  int acc_pos;
};
ChannelTiles schedule_channel_tiles(Stage out, Stage acc, int64_t ohi, int64_t owi, const Config& cfg);

// The output tiling of the NCHW[x]c convolution templates (conv2d_nchwc,
// qconv2d_nchwc): the output [N, K/kb, OH, OW, kb] cut into kbi blocks x
// ohi rows (ohm tiles of them per row block) x owi columns, the band {n,
// kbo, oho, ohm, owo} in the config's "order" with its first "parallel"
// loops fused into a parallel loop, and the kb lanes vectorized; acc_pos
// is the config's "acc_at" clamped to the band.
ChannelTiles tile_nchwc_output(Stage out, int64_t kbi, int64_t ohm, int64_t ohi, int64_t owi, const Config& cfg);
// Places a producer stage: at the root (`at` < 0; its first two loops
// fused, parallel when `parallel`), else inside band position
// min(at, limit). `vec_axis` >= 0 vectorizes that axis of the stage.
void place_stage(Stage stage, Stage consumer, const LoopBand& band, int at, int limit, bool parallel, int vec_axis);

}  // namespace kiln
