// ONNX operators of neural networks: convolutions, matrix products,
// pooling, reductions, softmax, batch normalization, nearest resize. A node
// that one of kiln's operator families computes (conv2d, matmul, softmax,
// pools...) becomes that op, a tunable task; the others are tensor
// expressions of their own.
#include <algorithm>
#include <limits>
#include <set>
#include <sstream>

#include "base/error.h"
#include "graph/layout_planning.h"
#include "graph/onnx_op_util.h"
#include "graph/passes.h"
#include "kernels/activation.h"

namespace kiln::graph {

std::optional<NodeCompute> as_registry_op(const std::string& workload, const std::vector<int64_t>& out_shape) {
  OpInstance op;
  try {
    op = build_workload(workload);
  } catch (const UserError&) {
    return std::nullopt;
  }
  return op_compute(std::move(op), out_shape);
}

NodeCompute op_compute(OpInstance op, const std::vector<int64_t>& out_shape) {
  NodeCompute c;
  c.inputs = op.inputs;
  c.outputs = {op.outputs[0]};
  c.output_shapes = {out_shape};
  c.op = std::move(op);
  return c;
}

namespace {

int64_t product(const std::vector<int64_t>& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t k = from; k < to && k < s.size(); ++k) p *= s[k];
  return p;
}

// The activation graph/passes.h fused into a node.
Activation fused_activation(const NodeArgs& a) {
  const std::string act = a.attr_str(kFusedActivation, "");
  for (Activation k : {Activation::kRelu, Activation::kRelu6, Activation::kHardSwish, Activation::kHardSigmoid})
    if (act == activation_flag(k)) return k;
  if (!act.empty()) a.fail("has an unknown fused activation '" + act + "'");
  return Activation::kNone;
}

// Window geometry of a convolution or pooling over the spatial axes 2...
struct Window {
  std::vector<int64_t> kernel, stride, dilation, pad_begin, pad_end, out;
  // The same stride, dilation and padding on every axis and side.
  bool uniform() const {
    return uniform_but_strides() &&
           std::all_of(stride.begin(), stride.end(), [&](int64_t s) { return s == stride[0]; });
  }
  // The same dilation and padding on every axis and side (strides may differ).
  bool uniform_but_strides() const {
    for (size_t k = 0; k < kernel.size(); ++k)
      if (dilation[k] != dilation[0] || pad_begin[k] != pad_begin[0] || pad_end[k] != pad_begin[0]) return false;
    return true;
  }
};

Window window_of(const NodeArgs& a, const std::vector<int64_t>& in, std::vector<int64_t> kernel, bool ceil_mode) {
  const size_t nd = in.size() - 2;
  Window w;
  w.kernel = std::move(kernel);
  if (w.kernel.size() != nd) a.fail("has a kernel of " + std::to_string(w.kernel.size()) + " dimensions for " + std::to_string(nd) + " spatial ones");
  w.stride = a.attr_ints("strides", std::vector<int64_t>(nd, 1));
  w.dilation = a.attr_ints("dilations", std::vector<int64_t>(nd, 1));
  std::vector<int64_t> pads = a.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
  if (w.stride.size() != nd || w.dilation.size() != nd || pads.size() != 2 * nd)
    a.fail("has strides, dilations or pads of the wrong length");
  const std::string auto_pad = a.attr_str("auto_pad", "NOTSET");
  w.pad_begin.assign(pads.begin(), pads.begin() + static_cast<long>(nd));
  w.pad_end.assign(pads.begin() + static_cast<long>(nd), pads.end());
  for (size_t k = 0; k < nd; ++k)
    if (w.stride[k] <= 0 || w.dilation[k] <= 0 || w.kernel[k] <= 0)
      a.fail("has a non-positive kernel, stride or dilation");
  // Bounded, so that the window arithmetic below cannot overflow.
  a.check_within("a kernel extent", w.kernel, 1, kMaxWindowValue);
  a.check_within("a stride", w.stride, 1, kMaxWindowValue);
  a.check_within("a dilation", w.dilation, 1, kMaxWindowValue);
  a.check_within("a pad", pads, -kMaxWindowValue, kMaxWindowValue);
  for (size_t k = 0; k < nd; ++k) {
    const int64_t span = (w.kernel[k] - 1) * w.dilation[k] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t o = (in[k + 2] + w.stride[k] - 1) / w.stride[k];
      const int64_t total = std::max<int64_t>(0, (o - 1) * w.stride[k] + span - in[k + 2]);
      w.pad_begin[k] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pad_end[k] = total - w.pad_begin[k];
    } else if (auto_pad == "VALID") {
      w.pad_begin[k] = w.pad_end[k] = 0;
    } else if (auto_pad != "NOTSET") {
      a.fail("has auto_pad '" + auto_pad + "'");
    }
    const int64_t room = in[k + 2] + w.pad_begin[k] + w.pad_end[k] - span;
    if (room < 0) a.fail("has a window larger than its padded input");
    int64_t out = (ceil_mode ? (room + w.stride[k] - 1) / w.stride[k] : room / w.stride[k]) + 1;
    // With ceil_mode, a last window that would start past the input and its
    // leading padding is dropped (as ONNX Runtime and PyTorch do).
    if (ceil_mode && (out - 1) * w.stride[k] >= in[k + 2] + w.pad_begin[k]) --out;
    w.out.push_back(out);
  }
  return w;
}

