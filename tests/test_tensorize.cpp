// tensorize: matching a loop nest against a declared tensor intrinsic, the
// reset / update / body split, the operands' requirements, and the
// kernels the x86 intrinsics give, against the reference interpreter
// (integers exactly). The matching and its messages need no special CPU;
// running VNNI or BF16 kernels needs the instructions (skipped elsewhere).
#include <catch2/catch.hpp>
#include <functional>
#include <random>

#include "base/error.h"
#include "codegen/build.h"
#include "codegen/target.h"
#include "compute/expr_ops.h"
#include "compute/hw_instructions.h"
#include "compute/interpreter.h"
#include "compute/printer.h"
#include "kernels/tensor_intrinsics.h"
#include "schedule/lower.h"
#include "support/kernel_check.h"
#include "support/skip.h"
#include "support/test_seed.h"

using namespace kiln;
using Catch::Matchers::Contains;

namespace {

// C[i, j] = sum_k i32(A[i, k]) * i32(Bp[j / 16, k / 4, j % 16, k % 4]): a
// matmul whose B is given in the blocked layout VNNI reads (16 columns by
// 4 steps of k in one 64-byte block).
struct BlockedMatmul {
  int64_t M, N, K;
  Tensor A, Bp, C;
  IterVar k;
};

// Which products of row i and reduction index k count (none: all).
using ReduceCondition = std::function<Expr(const Var& i, const Var& k)>;

BlockedMatmul blocked_matmul(int64_t M, int64_t N, int64_t K, DType a_type = DType::u8(), DType b_type = DType::i8(),
                             int lanes = 16, int steps = 4, DType acc = DType::i32(),
                             const ReduceCondition& where = nullptr) {
  BlockedMatmul m{M, N, K, {}, {}, {}, {}};
  m.A = placeholder({Expr(static_cast<int>(M)), Expr(static_cast<int>(K))}, a_type, "A");
  m.Bp = placeholder({Expr(static_cast<int>(N / lanes)), Expr(static_cast<int>(K / steps)), Expr(lanes), Expr(steps)},
                     b_type, "Bp");
  m.k = reduce_axis(static_cast<int>(K), "k");
  IterVar k = m.k;
  Tensor A = m.A, Bp = m.Bp;
  m.C = compute(
      {Expr(static_cast<int>(M)), Expr(static_cast<int>(N))},
      [&](Var i, Var j) {
        return sum(cast(acc, A(i, k->var)) * cast(acc, Bp(floordiv(j, lanes), floordiv(k->var, steps),
                                                          floormod(j, lanes), floormod(k->var, steps))),
                   {k}, where ? where(i, k->var) : Expr());
      },
      "C");
  return m;
}

// The u8 x i8 blocked matmul with only the products `where` selects summed.
BlockedMatmul int8_matmul_where(int64_t M, int64_t N, int64_t K, const ReduceCondition& where) {
  return blocked_matmul(M, N, K, DType::u8(), DType::i8(), 16, 4, DType::i32(), where);
}

// j in 16s with the whole reduction below j.inner: one call (the
// intrinsic's body) per 16 columns.
void schedule_whole_reduction(Schedule& s, const BlockedMatmul& m, const TensorIntrin& intrin) {
  Stage c = s[m.C];
  IterVar jo, ji;
  c.split(c.axis()[1], 16, &jo, &ji);
  c.reorder({c.axis()[0], jo, ji, c.reduce_axis()[0]});
  c.tensorize(ji, intrin);
}

// The plain tiling: j in 16s, k in 4s, the intrinsic over (j.inner, k.inner).
void schedule_plain(Schedule& s, const BlockedMatmul& m, const TensorIntrin& intrin, int steps = 4) {
  Stage c = s[m.C];
  IterVar jo, ji, ko, ki;
  c.split(c.axis()[1], 16, &jo, &ji);
  c.split(c.reduce_axis()[0], steps, &ko, &ki);
  c.reorder({c.axis()[0], jo, ko, ji, ki});
  c.tensorize(ji, intrin);
}

// A register tile of `rows` x `16 * vecs` accumulated in a local stage
// (as the GEMM templates do), k in steps outside the tile.
void schedule_tiled(Schedule& s, const BlockedMatmul& m, const TensorIntrin& intrin, int64_t rows, int64_t vecs,
                    bool parallel, int steps = 4) {
  Tensor cc = s.cache_write(m.C, MemScope::kLocal);
  Stage c = s[m.C];
  IterVar io, ii, jo, ji;
  c.split(c.axis()[0], rows, &io, &ii);
  c.split(c.axis()[1], 16 * vecs, &jo, &ji);
  c.reorder({io, jo, ii, ji});
  if (parallel) c.parallel(io);
  Stage a = s[cc];
  a.compute_at(c, jo);
  IterVar cjo, cji, cko, cki;
  a.split(a.axis()[1], 16, &cjo, &cji);
  a.split(a.reduce_axis()[0], steps, &cko, &cki);
  a.reorder({cko, a.axis()[0], cjo, cji, cki});
  a.unroll(a.axis()[0]);
  a.unroll(cjo);
  a.tensorize(cji, intrin);
}

HostTensor random_tensor(const Tensor& t, uint64_t seed) {
  std::vector<int64_t> shape;
  for (const Expr& e : t.shape()) shape.push_back(*as_const_int(e));
  HostTensor h(t.dtype(), shape);
  h.fill_random(seed, t.dtype().is_float() ? -2.0 : -1e9, t.dtype().is_float() ? 2.0 : 1e9);  // ints: their whole range
  return h;
}

// Runs the schedule on random inputs over the whole range of their types
// and compares with the interpreter: "" when equal (within `tol` for floats).
std::string run_against_interpreter(const Schedule& s, const BlockedMatmul& m, uint64_t seed, double tol = 0) {
  HostTensor a = random_tensor(m.A, seed), b = random_tensor(m.Bp, seed + 1);
  HostTensor got = kiln::testing::run_schedule(s, {m.A, m.Bp, m.C}, {a, b});
  HostTensor want = interpret({m.C}, {{m.A, a}, {m.Bp, b}})[0];
  return compare_tensors(want, got, tol, tol);
}

std::string lowered(const Schedule& s, const BlockedMatmul& m) {
  return to_string(lower(s, {m.A, m.Bp, m.C}, "f"));
}

bool host_has(const char* feature) { return Target::host().has_feature(feature); }

// An intrinsic of VNNI's shape (c[16] += a[4] . b[16, 4]) with a body
// lowering that emits nothing: for checks that fail before any code runs.
TensorIntrin body_only_vnni_shape(const std::string& name, std::vector<IntrinRequirement> requirements) {
  Tensor a = placeholder({4}, DType::u8(), "a");
  Tensor b = placeholder({16, 4}, DType::i8(), "b");
  IterVar k = reduce_axis(4, "k");
  Tensor c = compute(
      {16}, [&](Var i) { return sum(cast(DType::i32(), a(k->var)) * cast(DType::i32(), b(i, k->var)), {k}); }, "c");
  TensorIntrinLowering l;
  l.body = [](const std::vector<IntrinBuffer>&) { return EvaluateNode::make(Expr(0)); };
  return decl_tensor_intrin(name, c, {a, b}, l, std::move(requirements));
}

}  // namespace

