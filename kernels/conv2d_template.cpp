#include "kernels/conv2d_template.h"

#include <algorithm>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/conv2d.h"
#include "kernels/conv2d_common.h"
#include "kernels/template_util.h"

namespace kiln {

const std::vector<std::vector<int64_t>>& conv2d_band_orders() {
  static const std::vector<std::vector<int64_t>> orders = {
      {0, 1, 2, 3, 4},  // channel blocks outer: the weights of a block stay in cache
      {0, 2, 1, 3, 4},  // row blocks outer: their input rows stay in cache
      {0, 2, 3, 1, 4},  // rows, then channel blocks
      {0, 2, 3, 4, 1},  // all channel blocks of one register tile position
      {1, 0, 2, 3, 4},  // channel blocks outside the batch
  };
  return orders;
}

const std::vector<std::vector<int64_t>>& conv2d_reduce_orders() {
  static const std::vector<std::vector<int64_t>> orders = {
      {0, 1, 2, 3},  // oneDNN: channel block, taps, channels of the block
      {0, 3, 1, 2},  // channels, then taps
      {1, 2, 0, 3},  // taps outermost
      {0, 1, 3, 2},  // kernel width innermost
      {1, 0, 2, 3},  // kernel rows outermost
      {1, 0, 3, 2},  // kernel rows outermost, kernel width innermost
  };
  return orders;
}

const std::vector<int64_t>& conv2d_tile_rows() {
  static const std::vector<int64_t> rows = {1, 2, 3, 4};
  return rows;
}

std::shared_ptr<ConfigSpace> conv2d_space(const OpInstance& op, const CpuInfo& cpu) {
  ConvShape c = conv_shape(op);
  int lanes = vector_lanes(cpu, accumulator_type(op.dtype));
  auto s = std::make_shared<ConfigSpace>();
  // Grouped: channel blocks stay inside a group (of Cg inputs, Kg outputs).
  std::vector<int64_t> cb = block_candidates(c.Cg, 64);
  cb.push_back(c.Cg);
  s->define_annotate("layout", {"nchw", "nchwc"});
  s->define_split_levels("tile_k", c.K,
                         {c.G == 1 ? vector_tile_candidates(c.K, lanes) : group_tile_candidates(c.Kg, lanes)});
  s->define_split_levels("tile_c", c.Cg, {cb});
  s->define_split_levels("tile_oh", c.OH, {block_candidates(c.OH, c.OH), capped_candidates(c.OH, conv2d_tile_rows())});
  s->define_split_levels("tile_ow", c.OW, {row_tile_candidates(c.OW)});
  s->define_reorder("order", conv2d_band_orders());
  s->define_choice("acc_at", {1, 2, 3, 4});
  s->define_reorder("reduce_order", conv2d_reduce_orders());
  s->define_annotate("unroll_kw", {"none", "unroll"});
  s->define_choice("parallel", {0, 1, 2, 3});
  s->define_choice("data_at", {-1, 0, 1, 2});
  s->define_choice("weight_at", {-1, 0});
  s->define_annotate("out_vec", {"none", "k", "ow"});
  s->define_annotate("border", border_options(c.pad), true);  // configs stored before it: pad
  return s;
}

Config conv2d_default(const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space) {
  ConvShape c = conv_shape(op);
  int lanes = vector_lanes(cpu, accumulator_type(op.dtype));
  int64_t kb = c.K % (2 * lanes) == 0 ? 2 * lanes : lanes;
  if (c.K < kb) kb = c.K;
  if (c.G > 1) kb = nearest_split(space, "tile_k", {kb})[1];
  const int64_t owb = register_tile_cols(c.OW, kb, cpu, accumulator_type(op.dtype));
  nlohmann::json j;
  j["layout"] = "nchw";
  j["tile_k"] = nearest_split(space, "tile_k", {kb});
  // Channel blocks of 16 (oneDNN's block), reduced as: block, taps, channels of the block.
  j["tile_c"] = nearest_split(space, "tile_c", {16});
  j["tile_oh"] = nearest_split(space, "tile_oh", {1, 1});
  j["tile_ow"] = nearest_split(space, "tile_ow", {owb});
  j["order"] = conv2d_band_orders()[0];
  j["acc_at"] = 4;
  j["reduce_order"] = conv2d_reduce_orders()[0];
  j["unroll_kw"] = "none";
  j["parallel"] = cpu.num_threads > 1 ? 3 : 0;
  j["data_at"] = -1;
  j["weight_at"] = -1;
  j["out_vec"] = "none";
  j["border"] = "pad";
  return space.make(j);
}

Conv2dParams conv2d_decode(const Config& c) {
  Conv2dParams p;
  p.packed_data = c.annotate("layout") == "nchwc";
  p.tile_k = c.split("tile_k");
  p.tile_c = c.split("tile_c");
  p.tile_oh = c.split("tile_oh");
  p.tile_ow = c.split("tile_ow");
  p.order = c.reorder("order");
  p.acc_at = static_cast<int>(c.choice("acc_at"));
  p.reduce_order = c.reorder("reduce_order");
  p.unroll_kw = c.annotate("unroll_kw") == "unroll";
  p.parallel = static_cast<int>(c.choice("parallel"));
  p.data_at = static_cast<int>(c.choice("data_at"));
  p.weight_at = static_cast<int>(c.choice("weight_at"));
  p.out_vec = c.annotate("out_vec");
  p.clip = c.annotate("border") == "clip";
  return p;
}

ScheduledOp conv2d_apply(const OpInstance& op, const Config& cfg) {
  return conv2d_template_schedule(op, conv2d_decode(cfg));
}

ScheduledOp conv2d_template_schedule(const OpInstance& op, const Conv2dParams& p) {
  user_check(op.op == "conv2d") << "the conv2d template cannot schedule op '" << op.op << "'";
  user_check(p.tile_k.size() == 2 && p.tile_c.size() == 2 && p.tile_oh.size() == 3 && p.tile_ow.size() == 2 &&
             p.order.size() == 5 && p.reduce_order.size() == 4)
      << "conv2d template: tile_k, tile_c, tile_ow need 2 factors, tile_oh 3, order 5 loops, reduce_order 4";
  const int64_t kb = p.tile_k[1], cb = p.tile_c[1], ohm = p.tile_oh[1], ohi = p.tile_oh[2], owi = p.tile_ow[1];
  user_check(kb > 0 && cb > 0 && ohm > 0 && ohi > 0 && owi > 0) << "conv2d template: tile sizes must be positive";
  std::vector<int64_t> sorted = p.reduce_order;
  std::sort(sorted.begin(), sorted.end());
  user_check(sorted == std::vector<int64_t>({0, 1, 2, 3}))
      << "conv2d template: reduce_order must be a permutation of 0..3";
  ConvShape s = conv_shape(op);
  DType acc = accumulator_type(op.dtype);
  const Tensor& data = op.inputs[0];
  const Tensor& weight = op.inputs[1];
  user_check(s.G == 1 || s.Kg % kb == 0) << "conv2d template: with groups, tile_k's inner factor (" << kb
                                         << ") must divide the output channels per group (" << s.Kg << ")";
  const int64_t KB = (s.K + kb - 1) / kb, CB = (s.Cg + cb - 1) / cb;
  const int ikb = static_cast<int>(kb), icb = static_cast<int>(cb);
  const int iK = static_cast<int>(s.K), iC = static_cast<int>(s.Cg);

  // weight_pack[ko, <co, r, s, ci in the reduction's loop order>, ki] =
  // W[ko*kb + ki, co*cb + ci, r, s], zero past K and C: the reduction reads
  // the weights contiguously whatever its loop order.
  const std::vector<int64_t> red_extent = {CB, s.R, s.S, cb};
  std::vector<Expr> wshape = {KB};
  for (int64_t r : p.reduce_order) wshape.push_back(red_extent.at(static_cast<size_t>(r)));
  wshape.push_back(kb);
  Tensor wpack = compute(
      wshape,
      [&](const std::vector<Var>& v) {
        Expr red[4];
        for (size_t i = 0; i < 4; ++i) red[p.reduce_order[i]] = v[i + 1];
        Expr k = v[0] * ikb + v[5], c = red[0] * icb + red[3];
        Expr w = weight(s.K % kb ? min(k, iK - 1) : k, s.Cg % cb ? min(c, iC - 1) : c, red[1], red[2]);
        Expr inside;
        if (s.K % kb) inside = k < iK;
        if (s.Cg % cb) inside = inside.defined() ? (inside && c < iC) : (c < iC);
        return inside.defined() ? select(inside, w, make_zero(op.dtype)) : w;
      },
      "weight_pack", "pack");

  // The data as the reduction reads it: D(g, n, co, ci, h, w) in padded
  // coordinates (unpadded with clip), channel co*cb + ci of group g (g
  // undefined without groups).
  Tensor dstage;  // the data stage (undefined when the kernel reads `data` directly)
  std::function<Expr(Expr, Expr, Expr, Expr, Expr, Expr)> D;
  const int iCB = static_cast<int>(CB);
  if (p.packed_data) {
    // Grouped: the channel blocks of group g are blocks g*CB .. g*CB + CB - 1.
    // With clip the copy holds no padding: the taps are read at unpadded coordinates.
    dstage = pack_nchwc(data, s.G, cb, p.clip ? 0 : s.pad, op.dtype);
    D = [&](Expr g, Expr n, Expr co, Expr ci, Expr h, Expr w) {
      return dstage(n, g.defined() ? g * iCB + co : co, h, w, ci);
    };
  } else {
    Tensor padded = p.clip ? data : pad_input(data, s, op.dtype);
    if (!p.clip && s.pad > 0) dstage = padded;
    // Channels past C read channel C-1; their packed weights are zero.
    D = [&s, padded, icb, iC](Expr g, Expr n, Expr co, Expr ci, Expr h, Expr w) {
      Expr c = co * icb + ci;
      c = s.Cg % icb ? min(c, iC - 1) : c;
      return padded(n, g.defined() ? g * iC + c : c, h, w);
    };
  }

  IterVar rco = reduce_axis(static_cast<int>(CB), "rco"), rr = reduce_axis(static_cast<int>(s.R), "rr"),
          rs = reduce_axis(static_cast<int>(s.S), "rs"), rci = reduce_axis(icb, "rci");
  const int st = static_cast<int>(s.stride), dl = static_cast<int>(s.dil);
  Tensor conv_blocked = compute(
      {s.N, KB, s.OH, s.OW, kb},
      [&](const std::vector<Var>& v) {
        // The group of output channel block v[1] (kb divides Kg).
        Expr g = s.G > 1 ? floordiv(v[1], static_cast<int>(s.Kg / kb)) : Expr();
        Expr h = v[2] * st + rr->var * dl, w = v[3] * st + rs->var * dl;
        InputTap tap = p.clip ? input_tap(h, w, s.pad, s.H, s.W) : InputTap{h, w, Expr()};
        Expr x = D(g, v[0], rco->var, rci->var, tap.h, tap.w);
        const IterVar red[4] = {rco, rr, rs, rci};
        std::vector<Expr> widx = {v[1]};
        for (int64_t r : p.reduce_order) widx.push_back(red[r]->var);
        widx.push_back(v[4]);
        return sum(cast(acc, x) * cast(acc, wpack(widx)), {rco, rr, rs, rci}, tap.inside);
      },
      "conv_blocked", "conv2d");
  Tensor out = compute(
      {s.N, s.K, s.OH, s.OW},
      [&](Var n, Var k, Var oh, Var ow) {
        // The fused epilogue (none: the unpack copy alone).
        return conv_epilogue(conv_blocked(n, floordiv(k, ikb), oh, ow, floormod(k, ikb)),
                             s.bias ? &op.inputs[2] : nullptr, k, s.act, op.dtype);
      },
      "conv", "unpack");

  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& sc = *sch;
  Stage so = sc[out];
  auto ax = so.axis();
  IterVar ko, ki, oho, ohr, ohm_l, ohi_l, owo, owi_l;
  so.split(ax[1], kb, &ko, &ki);
  so.split(ax[2], ohm * ohi, &oho, &ohr);
  so.split(ohr, ohi, &ohm_l, &ohi_l);
  so.split(ax[3], owi, &owo, &owi_l);
  const bool vec_ow = p.out_vec == "ow";
  std::vector<IterVar> inner = vec_ow ? std::vector<IterVar>{ki, ohi_l, owi_l} : std::vector<IterVar>{ohi_l, owi_l, ki};
  LoopBand band(so, {ax[0], ko, oho, ohm_l, owo}, p.order, inner, p.parallel, true);
  if (vec_ow) so.vectorize(owi_l);
  if (p.out_vec == "k") so.vectorize(ki);
  const int acc_pos = std::max(0, std::min(p.acc_at, band.size() - 1));

  // The accumulator: register tiles of ohi x owi x kb, reduction outside them.
  Stage sb = sc[conv_blocked];
  sb.set_scope(MemScope::kLocal);
  sb.compute_at(so, band.at(acc_pos));
  auto bx = sb.axis();
  auto br = sb.reduce_axis();
  IterVar cho, chi, cwo, cwi;
  sb.split(bx[2], ohi, &cho, &chi);
  sb.split(bx[3], owi, &cwo, &cwi);
  std::vector<IterVar> border{bx[0], bx[1], cho, cwo};
  for (int64_t r : p.reduce_order) border.push_back(br.at(static_cast<size_t>(r)));
  border.insert(border.end(), {chi, cwi, bx[4]});
  sb.reorder(border);
  sb.unroll(chi);
  sb.unroll(cwi);
  sb.vectorize(bx[4]);
  if (p.unroll_kw) sb.unroll(br[2]);

  Stage sw = sc[wpack];
  if (p.weight_at < 0) {
    auto wx = sw.axis();
    IterVar f = sw.fuse(wx[0], wx[1]);
    if (p.parallel > 0) sw.parallel(f);
  } else {
    sw.compute_at(so, band.at(std::min(band.position_of(1), acc_pos)));
  }
  sw.vectorize(sw.axis()[5]);

  if (dstage.defined()) {
    Stage sd = sc[dstage];
    if (p.data_at < 0) {
      auto dx = sd.axis();
      IterVar f = sd.fuse(dx[0], dx[1]);
      if (p.parallel > 0) sd.parallel(f);
    } else {
      sd.compute_at(so, band.at(std::min(p.data_at, acc_pos)));
    }
    if (p.packed_data) sd.vectorize(sd.axis()[4]);
  }
  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
}

}  // namespace kiln
