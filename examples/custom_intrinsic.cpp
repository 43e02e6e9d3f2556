// Declaring a tensor intrinsic of your own, tensorizing a matmul with it,
// and checking the kernel against kiln's reference interpreter.
//
// The intrinsic is a small int8 microkernel: a 4 x 4 tile of i32 sums over
// 4 steps, c[i, j] (+)= sum_k i32(a[i, k]) * i32(b[k, j]), with a and b in
// 8-bit integers. What it computes is a tensor expression; how it is
// emitted is three lowerings (body, reset, update) that return kiln IR,
// here plain loops over the flat operands (IntrinBuffer gives each
// operand's buffer, first element and strides). A hardware instruction
// would be emitted the same way with a TensorIntrinCallNode
// (compute/hw_instructions.h). It runs on any CPU.
//
// Build: part of the kiln build (build/example_custom_intrinsic); ctest
// runs it as example:custom_intrinsic. Exit status 0 when the kernel equals
// the interpreter, 1 otherwise.
#include <cstdio>
#include <cstring>

#include "codegen/build.h"
#include "codegen/runtime_dtype.h"
#include "compute/expr_ops.h"
#include "compute/interpreter.h"
#include "compute/printer.h"
#include "runtime/ndarray.h"
#include "schedule/lower.h"

using namespace kiln;

namespace {

// One loop over [0, n) as IR.
Stmt loop(const Var& v, int n, Stmt body) { return ForNode::make(v, Expr(0), Expr(n), ForKind::kSerial, std::move(body)); }

TensorIntrin declare_mma4x4_i8() {
  // What it computes.
  Tensor a = placeholder({4, 4}, DType::i8(), "a");
  Tensor b = placeholder({4, 4}, DType::i8(), "b");
  IterVar k = reduce_axis(4, "k");
  Tensor c = compute(
      {4, 4}, [&](Var i, Var j) { return sum(cast(DType::i32(), a(i, k->var)) * cast(DType::i32(), b(k->var, j)), {k}); },
      "c");

  // How it is emitted: operands are a, b, then c.
  TensorIntrinLowering lower;
  lower.reset = [](const IntrinBuffer& out) {
    Var i("i"), j("j");
    return loop(i, 4, loop(j, 4, out.store({i, j}, Expr(0))));
  };
  lower.update = [](const std::vector<IntrinBuffer>& ops) {
    const IntrinBuffer &a = ops[0], &b = ops[1], &c = ops[2];
    Var i("i"), j("j"), kk("kk");
    Expr product = cast(DType::i32(), a.load({i, kk})) * cast(DType::i32(), b.load({kk, j}));
    return loop(i, 4, loop(j, 4, loop(kk, 4, c.store({i, j}, c.load({i, j}) + product))));
  };
  // Every operand's rows must be contiguous (any row pitch).
  IntrinRequirement rows;
  rows.unit_inner = true;
  return decl_tensor_intrin("mma4x4_i8", c, {a, b}, lower, {rows, rows, rows});
}

}  // namespace

int main() {
  const int M = 12, N = 8, K = 20;
  Tensor A = placeholder({M, K}, DType::i8(), "A");
  Tensor B = placeholder({K, N}, DType::i8(), "B");
  IterVar k = reduce_axis(K, "k");
  Tensor C = compute(
      {M, N}, [&](Var i, Var j) { return sum(cast(DType::i32(), A(i, k->var)) * cast(DType::i32(), B(k->var, j)), {k}); },
      "C");

  // 4 x 4 tiles, k in steps of 4 outside them: the intrinsic's reset goes
  // before the k loop and its update replaces the inner three loops.
  Schedule s({C});
  Stage c = s[C];
  IterVar io, ii, jo, ji, ko, ki;
  c.split(c.axis()[0], 4, &io, &ii);
  c.split(c.axis()[1], 4, &jo, &ji);
  c.split(k, 4, &ko, &ki);
  c.reorder({io, jo, ko, ii, ji, ki});
  c.tensorize(ii, declare_mma4x4_i8());

  LoweredFunc f = lower(s, {A, B, C}, "tiled_matmul");
  std::printf("%s\n", to_string(f).c_str());

  // Run it on random data and compare with the interpreter.
  HostTensor a(DType::i8(), {M, K}), b(DType::i8(), {K, N});
  a.fill_random(1, -128, 127);
  b.fill_random(2, -128, 127);
  auto jit = JitModule::compile({f}, Target::host());
  rt::NDArray da = rt::NDArray::empty({M, K}, to_runtime_dtype(DType::i8()));
  rt::NDArray db = rt::NDArray::empty({K, N}, to_runtime_dtype(DType::i8()));
  rt::NDArray dc = rt::NDArray::empty({M, N}, to_runtime_dtype(DType::i32()));
  std::memcpy(da.data(), a.bytes.data(), a.bytes.size());
  std::memcpy(db.data(), b.bytes.data(), b.bytes.size());
  void* args[] = {da.data(), db.data(), dc.data()};
  if (jit->get_function(f.name)(args) != 0) {
    std::printf("the kernel failed\n");
    return 1;
  }
  HostTensor got(DType::i32(), {M, N});
  std::memcpy(got.bytes.data(), dc.data(), got.bytes.size());
  HostTensor want = interpret({C}, {{A, a}, {B, b}})[0];
  const std::string diff = compare_tensors(want, got, 0, 0);
  std::printf("%s\n", diff.empty() ? "the tensorized kernel equals the interpreter" : ("MISMATCH: " + diff).c_str());
  return diff.empty() ? 0 : 1;
}