TEST_CASE("tensorize: a blocked u8 x i8 matmul lowers to vpdpbusd calls, reset before the k loop", "[tensorize]") {
  BlockedMatmul m = blocked_matmul(3, 32, 8);
  Schedule s({m.C});
  schedule_plain(s, m, x86_vnni_dot_16x4());
  const std::string ir = lowered(s, m);
  CHECK_THAT(ir, Contains("tensor_intrin x86.vpdpbusd.512(C["));
  CHECK_THAT(ir, Contains("extent=16"));
  CHECK_THAT(ir, Contains("extent=64"));
  // The reset (a zero vector) comes before the k.outer loop, the call inside it.
  const size_t reset = ir.find("x16(0)");
  const size_t k_loop = ir.find("k.outer");
  const size_t call = ir.find("tensor_intrin");
  REQUIRE(reset != std::string::npos);
  CHECK(reset < k_loop);
  CHECK(k_loop < call);
}

TEST_CASE("tensorize: with every reduction loop inside, the intrinsic's body replaces the nest", "[tensorize]") {
  BlockedMatmul m = blocked_matmul(2, 16, 4);
  Schedule s({m.C});
  Stage c = s[m.C];
  IterVar jo, ji;
  c.split(c.axis()[1], 16, &jo, &ji);
  c.reorder({c.axis()[0], jo, ji, c.reduce_axis()[0]});
  c.tensorize(ji, x86_vnni_dot_16x4());
  const std::string ir = lowered(s, m);
  CHECK_THAT(ir, Contains("tensor_intrin x86.vpdpbusd.512"));
  CHECK(ir.find("for (k") == std::string::npos);
}