// x read at a window tap, zero (or `fill`) outside the input.
Expr tap(const Tensor& x, const std::vector<int64_t>& in, const Window& w, const std::vector<Expr>& lead,
         const std::vector<Var>& o, const std::vector<Var>& r, Expr fill, Expr* inside) {
  std::vector<Expr> idx = lead;
  Expr ok;
  for (size_t k = 0; k < w.kernel.size(); ++k) {
    Expr p = o[k] * Expr(w.stride[k]) + r[k] * Expr(w.dilation[k]) - Expr(w.pad_begin[k]);
    Expr in_range = p >= 0 && p < Expr(in[k + 2]);
    ok = ok.defined() ? (ok && in_range) : in_range;
    idx.push_back(max(min(p, Expr(in[k + 2] - 1)), Expr(0)));
  }
  if (inside) *inside = ok;
  return select(ok, x(idx), fill);
}

std::vector<IterVar> window_axes(const Window& w, std::vector<Var>* vars, const std::string& prefix) {
  std::vector<IterVar> axes;
  for (size_t k = 0; k < w.kernel.size(); ++k) {
    axes.push_back(reduce_axis(Expr(w.kernel[k]), prefix + std::to_string(k)));
    vars->push_back(axes.back()->var);
  }
  return axes;
}

NodeCompute conv(const NodeArgs& a) {
  const std::vector<int64_t>& in = a.shape(0);
  const std::vector<int64_t>& ws = a.shape(1);
  if (in.size() < 3 || ws.size() != in.size()) a.fail("has data of rank " + std::to_string(in.size()) + " and weights of rank " + std::to_string(ws.size()));
  const int64_t groups = a.attr_int("group", 1), C = in[1], K = ws[0];
  if (groups <= 0 || K <= 0 || C % groups != 0 || K % groups != 0 || ws[1] != C / groups)
    a.fail("has weights " + shape_str(ws) + " that do not fit " + std::to_string(C) + " input channels in " + std::to_string(groups) + " groups");
  const std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  if (a.attr_ints("kernel_shape", kernel) != kernel) a.fail("has a kernel_shape that differs from its weights' " + shape_str(ws));
  const Window w = window_of(a, in, kernel, false);
  const bool bias = a.has_input(2);
  if (bias && a.input(2).num_elements() != K) a.fail("has " + std::to_string(a.input(2).num_elements()) + " biases for " + std::to_string(K) + " output channels");
  const Activation act = fused_activation(a);
  std::vector<int64_t> out_shape = {in[0], K};
  out_shape.insert(out_shape.end(), w.out.begin(), w.out.end());
  const bool depthwise = groups == C && K == C;
  // depthwise_conv2d takes a stride in W of its own (MobileNets and PP-OCR
  // downsample rows only, with strides (2, 1)); conv2d one stride.
  const bool covered = w.uniform() || (depthwise && w.uniform_but_strides());
  if (in.size() == 4 && covered && a.input(0).dtype == DType::f32()) {
    std::ostringstream wl;
    wl << (depthwise ? "depthwise_conv2d" : "conv2d") << ":N=" << in[0] << ",C=" << C << ",H=" << in[2] << ",W=" << in[3];
    if (!depthwise) wl << ",K=" << K;
    wl << ",R=" << w.kernel[0] << ",S=" << w.kernel[1] << ",stride=" << w.stride[0] << ",pad=" << w.pad_begin[0]
       << ",dilation=" << w.dilation[0];
    if (!depthwise && groups > 1) wl << ",groups=" << groups;
    if (w.stride[1] != w.stride[0]) wl << ",stride_w=" << w.stride[1];
    if (bias) wl << ",bias=1";
    if (act != Activation::kNone) wl << "," << activation_flag(act) << "=1";
    if (auto c = as_registry_op(wl.str(), out_shape)) return *c;
  }
  // Any other convolution: a direct tensor expression.
  Tensor x = input_placeholder(a, 0), wt = input_placeholder(a, 1);
  Tensor b = bias ? input_placeholder(a, 2) : Tensor();
  const int64_t Cg = C / groups, Kg = K / groups;
  IterVar rc = reduce_axis(Expr(Cg), "rc");
  Tensor out = compute(te_shape(out_shape), [&](const std::vector<Var>& i) {
    std::vector<Var> o(i.begin() + 2, i.end()), r;
    std::vector<IterVar> axes = window_axes(w, &r, "r");
    axes.insert(axes.begin(), rc);
    Expr ci = groups == 1 ? Expr(rc->var) : floordiv(i[1], Expr(Kg)) * Expr(Cg) + rc->var;
    std::vector<Expr> widx = {i[1], rc->var};
    widx.insert(widx.end(), r.begin(), r.end());
    return sum(tap(x, in, w, {i[0], ci}, o, r, make_zero(x.dtype()), nullptr) * wt(widx), axes);
  }, bias || act != Activation::kNone ? "acc" : "out", "conv");
  if (bias || act != Activation::kNone)
    out = compute(te_shape(out_shape), [&](const std::vector<Var>& i) {
      return apply_activation(bias ? out(ex(i)) + b(i[1]) : out(ex(i)), act);
    }, "out", "elemwise");
  return single_output({x, wt, b}, out, out_shape);
}

