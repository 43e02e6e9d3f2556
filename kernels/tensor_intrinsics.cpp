#include "kernels/tensor_intrinsics.h"

#include "compute/expr_ops.h"

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

}  // namespace

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

std::vector<TensorIntrin> cpu_tensor_intrinsics(const CpuInfo& cpu) {
  std::vector<TensorIntrin> out;
  if (cpu.avx512_vnni) out.push_back(x86_vnni_dot_16x4());
  if (cpu.avx512_bf16) out.push_back(x86_bf16_dot_16x2());
  return out;
}

}  // namespace kiln