TEST_CASE("tensorize: VNNI kernels equal the interpreter exactly on random shapes and tilings", "[tensorize][vnni]") {
  if (!host_has("avx512vnni")) KILN_SKIP("this CPU has no AVX512-VNNI");
  const uint64_t seed = kiln::testing::run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const std::vector<int64_t> rows = {1, 2, 3, 5, 7, 13};
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t M = rows[rng() % rows.size()];
    const int64_t N = 16 * static_cast<int64_t>(1 + rng() % 3);
    const int64_t K = 4 * static_cast<int64_t>(1 + rng() % 5);
    BlockedMatmul m = blocked_matmul(M, N, K);
    Schedule s({m.C});
    const int variant = static_cast<int>(rng() % 3);
    std::string what = "M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K);
    if (variant == 0) {
      schedule_plain(s, m, x86_vnni_dot_16x4());
      what += " plain";
    } else {
      std::vector<int64_t> row_tiles, vec_tiles;
      for (int64_t r = 1; r <= M; ++r)
        if (M % r == 0) row_tiles.push_back(r);
      for (int64_t v = 1; v <= N / 16; ++v)
        if ((N / 16) % v == 0) vec_tiles.push_back(v);
      const int64_t r = row_tiles[rng() % row_tiles.size()], v = vec_tiles[rng() % vec_tiles.size()];
      schedule_tiled(s, m, x86_vnni_dot_16x4(), r, v, variant == 2);
      what += " tile " + std::to_string(r) + "x" + std::to_string(16 * v) + (variant == 2 ? " parallel" : "");
    }
    INFO(what);
    CHECK(run_against_interpreter(s, m, 100 + static_cast<uint64_t>(trial)) == "");
  }
}

// C as blocked_matmul's, with the products of the k steps of a window
// that falls outside [0, M) skipped: step k/4 of row i counts when
// 0 <= i + k/4 - 1 < M (a 1-D "convolution" of 3 taps over k/4 with a
// padding of one on each side, the taps on padding skipped).
BlockedMatmul windowed_matmul(int64_t M, int64_t N) {
  const int rows = static_cast<int>(M);
  return int8_matmul_where(M, N, 12, [rows](const Var& i, const Var& k) {
    Expr tap = i + floordiv(k, 4) - 1;
    return tap >= 0 && tap < rows;
  });
}

TEST_CASE("tensorize: a reduction's condition on the loops outside the axis guards whole calls", "[tensorize]") {
  for (int64_t M : {1, 3, 7}) {
    INFO("M=" << M);
    BlockedMatmul m = windowed_matmul(M, 32);
    Schedule s({m.C});
    schedule_tiled(s, m, x86_vnni_dot_16x4(), 1, 2, false);
    const std::string ir = lowered(s, m);
    CHECK_THAT(ir, Contains("tensor_intrin x86.vpdpbusd.512"));
    // Loop partitioning turns the guard into the first row's shorter k loop
    // (its tap 0 is padding).
    if (M > 1) CHECK_THAT(ir, Contains("for (k.outer, 1, 2)"));
    if (host_has("avx512vnni")) CHECK(run_against_interpreter(s, m, 31 + static_cast<uint64_t>(M)) == "");
  }
  // With the whole reduction in one call, a skipped call leaves the reset's zeros.
  BlockedMatmul one = int8_matmul_where(5, 16, 4, [](const Var& i, const Var&) { return i % 2 == 0; });
  Schedule s({one.C});
  schedule_whole_reduction(s, one, x86_vnni_dot_16x4());
  CHECK_THAT(lowered(s, one), Contains("else"));
  if (host_has("avx512vnni")) CHECK(run_against_interpreter(s, one, 5) == "");
}

TEST_CASE("tensorize: a reduction's condition on a loop below the axis is refused", "[tensorize][errors]") {
  BlockedMatmul m = int8_matmul_where(2, 16, 8, [](const Var&, const Var& k) { return k != 5; });
  Schedule s({m.C});
  schedule_plain(s, m, x86_vnni_dot_16x4());
  CHECK_THROWS_WITH(lowered(s, m), Contains("depends on loop 'k.inner' below the tensorized axis; a condition can only "
                                            "skip whole calls"));
}

TEST_CASE("tensorize: an intrinsic declared with a reduction condition is refused", "[tensorize][errors]") {
  Tensor a = placeholder({4}, DType::u8(), "a");
  Tensor b = placeholder({16, 4}, DType::i8(), "b");
  IterVar k = reduce_axis(4, "k");
  Tensor c = compute(
      {16},
      [&](Var i) { return sum(cast(DType::i32(), a(k->var)) * cast(DType::i32(), b(i, k->var)), {k}, k->var < 3); },
      "c");
  TensorIntrinLowering l;
  l.body = [](const std::vector<IntrinBuffer>&) { return EvaluateNode::make(Expr(0)); };
  BlockedMatmul m = blocked_matmul(2, 16, 4);
  Schedule s({m.C});
  schedule_whole_reduction(s, m, decl_tensor_intrin("three_of_four", c, {a, b}, l, {}));
  CHECK_THROWS_WITH(lowered(s, m), Contains("the intrinsic's reduction has a condition; declare it over whole tiles"));
}