// ConvTranspose: every input pixel scatters its kernel into the output; as a
// gather, output position o takes input i where o = i*stride + r*dilation -
// pad, for the taps r where that division is exact. Along an axis whose
// kernel is no longer than its stride (undilated: the 2x2 stride-2
// upsampling of detection heads), at most one tap reaches o, r = (o + pad)
// mod stride, so that axis has no reduction: the kernel reads one tap
// instead of testing every tap for exactness (and the sum gains no zeros).
NodeCompute conv_transpose(const NodeArgs& a) {
  const std::vector<int64_t>& in = a.shape(0);
  const std::vector<int64_t>& ws = a.shape(1);
  if (in.size() < 3 || ws.size() != in.size()) a.fail("has data of rank " + std::to_string(in.size()) + " and weights of rank " + std::to_string(ws.size()));
  const size_t nd = in.size() - 2;
  const int64_t groups = a.attr_int("group", 1), C = in[1];
  if (groups <= 0 || C % groups != 0 || ws[0] != C) a.fail("has weights " + shape_str(ws) + " for " + std::to_string(C) + " input channels");
  const int64_t Kg = ws[1], K = Kg * groups, Cg = C / groups;
  const std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  if (a.attr_ints("kernel_shape", kernel) != kernel) a.fail("has a kernel_shape that differs from its weights' " + shape_str(ws));
  const std::vector<int64_t> stride = a.attr_ints("strides", std::vector<int64_t>(nd, 1));
  const std::vector<int64_t> dil = a.attr_ints("dilations", std::vector<int64_t>(nd, 1));
  const std::vector<int64_t> out_pad = a.attr_ints("output_padding", std::vector<int64_t>(nd, 0));
  std::vector<int64_t> pads = a.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
  if (a.has_attr("output_shape") || a.attr_str("auto_pad", "NOTSET") != "NOTSET") a.fail("sets output_shape or auto_pad, which kiln does not support");
  if (kernel.size() != nd || stride.size() != nd || dil.size() != nd || pads.size() != 2 * nd || out_pad.size() != nd)
    a.fail("has kernel_shape, strides, dilations, pads or output_padding of the wrong length");
  // Bounded, so that the output arithmetic below cannot overflow; ONNX
  // requires strides and dilations of at least 1.
  a.check_within("a kernel extent", kernel, 1, kMaxWindowValue);
  a.check_within("a stride", stride, 1, kMaxWindowValue);
  a.check_within("a dilation", dil, 1, kMaxWindowValue);
  a.check_within("a pad", pads, -kMaxWindowValue, kMaxWindowValue);
  a.check_within("an output_padding", out_pad, 0, kMaxWindowValue);
  std::vector<int64_t> out_shape = {in[0], K};
  for (size_t k = 0; k < nd; ++k) {
    // In 128 bits: the input's extent times the stride may pass int64.
    const __int128 o = static_cast<__int128>(in[k + 2] - 1) * stride[k] + (kernel[k] - 1) * dil[k] + 1 + out_pad[k] -
                       pads[k] - pads[k + nd];
    if (o <= 0) a.fail("has an empty output");
    if (o > kMaxTensorElements)
      a.fail("has an output extent past " + std::to_string(kMaxTensorElements) + " on spatial axis " +
             std::to_string(k));
    out_shape.push_back(static_cast<int64_t>(o));
  }
  const bool bias = a.has_input(2);
  if (bias && a.input(2).num_elements() != K) a.fail("has " + std::to_string(a.input(2).num_elements()) + " biases for " + std::to_string(K) + " output channels");
  Tensor x = input_placeholder(a, 0), wt = input_placeholder(a, 1);
  Tensor b = bias ? input_placeholder(a, 2) : Tensor();
  IterVar rc = reduce_axis(Expr(Cg), "rc");
  Tensor out = compute(te_shape(out_shape), [&](const std::vector<Var>& i) {
    std::vector<IterVar> axes = {rc};
    Expr ci = groups == 1 ? Expr(rc->var) : floordiv(i[1], Expr(Kg)) * Expr(Cg) + rc->var;
    std::vector<Expr> xi = {i[0], ci}, wi = {ci, groups == 1 ? Expr(i[1]) : floormod(i[1], Expr(Kg))};
    Expr ok;
    for (size_t k = 0; k < nd; ++k) {
      Expr valid, pos, tap;
      if (kernel[k] <= stride[k] && dil[k] == 1 && pads[k] >= 0) {
        const Expr num = i[k + 2] + Expr(pads[k]);  // >= 0
        tap = floormod(num, Expr(stride[k]));
        pos = floordiv(num, Expr(stride[k]));
        valid = pos < Expr(in[k + 2]);
        if (kernel[k] < stride[k]) valid = valid && tap < Expr(kernel[k]);
        tap = min(tap, Expr(kernel[k] - 1));
      } else {
        axes.push_back(reduce_axis(Expr(kernel[k]), "r" + std::to_string(k)));
        const Expr num = i[k + 2] + Expr(pads[k]) - axes.back()->var * Expr(dil[k]);
        tap = axes.back()->var;
        pos = floordiv(num, Expr(stride[k]));
        valid = num >= 0 && floormod(num, Expr(stride[k])) == 0 && pos < Expr(in[k + 2]);
      }
      ok = ok.defined() ? (ok && valid) : valid;
      xi.push_back(max(min(pos, Expr(in[k + 2] - 1)), Expr(0)));
      wi.push_back(tap);
    }
    return sum(select(ok, x(xi) * wt(wi), make_zero(x.dtype())), axes);
  }, bias ? "acc" : "out", "conv");
  if (bias) out = compute(te_shape(out_shape), [&](const std::vector<Var>& i) { return out(ex(i)) + b(i[1]); }, "out", "elemwise");
  return single_output({x, wt, b}, out, out_shape);
}

