#include "kernels/gpu_wgmma_conv2d.h"

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/conv2d.h"
#include "kernels/cuda_tensor_intrinsics.h"
#include "kernels/gpu_mma_conv2d.h"
#include "kernels/gpu_mma_util.h"

namespace kiln {

namespace {

// The GEMM's rows: every image's output positions, padded to 64-row tiles.
int64_t gemm_rows(const ConvShape& c) { return c.N * c.OH * c.OW; }
int64_t padded_rows(const ConvShape& c) { return (gemm_rows(c) + 63) / 64 * 64; }
// The rows the output's 16-row steps cover: a block may take no more.
int64_t stepped_rows(const ConvShape& c) { return (gemm_rows(c) + 15) / 16 * 16; }

}  // namespace

bool gpu_wgmma_conv2d_offered(const OpInstance& op, const GpuLimits& gpu) {
  // Rows for at least one warpgroup's four 16-row steps.
  const ConvShape c = conv_shape(op);
  return gpu.arch == "sm_90a" && gpu_mma_conv2d_offered(op, gpu) && c.K % 64 == 0 && stepped_rows(c) >= 64;
}

void define_gpu_wgmma_conv2d_knobs(const OpInstance& op, ConfigSpace* s) {
  const ConvShape c = conv_shape(op);
  // Two warpgroups a block where the rows fill it: the output's 16-row
  // steps must reach the block's end, or its warps would not all run.
  define_wgmma_knobs(s, padded_rows(c) / 64,
                     stepped_rows(c) >= 128 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{1}, c.K / 8);
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
  const DType input = op.dtype, f32 = DType::f32();
  // Warpgroups of four warps one above the other, 16 rows each.
  const int64_t warp_n = wn[2] * 8, block_m = 64 * wm[1], block_n = wn[1] * warp_n;
  const int64_t warps = 4 * wm[1] * wn[1], kt = fk[1] * 16;
  user_check(block_m <= stepped_rows(c)) << "wgmma_m: a block of " << wm[1] << " warpgroups takes " << block_m
                                         << " rows, more than the " << gemm_rows(c)
                                         << " output positions fill (16-row steps); take fewer warpgroups a block";
  const Tensor& data = op.inputs[0];

  const int M = static_cast<int>(gemm_rows(c)), Mp = static_cast<int>(padded_rows(c));
  const int P = static_cast<int>(c.OH * c.OW), OW = static_cast<int>(c.OW);
  const int st = static_cast<int>(c.stride), dl = static_cast<int>(c.dil), p = static_cast<int>(c.pad);
  const int H = static_cast<int>(c.H), W = static_cast<int>(c.W);
  const int N = static_cast<int>(c.N), K = static_cast<int>(c.K);
  const int Cin = static_cast<int>(c.C), Cp = static_cast<int>(implicit_gemm_channels(c));
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
  const Tensor B = implicit_gemm_weights(op, c);
  IterVar rr = reduce_axis(R, "rr"), rs = reduce_axis(S, "rs"), rc = reduce_axis(Cp, "rc");
  Tensor C = compute(
      {Mp, K},
      [&](Var m, Var k) {
        return sum(cast(f32, A(rr->var, rs->var, m, rc->var)) * cast(f32, B(rr->var, rs->var, rc->var, k)),
                   {rr, rs, rc});
      },
      "C", "implicit_gemm");
  Tensor out = implicit_gemm_output(
      op, c, [&](const Var& n, const Var& oh, const Var& ow, const Var& k) { return C(n * P + oh * OW + ow, k); });

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
  // knob asks and the rows are whole 128-byte strips. A gathers whole
  // vectors of channels where the input's rows are.
  Stage sg = s[A];
  sg.set_scope(MemScope::kShared);
  sg.compute_at(sa, kloop);
  lay_out_wgmma_operand(sg, cfg, kt * input.bytes(), warps, Cin % fill == 0 ? fill : 1);
  Stage sw = s[shared_implicit_gemm_weights(s, op, B, acc)];
  sw.compute_at(sa, kloop);
  lay_out_wgmma_operand(sw, cfg, block_n * input.bytes(), warps, fill);
  mma_pipeline(sa, kloop, cfg, /*async_products=*/true);

  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
}

}  // namespace kiln