TEST_CASE("tensorize: a condition over a whole-reduction call needs the intrinsic's reset", "[tensorize][errors]") {
  BlockedMatmul m = int8_matmul_where(2, 16, 4, [](const Var& i, const Var&) { return i > 0; });
  Schedule s({m.C});
  schedule_whole_reduction(s, m, body_only_vnni_shape("body_only", {}));
  CHECK_THROWS_WITH(lowered(s, m),
                    Contains("the reduction has a condition (`") &&
                        Contains("`) and the intrinsic has no reset lowering to give the skipped calls' result"));
}

TEST_CASE("tensorize: BF16 kernels agree with the interpreter", "[tensorize][bf16]") {
  if (!host_has("avx512bf16")) KILN_SKIP("this CPU has no AVX512-BF16");
  for (int64_t M : {1, 4, 7}) {
    BlockedMatmul m = blocked_matmul(M, 32, 10, DType::bf16(), DType::bf16(), 16, 2, DType::f32());
    Schedule s({m.C});
    schedule_tiled(s, m, x86_bf16_dot_16x2(), 1, 2, false, 2);
    INFO("M=" << M);
    // Products of bf16 values are exact in f32; only the order of the sums
    // (and subnormal flushing) differs from the interpreter's.
    CHECK(run_against_interpreter(s, m, 7, 1e-5) == "");
  }
}

TEST_CASE("tensorize: the loops below the axis must have the intrinsic's shape", "[tensorize][errors]") {
  BlockedMatmul m = blocked_matmul(2, 32, 8);
  Schedule s({m.C});
  Stage c = s[m.C];
  IterVar jo, ji;
  c.split(c.axis()[1], 32, &jo, &ji);  // 32 columns where the intrinsic takes 16
  c.reorder({c.axis()[0], jo, ji, c.reduce_axis()[0]});
  c.tensorize(ji, x86_vnni_dot_16x4());
  CHECK_THROWS_WITH(lowered(s, m), Contains("the loops below the tensorized axis run over [C.j.inner (32)] and reduce "
                                            "over [k (8)], but the intrinsic computes over [c.i (16)] and reduces "
                                            "over [k (4)]"));
}

TEST_CASE("tensorize: an annotated loop below the axis is refused", "[tensorize][errors]") {
  BlockedMatmul m = blocked_matmul(2, 16, 4);
  Schedule s({m.C});
  Stage c = s[m.C];
  c.tensorize(c.axis()[1], x86_vnni_dot_16x4());
  c.unroll(c.reduce_axis()[0]);
  CHECK_THROWS_WITH(lowered(s, m), Contains("loop 'k' below the tensorized axis is unrolled; the intrinsic replaces "
                                            "these loops, so leave them plain"));
}

TEST_CASE("tensorize: a fused loop below the axis is refused, and two loops of one axis are two axes",
          "[tensorize][errors]") {
  {
    BlockedMatmul m = blocked_matmul(1, 16, 4);
    Schedule s({m.C});
    Stage c = s[m.C];
    IterVar f = c.fuse(c.axis()[0], c.axis()[1]);
    c.tensorize(f, x86_vnni_dot_16x4());
    CHECK_THROWS_WITH(lowered(s, m), Contains("runs along both 'C.i' and 'C.j' (a fused loop)"));
  }
  {
    BlockedMatmul m = blocked_matmul(1, 16, 4);
    Schedule s({m.C});
    Stage c = s[m.C];
    IterVar jo, ji;
    c.split(c.axis()[1], 8, &jo, &ji);
    c.tensorize(jo, x86_vnni_dot_16x4());
    CHECK_THROWS_WITH(lowered(s, m), Contains("run over [C.j.outer (2), C.j.inner (8)] and reduce over [k (4)], but the "
                                              "intrinsic computes over [c.i (16)]"));
  }
}

TEST_CASE("tensorize: a tail below the axis is refused", "[tensorize][errors]") {
  // 40 columns in tiles of 16: the last tile would be guarded.
  Tensor A = placeholder({2, 8}, DType::u8(), "A");
  Tensor B = placeholder({40, 8}, DType::i8(), "B");
  IterVar k = reduce_axis(8, "k");
  Tensor C = compute(
      {2, 40}, [&](Var i, Var j) { return sum(cast(DType::i32(), A(i, k->var)) * cast(DType::i32(), B(j, k->var)), {k}); },
      "C");
  Schedule s({C});
  Stage c = s[C];
  IterVar jo, ji, ko, ki;
  c.split(c.axis()[1], 16, &jo, &ji);
  c.split(k, 4, &ko, &ki);
  c.reorder({c.axis()[0], jo, ko, ji, ki});
  c.tensorize(ji, x86_vnni_dot_16x4());
  CHECK_THROWS_WITH(to_string(lower(s, {A, B, C}, "f")),
                    Contains("the loops below the tensorized axis have a tail (the guard `") &&
                        Contains("a tensorized nest covers whole tiles"));
}