// B packed by graph/passes.h: kiln's pack_matmul_b, folded at compile time.
// kPadSpatial (graph/passes.h): the input with zeros around its two
// spatial axes.
NodeCompute pad_spatial(const NodeArgs& a) {
  const std::vector<int64_t>& in = a.shape(0);
  const std::vector<int64_t> p = a.attr_ints(kSpatialPads, {});
  if (in.size() != 4 || p.size() != 4 || std::any_of(p.begin(), p.end(), [](int64_t v) { return v < 0; }))
    a.fail("pads a tensor of shape " + shape_str(in) + " by " + std::to_string(p.size()) + " values");
  a.check_within("a pad", p, 0, kMaxWindowValue);  // the sums below cannot overflow
  const std::vector<int64_t> out = {in[0], in[1], in[2] + p[0] + p[2], in[3] + p[1] + p[3]};
  Tensor x = input_placeholder(a, 0);
  Tensor y = compute(
      te_shape(out),
      [&](const std::vector<Var>& i) {
        Expr h = i[2] - Expr(p[0]), w = i[3] - Expr(p[1]);
        Expr inside = h >= 0 && h < Expr(in[2]) && w >= 0 && w < Expr(in[3]);
        Expr v = x({i[0], i[1], max(min(h, Expr(in[2] - 1)), Expr(0)), max(min(w, Expr(in[3] - 1)), Expr(0))});
        return select(inside, v, make_zero(x.dtype()));
      },
      "out", "pad");
  return single_output({x}, y, out);
}

NodeCompute pack_matmul_b(const NodeArgs& a) {
  const std::vector<int64_t>& sb = a.shape(0);
  const int64_t nb = a.attr_int(kPackedPanel, kPackPanelColumns);
  if (sb.size() != 2) a.fail("packs a tensor that is not a matrix");
  auto c = as_registry_op("pack_matmul_b:K=" + std::to_string(sb[0]) + ",N=" + std::to_string(sb[1]) + ",nb=" + std::to_string(nb),
                          {(sb[1] + nb - 1) / nb, sb[0], nb});
  if (!c) a.fail("cannot pack weights of shape " + shape_str(sb));
  return *c;
}

// MatMul reading a B that pack_matmul_b packed (graph/passes.h).
NodeCompute packed_matmul(const NodeArgs& a) {
  const std::vector<int64_t>& sa = a.shape(0);
  const int64_t nb = a.attr_int(kPackedPanel, kPackPanelColumns), N = a.attr_int(kPackedColumns, 0);
  const std::vector<int64_t>& pb = a.shape(1);
  if (sa.size() < 2 || pb.size() != 3 || pb[2] != nb || pb[1] != sa.back() || pb[0] != (N + nb - 1) / nb)
    a.fail("has a packed B of shape " + shape_str(pb) + " that does not fit " + shape_str(sa));
  const bool bias = a.has_input(2);
  std::vector<int64_t> out(sa.begin(), sa.end() - 1);
  out.push_back(N);
  const int64_t rows = product(sa, 0, sa.size() - 1);
  auto c = as_registry_op("matmul_packed_b:M=" + std::to_string(rows) + ",N=" + std::to_string(N) + ",K=" +
                              std::to_string(sa.back()) + ",nb=" + std::to_string(nb) + (bias ? ",bias=1" : ""),
                          out);
  if (!c) a.fail("cannot multiply by packed weights");
  return *c;
}

