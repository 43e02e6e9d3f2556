// The small real task of the builder, runner and pool tests: a plain
// 32x32x32 TE matmul, lowered with its j loop split, and the broken kernels
// those tests plant (one that segfaults, one that never ends, one that
// computes the wrong thing), plus its reference sample computed with the
// interpreter from the runner's own inputs.
#pragma once

#include <cstring>
#include <vector>

#include "compute/expr_ops.h"
#include "compute/interpreter.h"
#include "runtime/ndarray.h"
#include "schedule/lower.h"
#include "schedule/schedule.h"
#include "tuner/task.h"

namespace kiln::testing {

struct PlantedMatmul {
  static constexpr int kN = 32;
  Tensor A, B, C;

  PlantedMatmul() {
    A = placeholder({kN, kN}, DType::f32(), "A");
    B = placeholder({kN, kN}, DType::f32(), "B");
    IterVar k = reduce_axis(kN, "k");
    Tensor a = A, b = B;
    C = compute(
        {kN, kN}, [&](Var i, Var j) { return sum(a(i, k->var) * b(k->var, j), {k}); }, "C");
  }

  // The correct kernel, its j loop split by `tile`.
  LoweredFunc lower_plain(int64_t tile, LowerDepth depth) const {
    Schedule s({C});
    Stage st = s[C];
    IterVar jo, ji;
    st.split(st.axis()[1], tile, &jo, &ji);
    return lower(s, {A, B, C}, "mm", depth);
  }

  // Stores 2^40 elements past its output: SIGSEGV.
  LoweredFunc crashing(int64_t tile, LowerDepth depth) const {
    LoweredFunc f = lower_plain(tile, depth);
    f.body = StoreNode::make(f.args[2].data, make_const(DType::f32(), 1.0), make_const(DType::i64(), int64_t{1} << 40));
    return f;
  }

  // C[i % 1024] += 1 for 2^40 iterations: a memory-carried chain that LLVM
  // can neither delete nor shorten.
  LoweredFunc hanging(int64_t tile, LowerDepth depth) const {
    LoweredFunc f = lower_plain(tile, depth);
    const Var& c = f.args[2].data;
    Var i("i", DType::i64());
    Expr idx = i % make_const(DType::i64(), int64_t{kN * kN});
    Stmt body = StoreNode::make(c, LoadNode::make(DType::f32(), c, idx) + make_const(DType::f32(), 1.0), idx);
    f.body = ForNode::make(i, make_const(DType::i64(), int64_t{0}), make_const(DType::i64(), int64_t{1} << 40),
                           ForKind::kSerial, body);
    return f;
  }

  // Drops the reduction: C = A[:, 0] * B[0, :].
  LoweredFunc wrong(LowerDepth depth) const {
    Tensor a = A, b = B;
    Tensor W = compute(
        {kN, kN}, [&](Var i, Var j) { return a(i, 0) * b(0, j); }, "C");
    Schedule s({W});
    return lower(s, {A, B, W}, "mm", depth);
  }

  // The correct kernel, then one more store: only C's last element is wrong
  // (by 1), the kind of tail bug a sampled check can miss.
  LoweredFunc tail_wrong(int64_t tile, LowerDepth depth) const {
    LoweredFunc f = lower_plain(tile, depth);
    const Var& c = f.args[2].data;
    Expr last = make_const(DType::i64(), int64_t{kN * kN - 1});
    f.body = SeqNode::make(
        {f.body, StoreNode::make(c, LoadNode::make(DType::f32(), c, last) + make_const(DType::f32(), 1.0), last)});
    return f;
  }

  // The whole of C, as the tuner's tasks carry it (flat_index empty).
  ReferenceSample whole_reference(uint64_t seed) const {
    ReferenceSample ref = reference(seed, 1);
    ref.flat_index.clear();
    return ref;
  }

  // Every `stride`-th element of C for the runner's inputs
  // (NDArray::fill_random(seed + i), which differs from
  // HostTensor::fill_random, copied into host tensors for the interpreter).
  ReferenceSample reference(uint64_t seed, int64_t stride) const {
    std::vector<std::pair<Tensor, HostTensor>> inputs;
    for (size_t i = 0; i < 2; ++i) {
      rt::NDArray nd = rt::NDArray::empty({kN, kN}, rt::DataType::f32());
      nd.fill_random(seed + i);
      HostTensor h(DType::f32(), {kN, kN});
      std::memcpy(h.bytes.data(), nd.data(), nd.nbytes());
      inputs.emplace_back(i == 0 ? A : B, h);
    }
    HostTensor want = interpret({C}, inputs)[0];
    ReferenceSample ref;
    for (int64_t e = 0; e < kN * kN; e += stride) {
      ref.flat_index.push_back(e);
      ref.expected.push_back(want.get_float(e));
    }
    ref.tolerance = 1e-4;
    return ref;
  }
};

}  // namespace kiln::testing