TEST_CASE("tensorize: a stage computed inside the tensorized loops is refused", "[tensorize][errors]") {
  BlockedMatmul m = blocked_matmul(2, 16, 8);
  Schedule s({m.C});
  Tensor ac = s.cache_read(m.A, MemScope::kLocal, {s[m.C]->op});
  Stage c = s[m.C];
  IterVar ko, ki;
  c.split(c.reduce_axis()[0], 4, &ko, &ki);
  c.reorder({c.axis()[0], ko, c.axis()[1], ki});
  s[ac].compute_at(c, ki);
  c.tensorize(c.axis()[1], x86_vnni_dot_16x4());
  CHECK_THROWS_WITH(lowered(s, m), Contains("stage 'A.local' is computed at loop 'k.inner', inside the tensorized loops"));
}

TEST_CASE("tensorize: a different computation says what differs", "[tensorize][errors]") {
  SECTION("an operand's type") {
    BlockedMatmul m = blocked_matmul(2, 16, 4, DType::i8(), DType::i8());
    Schedule s({m.C});
    schedule_plain(s, m, x86_vnni_dot_16x4());
    CHECK_THROWS_WITH(lowered(s, m), Contains("'A' holds i8, the intrinsic's 'a' u8"));
  }
  SECTION("the accumulator's type") {
    BlockedMatmul m = blocked_matmul(2, 16, 4, DType::u8(), DType::i8(), 16, 4, DType::i64());
    Schedule s({m.C});
    schedule_plain(s, m, x86_vnni_dot_16x4());
    CHECK_THROWS_WITH(lowered(s, m), Contains("the stage reduces in i64 where the intrinsic reduces in i32"));
  }
  SECTION("an operation") {
    Tensor A = placeholder({2, 4}, DType::u8(), "A");
    Tensor Bp = placeholder({1, 1, 16, 4}, DType::i8(), "Bp");
    IterVar k = reduce_axis(4, "k");
    Tensor C = compute(
        {2, 16},
        [&](Var i, Var j) {
          return sum(cast(DType::i32(), A(i, k->var)) + cast(DType::i32(), Bp(0, 0, j, k->var)), {k});
        },
        "C");
    Schedule s({C});
    s[C].tensorize(s[C].axis()[1], x86_vnni_dot_16x4());
    CHECK_THROWS_WITH(to_string(lower(s, {A, Bp, C}, "f")), Contains("where the intrinsic computes") &&
                                                                  Contains("the operations differ"));
  }
  SECTION("the reduction's combiner") {
    Tensor A = placeholder({2, 4}, DType::u8(), "A");
    Tensor Bp = placeholder({1, 1, 16, 4}, DType::i8(), "Bp");
    IterVar k = reduce_axis(4, "k");
    Tensor C = compute(
        {2, 16},
        [&](Var i, Var j) {
          return max_reduce(cast(DType::i32(), A(i, k->var)) * cast(DType::i32(), Bp(0, 0, j, k->var)), {k});
        },
        "C");
    Schedule s({C});
    s[C].tensorize(s[C].axis()[1], x86_vnni_dot_16x4());
    CHECK_THROWS_WITH(to_string(lower(s, {A, Bp, C}, "f")),
                      Contains("the stage reduces with max where the intrinsic reduces with sum"));
  }
  SECTION("no reduction") {
    Tensor A = placeholder({2, 16}, DType::i32(), "A");
    Tensor C = compute({2, 16}, [&](Var i, Var j) { return A(i, j) * 2; }, "C");
    Schedule s({C});
    s[C].tensorize(s[C].axis()[1], x86_vnni_dot_16x4());
    CHECK_THROWS_WITH(to_string(lower(s, {A, C}, "f")),
                      Contains("reduce over [], but the intrinsic computes over [c.i (16)] and reduces over [k (4)]"));
  }
}

TEST_CASE("tensorize: an index pattern the intrinsic does not have is refused", "[tensorize][errors]") {
  // B read as Bp[.., k % 4, j % 16]: the 4 steps of k run along the block's
  // rows, where the intrinsic's b has them along its columns... and here
  // every dimension still moves alike, so the strides decide (below); a
  // read along a diagonal has no matching dimension at all.
  Tensor A = placeholder({2, 4}, DType::u8(), "A");
  Tensor Bd = placeholder({32, 4}, DType::i8(), "Bd");
  IterVar k = reduce_axis(4, "k");
  Tensor C = compute(
      {2, 16},
      [&](Var i, Var j) { return sum(cast(DType::i32(), A(i, k->var)) * cast(DType::i32(), Bd(j + k->var, k->var)), {k}); },
      "C");
  Schedule s({C});
  s[C].tensorize(s[C].axis()[1], x86_vnni_dot_16x4());
  CHECK_THROWS_WITH(to_string(lower(s, {A, Bd, C}, "f")),
                    Contains("the stage reads 'Bd' with the index pattern [1*c.i + 1*k, 1*k] where the intrinsic's "
                             "'b' has [1*c.i, 1*k] (in the intrinsic's axes): no dimension of 'Bd' moves as the "
                             "intrinsic's dimension 0"));
}

