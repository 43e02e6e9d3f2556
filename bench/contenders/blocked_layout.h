// The blocked arrays of conv2d_nchwc and depthwise_conv2d_nchwc and their
// plain equivalents, for the baselines that run the convolution in a layout
// of their own choosing (oneDNN reorders from NCHW / KCRS itself; Halide's
// helper takes NCHW):
//   data   [N, C/cb, H, W, cb]            <-> [N, C, H, W]
//   weight [K/kb, Cg/cb, R, S, cb, kb]     <-> [K, Cg, R, S]   (Cg = C/groups)
//   output [N, K/kb, OH, OW, kb]           <-> [N, K, OH, OW]
// qconv2d_nchwc's weights, 4 input channels innermost (VNNI's blocks):
//   weight [K/kb, Cg/cb, R, S, cb/4, kb, 4]  <-> [K, Cg, R, S]
// and for the depthwise op (K = C, Cg = 1, kb = cb):
//   weight [C/cb, R, S, cb]                <-> [C, 1, R, S]
// Any element type. The conversions run at set-up and after the timed runs,
// never inside them.
#pragma once

#include <cstdint>

#include "bench/contenders/contender.h"
#include "runtime/ndarray.h"

namespace kiln::baselines {

// The NCHW data and KCRS weights of blocked ones (new arrays).
rt::NDArray unblock_data(const BlockedConvShape& s, const rt::NDArray& blocked);
rt::NDArray unblock_weight(const BlockedConvShape& s, const rt::NDArray& blocked);
// Weights in dot-product blocks [K/kb, Cg/cb, R, S, cb/steps, kb, steps]
// (VNNI's 4 input channels, AVX512-BF16's 2) as KCRS.
rt::NDArray unblock_vnni_weight(const BlockedConvShape& s, const rt::NDArray& blocked, int64_t steps = 4);
rt::NDArray unblock_depthwise_weight(const BlockedConvShape& s, const rt::NDArray& blocked);
// Writes an NCHW output [N, K, OH, OW] into the blocked output array.
void block_output(const BlockedConvShape& s, const rt::NDArray& plain, const rt::NDArray& blocked);

}  // namespace kiln::baselines
