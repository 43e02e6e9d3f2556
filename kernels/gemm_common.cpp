#include "kernels/gemm_common.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "kernels/quantize.h"
#include "kernels/template_util.h"
#include "kernels/tensor_intrinsics.h"

namespace kiln {

namespace {

// Band loops: 0 = yo, 1 = xo, 2 = ym, 3 = xm.
const std::vector<std::vector<int64_t>>& band_orders() {
  static const std::vector<std::vector<int64_t>> orders = {
      {0, 1, 2, 3},  // row blocks outer
      {1, 0, 3, 2},  // column panels outer (a B panel is reused down the rows)
      {1, 0, 2, 3},  // column panels outer, rows before columns inside a block
      {0, 1, 3, 2},  // row blocks outer, columns before rows inside a block
      {0, 2, 1, 3},  // whole row strips, then column tiles
      {1, 3, 0, 2},  // whole column strips, then row tiles
  };
  return orders;
}

const std::vector<int64_t> kTileRows = {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16};

// The broadcast-dot intrinsics (VNNI, BF16) compute 16 columns per call,
// AMX's 32 x 32 blocks.
constexpr int64_t kIntrinsicLanes = 16;
constexpr int64_t kAmxBlock = 32;

DType gemm_a_type(const GemmShape& g, DType dtype) { return g.quantized ? DType::u8() : dtype; }
DType gemm_b_type(const GemmShape& g, DType dtype) { return g.quantized ? DType::i8() : dtype; }

// The k elements one step of the intrinsic takes: 4 for int8 (VNNI, AMX
// int8), 2 for bf16.
int64_t intrinsic_steps(const std::string& name, const GemmShape& g) {
  return name == "vnni" || (name == "amx" && g.quantized) ? 4 : 2;
}

// The tensor intrinsics the CPU offers for this GEMM, in the order the knob
// lists them: "vnni" (u8 x i8 on AVX512-VNNI) or "bf16" (bf16 on
// AVX512-BF16), for k in whole steps and at least one block of 16 columns
// (N need not be whole blocks: the sums run to the next block over B's
// zero columns, and the epilogue stores the first N); "amx" (AMX int8 or bf16) for whole 32 x 32
// blocks and k tiles of 64 (int8) or 32 (bf16). A's rows must be contiguous
// along k. A B given packed must be in the instruction's blocked layout
// already: panels of whole blocks (AMX: panels of exactly one 32-column
// block, dividing N), k in the instruction's steps, zero past N.
std::vector<std::string> gemm_intrinsics(const GemmShape& g, DType dtype, const CpuInfo& cpu) {
  std::vector<std::string> out;
  // A register tile of whole blocks no wider than N: one block, or a panel.
  const int64_t narrowest = g.b_panel > 0 ? std::min(g.N, g.b_panel) : kIntrinsicLanes;
  if (g.trans_a || g.N < kIntrinsicLanes || narrowest % kIntrinsicLanes != 0) return out;
  const bool bf16 = !g.quantized && dtype == DType::bf16();
  const int64_t steps = g.quantized ? 4 : 2;
  if (g.b_panel > 0 && (g.b_kstep != steps || g.b_panel % kIntrinsicLanes != 0)) return out;
  if (g.quantized && cpu.avx512_vnni && g.K % 4 == 0) out.push_back("vnni");
  if (bf16 && cpu.avx512_bf16 && g.K % 2 == 0) out.push_back("bf16");
  const bool blocks = g.M % kAmxBlock == 0 && g.N % kAmxBlock == 0 && (g.b_panel == 0 || g.b_panel == kAmxBlock);
  if (blocks && ((g.quantized && cpu.amx_int8 && g.K % 64 == 0) || (bf16 && cpu.amx_bf16 && g.K % 32 == 0)))
    out.push_back("amx");
  return out;
}

// Shapes and element reads with the optional batch axis in front.
std::vector<Expr> dims(const GemmShape& g, int64_t rows, int64_t cols) {
  std::vector<Expr> d;
  if (g.batch > 0) d.push_back(Expr(static_cast<int>(g.batch)));
  d.push_back(Expr(static_cast<int>(rows)));
  d.push_back(Expr(static_cast<int>(cols)));
  return d;
}

std::vector<Expr> at(const GemmShape& g, const std::vector<Var>& b, Expr r, Expr c) {
  std::vector<Expr> idx;
  if (g.batch > 0) idx.push_back(b.at(0));
  idx.push_back(std::move(r));
  idx.push_back(std::move(c));
  return idx;
}

// A[.., i, k] and B[.., k, j] through the transposition flags.
Expr read_a(const GemmShape& g, const Tensor& A, const std::vector<Var>& b, Expr i, Expr k) {
  return g.trans_a ? A(at(g, b, k, i)) : A(at(g, b, i, k));
}
// A packed B (b_panel > 0) is read at [.., j / b_panel, k, j % b_panel], or
// with k in steps at [.., j / b_panel, k / b_kstep, j % b_panel, k % b_kstep].
Expr read_b(const GemmShape& g, const Tensor& B, const std::vector<Var>& b, Expr k, Expr j) {
  if (g.b_panel > 0) {
    const int nb = static_cast<int>(g.b_panel), ks = static_cast<int>(g.b_kstep);
    std::vector<Expr> idx;
    if (g.batch > 0) idx.push_back(b.at(0));
    if (ks > 1) {
      for (Expr e : {floordiv(j, nb), floordiv(k, ks), floormod(j, nb), floormod(k, ks)}) idx.push_back(e);
    } else {
      for (Expr e : {floordiv(j, nb), k, floormod(j, nb)}) idx.push_back(e);
    }
    return B(idx);
  }
  return g.trans_b ? B(at(g, b, j, k)) : B(at(g, b, k, j));
}

// B's stored shape: [.., K, N], [.., N, K] (trans_b) or packed panels.
std::vector<Expr> b_dims(const GemmShape& g) {
  if (g.b_panel <= 0) return g.trans_b ? dims(g, g.N, g.K) : dims(g, g.K, g.N);
  std::vector<Expr> d;
  if (g.batch > 0) d.push_back(Expr(static_cast<int>(g.batch)));
  const int64_t panels = (g.N + g.b_panel - 1) / g.b_panel;
  const std::vector<int64_t> shape = g.b_kstep > 1 ? std::vector<int64_t>{panels, g.K / g.b_kstep, g.b_panel, g.b_kstep}
                                                   : std::vector<int64_t>{panels, g.K, g.b_panel};
  for (int64_t e : shape) d.push_back(Expr(static_cast<int>(e)));
  return d;
}

// f16 and bf16: summed in f32, rounded to 16 bits by the epilogue.
bool narrow_float(DType t) { return t.is_float() && t.bits == 16; }

// Whether C is followed by an epilogue stage.
bool has_epilogue(const GemmShape& g, DType dtype) {
  return g.bias || g.relu || g.gelu || g.quantized || narrow_float(dtype);
}

// The epilogue stage over the product C (in `acc`): bias, activation,
// requantization, and the rounding of 16-bit floats to `dtype`.
Tensor epilogue(const GemmShape& g, const Tensor& C, const Tensor* bias, const Tensor* scale, DType dtype) {
  const DType acc = C.dtype();
  return compute(
      dims(g, g.M, g.N),
      [&](const std::vector<Var>& v) {
        const size_t o = g.batch > 0 ? 1 : 0;
        Expr e = C(std::vector<Expr>(v.begin(), v.end()));
        if (bias) e = e + cast(acc, (*bias)(v[o + 1]));
        if (g.quantized) return requantize(e, scale ? (*scale)(v[o + 1]) : Expr(), g.out_type, g.relu);
        if (g.relu) e = max(e, make_zero(acc));
        if (g.gelu) e = gelu(e);
        return narrow_float(dtype) ? cast(dtype, e) : e;
      },
      "out", "epilogue");
}

// Every output element (at the innermost loop of the output) reduces k in
// vectors: partial sums rf[lane, ..] over k = ko * lanes + lane, ko
// unrolled, then the lanes added up.
void schedule_dot_products(Schedule& s, Stage so, const Tensor& acc_t, const IterVar& at, const MatmulParams& p) {
  Stage sc = s[acc_t];
  sc.compute_at(so, at);
  IterVar ko, ki;
  sc.split(sc.reduce_axis()[0], p.reduce_vector, &ko, &ki);
  Tensor rf = s.rfactor(acc_t, ki);
  Stage sr = s[rf];
  sr.compute_at(so, at);
  std::vector<IterVar> ax = sr.axis();  // [lane, (b), i, j]
  std::vector<IterVar> order(ax.begin() + 1, ax.end());
  IterVar rk = sr.reduce_axis()[0];
  if (p.unroll_k > 1) {
    IterVar rkm, rku;
    sr.split(rk, p.unroll_k, &rkm, &rku);
    sr.unroll(rku);
    order.push_back(rkm);
    order.push_back(rku);
  } else {
    order.push_back(rk);
  }
  order.push_back(ax[0]);
  sr.reorder(order);
  sr.vectorize(ax[0]);
}

}  // namespace

void set_gemm_template(OpDef& d, std::function<GemmShape(const OpInstance&)> shape) {
  d.define_space = [shape](const OpInstance& op, const CpuInfo& cpu) { return gemm_space(shape(op), op.dtype, cpu); };
  d.default_config = [shape](const OpInstance& op, const CpuInfo& cpu, const ConfigSpace& space) {
    return gemm_default(shape(op), op.dtype, cpu, space);
  };
  d.apply_config = [shape, name = d.name](const OpInstance& op, const Config& cfg) {
    user_check(op.op == name) << "the " << name << " template cannot schedule op '" << op.op << "'";
    return gemm_schedule(op, shape(op), gemm_decode(cfg));
  };
}

Expr gelu(Expr x) {
  DType t = x.dtype();
  return make_const(t, 0.5) * x * (make_const(t, 1.0) + erf(x * make_const(t, 1.0 / std::sqrt(2.0))));
}

OpInstance gemm_define(const GemmShape& g, DType dtype) {
  user_check(!(g.relu && g.gelu)) << "relu and gelu are exclusive epilogues: set at most one of them";
  user_check(!g.gelu || (dtype.is_float() && !g.quantized))
      << "gelu needs a float dtype (f32 or f64), got " << dtype.str();
  user_check(g.b_panel >= 0 && !(g.b_panel > 0 && g.trans_b))
      << "a packed B has panels of nb > 0 columns and is never transposed";
  user_check(g.b_kstep >= 1 && (g.b_kstep == 1 || (g.b_panel > 0 && g.K % g.b_kstep == 0)))
      << "a packed B in k steps of " << g.b_kstep << " needs K (" << g.K << ") a multiple of them";
  if (g.quantized) check_quantized_output("a quantized GEMM", g.out_type);
  OpInstance op;
  DType acc = accumulator_type(gemm_a_type(g, dtype));
  Tensor A = placeholder(g.trans_a ? dims(g, g.K, g.M) : dims(g, g.M, g.K), gemm_a_type(g, dtype), g.a_name);
  Tensor B = placeholder(b_dims(g), gemm_b_type(g, dtype), g.b_name);
  IterVar k = reduce_axis(static_cast<int>(g.K), "k");
  const size_t o = g.batch > 0 ? 1 : 0;
  Tensor C = compute(
      dims(g, g.M, g.N),
      [&](const std::vector<Var>& v) {
        return sum(cast(acc, read_a(g, A, v, v[o], k->var)) * cast(acc, read_b(g, B, v, k->var, v[o + 1])), {k});
      },
      "C", "matmul");
  op.inputs = {A, B};
  Tensor out = C;
  if (has_epilogue(g, dtype)) {
    Tensor bias, scale;
    if (g.bias) {
      // 16-bit floats keep their bias in 16 bits too.
      bias = placeholder({g.N}, g.quantized ? DType::i32() : bias_type(dtype), g.bias_name);
      op.inputs.push_back(bias);
    }
    if (g.quantized && g.out_type != DType::i32()) {
      scale = placeholder({g.N}, DType::f32(), "scale");
      op.inputs.push_back(scale);
    }
    out = epilogue(g, C, g.bias ? &bias : nullptr, scale.defined() ? &scale : nullptr, dtype);
    op.parts["matmul"] = C;
  }
  op.outputs = {out};
  op.flops = 2.0 * std::max<int64_t>(1, g.batch) * g.M * g.N * g.K;
  op.dtype = dtype;
  return op;
}

std::shared_ptr<ConfigSpace> gemm_space(const GemmShape& g, DType dtype, const CpuInfo& cpu) {
  const int64_t M = g.M, N = g.N, K = g.K;
  int lanes = vector_lanes(cpu, accumulator_type(gemm_a_type(g, dtype)));
  auto s = std::make_shared<ConfigSpace>();
  s->define_split_levels("tile_y", M, {block_candidates(M, M), capped_candidates(M, kTileRows)});
  // With a tensor intrinsic on offer, every register tile is whole blocks
  // of it: 16 columns by its k steps (AMX rounds them up to its blocks).
  // Where N ends inside a block, a tile spans fewer columns than N, so
  // that its last tile is a partial one among others and its sums cover
  // whole blocks (a single tile would shrink to N).
  const std::vector<std::string> intrins = gemm_intrinsics(g, dtype, cpu);
  // A packed B fixes the register tile's width to its panels' (or to N,
  // when N is narrower), so that a tile never straddles two panels. In the
  // tensor instructions' blocked layout (k steps), each block reads its own
  // panel: a tile may be up to four panels wide, so that it reuses A's rows.
  std::vector<int64_t> widths = g.b_panel > 0 ? std::vector<int64_t>{std::min(N, g.b_panel)}
                                              : vector_tile_candidates(N, lanes);
  for (int64_t m = 2; g.b_panel > 0 && g.b_kstep > 1 && m <= 4 && m * g.b_panel <= N; ++m)
    widths.push_back(m * g.b_panel);
  std::vector<int64_t> k_tiles = block_candidates(K, K);
  if (!intrins.empty()) {
    const int64_t steps = intrinsic_steps(intrins.front(), g);
    widths.erase(std::remove_if(widths.begin(), widths.end(), [](int64_t w) { return w % kIntrinsicLanes != 0; }),
                 widths.end());
    k_tiles.erase(std::remove_if(k_tiles.begin(), k_tiles.end(), [&](int64_t k) { return k % steps != 0; }),
                  k_tiles.end());
  }
  s->define_split_levels("tile_x", N, {block_candidates(N, N), widths});
  s->define_split_levels("tile_k", K, {k_tiles});
  s->define_reorder("order", band_orders());
  s->define_choice("acc_at", {0, 1, 2, 3});
  s->define_choice("k_outer", {0, 1});
  if (g.b_panel == 0) s->define_choice("pack_b", {-2, -1, 0, 1, 2, 3});
  s->define_choice("unroll_k", {1, 2, 4, 8});
  s->define_annotate("unroll_y", {"unroll", "none"});
  s->define_choice("parallel", {0, 1, 2});
  s->define_choice("prefetch", {0, 4, 8, 16}, /*added_later=*/true);
  s->set_refine("prefetch");  // swept on the search's best configs
  s->define_annotate("store", {"cached", "streaming"}, /*added_later=*/true);
  s->set_refine("store");
  if (g.b_panel == 0) {
    // Double-buffered packing (MatmulParams::pack_buffers), swept on the
    // search's best configs like the other latency knobs.
    s->define_choice("pack_buffers", {1, 2}, /*added_later=*/true);
    s->set_refine("pack_buffers");
  }
  // Only with trans_b: the spaces of the other variants stay as they were
  // (tuning databases hold their configs).
  if (g.trans_b) {
    std::vector<int64_t> rv{0};
    for (int64_t v : capped_candidates(K, {lanes, 2 * int64_t{lanes}})) rv.push_back(v);
    s->define_choice("reduce_vector", rv);
    // How a packed panel of B moves from its rows along k: register
    // transposes of 16 x 16 blocks, or gathers (MatmulParams::transpose_pack).
    // Swept on the search's best configs; configs stored before it gathered
    // the same values, so they mean the faster transposes now.
    if (gemm_b_type(g, dtype) == DType::f32() && cpu.vector_bits >= 512) {
      s->define_annotate("pack_moves", {"transpose", "gather"}, /*added_later=*/true);
      s->set_refine("pack_moves");
    }
  }
  if (!intrins.empty()) {
    std::vector<std::string> options{"none"};
    options.insert(options.end(), intrins.begin(), intrins.end());
    // Shapes whose columns end inside a block had no knob before they were
    // offered the instructions: their stored configs mean "none".
    s->define_annotate("tensorize", options, /*added_later=*/N % kIntrinsicLanes != 0);
  }
  return s;
}

Config gemm_default(const GemmShape& g, DType dtype, const CpuInfo& cpu, const ConfigSpace& space) {
  int lanes = vector_lanes(cpu, accumulator_type(gemm_a_type(g, dtype)));
  nlohmann::json j;
  // Six rows of two (16 registers) or four (32 registers) vectors: the
  // accumulators, the B vectors and a broadcast A value fit the registers.
  int vectors_per_row = vector_registers(cpu) >= 32 ? 4 : 2;
  j["tile_y"] = nearest_split(space, "tile_y", {1, 6});
  j["tile_x"] = nearest_split(space, "tile_x", {1, vectors_per_row * lanes});
  j["tile_k"] = nearest_split(space, "tile_k", {g.K});
  j["order"] = band_orders()[1];
  j["acc_at"] = 3;
  j["k_outer"] = 0;
  if (g.b_panel == 0) j["pack_b"] = 0;
  j["unroll_k"] = 4;
  j["unroll_y"] = "unroll";
  j["parallel"] = cpu.num_threads > 1 ? 1 : 0;
  if (g.trans_b) {
    // A single row has no reuse of B to pack for: dot products along k.
    const auto& rv = space.knob("reduce_vector").options;
    j["reduce_vector"] = g.M == 1 ? rv.back()[0] : 0;
  }
  // The instruction does 4 (VNNI) or 2 (BF16) multiply-adds per lane where
  // the plain kernel does one; AMX's tiles many more.
  const std::vector<std::string> intrins = gemm_intrinsics(g, dtype, cpu);
  if (!intrins.empty()) j["tensorize"] = intrins.back();
  return space.make(j);
}

MatmulParams gemm_decode(const Config& c) {
  MatmulParams p;
  p.tile_y = c.split("tile_y");
  p.tile_x = c.split("tile_x");
  p.tile_k = c.split("tile_k");
  p.order = c.reorder("order");
  p.acc_at = static_cast<int>(c.choice("acc_at"));
  p.k_outer = c.choice("k_outer") != 0;
  p.pack_b = -2;  // no knob: B comes packed
  p.unroll_k = c.choice("unroll_k");
  p.unroll_y = c.annotate("unroll_y") == "unroll";
  p.parallel = static_cast<int>(c.choice("parallel"));
  if (c.has("reduce_vector")) p.reduce_vector = c.choice("reduce_vector");
  if (c.has("pack_b")) p.pack_b = static_cast<int>(c.choice("pack_b"));
  if (c.has("tensorize")) p.tensorize = c.annotate("tensorize");
  if (c.has("prefetch")) p.prefetch = static_cast<int>(c.choice("prefetch"));
  if (c.has("store")) p.stream_out = c.annotate("store") == "streaming";
  if (c.has("pack_moves")) p.transpose_pack = c.annotate("pack_moves") == "transpose";
  if (c.has("pack_buffers")) p.pack_buffers = static_cast<int>(c.choice("pack_buffers"));
  return p;
}

ScheduledOp gemm_schedule(const OpInstance& op, const GemmShape& g, const MatmulParams& p) {
  user_check(p.tile_y.size() == 3 && p.tile_x.size() == 3 && p.tile_k.size() == 2 && p.order.size() == 4)
      << "matmul template: tile_y and tile_x need 3 factors, tile_k 2, order 4 loops";
  const int64_t ym = p.tile_y[1], xm = p.tile_x[1];
  int64_t yi = p.tile_y[2], xi = p.tile_x[2], kin = p.tile_k[1];
  user_check(ym > 0 && yi > 0 && xm > 0 && xi > 0 && kin > 0 && p.unroll_k > 0)
      << "matmul template: tile sizes and unroll factors must be positive";
  const int64_t N = g.N, K = g.K;
  DType acc = accumulator_type(gemm_a_type(g, op.dtype));
  const Tensor& A = op.inputs[0];
  const Tensor& B = op.inputs[1];
  user_check(p.reduce_vector == 0 || g.trans_b) << "matmul template: reduce_vector needs B stored transposed";
  const bool dot = p.reduce_vector > 0;
  user_check(g.b_panel == 0 ||
             (p.pack_b == -2 && (xi == g.b_panel || xi == N || (g.b_kstep > 1 && xi % g.b_panel == 0))))
      << "matmul template: with B packed in panels of " << g.b_panel
      << " columns, the register tile is one panel wide (whole panels in k steps) and nothing is packed again";
  // A tensorized register tile: B always packed, in the intrinsic's blocks
  // of 16 columns (32 for AMX) by `steps` of k.
  const bool tensorized = p.tensorize != "none" && !dot;
  const bool amx = tensorized && p.tensorize == "amx";
  TensorIntrin intrin;
  int64_t steps = 1;
  if (tensorized) {
    user_check(p.tensorize == "vnni" || p.tensorize == "bf16" || amx)
        << "matmul template: unknown tensorize option '" << p.tensorize << "' (none, vnni, bf16 or amx)";
    steps = intrinsic_steps(p.tensorize, g);
    if (amx) {
      // AMX computes 32 x 32 blocks over k tiles of 16 steps: the register
      // tile is one block high and whole blocks wide, the k tile the
      // largest multiple of 16 steps within the knob's that divides K.
      user_check(g.M % kAmxBlock == 0 && N % kAmxBlock == 0 && K % (16 * steps) == 0)
          << "matmul template: tensorize=amx needs M and N multiples of 32 and K of " << 16 * steps;
      yi = kAmxBlock;
      xi = kAmxBlock * std::max<int64_t>(1, xi / kAmxBlock);
      int64_t kt = std::max<int64_t>(16 * steps, kin - kin % (16 * steps));
      while (K % kt != 0) kt -= 16 * steps;
      kin = kt;
      intrin = g.quantized ? x86_amx_int8_32x32(kin) : x86_amx_bf16_32x32(kin);
    } else {
      intrin = p.tensorize == "vnni" ? x86_vnni_dot_16x4() : x86_bf16_dot_16x2();
    }
    user_check(xi % kIntrinsicLanes == 0 && kin % steps == 0 && K % steps == 0)
        << "matmul template: tensorize=" << p.tensorize << " needs a register tile of whole " << kIntrinsicLanes
        << "-column blocks (got " << xi << ") and k tiles of whole " << steps << "-step blocks (got " << kin << ")";
  }
  user_check(!tensorized || g.b_panel == 0 ||
             (g.b_kstep == steps && g.b_panel % kIntrinsicLanes == 0 && (!amx || g.b_panel == kAmxBlock)))
      << "matmul template: tensorize=" << p.tensorize << " reads a packed B in its own blocks: panels of "
      << (amx ? "32" : "whole 16-column blocks") << " and k steps of " << steps << " (got panels of " << g.b_panel
      << ", k steps of " << g.b_kstep << ")";
  // B given in panels is read as it is; else a tensorized tile reads B
  // packed in the intrinsic's blocks.
  const bool pack = (p.pack_b != -2 || (tensorized && g.b_panel == 0)) && !dot;
  const bool batched = g.batch > 0;
  const size_t o = batched ? 1 : 0;
  const int nb = static_cast<int>(amx ? kAmxBlock : tensorized ? kIntrinsicLanes : xi);
  const int ks = static_cast<int>(steps);
  // Tensorized, the sums run over whole 16-column blocks: past N they add
  // B's zero columns (a packed B holds them; the template's packing puts
  // them in), and the epilogue stage (quantized and 16-bit results always
  // have one) stores the first N.
  const int64_t Np = tensorized ? (N + nb - 1) / nb * nb : N;
  internal_assert(Np == N || has_epilogue(g, op.dtype)) << "a tensorized GEMM over padded columns needs an epilogue";

  // B packed into panels of xi columns: PB[.., jo, k, ji] = B[.., k, jo*xi + ji]
  // (zero past N), so each register tile reads its B rows contiguously
  // whatever B's layout (the packing also undoes trans_b). Tensorized: in
  // the intrinsic's blocks, PB[.., jo, ko, ji, ki] = B[.., ko*steps + ki, jo*16 + ji].
  Tensor PB;
  if (pack && tensorized) {
    std::vector<Expr> shape;
    if (batched) shape.push_back(Expr(static_cast<int>(g.batch)));
    for (int64_t e : {Np / nb, K / steps, int64_t{nb}, steps}) shape.push_back(Expr(static_cast<int>(e)));
    PB = compute(
        shape,
        [&](const std::vector<Var>& v) {
          Expr j = v[o] * nb + v[o + 2];
          Expr e = read_b(g, B, v, v[o + 1] * ks + v[o + 3], Np == N ? j : min(j, static_cast<int>(N - 1)));
          return Np == N ? e : select(j < static_cast<int>(N), e, make_zero(B.dtype()));
        },
        "PB", "pack");
  } else if (pack) {
    std::vector<Expr> shape;
    if (batched) shape.push_back(Expr(static_cast<int>(g.batch)));
    for (int64_t e : {(N + xi - 1) / xi, K, xi}) shape.push_back(Expr(static_cast<int>(e)));
    PB = compute(
        shape,
        [&](const std::vector<Var>& v) {
          Expr j = v[o] * nb + v[o + 2];
          // Whole panels read B as it is (a transpose matches B(j, k) only).
          Expr e = read_b(g, B, v, v[o + 1], N % nb == 0 ? j : min(j, static_cast<int>(N - 1)));
          return (N % nb == 0) ? e : select(j < static_cast<int>(N), e, make_zero(B.dtype()));
        },
        "PB", "pack");
  }
  IterVar k = reduce_axis(static_cast<int>(K), "k");
  Tensor C = compute(
      dims(g, g.M, Np),
      [&](const std::vector<Var>& v) {
        const Var& j = v[o + 1];
        std::vector<Expr> pb_idx;
        if (batched) pb_idx.push_back(v[0]);
        if (tensorized) {
          for (Expr e : {floordiv(j, nb), floordiv(k->var, ks), floormod(j, nb), floormod(k->var, ks)})
            pb_idx.push_back(e);
        } else {
          for (Expr e : {floordiv(j, nb), Expr(k->var), floormod(j, nb)}) pb_idx.push_back(e);
        }
        Expr b = pack ? PB(pb_idx) : read_b(g, B, v, k->var, j);
        return sum(cast(acc, read_a(g, A, v, v[o], k->var)) * cast(acc, b), {k});
      },
      "C", "matmul");
  Tensor out = C;
  if (has_epilogue(g, op.dtype)) {
    const Tensor* bias = g.bias ? &op.inputs[2] : nullptr;
    const Tensor* scale = g.quantized && g.out_type != DType::i32() ? &op.inputs[g.bias ? 3 : 2] : nullptr;
    out = epilogue(g, C, bias, scale, op.dtype);
  }
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& s = *sch;
  // The accumulator: the matmul stage itself when an epilogue stage writes
  // the output, else a cache_write stage.
  Tensor acc_t = out.same_tensor(C) ? s.cache_write(C, MemScope::kLocal) : C;
  if (!out.same_tensor(C)) s[C].set_scope(MemScope::kLocal);

  // The batch loop (when there is one) leads the band and always joins the
  // parallel loop when there is one: batches are independent.
  Stage so = s[out];
  IterVar yo, yr, ym_l, yi_l, xo, xr, xm_l, xi_l;
  so.split(so.axis()[o], ym * yi, &yo, &yr);
  so.split(yr, yi, &ym_l, &yi_l);
  so.split(so.axis()[o + 1], xm * xi, &xo, &xr);
  so.split(xr, xi, &xm_l, &xi_l);
  std::vector<IterVar> loops{yo, xo, ym_l, xm_l};
  std::vector<int64_t> order = p.order;
  int fused = p.parallel;
  if (batched) {
    loops.insert(loops.begin(), so.axis()[0]);
    order.clear();
    order.push_back(0);
    for (int64_t i : p.order) order.push_back(i + 1);
    fused = p.parallel > 0 ? p.parallel + 1 : 0;
  }
  LoopBand band(so, loops, order, {yi_l, xi_l}, fused, true);
  if (p.stream_out) so.stream_stores();
  if (dot) {
    schedule_dot_products(s, so, acc_t, xi_l, p);
    std::vector<Tensor> args = op.inputs;
    args.push_back(out);
    return ScheduledOp{sch, args};
  }
  so.vectorize(xi_l);
  const int acc_pos = std::max(0, std::min(p.acc_at, 3));

  Stage sc = s[acc_t];
  sc.compute_at(so, band.at(acc_pos + static_cast<int>(o)));
  IterVar cyo, cyi, cxo, cxi, cko, cki;
  sc.split(sc.axis()[o], yi, &cyo, &cyi);
  sc.split(sc.axis()[o + 1], xi, &cxo, &cxi);
  // With kin == K the k loop outside the tile runs once, and an AMX call
  // covers the whole reduction from zeroed tiles (the intrinsic's body).
  sc.split(sc.reduce_axis()[0], kin, &cko, &cki);
  // Tensorized: the register tile's columns in blocks of 16 and k in the
  // intrinsic's steps, both below the call.
  IterVar cxb, cxl, ckq = cki, ckl;
  if (tensorized) {
    sc.split(cxi, nb, &cxb, &cxl);
    sc.split(cki, steps, &ckq, &ckl);
  }
  std::vector<IterVar> k_inner{ckq};
  // Tensorized, the unrolled k steps divide the tile's (a tail would guard
  // the intrinsic's own loop); AMX runs the tile's k steps itself.
  int64_t unroll_k = amx ? 1 : p.unroll_k;
  while (tensorized && (kin / steps) % unroll_k != 0) --unroll_k;
  if (unroll_k > 1) {
    IterVar ckm, cku;
    sc.split(ckq, unroll_k, &ckm, &cku);
    sc.unroll(cku);
    k_inner = {ckm, cku};
  }
  // B's rows ahead of the k steps (hardware prefetchers follow A's rows).
  if (p.prefetch > 0 && !amx) sc.prefetch(pack ? PB : B, k_inner.front(), p.prefetch);
  std::vector<IterVar> acc_order =
      p.k_outer ? std::vector<IterVar>{cko, cyo, cxo} : std::vector<IterVar>{cyo, cxo, cko};
  if (amx) {
    // The tile's 32-column blocks, then one call over its rows, columns and k.
    for (const IterVar& iv : {cxb, cyi, cxl, ckq, ckl}) acc_order.push_back(iv);
    sc.reorder(acc_order);
    sc.unroll(cxb);
    sc.tensorize(cyi, intrin);
  } else {
    acc_order.insert(acc_order.end(), k_inner.begin(), k_inner.end());
    acc_order.push_back(cyi);
    if (tensorized) {
      for (const IterVar& iv : {cxb, cxl, ckl}) acc_order.push_back(iv);
    } else {
      acc_order.push_back(cxi);
    }
    sc.reorder(acc_order);
    if (p.unroll_y) sc.unroll(cyi);
    if (tensorized) {
      sc.unroll(cxb);
      sc.tensorize(cxl, intrin);
    } else {
      sc.vectorize(cxi);
    }
  }

  if (pack) {
    Stage sp = s[PB];
    const int pack_at = p.pack_b == -2 ? -1 : p.pack_b;
    if (pack_at < 0) {
      if (p.parallel > 0) sp.parallel(sp.axis()[0]);
    } else {
      const int pack_pos = std::min(pack_at, acc_pos);
      sp.compute_at(so, band.at(pack_pos + static_cast<int>(o)));
      // Two slots where the pack loop runs its iterations one after another
      // and the accumulator sits inside it.
      const bool serial = p.parallel == 0 || pack_pos >= p.parallel;
      if (p.pack_buffers > 1 && serial && pack_pos < acc_pos) sp.double_buffer();
    }
    // B's rows run along k: whole panels move by register transposes, each
    // 16 x 16 block of words (a word: an f32, or the instruction's k step)
    // into 16 block rows, panels wider than 16 columns (f32's, AMX's 32)
    // taking several side by side. Tensorized packs always do; f32 ones
    // where the config asks (MatmulParams::transpose_pack).
    const bool by_transposes = g.trans_b && (tensorized ? Np == N && (K / steps) % 16 == 0
                                                        : p.transpose_pack && B.dtype() == DType::f32() &&
                                                              N % nb == 0 && nb % 16 == 0 && K % 16 == 0);
    if (by_transposes) {
      IterVar kb, kw;
      sp.split(sp.axis()[o + 1], 16, &kb, &kw);
      if (nb > 16) {
        IterVar jh, jl;
        sp.split(sp.axis()[o + 2], 16, &jh, &jl);
        sp.reorder({kb, jh, kw, jl});
      }
      sp.tensorize(kw, x86_transpose_16x16(B.dtype()));
    } else if (!tensorized) {
      sp.vectorize(sp.axis()[o + 2]);
    } else if (g.trans_b) {
      sp.vectorize(sp.axis()[o + 3]);  // B's rows run along k: a block row is contiguous
    } else if (!amx && Np == N) {
      // B's rows run along the columns: each block row (16 columns by a
      // word of k) interleaves `steps` rows of 16 columns.
      sp.tensorize(sp.axis()[o + 2], x86_interleave_16(B.dtype()));
    } else {
      // B's rows run along the columns: copy 16 columns at a time.
      sp.reorder({sp.axis()[o + 3], sp.axis()[o + 2]});
      sp.vectorize(sp.axis()[o + 2]);
    }
  }
  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
}

}  // namespace kiln
