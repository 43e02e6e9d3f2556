#include "kernels/tensor_intrinsics.h"

#include <map>
#include <mutex>

#include "base/error.h"
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
  lower.reset = [acc](const IntrinBuffer& out) {
    Var r("r"), h("h");
    const DType t = out.offset.dtype();
    Expr first = out.index({r, h * 16});
    return ForNode::make(r, Expr(0), Expr(32), ForKind::kSerial,
                         ForNode::make(h, Expr(0), Expr(2), ForKind::kSerial,
                                       StoreNode::make(out.data, BroadcastNode::make(make_zero(acc), 16),
                                                       RampNode::make(first, make_const(t, int64_t{1}), 16))));
  };
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

// One declaration per k tile, made on first use.
TensorIntrin amx_for(int64_t kt, bool bf16) {
  static std::mutex mu;
  static std::map<std::pair<int64_t, bool>, TensorIntrin> made;
  std::lock_guard<std::mutex> lock(mu);
  TensorIntrin& t = made[{kt, bf16}];
  if (!t) {
    const int64_t s = bf16 ? 2 : 4;
    user_check(kt > 0 && kt % (16 * s) == 0) << "AMX " << (bf16 ? "bf16" : "int8") << " k tiles are multiples of "
                                             << 16 * s << ", got " << kt;
    t = bf16 ? amx_block("x86_amx_bf16_32x32_k" + std::to_string(kt), "x86.amx.dpbf16ps.32x32", kt, s, DType::bf16(),
                         DType::bf16(), DType::f32())
             : amx_block("x86_amx_int8_32x32_k" + std::to_string(kt), "x86.amx.dpbusd.32x32", kt, s, DType::u8(),
                         DType::i8(), DType::i32());
  }
  return t;
}

}  // namespace

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

std::vector<TensorIntrin> cpu_tensor_intrinsics(const CpuInfo& cpu) {
  std::vector<TensorIntrin> out;
  if (cpu.avx512_vnni) out.push_back(x86_vnni_dot_16x4());
  if (cpu.avx512_bf16) out.push_back(x86_bf16_dot_16x2());
  return out;
}

}  // namespace kiln
