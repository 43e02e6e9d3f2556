#include "kernels/cuda_tensor_intrinsics.h"

#include <map>
#include <mutex>
#include <tuple>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/hw_instructions.h"

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
