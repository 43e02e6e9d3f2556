#include "kernels/conv2d_common.h"

#include <algorithm>
#include <sstream>

#include "base/error.h"
#include "compute/expr_ops.h"

namespace kiln {

int64_t window_out_extent(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

Tensor pad_spatial(const Tensor& data, int h_dim, int w_dim, int64_t pad, Expr fill) {
  if (pad == 0) return data;
  std::vector<Expr> shape = data.shape();
  const int64_t H = *as_const_int(shape[static_cast<size_t>(h_dim)]);
  const int64_t W = *as_const_int(shape[static_cast<size_t>(w_dim)]);
  shape[static_cast<size_t>(h_dim)] = static_cast<int>(H + 2 * pad);
  shape[static_cast<size_t>(w_dim)] = static_cast<int>(W + 2 * pad);
  const int p = static_cast<int>(pad);
  return compute(
      shape,
      [&](const std::vector<Var>& v) {
        Expr h = v[static_cast<size_t>(h_dim)], w = v[static_cast<size_t>(w_dim)];
        Expr inside = h >= p && h < static_cast<int>(H + p) && w >= p && w < static_cast<int>(W + p);
        Expr hh = min(max(h - p, 0), static_cast<int>(H - 1)), ww = min(max(w - p, 0), static_cast<int>(W - 1));
        std::vector<Expr> idx(v.begin(), v.end());
        idx[static_cast<size_t>(h_dim)] = hh;
        idx[static_cast<size_t>(w_dim)] = ww;
        return select(inside, data(idx), fill);
      },
      "data_pad", "pad");
}

bool unit_stride_offered(int64_t R, int64_t S, int64_t stride, int64_t pad) {
  return R == 1 && S == 1 && stride > 1 && pad == 0;
}

std::vector<std::string> unit_stride_options(int64_t R, int64_t S, int64_t stride, int64_t pad) {
  if (unit_stride_offered(R, S, stride, pad)) return {"strided", "dense"};
  return {"strided"};
}

Tensor dense_spatial(const Tensor& data, int h_dim, int w_dim, int64_t stride, int64_t OH, int64_t OW) {
  std::vector<Expr> shape = data.shape();
  shape[static_cast<size_t>(h_dim)] = static_cast<int>(OH);
  shape[static_cast<size_t>(w_dim)] = static_cast<int>(OW);
  const int st = static_cast<int>(stride);
  return compute(
      shape,
      [&](const std::vector<Var>& v) {
        std::vector<Expr> idx(v.begin(), v.end());
        idx[static_cast<size_t>(h_dim)] = v[static_cast<size_t>(h_dim)] * st;
        idx[static_cast<size_t>(w_dim)] = v[static_cast<size_t>(w_dim)] * st;
        return data(idx);
      },
      "data_dense", "pack");
}

Tensor pack_nchwc(const Tensor& data, int64_t groups, int64_t cb, int64_t pad, DType dtype) {
  std::vector<int64_t> d;
  for (const Expr& e : data.shape()) d.push_back(*as_const_int(e));
  const int64_t N = d[0], Cg = d[1] / groups, H = d[2], W = d[3], CB = (Cg + cb - 1) / cb;
  const int icb = static_cast<int>(cb), iC = static_cast<int>(Cg), iCB = static_cast<int>(CB);
  const int pd = static_cast<int>(pad);
  return compute(
      {N, groups * CB, H + 2 * pad, W + 2 * pad, cb},
      [&](const std::vector<Var>& v) {
        Expr c = (groups > 1 ? floormod(v[1], iCB) : Expr(v[1])) * icb + v[4], h = v[2], w = v[3];
        Expr inside;
        auto both = [&](Expr a) { inside = inside.defined() ? (inside && a) : a; };
        if (pad > 0) both(h >= pd && h < static_cast<int>(H + pd) && w >= pd && w < static_cast<int>(W + pd));
        if (Cg % cb) both(c < iC);
        Expr hh = pad ? min(max(h - pd, 0), static_cast<int>(H - 1)) : h;
        Expr ww = pad ? min(max(w - pd, 0), static_cast<int>(W - 1)) : w;
        Expr ch = Cg % cb ? min(c, iC - 1) : c;
        if (groups > 1) ch = floordiv(v[1], iCB) * iC + ch;
        Expr val = data(v[0], ch, hh, ww);
        return inside.defined() ? select(inside, val, make_zero(dtype)) : val;
      },
      "data_pack", "pack");
}

void check_groups(const std::string& op, int64_t C, int64_t K, int64_t groups) {
  user_check(C % groups == 0 && K % groups == 0)
      << op << ": groups=" << groups << " must divide both the input channels (" << C << ") and the output channels ("
      << K << ")";
}

void check_stride_w(const std::string& op, int64_t stride, int64_t stride_w) {
  user_check(stride_w != stride)
      << op << ": stride_w=" << stride_w
      << " is the stride already; give stride_w only for a stride in W that differs from stride";
}

void check_window(const std::string& op, int64_t H, int64_t W, int64_t R, int64_t S, int64_t pad, int64_t dilation) {
  user_check(window_out_extent(H, R, 1, pad, dilation) > 0 && window_out_extent(W, S, 1, pad, dilation) > 0)
      << op << ": the window (" << R << "x" << S << ", dilation " << dilation << ") does not fit the padded input ("
      << H + 2 * pad << "x" << W + 2 * pad << ")";
}

Expr conv_epilogue(Expr v, const Tensor* bias, Expr index, Activation act, DType out) {
  const DType acc = v.dtype();
  if (bias) v = v + (bias->dtype() == acc ? (*bias)(index) : cast(acc, (*bias)(index)));
  v = apply_activation(v, act);
  return acc == out ? v : cast(out, v);
}

Tensor blocked_conv_epilogue(const Tensor& conv, const Tensor* bias, int64_t block, Activation act, DType out,
                             const std::string& name, const std::string& tag) {
  const int iblock = static_cast<int>(block);
  return compute(
      conv.shape(),
      [&](const std::vector<Var>& v) {
        return conv_epilogue(conv(std::vector<Expr>(v.begin(), v.end())), bias, v[1] * iblock + v[4], act, out);
      },
      name, tag);
}

Tensor bias_placeholder(int64_t K, DType dtype) { return placeholder({K}, bias_type(dtype), "bias"); }

OpParam int_param(const std::string& name, const std::string& meaning, const std::string& default_value) {
  return OpParam{OpParam::kInt, name, meaning, default_value};
}

std::vector<OpParam> window_params(bool with_dilation) {
  std::vector<OpParam> p = {
      int_param("stride", "stride in H and W", "1"),
      {OpParam::kInt, "pad", "zero padding on each side of H and W", "0", 0},
  };
  if (with_dilation) p.push_back(int_param("dilation", "spacing between kernel taps", "1"));
  return p;
}

OpParam dtype_param() {
  return {OpParam::kDType, "dtype", "element type (f32, f64, i8, u8, i32; integers accumulate in i32)", "f32"};
}

OpParam groups_param() {
  OpParam p = int_param("groups",
                        "channel groups: input and output channels split into this many independent convolutions", "1");
  p.omit_when_default = true;
  return p;
}

std::vector<OpParam> epilogue_params(const std::string& bias_meaning) {
  std::vector<OpParam> p = {{OpParam::kFlag, "bias", bias_meaning, "0"},
                            {OpParam::kFlag, "relu", "1: apply max(x, 0) to the result", "0"},
                            {OpParam::kFlag, "relu6", "1: apply min(max(x, 0), 6) to the result", "0"},
                            {OpParam::kFlag, "hswish", "1: apply hard-swish x*relu6(x+3)/6 (floats)", "0"},
                            {OpParam::kFlag, "hsigmoid", "1: apply hard-sigmoid relu6(x+3)/6 (floats)", "0"}};
  for (auto& q : p) q.omit_when_default = true;
  return p;
}

const std::vector<std::vector<int64_t>>& channel_band_orders() {
  static const std::vector<std::vector<int64_t>> orders = {{0, 1, 2, 3}, {0, 2, 1, 3}, {1, 0, 2, 3}};
  return orders;
}

InputTap input_tap(Expr h, Expr w, int64_t pad, int64_t H, int64_t W) {
  if (pad == 0) return {h, w, Expr()};
  const int p = static_cast<int>(pad);
  h = h - p;
  w = w - p;
  return {h, w, h >= 0 && h < static_cast<int>(H) && w >= 0 && w < static_cast<int>(W)};
}

std::vector<std::string> border_options(int64_t pad) {
  if (pad > 0) return {"pad", "clip"};
  return {"pad"};
}

std::vector<OpAlternative> flat_alternative(const OpInstance& op) {
  auto at = [&](const char* name) { return op.ints.at(name); };
  if (at("R") != 1 || at("S") != 1 || at("stride") != 1 || at("pad") != 0 || at("H") == 1) return {};
  std::ostringstream w;
  w << op.op << ":";
  const char* sep = "";
  for (const auto& [name, value] : op.ints) {
    w << sep << name << "=" << (name == "H" ? 1 : name == "W" ? at("H") * at("W") : value);
    sep = ",";
  }
  for (const OpParam& p : find_op(op.op).params)
    if (p.kind == OpParam::kDType) w << "," << p.name << "=" << op.dtype.str();
  OpAlternative a;
  a.name = "flat";
  a.kernel.workload = w.str();
  for (size_t i = 0; i < op.inputs.size(); ++i) a.kernel.inputs.push_back(static_cast<int>(i));
  return {a};
}

Expr taps_inside(Expr o, int64_t stride, int64_t pad, int64_t window, int64_t extent) {
  Expr start = o * static_cast<int>(stride) - static_cast<int>(pad);
  return min(start + static_cast<int>(window), static_cast<int>(extent)) - max(start, 0);
}

int64_t vectors_per_block(int64_t block, int lanes) { return (block + lanes - 1) / lanes; }

std::vector<int64_t> block_tile_candidates(int64_t blocks, int64_t block, int lanes) {
  std::vector<int64_t> out;
  for (int64_t v : {1, 2, 3, 4, 6, 8})
    if (v <= blocks && v * vectors_per_block(block, lanes) <= 4) out.push_back(v);
  if (out.empty()) out.push_back(1);
  return out;
}

std::vector<int64_t> row_tile_candidates(int64_t extent) {
  std::vector<int64_t> w = {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32};
  for (int64_t d : block_candidates(extent, 32)) w.push_back(d);
  return capped_candidates(extent, w);
}

int64_t accumulator_registers(const CpuInfo& cpu) { return vector_registers(cpu) - 4; }

int64_t register_tile_cols(int64_t OW, int64_t kb, const CpuInfo& cpu, DType acc) {
  const int lanes = vector_lanes(cpu, acc);
  const int64_t acc_regs = accumulator_registers(cpu);
  const int64_t regs_per_col = (kb + lanes - 1) / lanes;
  int64_t owb = 1;
  for (int64_t b = std::min<int64_t>(14, OW); b >= 1; --b)
    if (OW % b == 0 && b * regs_per_col <= acc_regs) {
      owb = b;
      break;
    }
  if (owb < 4) owb = std::min<int64_t>(OW, std::max<int64_t>(1, acc_regs / regs_per_col));
  return owb;
}

std::vector<int64_t> group_tile_candidates(int64_t group_size, int lanes) {
  std::vector<int64_t> out;
  for (int64_t d : block_candidates(group_size, 4 * static_cast<int64_t>(lanes)))
    if (group_size % d == 0) out.push_back(d);
  return out;
}

void tile_accumulator(Stage acc, const std::vector<int64_t>& tile, const std::vector<int64_t>& reduce_order,
                      int vec_axis, int unroll_reduce, int channels_axis) {
  auto ax = acc.axis();
  auto rx = acc.reduce_axis();
  internal_assert(tile.size() == ax.size()) << "tile_accumulator: one tile factor per axis";
  std::vector<IterVar> outer, inner;
  IterVar vec, channels;
  for (size_t d = 0; d < ax.size(); ++d) {
    IterVar o = ax[d], i;
    if (tile[d] > 0) acc.split(ax[d], tile[d], &o, &i);
    outer.push_back(o);
    if (static_cast<int>(d) == vec_axis)
      vec = i.defined() ? i : o;
    else if (static_cast<int>(d) == channels_axis && i.defined())
      channels = i;
    else if (i.defined())
      inner.push_back(i);
  }
  if (channels.defined()) inner.push_back(channels);
  if (vec.defined() && vec.same_as(outer[static_cast<size_t>(vec_axis)])) outer.erase(outer.begin() + vec_axis);
  std::vector<IterVar> order = outer;
  for (int64_t r : reduce_order) order.push_back(rx.at(static_cast<size_t>(r)));
  order.insert(order.end(), inner.begin(), inner.end());
  if (vec.defined()) order.push_back(vec);
  acc.reorder(order);
  for (auto& i : inner) acc.unroll(i);
  if (vec.defined()) acc.vectorize(vec);
  if (unroll_reduce >= 0) acc.unroll(rx.at(static_cast<size_t>(unroll_reduce)));
}

ChannelTiles schedule_channel_tiles(Stage out, Stage acc, int64_t ohi, int64_t owi, const Config& cfg) {
  auto ax = out.axis();
  IterVar oho, ohi_l, owo, owi_l;
  out.split(ax[2], ohi, &oho, &ohi_l);
  out.split(ax[3], owi, &owo, &owi_l);
  ChannelTiles t{LoopBand(out, {ax[0], ax[1], oho, owo}, cfg.reorder("order"), {ohi_l, owi_l, ax[4]},
                          static_cast<int>(cfg.choice("parallel")), true),
                 0};
  out.vectorize(ax[4]);
  t.acc_pos = std::max(0, std::min(static_cast<int>(cfg.choice("acc_at")), t.band.size() - 1));
  acc.set_scope(MemScope::kLocal);
  acc.compute_at(out, t.band.at(t.acc_pos));
  tile_accumulator(acc, {0, 0, ohi, owi, 0}, cfg.reorder("reduce_order"), 4,
                   cfg.annotate("unroll_kw") == "unroll" ? 1 : -1);
  return t;
}

ChannelTiles tile_nchwc_output(Stage out, int64_t kbi, int64_t ohm, int64_t ohi, int64_t owi, const Config& cfg) {
  auto ax = out.axis();
  IterVar kbo, kbi_l, oho, ohr, ohm_l, ohi_l, owo, owi_l;
  out.split(ax[1], kbi, &kbo, &kbi_l);
  out.split(ax[2], ohm * ohi, &oho, &ohr);
  out.split(ohr, ohi, &ohm_l, &ohi_l);
  out.split(ax[3], owi, &owo, &owi_l);
  ChannelTiles t{LoopBand(out, {ax[0], kbo, oho, ohm_l, owo}, cfg.reorder("order"), {kbi_l, ohi_l, owi_l, ax[4]},
                          static_cast<int>(cfg.choice("parallel")), true),
                 0};
  out.vectorize(ax[4]);
  t.acc_pos = std::max(0, std::min(static_cast<int>(cfg.choice("acc_at")), t.band.size() - 1));
  return t;
}

void place_stage(Stage stage, Stage consumer, const LoopBand& band, int at, int limit, bool parallel, int vec_axis) {
  if (at < 0) {
    auto ax = stage.axis();
    IterVar f = ax.size() >= 2 ? stage.fuse(ax[0], ax[1]) : ax[0];
    if (parallel) {
      // Enough iterations for the threads: one image's padded copy (N = 1,
      // one channel block) fuses its rows too. The last two axes (a row's
      // pixels and the vectorized channels) stay apart.
      auto extent = [](const IterVar& iv) {
        const int64_t* e = as_const_int(iv->dom.extent);
        return e ? *e : int64_t{64};
      };
      int64_t iterations = 1;
      size_t next = 2;
      for (size_t k = 0; k < std::min<size_t>(2, ax.size()); ++k) iterations *= extent(ax[k]);
      while (iterations < 64 && next + 2 < ax.size()) {
        iterations *= extent(ax[next]);
        f = stage.fuse(f, ax[next++]);
      }
      stage.parallel(f);
    }
  } else {
    stage.compute_at(consumer, band.at(std::min(at, limit)));
  }
  if (vec_axis >= 0) stage.vectorize(stage.axis().at(static_cast<size_t>(vec_axis)));
}

}  // namespace kiln