TEST_CASE("tensorize: an operand that misses the intrinsic's requirements is refused", "[tensorize][errors]") {
  SECTION("a block that is not dense") {
    // B stored [K, N]: the 16 x 4 block has strides (1, 16), not (4, 1).
    Tensor A = placeholder({2, 4}, DType::u8(), "A");
    Tensor B = placeholder({4, 16}, DType::i8(), "B");
    IterVar k = reduce_axis(4, "k");
    Tensor C = compute(
        {2, 16},
        [&](Var i, Var j) { return sum(cast(DType::i32(), A(i, k->var)) * cast(DType::i32(), B(k->var, j)), {k}); },
        "C");
    Schedule s({C});
    s[C].tensorize(s[C].axis()[1], x86_vnni_dot_16x4());
    CHECK_THROWS_WITH(to_string(lower(s, {A, B, C}, "f")),
                      Contains("'B', bound to the intrinsic's 'b', is accessed with strides (1, 16) in the "
                               "intrinsic's dimensions; the intrinsic needs one dense block, strides (4, 1)"));
  }
  SECTION("a memory scope") {
    IntrinRequirement local;
    local.scope = MemScope::kLocal;
    TensorIntrin in = body_only_vnni_shape("needs_local", {local, {}, {}});
    BlockedMatmul m = blocked_matmul(2, 16, 4);
    Schedule s({m.C});
    s[m.C].tensorize(s[m.C].axis()[1], in);
    CHECK_THROWS_WITH(lowered(s, m), Contains("'A', bound to the intrinsic's 'a', lives in global memory; the "
                                              "intrinsic needs it in local memory"));
  }
  SECTION("an alignment") {
    IntrinRequirement aligned;
    aligned.offset_factor = 8;
    TensorIntrin in = body_only_vnni_shape("needs_8", {aligned, {}, {}});
    BlockedMatmul m = blocked_matmul(2, 16, 4);  // A's rows start every 4 elements
    Schedule s({m.C});
    s[m.C].tensorize(s[m.C].axis()[1], in);
    CHECK_THROWS_WITH(lowered(s, m), Contains("which kiln cannot prove is a multiple of 8"));
  }
}

TEST_CASE("tensorize: a split reduction needs the intrinsic's reset and update", "[tensorize][errors]") {
  TensorIntrin body_only = body_only_vnni_shape("body_only", {});
  BlockedMatmul m = blocked_matmul(2, 16, 8);
  Schedule s({m.C});
  schedule_plain(s, m, body_only);
  CHECK_THROWS_WITH(lowered(s, m), Contains("reduction loop 'k.outer' runs outside the tensorized axis, so the "
                                            "reduction is split into steps, but the intrinsic has no reset and update "
                                            "lowerings"));
}

TEST_CASE("tensorize: primitive misuse", "[tensorize][errors]") {
  BlockedMatmul m = blocked_matmul(2, 32, 8);
  Schedule s({m.C});
  Stage c = s[m.C];
  IterVar jo, ji;
  c.split(c.axis()[1], 16, &jo, &ji);
  CHECK_THROWS_WITH(c.tensorize(c.axis()[1], x86_vnni_dot_16x4()), Contains("is not a leaf axis"));
  CHECK_THROWS_WITH(c.tensorize(ji, nullptr), Contains("tensorize: no intrinsic given"));
  c.tensorize(ji, x86_vnni_dot_16x4());
  CHECK_THROWS_WITH(c.tensorize(jo, x86_vnni_dot_16x4()), Contains("is already tensorized at axis 'C.j.inner'"));
  CHECK_THROWS_WITH(s[m.A].tensorize(s[m.A]->leaf_iter_vars.empty() ? ji : s[m.A]->leaf_iter_vars[0], x86_vnni_dot_16x4()),
                    Contains("tensorize"));
  // Splitting the tensorized axis afterwards leaves no leaf to tensorize.
  IterVar a, b;
  c.split(ji, 4, &a, &b);
  CHECK_THROWS_WITH(lowered(s, m), Contains("is tensorized at axis 'C.j.inner', which was split or fused afterwards"));
}

