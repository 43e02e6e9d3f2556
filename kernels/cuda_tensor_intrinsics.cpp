#include "kernels/cuda_tensor_intrinsics.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include "base/error.h"
#include "compute/analyzer.h"
#include "compute/expr_ops.h"
#include "compute/hw_instructions.h"
#include "compute/printer.h"

namespace kiln {

namespace {

// A whole fragment: warp scope, one dense tile starting at a tile boundary.
IntrinRequirement fragment(int64_t elems) {
  IntrinRequirement r;
  r.scope = MemScope::kWarp;
  r.dense = true;
  r.offset_factor = elems;
  return r;
}

// ldmatrix reads 16-byte rows: the tile starts at a multiple of 8 elements
// and its rows are a multiple of 8 elements apart.
IntrinRequirement shared_rows() {
  IntrinRequirement r;
  r.scope = MemScope::kShared;
  r.unit_inner = true;
  r.offset_factor = 8;
  r.stride_factor = 8;
  return r;
}

void check_input(DType t) {
  user_check(t == DType::f16() || t == DType::bf16())
      << "tensor-core intrinsics take f16 or bf16 inputs, got " << t.str();
}

// frag = src over `shape`, one call of `instruction` (frag, src with its row stride).
TensorIntrin fragment_load(const std::string& name, const std::string& instruction, DType t, int rows, int cols) {
  Tensor src = placeholder({Expr(rows), Expr(cols)}, t, "src");
  Tensor frag = compute({Expr(rows), Expr(cols)}, [&](Var i, Var j) { return src(i, j); }, "frag");
  const int64_t elems = int64_t{rows} * cols;
  TensorIntrinLowering lower;
  lower.body = [instruction, elems](const std::vector<IntrinBuffer>& ops) {
    const Expr zero = make_zero(ops[0].offset.dtype());
    return TensorIntrinCallNode::make(instruction, {ops[1].at({zero, zero}, elems), ops[0].at({zero, zero}, elems, 0)},
                                      {});
  };
  return decl_tensor_intrin(name, frag, {src}, lower, {shared_rows(), fragment(elems)});
}

template <typename Key>
TensorIntrin memo(const Key& key, const std::function<TensorIntrin()>& make) {
  static std::mutex mu;
  static std::map<Key, TensorIntrin> made;
  std::lock_guard<std::mutex> lock(mu);
  TensorIntrin& t = made[key];
  if (!t) t = make();
  return t;
}

}  // namespace

TensorIntrin cuda_mma_load_a(DType input, bool k_major) {
  check_input(input);
  return memo(std::make_tuple(0, input.str(), k_major, false), [&] {
    const CudaMmaInstructions in = cuda_mma_instructions(input);
    return fragment_load("cuda_mma_load_a_" + std::string(k_major ? "km_" : "mk_") + input.str(),
                         k_major ? in.load_a_km : in.load_a_mk, input, 16, 16);
  });
}

TensorIntrin cuda_mma_load_b(DType input, bool n_major) {
  check_input(input);
  return memo(std::make_tuple(1, input.str(), n_major, false), [&] {
    const CudaMmaInstructions in = cuda_mma_instructions(input);
    return fragment_load("cuda_mma_load_b_" + std::string(n_major ? "nk_" : "kn_") + input.str(),
                         n_major ? in.load_b_nk : in.load_b_kn, input, n_major ? 8 : 16, n_major ? 16 : 8);
  });
}

TensorIntrin cuda_mma_m16n8k16(DType input, bool a_k_major, bool b_n_major) {
  check_input(input);
  return memo(std::make_tuple(2, input.str(), a_k_major, b_n_major), [&] {
    Tensor a = placeholder({Expr(16), Expr(16)}, input, "a");  // [m, k] or [k, m]
    Tensor b = b_n_major ? placeholder({Expr(8), Expr(16)}, input, "b") : placeholder({Expr(16), Expr(8)}, input, "b");
    IterVar k = reduce_axis(16, "k");
    const DType f32 = DType::f32();
    Tensor c = compute(
        {Expr(16), Expr(8)},
        [&](Var i, Var j) {
          Expr av = a_k_major ? a(k->var, i) : a(i, k->var);
          Expr bv = b_n_major ? b(j, k->var) : b(k->var, j);
          return sum(cast(f32, av) * cast(f32, bv), {k});
        },
        "c");
    const std::string instruction = cuda_mma_instructions(input).mma;
    TensorIntrinLowering lower;
    lower.reset = [](const IntrinBuffer& out) {
      const Expr zero = make_zero(out.offset.dtype());
      return TensorIntrinCallNode::make(kCudaMmaZero, {out.at({zero, zero}, 128)}, {});
    };
    lower.update = [instruction](const std::vector<IntrinBuffer>& ops) {
      const Expr zero = make_zero(ops[0].offset.dtype());
      return TensorIntrinCallNode::make(
          instruction, {ops[2].at({zero, zero}, 128), ops[0].at({zero, zero}, 256), ops[1].at({zero, zero}, 128)}, {});
    };
    const std::string name = "cuda_mma_m16n8k16_" + std::string(a_k_major ? "km" : "mk") +
                             (b_n_major ? "_nk_" : "_kn_") + input.str();
    return decl_tensor_intrin(name, c, {a, b}, lower, {fragment(256), fragment(128), fragment(128)});
  });
}

TensorIntrin cuda_wgmma(DType input, int64_t n, int64_t steps, bool a_k_major, bool b_n_major) {
  check_input(input);
  const std::vector<int64_t>& widths = cuda_wgmma_widths();
  user_check(std::find(widths.begin(), widths.end(), n) != widths.end())
      << "wgmma computes 8 to 256 columns, a power of two here; got " << n;
  user_check(steps >= 1) << "wgmma makes at least one k step of 16, got " << steps;
  return memo(std::make_tuple(input.str(), n, steps, a_k_major, b_n_major), [&] {
    const int64_t k_len = 16 * steps;
    Tensor a =
        a_k_major ? placeholder({Expr(k_len), Expr(16)}, input, "a") : placeholder({Expr(16), Expr(k_len)}, input, "a");
    Tensor b =
        b_n_major ? placeholder({Expr(n), Expr(k_len)}, input, "b") : placeholder({Expr(k_len), Expr(n)}, input, "b");
    IterVar k = reduce_axis(k_len, "k");
    const DType f32 = DType::f32();
    Tensor c = compute(
        {Expr(16), Expr(n)},
        [&](Var i, Var j) {
          Expr av = a_k_major ? a(k->var, i) : a(i, k->var);
          Expr bv = b_n_major ? b(j, k->var) : b(k->var, j);
          return sum(cast(f32, av) * cast(f32, bv), {k});
        },
        "c");
    const std::string instruction = cuda_wgmma_instruction(input, n);
    // The fragments of the warp's 16 x n accumulators, one after another.
    auto fragment_at = [](const IntrinBuffer& acc, int64_t j, int64_t elems) {
      return TensorIntrinCallNode::Operand{acc.data, acc.offset + make_const(acc.offset.dtype(), 128 * j),
                                           make_const(DType::i32(), elems), make_const(acc.offset.dtype(), int64_t{1})};
    };
    TensorIntrinLowering lower;
    lower.reset = [n, fragment_at](const IntrinBuffer& out) {
      std::vector<Stmt> zeros;
      for (int64_t j = 0; j < n / 8; ++j)
        zeros.push_back(TensorIntrinCallNode::make(kCudaMmaZero, {fragment_at(out, j, 128)}, {}));
      return SeqNode::make(zeros);
    };
    lower.update = [=](const std::vector<IntrinBuffer>& ops) {
      // Per operand (its dimension 0 being k or not), the distance along
      // its m (or n) and along its k: between 8 x 8 tiles, or, swizzled,
      // between strips along the dimension its rows run along (dimension 1)
      // and between groups of 8 rows along the other.
      const IntrinBuffer &ab = ops[0], &bb = ops[1];
      auto steps_of = [](const IntrinBuffer& o, bool k_first) -> std::pair<Expr, Expr> {
        if (o.swizzle_bytes == 0) return {o.tile_steps[k_first ? 1 : 0], o.tile_steps[k_first ? 0 : 1]};
        const Expr eight_rows = make_const(o.offset.dtype(), 8 * (o.swizzle_bytes / o.dtype.bytes()));
        return k_first ? std::make_pair(o.swizzle_strip, eight_rows) : std::make_pair(eight_rows, o.swizzle_strip);
      };
      const auto [a_m, a_k] = steps_of(ab, a_k_major);
      const auto [b_n, b_k] = steps_of(bb, !b_n_major);
      // A swizzled operand's descriptors start at the corner of a 1024-byte
      // atom (8 rows of a strip); a warp's A of m along the rows starts 16
      // elements a warp into its group's, which the prelude takes back.
      auto check_corner = [&](const IntrinBuffer& o, const char* which, bool warp_offset) {
        if (o.swizzle_bytes == 0) return;
        const int64_t corner = warp_offset ? 16 : 8 * (o.swizzle_bytes / o.dtype.bytes());
        Analyzer ana;
        const ModularSet m = ana.modular_set(ana.simplify(o.offset));
        user_check(m.coeff % corner == 0 && m.base % corner == 0)
            << "tensorize with 'cuda_wgmma': " << which << " ('" << o.data->name << "') is stored swizzled and the "
            << "call starts at element `" << to_string(ana.simplify(o.offset)) << "`, which kiln cannot prove is "
            << (warp_offset ? "a multiple of 16 elements (a warp's rows) past " : "") << "the corner of a swizzle "
            << "atom (8 rows of a 128-byte strip), where wgmma's descriptors start";
      };
      check_corner(ab, "A", a_k_major);
      check_corner(bb, "B", false);
      auto swizzled = [](const IntrinBuffer& o) { return make_const(DType::i32(), int64_t{o.swizzle_bytes ? 1 : 0}); };
      auto whole = [&](const IntrinBuffer& o) {
        return TensorIntrinCallNode::Operand{o.data, o.offset, make_const(DType::i32(), int64_t{0}),
                                             make_const(o.offset.dtype(), int64_t{1})};
      };
      return TensorIntrinCallNode::make(instruction, {fragment_at(ops[2], 0, 16 * n), whole(ab), whole(bb)},
                                        {a_m, a_k, make_const(DType::i32(), int64_t{a_k_major ? 1 : 0}), b_k, b_n,
                                         make_const(DType::i32(), int64_t{b_n_major ? 0 : 1}), swizzled(ab),
                                         swizzled(bb), make_const(DType::i32(), steps)});
    };
    IntrinRequirement acc;
    acc.scope = MemScope::kWarp;
    acc.offset_factor = 128;
    acc.fragment = {16, 8};
    IntrinRequirement tiles;
    tiles.scope = MemScope::kShared;
    tiles.core = 8;
    tiles.swizzle_ok = true;
    const std::string name = "cuda_wgmma_m64n" + std::to_string(n) + "k" + std::to_string(k_len) + "_" +
                             (a_k_major ? "km" : "mk") + (b_n_major ? "_nk_" : "_kn_") + input.str();
    return decl_tensor_intrin(name, c, {a, b}, lower, {tiles, tiles, acc});
  });
}

TensorIntrin cuda_mma_store() {
  return memo(std::make_tuple(3, std::string(), false, false), [] {
    Tensor acc = placeholder({Expr(16), Expr(8)}, DType::f32(), "acc");
    Tensor out = compute({Expr(16), Expr(8)}, [&](Var i, Var j) { return acc(i, j); }, "out");
    TensorIntrinLowering lower;
    lower.body = [](const std::vector<IntrinBuffer>& ops) {
      const Expr zero = make_zero(ops[0].offset.dtype());
      return TensorIntrinCallNode::make(kCudaMmaStore, {ops[1].at({zero, zero}, 128, 0), ops[0].at({zero, zero}, 128)},
                                        {});
    };
    IntrinRequirement rows;
    rows.unit_inner = true;
    return decl_tensor_intrin("cuda_mma_store_16x8", out, {acc}, lower, {fragment(128), rows});
  });
}

}  // namespace kiln
