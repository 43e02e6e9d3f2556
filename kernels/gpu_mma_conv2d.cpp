#include "kernels/gpu_mma_conv2d.h"

#include <algorithm>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/activation.h"
#include "kernels/conv2d.h"
#include "kernels/conv2d_common.h"
#include "kernels/cuda_tensor_intrinsics.h"
#include "kernels/gpu_mma_util.h"
#include "kernels/gpu_template_util.h"
#include "kernels/gpu_wgmma_conv2d.h"

namespace kiln {

namespace {

int64_t positions(const ConvShape& c) { return c.OH * c.OW; }
int64_t padded_positions(const ConvShape& c) { return (positions(c) + 15) / 16 * 16; }

}  // namespace

int64_t implicit_gemm_channels(const ConvShape& c) { return (c.C + 15) / 16 * 16; }

Tensor implicit_gemm_weights(const OpInstance& op, const ConvShape& c) {
  const Tensor& weight = op.inputs[1];
  const int Cin = static_cast<int>(c.C), Cp = static_cast<int>(implicit_gemm_channels(c));
  if (Cp == Cin) return weight;
  const DType input = op.dtype;
  return compute(
      {static_cast<int>(c.R), static_cast<int>(c.S), Cp, static_cast<int>(c.K)},
      [&](Var r, Var s, Var ch, Var k) {
        return select(ch < Cin, weight(r, s, min(ch, Cin - 1), k), make_zero(input));
      },
      "weight_pad", "pad");
}

Tensor implicit_gemm_output(const OpInstance& op, const ConvShape& c,
                            const std::function<Expr(const Var&, const Var&, const Var&, const Var&)>& sums) {
  const Tensor* bias = c.bias ? &op.inputs[2] : nullptr;
  const DType input = op.dtype, f32 = DType::f32();
  return compute(
      {static_cast<int>(c.N), static_cast<int>(c.OH), static_cast<int>(c.OW), static_cast<int>(c.K)},
      [&](Var n, Var oh, Var ow, Var k) {
        Expr v = sums(n, oh, ow, k);
        if (bias) v = v + cast(f32, (*bias)(k));
        return cast(input, apply_activation(v, c.act));
      },
      "out", "epilogue");
}

Tensor shared_implicit_gemm_weights(Schedule& s, const OpInstance& op, const Tensor& B, const Tensor& acc) {
  if (B.same_tensor(op.inputs[1])) return s.cache_read(B, MemScope::kShared, {s.current_op(acc)});
  s[B].set_scope(MemScope::kShared);
  return B;
}

bool gpu_mma_conv2d_offered(const OpInstance& op, const GpuLimits& gpu) {
  if (op.op != "conv2d_nhwc" || (op.dtype != DType::f16() && op.dtype != DType::bf16()) || gpu.sm_version < 80)
    return false;
  const ConvShape c = conv_shape(op);
  return c.G == 1 && c.K % 8 == 0 && positions(c) >= 16;
}

void define_gpu_mma_conv2d_knobs(const OpInstance& op, const GpuLimits& gpu, ConfigSpace* s) {
  const ConvShape c = conv_shape(op);
  const bool wgmma = gpu_wgmma_conv2d_offered(op, gpu);
  s->define_annotate("tensor_core",
                     wgmma ? std::vector<std::string>{"none", "mma", "wgmma"} : std::vector<std::string>{"none", "mma"},
                     /*added_later=*/true);
  if (wgmma) define_gpu_wgmma_conv2d_knobs(op, s);
  s->define_exact_split_levels("mma_m", padded_positions(c) / 16, {{1, 2, 4}, {1, 2, 4}}, /*added_later=*/true);
  s->define_exact_split_levels("mma_n", c.K / 8, {{1, 2, 4}, {1, 2, 4, 8}}, /*added_later=*/true);
  s->define_exact_split_levels("mma_k", implicit_gemm_channels(c) / 16, {{1, 2, 4}}, /*added_later=*/true);
  s->define_choice("pad_rows", {0, 1}, /*added_later=*/true);
  // Slots of the shared tiles of the fused tap and channel-tile loop:
  // tiles copied (cp.async where they are plain copies) that many minus one
  // ahead of the compute; 1 loads each in turn. With producer warps, those
  // fill the slots while the others compute.
  define_mma_pipeline_knobs(s, gpu);
}

void gpu_mma_conv2d_default(const OpInstance& op, nlohmann::json* j) {
  const ConvShape c = conv_shape(op);
  // The GEMM's default: a 64 x 64 block of 2 x 2 warps, k tiles of 32.
  (*j)["tensor_core"] = "mma";
  (*j)["mma_m"] = {std::max<int64_t>(1, padded_positions(c) / 64), 2, 2};
  (*j)["mma_n"] = {std::max<int64_t>(1, c.K / 64), 2, 4};
  (*j)["mma_k"] = {std::max<int64_t>(1, implicit_gemm_channels(c) / 32), 2};
  (*j)["pad_rows"] = 1;
  // Three slots: what each of the four 3x3 stride-1 ResNet-50 layers at
  // batch 16 chose when tuned on an H100 (bench/results/gpu_h100_pipeline_20261126.md);
  // fewer where the k loop is shorter. For a 64 x 64 block the slots take
  // 41 KiB, which the staging tile reuses after the k loop.
  (*j)["stages"] = std::min<int64_t>(3, c.R * c.S * std::max<int64_t>(1, implicit_gemm_channels(c) / 32));
}

ScheduledOp gpu_mma_conv2d_schedule(const OpInstance& op, const Config& cfg) {
  const ConvShape c = conv_shape(op);
  const std::vector<int64_t>& fm = cfg.split("mma_m");
  const std::vector<int64_t>& fn = cfg.split("mma_n");
  const std::vector<int64_t>& fk = cfg.split("mma_k");
  const int64_t vec = cfg.choice("vec");
  const bool pad = cfg.choice("pad_rows") > 0;
  const DType input = op.dtype, f32 = DType::f32();
  const int64_t warp_m = fm[2] * 16, warp_n = fn[2] * 8, block_m = fm[1] * warp_m, block_n = fn[1] * warp_n;
  const int64_t warps = fm[1] * fn[1], kt = fk[1] * 16;
  const Tensor& data = op.inputs[0];

  // The GEMM's A: image n, position m, tap (r, s), channel ch of the
  // zero-padded input; 0 on the padded rows. Indices are clamped so that
  // no read leaves the data.
  const int P = static_cast<int>(positions(c)), Pp = static_cast<int>(padded_positions(c));
  const int OW = static_cast<int>(c.OW);
  const int st = static_cast<int>(c.stride), dl = static_cast<int>(c.dil), p = static_cast<int>(c.pad);
  const int H = static_cast<int>(c.H), W = static_cast<int>(c.W);
  const int N = static_cast<int>(c.N), K = static_cast<int>(c.K);
  const int Cin = static_cast<int>(c.C), Cp = static_cast<int>(implicit_gemm_channels(c));
  const int R = static_cast<int>(c.R), S = static_cast<int>(c.S);
  Tensor A = compute(
      {N, Pp, R, S, Cp},
      [&](const std::vector<Var>& v) {
        Expr h = floordiv(v[1], OW) * st + v[2] * dl - p, w = floormod(v[1], OW) * st + v[3] * dl - p;
        Expr inside = v[1] < P && h >= 0 && h < H && w >= 0 && w < W;
        if (Cp > Cin) inside = inside && v[4] < Cin;
        Expr ch = Cp > Cin ? min(v[4], Cin - 1) : Expr(v[4]);
        Expr x = data(v[0], min(max(h, 0), H - 1), min(max(w, 0), W - 1), ch);
        return select(inside, x, make_zero(input));
      },
      "im2col", "gather");
  const Tensor B = implicit_gemm_weights(op, c);
  IterVar rr = reduce_axis(R, "rr"), rs = reduce_axis(S, "rs"), rc = reduce_axis(Cp, "rc");
  Tensor C = compute(
      {N, Pp, K},
      [&](Var n, Var m, Var k) {
        return sum(cast(f32, A(n, m, rr->var, rs->var, rc->var)) * cast(f32, B(rr->var, rs->var, rc->var, k)),
                   {rr, rs, rc});
      },
      "C", "implicit_gemm");
  Tensor out = implicit_gemm_output(
      op, c, [&](const Var& n, const Var& oh, const Var& ow, const Var& k) { return C(n, oh * OW + ow, k); });

  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& s = *sch;
  Tensor acc = s.cache_write(C, MemScope::kWarp);
  s[C].set_scope(MemScope::kShared);

  // The output: an image's positions in 16-row steps, BM / 16 steps a
  // block (the last step of an image guarded), BN channels a block; then
  // the block's threads over the tile.
  Stage so = s[out];
  IterVar pos = so.fuse(so.axis()[1], so.axis()[2]), steps, row, bm, fi, bk, ki;
  so.split(pos, 16, &steps, &row);
  so.split(steps, block_m / 16, &bm, &fi);
  so.split(so.axis()[3], block_n, &bk, &ki);
  so.reorder({so.axis()[0], bm, bk, fi, row, ki});
  const IterVar block = so.fuse({so.axis()[0], bm, bk});
  so.bind(block, "blockIdx.x");
  mma_output_threads(so, so.fuse({fi, row, ki}), warps, block_n % vec == 0 ? vec : 1);

  // The staging tile: each warp stores its fragments (one call per m16n8).
  Stage sc = s[C];
  sc.compute_at(so, block);
  const IterVar warp = mma_staging_tile(sc, {sc.axis()[0]}, sc.axis()[1], sc.axis()[2], warp_m, warp_n);

  // The warp's accumulators: per tap and k tile, per 16-step, per column of
  // fragments, per row of them: one mma.
  Stage sa = s[acc];
  sa.compute_at(sc, warp);
  IterVar co, cr, ci, c16, ami, am16, ani, an8;
  sa.split(sa.reduce_axis()[2], kt, &co, &cr);
  sa.split(cr, 16, &ci, &c16);
  sa.split(sa.axis()[1], 16, &ami, &am16);
  sa.split(sa.axis()[2], 8, &ani, &an8);
  sa.reorder({sa.axis()[0], sa.reduce_axis()[0], sa.reduce_axis()[1], co, ci, ani, ami, am16, an8, c16});
  // One k loop over the taps and channel tiles, so that a pipeline runs
  // across taps rather than restarting at each.
  const IterVar kloop = sa.fuse({sa.reduce_axis()[0], sa.reduce_axis()[1], co});
  sa.unroll(ani);
  sa.unroll(ami);
  if (cfg.annotate("unroll") == "unroll") sa.unroll(ci);
  sa.tensorize(am16, cuda_mma_m16n8k16(input, false, false));

  // Per tap and k tile: the gathered input and the weights in shared memory
  // (padded rows stay 16-byte aligned for ldmatrix).
  Stage sg = s[A];
  sg.set_scope(MemScope::kShared);
  sg.compute_at(sa, kloop);
  cooperative_fill(sg, warps, 32, kt % vec == 0 ? vec : 1);
  if (pad) sg.storage_align(1, 64, 8);
  const Tensor Ws = shared_implicit_gemm_weights(s, op, B, acc);
  Stage sw = s[Ws];
  sw.compute_at(sa, kloop);
  cooperative_fill(sw, warps, 32, block_n % vec == 0 && c.K % vec == 0 ? vec : 1);
  if (pad) sw.storage_align(2, 64, 8);
  mma_pipeline(sa, kloop, cfg);

  // Fragments: the warp's positions per 16 channels, one B column at a time.
  Tensor Af = s.cache_read(A, MemScope::kWarp, {s.current_op(acc)});
  Stage sf = s[Af];
  sf.compute_at(sa, ci);
  {
    IterVar mo, m_in;
    auto ax = sf.axis();
    sf.split(ax[1], 16, &mo, &m_in);
    sf.reorder({ax[0], mo, ax[2], ax[3], m_in, ax[4]});
    sf.unroll(mo);
    sf.tensorize(m_in, cuda_mma_load_a(input, false));
  }
  Tensor Bf = s.cache_read(Ws, MemScope::kWarp, {s.current_op(acc)});
  Stage sb = s[Bf];
  sb.compute_at(sa, ani);
  sb.tensorize(sb.axis()[2], cuda_mma_load_b(input, false));

  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
}

}  // namespace kiln