NodeCompute matmul(const NodeArgs& a) {
  if (a.has_attr(kPackedPanel)) return packed_matmul(a);
  const std::vector<int64_t>& sa = a.shape(0);
  const std::vector<int64_t>& sb = a.shape(1);
  if (sa.empty() || sb.empty()) a.fail("multiplies a scalar");
  const bool f32 = a.input(0).dtype == DType::f32() && a.input(1).dtype == DType::f32();
  const int64_t K = sa.back();
  const int64_t Kb = sb.size() == 1 ? sb[0] : sb[sb.size() - 2];
  if (K != Kb) a.fail("multiplies " + shape_str(sa) + " by " + shape_str(sb) + ": inner extents " + std::to_string(K) + " and " + std::to_string(Kb) + " differ");
  // Output shape: broadcast batch dims, then M and N (1-D operands drop theirs).
  std::vector<int64_t> ba(sa.begin(), sa.end() - std::min<long>(2, static_cast<long>(sa.size())));
  std::vector<int64_t> bb(sb.begin(), sb.end() - std::min<long>(2, static_cast<long>(sb.size())));
  std::vector<int64_t> out = broadcast_shapes(a, ba, bb);
  const int64_t M = sa.size() >= 2 ? sa[sa.size() - 2] : 1, N = sb.size() >= 2 ? sb.back() : 1;
  if (sa.size() >= 2) out.push_back(M);
  if (sb.size() >= 2) out.push_back(N);
  // A bias row (graph/passes.h fuses a following Add of a constant row).
  const bool bias = a.has_input(2);
  if (bias && (a.input(2).num_elements() != N || sb.size() != 2)) a.fail("has a bias that is not one row of " + std::to_string(N));
  if (f32 && sa.size() >= 2 && sb.size() == 2) {
    const int64_t rows = product(sa, 0, sa.size() - 1);
    if (auto c = as_registry_op("matmul:M=" + std::to_string(rows) + ",N=" + std::to_string(N) + ",K=" + std::to_string(K) +
                                    (bias ? ",bias=1" : ""), out))
      return *c;
  }
  if (f32 && sa.size() >= 3 && sa.size() == sb.size() && ba == bb) {
    const int64_t B = product(ba, 0, ba.size());
    if (auto c = as_registry_op("batch_matmul:B=" + std::to_string(B) + ",M=" + std::to_string(M) + ",N=" +
                                    std::to_string(N) + ",K=" + std::to_string(K), out))
      return *c;
  }
  Tensor x = input_placeholder(a, 0), y = input_placeholder(a, 1);
  IterVar k = reduce_axis(Expr(K), "k");
  const size_t nb = out.size() - (sa.size() >= 2) - (sb.size() >= 2);
  Tensor t = compute_shape(out, [&](const std::vector<Var>& i) {
    std::vector<Var> batch(i.begin(), i.begin() + static_cast<long>(nb));
    auto batch_idx = [&](const std::vector<int64_t>& bs) {
      std::vector<Expr> idx;
      const size_t off = batch.size() - bs.size();
      for (size_t d = 0; d < bs.size(); ++d) idx.push_back(bs[d] == 1 ? Expr(0) : Expr(batch[off + d]));
      return idx;
    };
    std::vector<Expr> ia = batch_idx(ba), ib = batch_idx(bb);
    if (sa.size() >= 2) ia.push_back(i[nb]);
    ia.push_back(k->var);
    ib.push_back(k->var);
    if (sb.size() >= 2) ib.push_back(i[i.size() - 1]);
    return sum(x(ia) * y(ib), {k});
  }, bias ? "product" : "out", "matmul");
  if (!bias) return single_output({x, y}, t, out);
  Tensor b = input_placeholder(a, 2);
  Tensor biased = compute_shape(out, [&](const std::vector<Var>& i) { return t(ex(i)) + b(i.back()); }, "out", "elemwise");
  return single_output({x, y, b}, biased, out);
}

NodeCompute gemm(const NodeArgs& a) {
  const bool ta = a.attr_int("transA", 0) != 0, tb = a.attr_int("transB", 0) != 0;
  const double alpha = a.attr_float("alpha", 1.0), beta = a.attr_float("beta", 1.0);
  const std::vector<int64_t>& sa = a.shape(0);
  const std::vector<int64_t>& sb = a.shape(1);
  if (sa.size() != 2 || sb.size() != 2) a.fail("multiplies tensors that are not matrices");
  const int64_t M = ta ? sa[1] : sa[0], K = ta ? sa[0] : sa[1], N = tb ? sb[0] : sb[1];
  if ((tb ? sb[1] : sb[0]) != K) a.fail("has inner extents that differ");
  const bool has_c = a.has_input(2);
  if (has_c && broadcast_shapes(a, a.shape(2), {M, N}) != std::vector<int64_t>{M, N})
    a.fail("has C of shape " + shape_str(a.shape(2)) + ", which does not broadcast to " + shape_str({M, N}));
  const bool row_bias = has_c && !a.shape(2).empty() && a.input(2).num_elements() == N && a.shape(2).back() == N;
  if (alpha == 1.0 && (beta == 1.0 || !has_c) && (!has_c || row_bias) && a.input(0).dtype == DType::f32()) {
    std::string wl = "matmul:M=" + std::to_string(M) + ",N=" + std::to_string(N) + ",K=" + std::to_string(K);
    if (ta) wl += ",trans_a=1";
    if (tb) wl += ",trans_b=1";
    if (has_c) wl += ",bias=1";
    if (auto c = as_registry_op(wl, {M, N})) return *c;
  }
  Tensor x = input_placeholder(a, 0), y = input_placeholder(a, 1);
  Tensor c = has_c ? input_placeholder(a, 2) : Tensor();
  IterVar k = reduce_axis(Expr(K), "k");
  Tensor p = compute({Expr(M), Expr(N)}, [&](const std::vector<Var>& i) {
    return sum((ta ? x(k->var, i[0]) : x(i[0], k->var)) * (tb ? y(i[1], k->var) : y(k->var, i[1])), {k});
  }, "product", "matmul");
  Tensor t = compute({Expr(M), Expr(N)}, [&](const std::vector<Var>& i) {
    Expr v = alpha == 1.0 ? p(ex(i)) : p(ex(i)) * make_const(p.dtype(), alpha);
    if (has_c) v = v + make_const(p.dtype(), beta) * broadcast_read(c, a.shape(2), i);
    return v;
  }, "out", "elemwise");
  return single_output({x, y, c}, t, {M, N});
}

