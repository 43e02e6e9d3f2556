#include "kernels/gpu_wgmma_conv2d.h"

#include <algorithm>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/activation.h"
#include "kernels/conv2d.h"
#include "kernels/cuda_tensor_intrinsics.h"
#include "kernels/gpu_mma_conv2d.h"
#include "kernels/gpu_mma_util.h"
#include "kernels/gpu_template_util.h"

namespace kiln {

namespace {

// The GEMM's rows: every image's output positions, padded to 64-row tiles.
int64_t gemm_rows(const ConvShape& c) { return c.N * c.OH * c.OW; }
int64_t padded_rows(const ConvShape& c) { return (gemm_rows(c) + 63) / 64 * 64; }
// The input channels padded to whole 16-channel k steps (zeros past C).
int64_t padded_channels(const ConvShape& c) { return (c.C + 15) / 16 * 16; }

}  // namespace

bool gpu_wgmma_conv2d_offered(const OpInstance& op, const GpuLimits& gpu) {
  // Rows for at least one warpgroup's four 16-row steps.
  const ConvShape c = conv_shape(op);
  return gpu.arch == "sm_90a" && gpu_mma_conv2d_offered(op, gpu) && c.K % 64 == 0 && gemm_rows(c) > 48;
}

void define_gpu_wgmma_conv2d_knobs(const OpInstance& op, ConfigSpace* s) {
  const ConvShape c = conv_shape(op);
  // Two warpgroups a block where the rows fill it: the output's 16-row
  // steps must reach the block's end, or its warps would not all run.
  s->define_exact_split_levels(
      "wgmma_m", padded_rows(c) / 64,
      {(gemm_rows(c) + 15) / 16 * 16 >= 128 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{1}},
      /*added_later=*/true);
  s->define_exact_split_levels("wgmma_n", c.K / 8, {{1, 2}, {8, 16, 32}}, /*added_later=*/true);
  s->define_choice("mma_in_flight", {0, 1}, /*added_later=*/true);
  s->define_choice("swizzle", {0, 1}, /*added_later=*/true);
  s->define_choice("fill_vec", {0, 8}, /*added_later=*/true);
}

ScheduledOp gpu_wgmma_conv2d_schedule(const OpInstance& op, const Config& cfg) {
  user_check(cfg.has("wgmma_m") && cfg.has("wgmma_n"))
      << "tensor_core 'wgmma' needs the knobs wgmma_m and wgmma_n (offered for conv2d_nhwc on sm_90a, K a multiple "
         "of 64)";
  const ConvShape c = conv_shape(op);
  const std::vector<int64_t>& wm = cfg.split("wgmma_m");
  const std::vector<int64_t>& wn = cfg.split("wgmma_n");
  const std::vector<int64_t>& fk = cfg.split("mma_k");
  const int64_t vec = cfg.choice("vec");
  const int64_t fill = cfg.has("fill_vec") && cfg.choice("fill_vec") > 0 ? cfg.choice("fill_vec") : vec;
  const bool swizzle = cfg.has("swizzle") && cfg.choice("swizzle") == 1;
  const DType input = op.dtype, f32 = DType::f32();
  // Warpgroups of four warps one above the other, 16 rows each.
  const int64_t warp_n = wn[2] * 8, block_m = 64 * wm[1], block_n = wn[1] * warp_n;
  const int64_t warps = 4 * wm[1] * wn[1], kt = fk[1] * 16;
  user_check(block_m <= (gemm_rows(c) + 15) / 16 * 16)
      << "wgmma_m: a block of " << wm[1] << " warpgroups takes " << block_m << " rows, more than the " << gemm_rows(c)
      << " output positions fill (16-row steps); take fewer warpgroups a block";
  const Tensor& data = op.inputs[0];
  const Tensor& weight = op.inputs[1];

  const int M = static_cast<int>(gemm_rows(c)), Mp = static_cast<int>(padded_rows(c));
  const int P = static_cast<int>(c.OH * c.OW), OW = static_cast<int>(c.OW), OH = static_cast<int>(c.OH);
  const int st = static_cast<int>(c.stride), dl = static_cast<int>(c.dil), p = static_cast<int>(c.pad);
  const int H = static_cast<int>(c.H), W = static_cast<int>(c.W);
  const int N = static_cast<int>(c.N), K = static_cast<int>(c.K);
  const int Cin = static_cast<int>(c.C), Cp = static_cast<int>(padded_channels(c));
  const int R = static_cast<int>(c.R), S = static_cast<int>(c.S);
  // The GEMM's A per tap (r, s): row m (image n, position m % P), channel
  // ch of the zero-padded input; 0 on the padded rows. Indices are clamped
  // so that no read leaves the data.
  Tensor A = compute(
      {R, S, Mp, Cp},
      [&](const std::vector<Var>& v) {
        const Expr pos = floormod(v[2], P);
        Expr h = floordiv(pos, OW) * st + v[0] * dl - p, w = floormod(pos, OW) * st + v[1] * dl - p;
        Expr inside = v[2] < M && h >= 0 && h < H && w >= 0 && w < W;
        if (Cp > Cin) inside = inside && v[3] < Cin;
        Expr ch = Cp > Cin ? min(v[3], Cin - 1) : Expr(v[3]);
        Expr n = min(floordiv(v[2], P), N - 1);
        Expr x = data(n, min(max(h, 0), H - 1), min(max(w, 0), W - 1), ch);
        return select(inside, x, make_zero(input));
      },
      "im2col", "gather");
  // The weights as the GEMM's B; with C padded, a zero-filled copy.
  Tensor B = Cp == Cin ? weight
                       : compute(
                             {R, S, Cp, K},
                             [&](Var r, Var s, Var ch, Var k) {
                               return select(ch < Cin, weight(r, s, min(ch, Cin - 1), k), make_zero(input));
                             },
                             "weight_pad", "pad");
  IterVar rr = reduce_axis(R, "rr"), rs = reduce_axis(S, "rs"), rc = reduce_axis(Cp, "rc");
  Tensor C = compute(
      {Mp, K},
      [&](Var m, Var k) {
        return sum(cast(f32, A(rr->var, rs->var, m, rc->var)) * cast(f32, B(rr->var, rs->var, rc->var, k)),
                   {rr, rs, rc});
      },
      "C", "implicit_gemm");
  const Tensor* bias = c.bias ? &op.inputs[2] : nullptr;
  Tensor out = compute(
      {N, OH, OW, K},
      [&](Var n, Var oh, Var ow, Var k) {
        Expr v = C(n * P + oh * OW + ow, k);
        if (bias) v = v + cast(f32, (*bias)(k));
        return cast(input, apply_activation(v, c.act));
      },
      "out", "epilogue");

  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& s = *sch;
  Tensor acc = s.cache_write(C, MemScope::kWarp);
  s[C].set_scope(MemScope::kShared);

  // The output: all positions in 16-row steps, BM / 16 steps a block (the
  // last step guarded), BN channels a block; then the block's threads over
  // the tile.
  Stage so = s[out];
  // Fused as (n, (oh, ow)), so that the staging tile's rows that the
  // output reads, n * P + oh * OW + ow, simplify back to the fused loop.
  IterVar pos = so.fuse(so.axis()[0], so.fuse(so.axis()[1], so.axis()[2])), steps, row, bm, fi, bk, ki;
  so.split(pos, 16, &steps, &row);
  so.split(steps, block_m / 16, &bm, &fi);
  so.split(so.axis()[3], block_n, &bk, &ki);
  so.reorder({bm, bk, fi, row, ki});
  const IterVar block = so.fuse({bm, bk});
  so.bind(block, "blockIdx.x");
  mma_output_threads(so, so.fuse({fi, row, ki}), warps, block_n % vec == 0 ? vec : 1);

  // The staging tile: each warp stores its fragments; a warpgroup's four
  // warps one above the other.
  Stage sc = s[C];
  sc.compute_at(so, block);
  const IterVar warp = mma_staging_tile(sc, {}, sc.axis()[0], sc.axis()[1], 16, warp_n, /*rows_first=*/true);

  // The warp's accumulators: per tap and k tile, one wgmma call over the
  // tile's 16-steps, the warp's 16 rows by its warpgroup's columns. One k
  // loop over the taps and channel tiles, so that a pipeline runs across
  // taps rather than restarting at each.
  Stage sa = s[acc];
  sa.compute_at(sc, warp);
  IterVar co, cr;
  sa.split(sa.reduce_axis()[2], kt, &co, &cr);
  sa.reorder({sa.reduce_axis()[0], sa.reduce_axis()[1], co, sa.axis()[0], sa.axis()[1], cr});
  const IterVar kloop = sa.fuse({sa.reduce_axis()[0], sa.reduce_axis()[1], co});
  sa.tensorize(sa.axis()[0], cuda_wgmma(input, warp_n, fk[1], false, false));

  // Per tap and k tile: the gathered input (block_m x kt) and the weights
  // (kt x block_n) in shared memory, in 8 x 8 tiles, or swizzled where the
  // knob asks and the rows are whole 128-byte strips.
  auto lay_out = [&](Stage tile, int64_t tile_row, int64_t copy) {
    tile.compute_at(sa, kloop);
    if (swizzle && tile_row * input.bytes() % 128 == 0) {
      cooperative_fill(tile, warps, 32, copy);
      tile.storage_swizzle(128);
    } else {
      cooperative_tile_fill(tile, warps, 32, copy, 8);
      tile.storage_tile(8, 8);
    }
  };
  s[A].set_scope(MemScope::kShared);
  // A gathers whole vectors of channels where the input's rows are.
  lay_out(s[A], kt, Cin % fill == 0 ? fill : 1);
  Tensor Ws = B;
  if (Cp == Cin) {
    Ws = s.cache_read(weight, MemScope::kShared, {s.current_op(acc)});
  } else {
    s[B].set_scope(MemScope::kShared);
  }
  lay_out(s[Ws], block_n, fill);
  mma_pipeline(sa, kloop, cfg, /*async_products=*/true);

  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
}

}  // namespace kiln
