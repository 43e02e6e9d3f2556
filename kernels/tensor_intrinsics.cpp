#include "kernels/tensor_intrinsics.h"

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/hw_instructions.h"

namespace kiln {

namespace {

// c[i] (+)= sum_k acc(a[k]) * acc(b[i, k]) over `lanes` x `steps`, lowered to
// one call of the broadcast-dot instruction `instruction`; reset stores a
// zero vector.
TensorIntrin broadcast_dot(const std::string& name, const std::string& instruction, int lanes, int steps, DType a_type,
                           DType b_type, DType acc) {
  Tensor a = placeholder({Expr(steps)}, a_type, "a");
  Tensor b = placeholder({Expr(lanes), Expr(steps)}, b_type, "b");
  IterVar k = reduce_axis(steps, "k");
  Tensor c = compute(
      {Expr(lanes)}, [&](Var i) { return sum(cast(acc, a(k->var)) * cast(acc, b(i, k->var)), {k}); }, "c");
  TensorIntrinLowering lower;
  lower.reset = [lanes, acc](const IntrinBuffer& out) {
    return StoreNode::make(out.data, BroadcastNode::make(make_zero(acc), lanes),
                           RampNode::make(out.index({make_zero(out.offset.dtype())}), make_const(out.offset.dtype(), int64_t{1}), lanes));
  };
  lower.update = [instruction, lanes, steps](const std::vector<IntrinBuffer>& ops) {
    const Expr zero = make_zero(ops[0].offset.dtype());
    return TensorIntrinCallNode::make(
        instruction, {ops[2].at({zero}, lanes), ops[0].at({zero}, steps), ops[1].at({zero, zero}, int64_t{lanes} * steps)},
        {});
  };
  IntrinRequirement contiguous;
  contiguous.unit_inner = true;
  IntrinRequirement block;
  block.dense = true;
  return decl_tensor_intrin(name, c, {a, b}, lower, {contiguous, block, contiguous});
}

// An AMX accumulator's reset: out's rows of 32 elements (the loops over
// `extents`, one per declared dimension before the 32) set to zero, 16
// lanes at a time.
Stmt zero_rows_of_32(const IntrinBuffer& out, DType acc, const std::vector<int64_t>& extents) {
  std::vector<Var> loops;
  std::vector<Expr> first;
  for (size_t d = 0; d < extents.size(); ++d) {
    loops.emplace_back("r" + std::to_string(d));
    first.push_back(loops.back());
  }
  Var h("h");
  first.push_back(h * 16);
  Stmt body =
      ForNode::make(h, Expr(0), Expr(2), ForKind::kSerial,
                    StoreNode::make(out.data, BroadcastNode::make(make_zero(acc), 16),
                                    RampNode::make(out.index(first), make_const(out.offset.dtype(), int64_t{1}), 16)));
  for (size_t d = extents.size(); d-- > 0;)
    body = ForNode::make(loops[d], Expr(0), Expr(static_cast<int>(extents[d])), ForKind::kSerial, body);
  return body;
}

// c[32, 32] (+)= a[32, kt] . b[kt/s, 32, s], one AMX call per update (or
// per body, from zeroed tiles); reset stores zeros row by row.
TensorIntrin amx_block(const std::string& name, const std::string& instruction, int64_t kt, int64_t s, DType in_a,
                       DType in_b, DType acc) {
  const int steps = static_cast<int>(s);
  Tensor a = placeholder({Expr(32), Expr(static_cast<int>(kt))}, in_a, "a");
  Tensor b = placeholder({Expr(static_cast<int>(kt / s)), Expr(32), Expr(steps)}, in_b, "b");
  IterVar kq = reduce_axis(static_cast<int>(kt / s), "kq"), kk = reduce_axis(steps, "kk");
  Tensor c = compute(
      {Expr(32), Expr(32)},
      [&](Var i, Var j) {
        return sum(cast(acc, a(i, kq->var * steps + kk->var)) * cast(acc, b(kq->var, j, kk->var)), {kq, kk});
      },
      "c");
  TensorIntrinLowering lower;
  lower.reset = [acc](const IntrinBuffer& out) { return zero_rows_of_32(out, acc, {32}); };
  auto call = [kt](const std::string& name, const std::vector<IntrinBuffer>& ops) {
    const Expr zero = make_zero(ops[0].offset.dtype());
    return TensorIntrinCallNode::make(name,
                                      {ops[2].at({zero, zero}, 32 * 32, 0), ops[0].at({zero, zero}, 32 * kt, 0),
                                       ops[1].at({zero, zero, zero}, 32 * kt)},
                                      {});
  };
  lower.update = [call, instruction](const std::vector<IntrinBuffer>& ops) { return call(instruction, ops); };
  // The whole reduction in one call: the tiles start from zero.
  lower.body = [call, instruction](const std::vector<IntrinBuffer>& ops) { return call(instruction + ".set", ops); };
  IntrinRequirement rows;
  rows.unit_inner = true;
  IntrinRequirement block;
  block.dense = true;
  return decl_tensor_intrin(name, c, {a, b}, lower, {rows, block, rows});
}

// The intrinsic named `name`, declared by `declare` on first use and shared
// after (declarations are immutable; templates ask for them per schedule).
TensorIntrin declared_once(const std::string& name, const std::function<TensorIntrin()>& declare) {
  static std::mutex mu;
  static std::map<std::string, TensorIntrin> made;
  std::lock_guard<std::mutex> lock(mu);
  TensorIntrin& t = made[name];
  if (!t) t = declare();
  return t;
}

// One declaration per k tile.
TensorIntrin amx_for(int64_t kt, bool bf16) {
  const int64_t s = bf16 ? 2 : 4;
  user_check(kt > 0 && kt % (16 * s) == 0)
      << "AMX " << (bf16 ? "bf16" : "int8") << " k tiles are multiples of " << 16 * s << ", got " << kt;
  const std::string name = std::string(bf16 ? "x86_amx_bf16_32x32_k" : "x86_amx_int8_32x32_k") + std::to_string(kt);
  return declared_once(name, [&] {
    return bf16 ? amx_block(name, "x86.amx.dpbf16ps.32x32", kt, s, DType::bf16(), DType::bf16(), DType::f32())
                : amx_block(name, "x86.amx.dpbusd.32x32", kt, s, DType::u8(), DType::i8(), DType::i32());
  });
}

// A packing intrinsic's element type must be one it moves.
void check_moves(const std::vector<DType>& types, DType t, const char* what) {
  user_check(std::find(types.begin(), types.end(), t) != types.end()) << what << t.str();
}

// The strides (in elements) of one intrinsic axis in an operand: the
// declared dimension it moves times its coefficient there (0 when the
// operand does not move with it).
Expr axis_stride(const IntrinBuffer& o, int dim, int64_t coefficient) {
  const DType t = o.offset.dtype();
  if (dim < 0) return make_zero(t);
  return o.strides.at(static_cast<size_t>(dim)) * make_const(t, coefficient);
}

TensorIntrin amx_conv_declare(const AmxConvTile& t) {
  const int64_t s = t.bf16 ? 2 : 4, cb = t.cb > 0 ? t.cb : 16 * s;
  // Folded: a kernel row's taps and the block's channels in one product.
  const bool fold = cb < 16 * s;
  const int64_t kt = cb;
  const DType in_a = t.bf16 ? DType::bf16() : DType::u8(), in_b = t.bf16 ? DType::bf16() : DType::i8();
  const DType acc = t.bf16 ? DType::f32() : DType::i32();
  const bool g2 = t.groups > 1, c2 = t.steps_c > 1, r2 = t.steps_r > 1, s2 = t.steps_s > 1, h2 = g2 || r2;
  auto e = [](int64_t v) { return Expr(static_cast<int>(v)); };
  // a: [t1?, h?, w, kt]; b: [t1?, t2?, t3?, 16, 32, s]; c: [g?, pixels, 32].
  std::vector<Expr> a_shape, b_shape, c_shape;
  if (c2) a_shape.push_back(e(t.steps_c));
  if (h2) a_shape.push_back(e((t.groups - 1) * t.stride + (t.steps_r - 1) * t.dilation + 1));
  a_shape.push_back(e((t.pixels - 1) * t.stride + (t.steps_s - 1) * t.dilation + 1));
  a_shape.push_back(e(kt));
  if (c2) b_shape.push_back(e(t.steps_c));
  if (r2) b_shape.push_back(e(t.steps_r));
  if (s2) b_shape.push_back(e(t.steps_s));
  for (int64_t d : {cb / s, int64_t{32}, s}) b_shape.push_back(e(d));
  if (g2) c_shape.push_back(e(t.groups));
  c_shape.push_back(e(t.pixels));
  c_shape.push_back(e(32));
  Tensor a = placeholder(a_shape, in_a, "a");
  Tensor b = placeholder(b_shape, in_b, "b");
  std::vector<IterVar> red;
  IterVar t1 = c2 ? reduce_axis(static_cast<int>(t.steps_c), "t1") : IterVar();
  IterVar t2 = r2 ? reduce_axis(static_cast<int>(t.steps_r), "t2") : IterVar();
  IterVar t3 = s2 ? reduce_axis(static_cast<int>(t.steps_s), "t3") : IterVar();
  IterVar kq = reduce_axis(static_cast<int>(cb / s), "kq"), kk = reduce_axis(static_cast<int>(s), "kk");
  for (const IterVar& r : {t1, t2, t3, kq, kk})
    if (r) red.push_back(r);
  const int st = static_cast<int>(t.stride), dl = static_cast<int>(t.dilation), steps = static_cast<int>(s);
  Tensor c = compute(
      c_shape,
      [&](const std::vector<Var>& v) {
        const Var i = v[g2 ? 1 : 0], j = v[g2 ? 2 : 1];
        Expr h = make_zero(i.dtype()), w = i * st;
        if (g2) h = h + v[0] * st;
        if (r2) h = h + t2->var * dl;
        if (s2) w = w + t3->var * dl;
        std::vector<Expr> ai, bi;
        if (c2) ai.push_back(t1->var);
        if (h2) ai.push_back(h);
        ai.push_back(w);
        ai.push_back(kq->var * steps + kk->var);
        for (const IterVar& r : {t1, t2, t3})
          if (r) bi.push_back(r->var);
        bi.push_back(kq->var);
        bi.push_back(j);
        bi.push_back(kk->var);
        return sum(cast(acc, a(ai)) * cast(acc, b(bi)), red);
      },
      "c");
  // Declared dimensions: a [t1?, h?, w, k]; b [t1?, t2?, t3?, kq, j, kk]; c [g?, i, j].
  const int a_t1 = c2 ? 0 : -1, a_h = h2 ? (c2 ? 1 : 0) : -1, a_w = (c2 ? 1 : 0) + (h2 ? 1 : 0);
  const int b_t1 = c2 ? 0 : -1, b_t2 = r2 ? (c2 ? 1 : 0) : -1;
  const int b_t3 = s2 ? (c2 ? 1 : 0) + (r2 ? 1 : 0) : -1, b_kq = (c2 ? 1 : 0) + (r2 ? 1 : 0) + (s2 ? 1 : 0);
  const int c_g = g2 ? 0 : -1, c_i = g2 ? 1 : 0;
  const std::string instruction = t.bf16 ? kAmxTilesBf16 : kAmxTilesInt8;
  auto call = [=](const std::string& name, const std::vector<IntrinBuffer>& ops) {
    const IntrinBuffer &ia = ops[0], &ib = ops[1], &ic = ops[2];
    int64_t j_stride = 0;
    user_check(as_const_int(ib.strides[static_cast<size_t>(b_kq) + 1], &j_stride) && j_stride == s)
        << "AMX convolution: the weights' " << s << " input channels of the 32 output channels of a call must be "
        << "contiguous (an output channel block of a multiple of 32)";
    const DType it = ic.offset.dtype();
    auto n = [&](int64_t v) { return make_const(it, v); };
    // One row group per output row; with one row, more than 16 pixels
    // split into 16 and the rest.
    const int64_t rows0 = g2 ? t.pixels : std::min<int64_t>(16, t.pixels);
    const int64_t rows1 = g2 ? t.pixels : t.pixels - rows0;
    // b's tile rows: its kq rows, or folded, its (tap, kq) rows, which
    // must be evenly spaced (a tap's cb / s rows apart; with one kq row per
    // tap, the taps' stride).
    Expr b_row = axis_stride(ib, b_kq, 1);
    if (fold) {
      int64_t pixel = 0, tap = 0, kq_rows = 0;
      user_check(as_const_int(ia.strides[static_cast<size_t>(a_w)], &pixel) && pixel == cb)
          << "AMX convolution: a folded kernel row needs the input's pixels " << cb
          << " elements apart (its taps and channels contiguous)";
      const bool one_row = cb / s == 1;
      user_check(
          as_const_int(ib.strides[static_cast<size_t>(b_t3)], &tap) &&
          (one_row || (as_const_int(ib.strides[static_cast<size_t>(b_kq)], &kq_rows) && tap == (cb / s) * kq_rows)))
          << "AMX convolution: a folded kernel row needs the weights' taps " << cb / s
          << " rows of input channels apart";
      if (one_row) b_row = n(tap);
    }
    Expr acc_row = axis_stride(ic, c_i, 1), a_row = axis_stride(ia, a_w, t.stride);
    Expr acc_group = g2 ? axis_stride(ic, c_g, 1) : acc_row * n(16);
    Expr a_group = g2 ? axis_stride(ia, a_h, t.stride) : a_row * n(16);
    std::vector<Expr> scalars = {n(rows0),
                                 n(rows1),
                                 n(t.steps_c),
                                 n(t.steps_r),
                                 n(fold ? 1 : t.steps_s),
                                 acc_row,
                                 acc_group,
                                 a_row,
                                 a_group,
                                 axis_stride(ia, a_t1, 1),
                                 r2 ? axis_stride(ia, a_h, t.dilation) : n(0),
                                 s2 && !fold ? axis_stride(ia, a_w, t.dilation) : n(0),
                                 b_row,
                                 axis_stride(ib, b_t1, 1),
                                 axis_stride(ib, b_t2, 1),
                                 fold ? n(0) : axis_stride(ib, b_t3, 1),
                                 n(fold ? t.steps_s * cb : kt)};
    auto origin = [](const IntrinBuffer& o) {
      return std::vector<Expr>(o.strides.size(), make_zero(o.offset.dtype()));
    };
    auto elements = [](const IntrinBuffer& o) {
      int64_t p = 1;
      for (int64_t d : o.shape) p *= d;
      return p;
    };
    const TensorIntrinCallNode::Operand acc_op = ic.at(origin(ic), elements(ic)),
                                        a_op = ia.at(origin(ia), elements(ia)), b_op = ib.at(origin(ib), elements(ib));
    if (!t.flat) return TensorIntrinCallNode::make(name, {acc_op, a_op, b_op}, scalars);
    // Flat: the groups' rows lie one pitch apart in both a and c, so the
    // call runs over (groups - 1) * pitch + pixels tile rows in calls of
    // up to 32 (16 + the rest); the rows between a row's last pixel and the
    // next row's first are computed and left unused.
    int64_t ar = 0, ag = 0, cr = 0, cg = 0;
    user_check(as_const_int(a_row, &ar) && as_const_int(a_group, &ag) && as_const_int(acc_row, &cr) &&
               as_const_int(acc_group, &cg) && ar > 0 && cr > 0 && ag % ar == 0 && cg % cr == 0 && ag / ar == cg / cr &&
               ag / ar >= t.pixels)
        << "AMX convolution: flat tiles need the output rows one pitch apart, of at least " << t.pixels
        << " pixels, in both the input and the sums; got " << ag << " and " << cg << " elements for pixels of " << ar
        << " and " << cr;
    const int64_t pitch = ag / ar, span = (t.groups - 1) * pitch + t.pixels;
    // Every call of a run takes the same tile shapes (16 + 16 rows; LLVM
    // configures the tile registers once, and a second shape spills them):
    // the last call ends at the run's end and overlaps the one before, its
    // shared rows computed twice, which only a call from zero may do.
    const bool overlap = span > 32 && span % 32 != 0;
    user_check(!overlap || name == instruction + ".set")
        << "AMX convolution: a flat run of " << span << " tile rows needs overlapping calls, which must start from "
        << "zero (the whole reduction in the call)";
    std::vector<Stmt> calls;
    for (int64_t c = 0; c * 32 < span; ++c) {
      const int64_t first = std::min<int64_t>(c * 32, std::max<int64_t>(0, span - 32));
      const int64_t len = std::min<int64_t>(32, span);
      std::vector<Expr> sc = scalars;
      sc[0] = n(std::min<int64_t>(16, len));
      sc[1] = n(len - std::min<int64_t>(16, len));
      sc[6] = n(16 * cr);
      sc[8] = n(16 * ar);
      TensorIntrinCallNode::Operand acc_at = acc_op, a_at = a_op;
      acc_at.offset = acc_op.offset + make_const(acc_op.offset.dtype(), first * cr);
      a_at.offset = a_op.offset + make_const(a_op.offset.dtype(), first * ar);
      calls.push_back(TensorIntrinCallNode::make(name, {acc_at, a_at, b_op}, sc));
    }
    return SeqNode::make(std::move(calls));
  };
  TensorIntrinLowering lower;
  lower.reset = [=](const IntrinBuffer& out) {
    return zero_rows_of_32(out, acc, g2 ? std::vector<int64_t>{t.groups, t.pixels} : std::vector<int64_t>{t.pixels});
  };
  lower.update = [=](const std::vector<IntrinBuffer>& ops) { return call(instruction, ops); };
  lower.body = [=](const std::vector<IntrinBuffer>& ops) { return call(instruction + ".set", ops); };
  IntrinRequirement unit;
  unit.unit_inner = true;
  std::ostringstream name;
  name << "x86_amx_" << (t.bf16 ? "bf16" : "int8") << "_conv_g" << t.groups << "_p" << t.pixels << "_c" << t.steps_c
       << "_r" << t.steps_r << "_s" << t.steps_s << "_st" << t.stride << "_d" << t.dilation;
  if (fold) name << "_cb" << cb;
  if (t.flat) name << "_flat";
  return decl_tensor_intrin(name.str(), c, {a, b}, lower, {unit, unit, unit});
}

}  // namespace

TensorIntrin x86_amx_conv(const AmxConvTile& t) {
  if (t.flat) {
    user_check(t.groups >= 2 && t.groups <= 64 && t.pixels >= 1 && t.pixels <= 64)
        << "flat AMX convolution tiles cover 2 to 64 output rows of 1 to 64 pixels, got " << t.groups << " rows of "
        << t.pixels;
  } else {
    user_check(t.groups == 1 || t.groups == 2) << "AMX convolution tiles cover 1 or 2 output rows, got " << t.groups;
    user_check(t.pixels >= 1 && t.pixels <= (t.groups == 2 ? 16 : 32))
        << "AMX convolution tiles cover 1 to " << (t.groups == 2 ? 16 : 32) << " pixels per row with " << t.groups
        << " row(s), got " << t.pixels;
  }
  user_check(t.steps_c >= 1 && t.steps_r >= 1 && t.steps_s >= 1 && t.stride >= 1 && t.dilation >= 1)
      << "AMX convolution tiles need positive steps, stride and dilation";
  const int64_t s = t.bf16 ? 2 : 4;
  user_check(t.cb == 0 || t.cb == 16 * s ||
             (t.cb > 0 && t.cb % s == 0 && t.steps_s > 1 && t.cb * t.steps_s <= 16 * s && t.dilation == 1))
      << "AMX convolution tiles take blocks of " << 16 * s << " input channels, or fold a kernel row's taps into one "
      << "product (blocks of a multiple of " << s << " channels, 2 or more taps, at most " << 16 * s
      << " channels x taps, dilation 1); got " << t.cb << " channels x " << t.steps_s << " taps, dilation "
      << t.dilation;
  static std::mutex mu;
  static std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, bool>,
                  TensorIntrin>
      made;
  std::lock_guard<std::mutex> lock(mu);
  TensorIntrin& intrin = made[{t.groups, t.pixels, t.steps_c, t.steps_r, t.steps_s, t.stride, t.dilation,
                               t.cb == 16 * s ? 0 : t.cb, t.bf16, t.flat}];
  if (!intrin) intrin = amx_conv_declare(t);
  return intrin;
}

TensorIntrin x86_amx_int8_32x32(int64_t kt) { return amx_for(kt, false); }
TensorIntrin x86_amx_bf16_32x32(int64_t kt) { return amx_for(kt, true); }

TensorIntrin x86_vnni_dot_16x4() {
  static const TensorIntrin t =
      broadcast_dot("x86_vnni_dot_16x4", "x86.vpdpbusd.512", 16, 4, DType::u8(), DType::i8(), DType::i32());
  return t;
}

TensorIntrin x86_bf16_dot_16x2() {
  static const TensorIntrin t =
      broadcast_dot("x86_bf16_dot_16x2", "x86.vdpbf16ps.512", 16, 2, DType::bf16(), DType::bf16(), DType::f32());
  return t;
}

TensorIntrin x86_transpose_16x16(DType t) {
  check_moves(x86_transpose_types(), t, "the 16 x 16 word transpose moves f32, bf16, i8 or u8, not ");
  const std::string name = "x86_transpose_16x16_" + t.str();
  return declared_once(name, [&] {
    const int g = static_cast<int>(4 / t.bytes());  // elements per 32-bit word
    Tensor src = placeholder({Expr(16), Expr(16 * g)}, t, "src");
    Tensor dst =
        g == 1 ? compute(
                     {Expr(16), Expr(16)}, [&](Var i, Var j) { return src(j, i); }, "dst")
               : compute(
                     {Expr(16), Expr(16), Expr(g)}, [&](Var i, Var j, Var e) { return src(j, i * g + e); }, "dst");
    TensorIntrinLowering lower;
    lower.body = [t, g](const std::vector<IntrinBuffer>& ops) {
      const Expr zero = make_zero(ops[0].offset.dtype());
      std::vector<Expr> dst_first(ops[1].strides.size(), zero);
      return TensorIntrinCallNode::make(x86_transpose_instruction(t),
                                        {ops[1].at(dst_first, 256 * g, 0), ops[0].at({zero, zero}, 256 * g, 0)}, {});
    };
    IntrinRequirement rows;  // whole words in contiguous rows, any row stride
    rows.unit_inner = true;
    IntrinRequirement words = rows;
    words.dense_inner = 2;
    return decl_tensor_intrin(name, dst, {src}, lower, {rows, g == 1 ? rows : words});
  });
}

TensorIntrin x86_interleave_16(DType t) {
  check_moves(x86_interleave_types(), t, "the interleave of rows into 32-bit words moves bf16, i8 or u8, not ");
  const std::string name = "x86_interleave_16_" + t.str();
  return declared_once(name, [&] {
    const int g = static_cast<int>(4 / t.bytes());  // rows, and elements per word
    Tensor src = placeholder({Expr(g), Expr(16)}, t, "src");
    Tensor dst = compute(
        {Expr(16), Expr(g)}, [&](Var j, Var e) { return src(e, j); }, "dst");
    TensorIntrinLowering lower;
    lower.body = [t, g](const std::vector<IntrinBuffer>& ops) {
      const Expr zero = make_zero(ops[0].offset.dtype());
      return TensorIntrinCallNode::make(x86_interleave_instruction(t),
                                        {ops[1].at({zero, zero}, 16 * g), ops[0].at({zero, zero}, 16 * g, 0)}, {});
    };
    IntrinRequirement rows;  // contiguous rows, any row stride
    rows.unit_inner = true;
    IntrinRequirement block;  // one 64-byte block
    block.dense = true;
    return decl_tensor_intrin(name, dst, {src}, lower, {rows, block});
  });
}

std::vector<TensorIntrin> cpu_tensor_intrinsics(const CpuInfo& cpu) {
  std::vector<TensorIntrin> out;
  if (cpu.avx512_vnni) out.push_back(x86_vnni_dot_16x4());
  if (cpu.avx512_bf16) out.push_back(x86_bf16_dot_16x2());
  return out;
}

}  // namespace kiln