// Softmax over `axis`: the kiln op when the axis is the last of a 2-D view.
NodeCompute softmax_op(const NodeArgs& a, bool log) {
  const std::vector<int64_t>& in = a.shape(0);
  const int r = static_cast<int>(in.size());
  const int ax = a.axis(a.attr_int("axis", a.opset() < 13 ? 1 : -1), r);
  const bool coerce_2d = a.opset() < 13;  // earlier opsets normalize over all axes from `axis` on
  if (!log && (coerce_2d || ax == r - 1) && a.input(0).dtype == DType::f32()) {
    const int64_t M = product(in, 0, static_cast<size_t>(ax)), N = product(in, static_cast<size_t>(ax), in.size());
    if (auto c = as_registry_op("softmax:M=" + std::to_string(M) + ",N=" + std::to_string(N), in)) return *c;
  }
  // General: max, sum of exponentials, and the quotient (three stages).
  const size_t first = static_cast<size_t>(ax), last = coerce_2d ? in.size() : first + 1;
  std::vector<int64_t> red_shape = in;
  for (size_t k = first; k < last; ++k) red_shape[k] = 1;
  Tensor x = input_placeholder(a, 0);
  auto over_axes = [&](const std::vector<Var>& i, std::vector<IterVar>* axes) {
    std::vector<Expr> idx(i.begin(), i.end());
    for (size_t k = first; k < last; ++k) {
      axes->push_back(reduce_axis(Expr(in[k]), "s" + std::to_string(k)));
      idx[k] = axes->back()->var;
    }
    return idx;
  };
  Tensor mx = compute(te_shape(red_shape), [&](const std::vector<Var>& i) {
    std::vector<IterVar> axes;
    const std::vector<Expr> idx = over_axes(i, &axes);
    return max_reduce(x(idx), axes);
  }, "max");
  Tensor den = compute(te_shape(red_shape), [&](const std::vector<Var>& i) {
    std::vector<IterVar> axes;
    std::vector<Expr> idx = over_axes(i, &axes);
    return sum(exp(x(idx) - mx(ex(i))), axes);
  }, "sum");
  Tensor out = compute(te_shape(in), [&](const std::vector<Var>& i) {
    std::vector<Expr> ri(i.begin(), i.end());
    for (size_t k = first; k < last; ++k) ri[k] = Expr(0);
    Expr shifted = x(ex(i)) - mx(ri);
    return log ? shifted - ::kiln::log(den(ri)) : exp(shifted) / den(ri);
  }, "out");
  return single_output({x}, out, in);
}

NodeCompute batch_norm(const NodeArgs& a) {
  const std::vector<int64_t>& in = a.shape(0);
  if (in.size() < 2) a.fail("normalizes a tensor of rank " + std::to_string(in.size()));
  for (int k = 1; k <= 4; ++k)
    if (a.input(k).num_elements() != in[1]) a.fail("has " + std::to_string(a.input(k).num_elements()) + " values for " + std::to_string(in[1]) + " channels");
  const double eps = a.attr_float("epsilon", 1e-5);
  Tensor x = input_placeholder(a, 0), scale = input_placeholder(a, 1), bias = input_placeholder(a, 2),
         mean = input_placeholder(a, 3), var = input_placeholder(a, 4);
  Tensor out = compute(te_shape(in), [&](const std::vector<Var>& i) {
    Expr c = i[1];
    Expr inv = scale(c) / sqrt(var(c) + make_const(x.dtype(), eps));
    return (x(ex(i)) - mean(c)) * inv + bias(c);
  }, "out", "elemwise");
  return single_output({x, scale, bias, mean, var}, out, in);
}

NodeCompute pool(const NodeArgs& a, bool is_max) {
  const std::vector<int64_t>& in = a.shape(0);
  if (in.size() < 3) a.fail("pools a tensor of rank " + std::to_string(in.size()));
  const bool ceil_mode = a.attr_int("ceil_mode", 0) != 0;
  const bool include_pad = a.attr_int("count_include_pad", 0) != 0;
  const Window w = window_of(a, in, a.attr_ints("kernel_shape", {}), ceil_mode);
  std::vector<int64_t> out_shape = {in[0], in[1]};
  out_shape.insert(out_shape.end(), w.out.begin(), w.out.end());
  if (in.size() == 4 && w.uniform() && !ceil_mode && w.dilation[0] == 1 && (is_max || !include_pad || w.pad_begin[0] == 0) &&
      a.input(0).dtype == DType::f32()) {
    std::ostringstream wl;
    wl << (is_max ? "max_pool2d" : "avg_pool2d") << ":N=" << in[0] << ",C=" << in[1] << ",H=" << in[2] << ",W=" << in[3]
       << ",R=" << w.kernel[0] << ",S=" << w.kernel[1] << ",stride=" << w.stride[0] << ",pad=" << w.pad_begin[0];
    if (auto c = as_registry_op(wl.str(), out_shape)) return *c;
  }
  Tensor x = input_placeholder(a, 0);
  const DType t = x.dtype();
  Tensor acc = compute(te_shape(out_shape), [&](const std::vector<Var>& i) {
    std::vector<Var> o(i.begin() + 2, i.end()), r;
    std::vector<IterVar> axes = window_axes(w, &r, "w");
    if (is_max) return max_reduce(tap(x, in, w, {i[0], i[1]}, o, r, combiner_identity(Combiner::kMax, t), nullptr), axes);
    return sum(tap(x, in, w, {i[0], i[1]}, o, r, make_zero(t), nullptr), axes);
  }, is_max ? "out" : "acc", "pool");
  if (is_max) return single_output({x}, acc, out_shape);
  Tensor out = compute(te_shape(out_shape), [&](const std::vector<Var>& i) {
    std::vector<Var> o(i.begin() + 2, i.end());
    // The count: taps inside the input (or inside the padded input).
    Expr count = make_const(t, 1.0);
    for (size_t k = 0; k < w.kernel.size(); ++k) {
      const int64_t lo_bound = include_pad ? -w.pad_begin[k] : 0;
      const int64_t hi_bound = include_pad ? in[k + 2] + w.pad_end[k] : in[k + 2];
      Expr first = o[k] * Expr(w.stride[k]) - Expr(w.pad_begin[k]);
      Expr lo = max(first, Expr(lo_bound));
      Expr hi = min(first + Expr((w.kernel[k] - 1) * w.dilation[k] + 1), Expr(hi_bound));
      // taps at first + j*d in [lo, hi): ceil((hi - first)/d) - ceil((lo - first)/d)
      const int64_t d = w.dilation[k];
      Expr n = floordiv(hi - first + Expr(d - 1), Expr(d)) - floordiv(lo - first + Expr(d - 1), Expr(d));
      count = count * cast(t, n);
    }
    return acc(ex(i)) / count;
  }, "out", "elemwise");
  return single_output({x}, out, out_shape);
}