TEST_CASE("tensorize: declaring an intrinsic checks what it is given", "[tensorize][errors]") {
  Tensor a = placeholder({4}, DType::u8(), "a");
  Tensor x = placeholder({4}, DType::u8(), "x");
  IterVar k = reduce_axis(4, "k");
  Tensor c = compute({1}, [&](Var) { return sum(cast(DType::i32(), a(k->var)), {k}); }, "c");
  TensorIntrinLowering body;
  body.body = [](const std::vector<IntrinBuffer>&) { return EvaluateNode::make(Expr(0)); };
  CHECK_THROWS_WITH(decl_tensor_intrin("t", a, {}, body), Contains("must be a compute op"));
  CHECK_THROWS_WITH(decl_tensor_intrin("t", c, {a, x}, body), Contains("input 'x' is not read by 'c'"));
  CHECK_THROWS_WITH(decl_tensor_intrin("t", c, {}, body), Contains("'c' reads 'a', which is not among its inputs"));
  CHECK_THROWS_WITH(decl_tensor_intrin("t", c, {a}, body, {IntrinRequirement{}}),
                    Contains("1 operand requirements for 2 operands"));
  CHECK_THROWS_WITH(decl_tensor_intrin("t", c, {a}, TensorIntrinLowering{}),
                    Contains("it needs a body lowering, or reset and update lowerings"));
  IterVar from_one = reduce_axis(Range(1, 3), "r");
  Tensor d = compute({1}, [&](Var) { return sum(cast(DType::i32(), a(from_one->var)), {from_one}); }, "d");
  CHECK_THROWS_WITH(decl_tensor_intrin("t", d, {a}, body), Contains("reduction axis 'r' needs a constant range from 0"));
}

TEST_CASE("tensorize: instruction calls are checked against the instruction list", "[tensorize][errors]") {
  Var acc = Var::handle("acc", DType::i32()), a = Var::handle("a", DType::u8()), b = Var::handle("b", DType::u8());
  auto op = [](const Var& v, int64_t n) { return TensorIntrinCallNode::Operand{v, Expr(0), Expr(static_cast<int>(n)), Expr(1)}; };
  Stmt wrong_type = TensorIntrinCallNode::make("x86.vpdpbusd.512", {op(acc, 16), op(a, 4), op(b, 64)}, {});
  CHECK(hw_call_problem(*wrong_type.as<TensorIntrinCallNode>()) ==
        "x86.vpdpbusd.512 operand 2 (b) points into 'b' of u8, it needs i8");
  Stmt wrong_extent = TensorIntrinCallNode::make("x86.vpdpbusd.512", {op(acc, 8), op(a, 4), op(b, 64)}, {});
  CHECK(hw_call_problem(*wrong_extent.as<TensorIntrinCallNode>()) ==
        "x86.vpdpbusd.512 operand 0 (acc) covers 8 elements, it needs 16");
  Stmt unknown = TensorIntrinCallNode::make("x86.nope", {}, {});
  CHECK(hw_call_problem(*unknown.as<TensorIntrinCallNode>()) == "'x86.nope' is not a hardware instruction kiln knows");
  CHECK_THROWS_WITH(find_hw_instruction("x86.nope"),
                    Contains("kiln knows x86.vpdpbusd.512, x86.vdpbf16ps.512, x86.amx.dpbusd.32x32"));
}

TEST_CASE("tensorize: AMX calls cover whole k steps, the same number in every operand", "[tensorize][errors]") {
  Var acc = Var::handle("acc", DType::i32()), a = Var::handle("a", DType::u8()), b = Var::handle("b", DType::i8());
  auto op = [](const Var& v, int64_t n) { return TensorIntrinCallNode::Operand{v, Expr(0), Expr(static_cast<int>(n)), Expr(32)}; };
  Stmt ok = TensorIntrinCallNode::make("x86.amx.dpbusd.32x32", {op(acc, 1024), op(a, 32 * 128), op(b, 32 * 128)}, {});
  CHECK(hw_call_problem(*ok.as<TensorIntrinCallNode>()) == "");
  CHECK(find_hw_instruction("x86.amx.dpbusd.32x32").steps_of(*ok.as<TensorIntrinCallNode>()) == 2);
  Stmt partial = TensorIntrinCallNode::make("x86.amx.dpbusd.32x32", {op(acc, 1024), op(a, 32 * 100), op(b, 32 * 128)}, {});
  CHECK(hw_call_problem(*partial.as<TensorIntrinCallNode>()) ==
        "x86.amx.dpbusd.32x32 operand 1 (a) covers 3200 elements, it needs a positive multiple of 2048");
  Stmt uneven = TensorIntrinCallNode::make("x86.amx.dpbusd.32x32", {op(acc, 1024), op(a, 32 * 64), op(b, 32 * 128)}, {});
  CHECK(hw_call_problem(*uneven.as<TensorIntrinCallNode>()) ==
        "x86.amx.dpbusd.32x32 operand 2 (b) covers 2 k steps, another operand 1");
  CHECK_THROWS_WITH(x86_amx_int8_32x32(48), Contains("AMX int8 k tiles are multiples of 64, got 48"));
}

