// The tunable CPU schedule template of conv2d and its ConfigSpace. The
// kernel's interface stays NCHW data, KCRS weights, NCHW output; inside it:
//   weight_pack[K/kb, {C/cb, R, S, cb} in the reduction loop order, kb]
//     (zero past K and C)
//   data: "layout" nchw reads the zero-padded NCHW input (data_pad stage
//     when pad > 0); "layout" nchwc repacks it, padding included, into
//     data_pack[N, C/cb, H+2p, W+2p, cb] (NCHW[x]c, x = cb = "tile_c")
//   conv_blocked[N, K/kb, OH, OW, kb] (local accumulator, NCHW[kb]c)
//     = sum over (c/cb, r, s, c%cb) of data * weight_pack
//   conv[N, K, OH, OW] = conv_blocked unpacked (the output stage).
// Knobs: the output stage tiles k -> [ko, kb] ("tile_k", kb vectorized),
// oh -> [oho, ohm, ohi] ("tile_oh"), ow -> [owo, owi] ("tile_ow"); the band
// {n, ko, oho, ohm, owo} takes one of a few orders ("order"), its first
// "parallel" loops fused into one parallel loop; the accumulator is
// computed at band position "acc_at" and cut into ohi x owi x kb register
// tiles, with the reduction loops (order "reduce_order", kernel width
// unrolled or not: "unroll_kw") outside the unrolled tile loops; the data
// stage is computed at the root or at a band position ("data_at"), the
// weight pack at the root or at the ko loop ("weight_at"); the unpack
// copy is scalar or vectorized along k or along ow ("out_vec"); the taps
// read zero padding ("border" "pad"), or the data where they fall inside it
// ("clip": padding taps skipped, the data stage holds no padding). The weight
// pack's dimensions follow the reduction's loop order. Stage positions are
// clamped so that they enclose the accumulator. Every config of the space
// lowers to a correct kernel.
// Groups: channel blocks stay inside a group (tile_k's inner factor divides
// K/groups, tile_c splits C/groups; the packed data holds the groups' blocks
// one after another); groups = 1 keeps the space above unchanged. A bias /
// activation epilogue is fused into the output (unpack) stage.
#pragma once

#include <memory>
#include <string>

#include "kernels/op_registry.h"
#include "schedule/config_space.h"

namespace kiln {

struct Conv2dParams {
  bool packed_data = false;                       // layout nchwc
  std::vector<int64_t> tile_k{1, 1};              // [ko, kb]
  std::vector<int64_t> tile_c{1, 1};              // [co, cb]
  std::vector<int64_t> tile_oh{1, 1, 1};          // [oho, ohm, ohi]
  std::vector<int64_t> tile_ow{1, 1};             // [owo, owi]
  std::vector<int64_t> order{0, 1, 2, 3, 4};      // permutation of band {n, ko, oho, ohm, owo}
  int acc_at = 4;                                 // band position of the accumulator
  std::vector<int64_t> reduce_order{0, 3, 1, 2};  // permutation of {c/cb, r, s, c%cb}
  bool unroll_kw = false;
  int parallel = 3;              // band loops fused into the parallel loop
  int data_at = -1;              // -1: root, else band position
  int weight_at = -1;            // -1: root, 0: at the ko loop
  std::string out_vec = "none";  // the unpack copy: "none", vectorized along "k" or along "ow"
  bool clip = false;             // border "clip": taps read unpadded data where inside, padding taps skipped
};

// The orders the template (and conv2d_nchwc's) offers for the loop band
// {0 = n, 1 = ko, 2 = oho, 3 = ohm, 4 = owo} and for the reduction
// {0 = c/cb, 1 = r, 2 = s, 3 = c%cb}, and the register-tile row counts.
const std::vector<std::vector<int64_t>>& conv2d_band_orders();
const std::vector<std::vector<int64_t>>& conv2d_reduce_orders();
const std::vector<int64_t>& conv2d_tile_rows();

std::shared_ptr<ConfigSpace> conv2d_space(const OpInstance& op, const CpuInfo& cpu);
// The hand-tuned point of the space.
Config conv2d_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space);
Conv2dParams conv2d_decode(const Config& cfg);
ScheduledOp conv2d_apply(const OpInstance& op, const Config& cfg);
ScheduledOp conv2d_template_schedule(const OpInstance& op, const Conv2dParams& p);

}  // namespace kiln