enum class Reduction { kSum, kMean, kMax, kMin };

NodeCompute reduce(const NodeArgs& a, Reduction kind, const std::vector<int64_t>& forced_axes = {}) {
  const std::vector<int64_t>& in = a.shape(0);
  const int r = static_cast<int>(in.size());
  std::vector<int64_t> axes = forced_axes;
  const bool axes_as_input = (kind == Reduction::kSum && a.opset() >= 13) || a.opset() >= 18;
  if (axes.empty()) axes = axes_as_input ? (a.has_input(1) ? a.constant_ints(1, "axes") : std::vector<int64_t>{}) : a.attr_ints("axes", {});
  const bool keep = a.attr_int("keepdims", 1) != 0;
  // Empty axes reduce everything, unless noop_with_empty_axes asks for a copy.
  if (axes.empty() && forced_axes.empty() && a.attr_int("noop_with_empty_axes", 0) != 0) {
    Tensor x = input_placeholder(a, 0);
    Tensor t = compute_shape(in, [&](const std::vector<Var>& i) { return x(ex(i)); }, "out", "injective");
    return single_output({x}, t, in);
  }
  std::vector<bool> reduced(in.size(), axes.empty());
  for (int64_t ax : axes) reduced[static_cast<size_t>(a.axis(ax, r))] = true;
  std::vector<int64_t> out;
  int64_t count = 1;
  for (size_t k = 0; k < in.size(); ++k) {
    if (reduced[k]) count *= in[k];
    if (!reduced[k]) out.push_back(in[k]);
    else if (keep) out.push_back(1);
  }
  Tensor x = input_placeholder(a, 0);
  Tensor t = compute_shape(out, [&](const std::vector<Var>& i) {
    std::vector<IterVar> raxes;
    std::vector<Expr> idx;
    size_t next = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      if (reduced[k]) {
        raxes.push_back(reduce_axis(Expr(in[k]), "r" + std::to_string(k)));
        idx.push_back(raxes.back()->var);
        if (keep) ++next;
      } else {
        idx.push_back(i[next++]);
      }
    }
    switch (kind) {
      case Reduction::kMax: return max_reduce(x(idx), raxes);
      case Reduction::kMin: return min_reduce(x(idx), raxes);
      case Reduction::kMean:
      case Reduction::kSum: return sum(x(idx), raxes);
    }
    return Expr();
  }, kind == Reduction::kMean ? "total" : "out", "reduce");
  if (kind == Reduction::kMean) {
    const Tensor total = t;
    t = compute_shape(out, [&](const std::vector<Var>& i) {
      std::vector<Expr> idx(i.begin(), i.end());
      if (idx.empty()) idx.push_back(Expr(0));
      return total(idx) / make_const(x.dtype(), static_cast<double>(count));
    }, "out", "elemwise");
  }
  return single_output({x}, t, out);
}

NodeCompute global_pool(const NodeArgs& a, Reduction kind) {
  // On a blocked tensor (graph/layout_planning.h) the last axis holds channels.
  const int end = a.attr_int(kBlockedLayout, 0) != 0 ? a.rank(0) - 1 : a.rank(0);
  std::vector<int64_t> axes;
  for (int k = 2; k < end; ++k) axes.push_back(k);
  if (axes.empty()) a.fail("pools a tensor without spatial axes");
  return reduce(a, kind, axes);
}