TEST_CASE("tensorize: a reduction loop of one iteration outside the axis does not split the reduction", "[tensorize]") {
  BlockedMatmul m = blocked_matmul(2, 16, 4);
  Schedule s({m.C});
  Stage c = s[m.C];
  IterVar jo, ji, ko, ki;
  c.split(c.axis()[1], 16, &jo, &ji);
  c.split(c.reduce_axis()[0], 4, &ko, &ki);  // k = 4: ko runs once
  c.reorder({c.axis()[0], jo, ko, ji, ki});
  c.tensorize(ji, body_only_vnni_shape("vnni_body_only", {}));
  // The body (the only lowering) replaces the nest: no reset and update.
  CHECK_NOTHROW(lowered(s, m));
}

TEST_CASE("tensorize: AMX tile-group calls pass their rows, steps and strides as checked scalars",
          "[tensorize][errors]") {
  Var acc = Var::handle("acc", DType::i32()), a = Var::handle("a", DType::u8()), b = Var::handle("b", DType::i8());
  auto op = [](const Var& v) { return TensorIntrinCallNode::Operand{v, Expr(0), Expr(1), Expr(1)}; };
  auto scalars = [](int64_t rows0, int64_t rows1, Expr steps1, Expr k = Expr(64)) {
    std::vector<Expr> s = {Expr(static_cast<int>(rows0)), Expr(static_cast<int>(rows1)), steps1, Expr(1), Expr(3)};
    for (int i = 0; i < 11; ++i) s.push_back(Expr(64));
    s.push_back(k);
    return s;
  };
  auto problem = [&](std::vector<Expr> sc) {
    Stmt call = TensorIntrinCallNode::make(kAmxTilesInt8, {op(acc), op(a), op(b)}, std::move(sc));
    return hw_call_problem(*call.as<TensorIntrinCallNode>());
  };
  CHECK(problem(scalars(16, 12, Expr(3))) == "");
  CHECK(problem(scalars(7, 0, Expr(1))) == "");
  CHECK(problem(scalars(17, 0, Expr(1))) == "x86.amx.dpbusd.tiles scalar rows0 is 17, out of [1, 16]");
  CHECK(problem(scalars(16, 16, Expr(0))) == "x86.amx.dpbusd.tiles scalar steps1 is 0, out of [1, any]");
  CHECK(problem(scalars(16, 16, Var("n"))) == "x86.amx.dpbusd.tiles scalar steps1 is not a constant");
  CHECK(problem({Expr(16)}) == "x86.amx.dpbusd.tiles takes 17 scalars, the call passes 1");
  // k: a's bytes per product, whole words up to a 64-byte tile row (a
  // 7-tap row of 4 channels is 28).
  CHECK(problem(scalars(16, 0, Expr(1), Expr(28))) == "");
  CHECK(problem(scalars(16, 0, Expr(1), Expr(30))) ==
        "x86.amx.dpbusd.tiles scalar k is 30: a's rows per product must be whole 4-byte words of at most 64 bytes");
  CHECK(problem(scalars(16, 0, Expr(1), Expr(68))) ==
        "x86.amx.dpbusd.tiles scalar k is 68: a's rows per product must be whole 4-byte words of at most 64 bytes");
  CHECK(problem(scalars(16, 0, Expr(1), Var("k"))) == "x86.amx.dpbusd.tiles scalar k is not a constant");
  AmxConvTile wide;
  wide.steps_s = 7;
  wide.cb = 16;  // 7 taps x 16 channels: 112 bytes, more than a tile row
  CHECK_THROWS_WITH(x86_amx_conv(wide),
                    Contains("or fold a kernel row's taps into one product (blocks of a multiple "
                             "of 4 channels, 2 or more taps, at most 64 channels x taps, dilation 1); got 16 "
                             "channels x 7 taps, dilation 1"));
  CHECK_THROWS_WITH(x86_amx_conv(AmxConvTile{2, 17}),
                    Contains("AMX convolution tiles cover 1 to 16 pixels per row with 2 row(s), got 17"));
  CHECK_THROWS_WITH(x86_amx_conv(AmxConvTile{3, 8}), Contains("AMX convolution tiles cover 1 or 2 output rows, got 3"));
}

TEST_CASE("tensorize: a target without the instruction's feature gets a message", "[tensorize][errors]") {
  BlockedMatmul m = blocked_matmul(2, 16, 4);
  Schedule s({m.C});
  schedule_plain(s, m, x86_vnni_dot_16x4());
  LoweredFunc f = lower(s, {m.A, m.Bp, m.C}, "f");
  const Target t = Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake-avx512");
  CHECK_FALSE(t.has_feature("avx512vnni"));
  CHECK(Target::parse("llvm -mtriple=x86_64-linux-gnu -mcpu=cascadelake").has_feature("avx512vnni"));
  CHECK_THROWS_WITH(emit_object({f}, t), Contains("x86.vpdpbusd.512 needs the CPU feature 'avx512vnni', which "
                                                     "target 'llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=skylake-avx512' "
                                                     "does not have"));
}