// Nearest-neighbour Resize: every coordinate transformation and rounding
// mode of ONNX, computed in f32 as ONNX Runtime does.
NodeCompute resize(const NodeArgs& a) {
  const std::vector<int64_t>& in = a.shape(0);
  const std::string mode = a.attr_str("mode", "nearest");
  if (mode != "nearest") a.fail("has mode '" + mode + "'; kiln supports nearest");
  const std::string coord = a.attr_str("coordinate_transformation_mode", a.opset() < 11 ? "asymmetric" : "half_pixel");
  const std::string rounding = a.attr_str("nearest_mode", a.opset() < 11 ? "floor" : "round_prefer_floor");
  static const std::set<std::string> coords = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                               "tf_half_pixel_for_nn"};
  static const std::set<std::string> roundings = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (!coords.count(coord)) a.fail("has coordinate_transformation_mode '" + coord + "', which kiln does not support");
  if (!roundings.count(rounding)) a.fail("has nearest_mode '" + rounding + "', which kiln does not support");
  std::vector<double> scales;
  std::vector<int64_t> out = in;
  const int scales_at = a.opset() < 11 ? 1 : 2;
  if (a.has_input(scales_at) && a.input(scales_at).num_elements() > 0) {
    const HostTensor& s = a.constant(scales_at, "scales");
    if (s.num_elements() != static_cast<int64_t>(in.size())) a.fail("has " + std::to_string(s.num_elements()) + " scales for rank " + std::to_string(in.size()));
    for (size_t k = 0; k < in.size(); ++k) {
      scales.push_back(s.get_float(static_cast<int64_t>(k)));
      const double extent = std::floor(static_cast<double>(in[k]) * scales[k]);
      // Checked as a double: NaN, infinite or huge scales have no int64 value.
      if (!(extent >= 1 && extent <= static_cast<double>(kMaxTensorElements)))
        a.fail("has scale " + std::to_string(scales[k]) + " on axis " + std::to_string(k) + ", which resizes extent " +
               std::to_string(in[k]) + " to " + std::to_string(extent) + " (kiln needs 1 to " +
               std::to_string(kMaxTensorElements) + ")");
      out[k] = static_cast<int64_t>(extent);
    }
  } else if (a.opset() >= 11 && a.has_input(3)) {
    out = a.constant_ints(3, "sizes");
    if (out.size() != in.size()) a.fail("has sizes of the wrong length");
    for (size_t k = 0; k < in.size(); ++k) scales.push_back(static_cast<double>(out[k]) / static_cast<double>(in[k]));
  } else {
    a.fail("has neither scales nor sizes");
  }
  for (int64_t d : out)
    if (d <= 0) a.fail("resizes to an empty tensor");
  Tensor x = input_placeholder(a, 0);
  const DType f = DType::f32();
  Tensor t = compute(te_shape(out), [&](const std::vector<Var>& i) {
    std::vector<Expr> idx;
    for (size_t k = 0; k < in.size(); ++k) {
      if (scales[k] == 1.0 && out[k] == in[k]) {
        idx.push_back(i[k]);
        continue;
      }
      Expr xr = cast(f, i[k]);
      const Expr scale = make_const(f, scales[k]);
      Expr src;
      if (coord == "asymmetric") src = xr / scale;
      else if (coord == "tf_half_pixel_for_nn") src = (xr + make_const(f, 0.5)) / scale;
      else if (coord == "align_corners")
        src = out[k] == 1 ? make_const(f, 0.0) : xr * make_const(f, static_cast<double>(in[k] - 1) / static_cast<double>(out[k] - 1));
      else if (coord == "pytorch_half_pixel" && out[k] == 1) src = make_const(f, 0.0);
      else src = (xr + make_const(f, 0.5)) / scale - make_const(f, 0.5);
      Expr r;
      if (rounding == "floor") r = floor(src);
      else if (rounding == "ceil") r = ceil(src);
      else if (rounding == "round_prefer_ceil") r = floor(src + make_const(f, 0.5));
      else r = ceil(src - make_const(f, 0.5));
      idx.push_back(max(min(cast(DType::i32(), r), Expr(static_cast<int>(in[k] - 1))), Expr(0)));
    }
    return x(idx);
  }, "out", "injective");
  return single_output({x}, t, out);
}

}  // namespace

void add_nn_ops(std::map<std::string, OpBuilder>& ops) {
  ops["Conv"] = conv;
  ops["ConvTranspose"] = conv_transpose;
  ops["MatMul"] = matmul;
  ops[kPackMatmulB] = pack_matmul_b;
  ops[kPadSpatial] = pad_spatial;
  ops["Gemm"] = gemm;
  ops["Softmax"] = [](const NodeArgs& a) { return softmax_op(a, false); };
  ops["LogSoftmax"] = [](const NodeArgs& a) { return softmax_op(a, true); };
  ops["BatchNormalization"] = batch_norm;
  ops["MaxPool"] = [](const NodeArgs& a) { return pool(a, true); };
  ops["AveragePool"] = [](const NodeArgs& a) { return pool(a, false); };
  ops["GlobalAveragePool"] = [](const NodeArgs& a) { return global_pool(a, Reduction::kMean); };
  ops["GlobalMaxPool"] = [](const NodeArgs& a) { return global_pool(a, Reduction::kMax); };
  ops["ReduceMean"] = [](const NodeArgs& a) { return reduce(a, Reduction::kMean); };
  ops["ReduceSum"] = [](const NodeArgs& a) { return reduce(a, Reduction::kSum); };
  ops["ReduceMax"] = [](const NodeArgs& a) { return reduce(a, Reduction::kMax); };
  ops["ReduceMin"] = [](const NodeArgs& a) { return reduce(a, Reduction::kMin); };
  ops["Resize"] = resize;
}

}  // namespace kiln::graph
