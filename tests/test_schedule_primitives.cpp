// Each schedule primitive lowered, compiled and checked against the
// reference interpreter (the random-schedule property tests cover split,
// fuse, reorder, annotations, inline/root/compute_at and cache_write).
#include <catch2/catch.hpp>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/printer.h"
#include "support/kernel_check.h"
#include "support/te_examples.h"

using namespace kiln;
using Catch::Contains;
using kiln::testing::check_schedule;

namespace {

using Mm = kiln::testing::PlainMatmul;
using kiln::testing::plain_matmul;

}  // namespace

TEST_CASE("rfactor of a split reduction", "[schedule][primitive]") {
  for (int factored_inner = 0; factored_inner < 2; ++factored_inner) {
    Mm m = plain_matmul(5, 7, 13);  // 13 = not a multiple of the factor
    Schedule s({m.C});
    IterVar ko, ki;
    s[m.C].split(m.k, 4, &ko, &ki);
    Tensor rf = s.rfactor(m.C, factored_inner ? ki : ko);
    s[rf].parallel(s[rf].axis()[0]);
    INFO("factored " << (factored_inner ? "inner" : "outer"));
    CHECK(check_schedule(s, {m.A, m.B}, {m.A, m.B, m.C}, {m.C}, 3) == "");
  }
}

TEST_CASE("rfactor of a reduction that another stage reads", "[schedule][primitive]") {
  // Found by the random schedules (test_lowering_property.cpp): rfactor
  // gave the new axes i64 extents; once the consumer's reduction over the
  // factored axis is split, the factored stage's loop over the region it
  // reads gets an i64 extent on an i32 var (an internal error).
  for (int factored_inner = 0; factored_inner < 2; ++factored_inner) {
    Mm m = plain_matmul(3, 4, 13);
    Tensor D = compute(
        {3, 4}, [&](Var i, Var j) { return m.C(i, j) + 1.0f; }, "D");
    Schedule s({D});
    IterVar ko, ki;
    s[m.C].split(m.k, 5, &ko, &ki);
    s.rfactor(m.C, factored_inner ? ki : ko);
    IterVar vo, vi;
    s[m.C].split(s[m.C].reduce_axis()[0], 2, &vo, &vi);  // C now sums the factored axis
    INFO("factored " << (factored_inner ? "inner" : "outer"));
    CHECK(check_schedule(s, {m.A, m.B}, {m.A, m.B, D}, {D}, 3) == "");
  }
}

TEST_CASE("cache_write of a reduction after rfactor", "[schedule][primitive]") {
  // Found by the random schedules (seed 1000: "rfactor(C, split(k, 8).inner)
  // cache_write(C)"): the op rfactor made was freed when cache_write replaced
  // it while cache_write still read it ("'B' is not part of this schedule",
  // std::bad_alloc or a crash).
  for (int factored_inner = 0; factored_inner < 2; ++factored_inner) {
    Mm m = plain_matmul(5, 7, 13);
    Schedule s({m.C});
    IterVar ko, ki;
    s[m.C].split(m.k, 8, &ko, &ki);
    s.rfactor(m.C, factored_inner ? ki : ko);
    s.cache_write(m.C, MemScope::kLocal);
    INFO("factored " << (factored_inner ? "inner" : "outer"));
    CHECK(check_schedule(s, {m.A, m.B}, {m.A, m.B, m.C}, {m.C}, 4) == "");
  }
}

TEST_CASE("rfactor of a max reduction with a condition", "[schedule][primitive]") {
  Tensor A = placeholder({6, 11}, DType::f32(), "A");
  IterVar k = reduce_axis(11, "k");
  Tensor M = compute(
      {6}, [&](Var i) { return max_reduce(A(i, k->var), {k}, k->var % 3 != 1); }, "M");
  Schedule s({M});
  IterVar ko, ki;
  s[M].split(k, 3, &ko, &ki);
  s.rfactor(M, ki);
  CHECK(check_schedule(s, {A}, {A, M}, {M}, 5) == "");
}

TEST_CASE("cache_read into local memory at a consumer loop", "[schedule][primitive]") {
  Mm m = plain_matmul(9, 10, 6);
  Schedule s({m.C});
  Tensor AL = s.cache_read(m.A, MemScope::kLocal, {m.C->op});
  IterVar io, ii;
  s[m.C].split(s[m.C].axis()[0], 4, &io, &ii);
  s[AL].compute_at(s[m.C], io);
  std::string ir;
  CHECK(check_schedule(s, {m.A, m.B}, {m.A, m.B, m.C}, {m.C}, 4, &ir) == "");
  CHECK_THAT(ir, Contains("@local"));
}

TEST_CASE("storage_align pads the row pitch", "[schedule][primitive]") {
  Tensor A = placeholder({8, 10}, DType::f32(), "A");
  Tensor T = compute(
      {8, 10}, [&](Var i, Var j) { return A(i, j) * 2.0f; }, "T");
  Tensor O = compute(
      {8, 10}, [&](Var i, Var j) { return T(i, j) + T(7 - i, j); }, "O");
  Schedule s({O});
  s[T].storage_align(0, 16, 3);  // pitch of dim 0 becomes 19 (19 % 16 == 3)
  std::string ir;
  CHECK(check_schedule(s, {A}, {A, O}, {O}, 6, &ir) == "");
  CHECK_THAT(ir, Contains("T[f32 * 152]"));  // 8 rows of pitch 19
}

TEST_CASE("a stage read through fused axes gets the consumer's exact region", "[schedule][primitive]") {
  // out[i, j] = T[i * 12 + j]: with out's axes fused and split by 16, each
  // step reads 16 consecutive elements of T ((f / 12) * 12 + f % 12 is f),
  // not the whole rows of 12 that each part's interval would cover.
  Tensor A = placeholder({96}, DType::f32(), "A");
  Tensor T = compute({96}, [&](Var i) { return A(i) * 2.0f; }, "T");
  Tensor O = compute({8, 12}, [&](Var i, Var j) { return T(i * 12 + j) + 1.0f; }, "O");
  Schedule s({O});
  IterVar f = s[O].fuse(s[O].axis()[0], s[O].axis()[1]), fo, fi;
  s[O].split(f, 16, &fo, &fi);
  s[T].compute_at(s[O], fo);
  std::string ir;
  CHECK(check_schedule(s, {A}, {A, O}, {O}, 7, &ir) == "");
  CHECK_THAT(ir, Contains("T[f32 * 16]"));
}

TEST_CASE("a stage read through three axes fused in two levels gets the consumer's exact region",
          "[schedule][primitive]") {
  // out[n, h, w] = T[n * 25 + h * 5 + w] (the wgmma convolution's output
  // reading its staging tile), fused as (n, (h, w)) into 125 positions,
  // split into 16-row steps and the steps into blocks of four: each block
  // reads 64 consecutive elements of T, not the whole images of 25 that a
  // substitution of all the fused parts at once left to the interval
  // (bound.cpp: index_over_leaves). The last block has a tail.
  Tensor A = placeholder({125}, DType::f32(), "A");
  Tensor T = compute(
      {125}, [&](Var i) { return A(i) * 2.0f; }, "T");
  Tensor O = compute(
      {5, 5, 5}, [&](Var n, Var h, Var w) { return T(n * 25 + h * 5 + w) + 1.0f; }, "O");
  Schedule s({O});
  IterVar f = s[O].fuse(s[O].axis()[0], s[O].fuse(s[O].axis()[1], s[O].axis()[2])), steps, row, fo, fi;
  s[O].split(f, 16, &steps, &row);
  s[O].split(steps, 4, &fo, &fi);
  s[T].compute_at(s[O], fo);
  std::string ir;
  CHECK(check_schedule(s, {A}, {A, O}, {O}, 7, &ir) == "");
  CHECK_THAT(ir, Contains("T[f32 * 64]"));
}

TEST_CASE("pragma annotates the loop", "[schedule][primitive]") {
  Mm m = plain_matmul(4, 4, 4);
  Schedule s({m.C});
  s[m.C].pragma(s[m.C].axis()[0], "auto_unroll_max_step", 16);
  std::string ir;
  CHECK(check_schedule(s, {m.A, m.B}, {m.A, m.B, m.C}, {m.C}, 7, &ir) == "");
  CHECK_THAT(ir, Contains("pragma_auto_unroll_max_step"));
}

TEST_CASE("compute_root materializes an intermediate", "[schedule][primitive]") {
  Tensor A = placeholder({7, 5}, DType::f32(), "A");
  Tensor T = compute(
      {7, 5}, [&](Var i, Var j) { return exp(A(i, j)); }, "T");
  Tensor O = compute(
      {7, 5}, [&](Var i, Var j) { return T(i, j) * T(6 - i, 4 - j); }, "O");
  Schedule s({O});
  s[T].compute_at(s[O], s[O].axis()[0]);
  s[T].compute_root();
  std::string ir;
  CHECK(check_schedule(s, {A}, {A, O}, {O}, 8, &ir) == "");
  CHECK_THAT(ir, Contains("allocate T[f32 * 35]"));
}

TEST_CASE("GPU thread binding lowers but needs a cuda target to compile", "[schedule][primitive][user_error]") {
  Tensor A = placeholder({64}, DType::f32(), "A");
  Tensor O = compute(
      {64}, [&](Var i) { return A(i) + 1.0f; }, "O");
  Schedule s({O});
  IterVar bx, tx;
  s[O].split(s[O].axis()[0], 32, &bx, &tx);
  s[O].bind(bx, "blockIdx.x");
  s[O].bind(tx, "threadIdx.x");
  LoweredFunc f = lower(s, {A, O}, "gpu_kernel");
  CHECK_THAT(to_string(f), Contains("thread_binding"));
  CHECK_THROWS_WITH(JitModule::compile({f}, Target::host()), Contains("cuda"));
}

TEST_CASE("multi-stage pipeline: padding into a convolution, matmul with bias and relu", "[schedule][primitive]") {
  Tensor X = placeholder({1, 2, 5, 5}, DType::f32(), "X");
  Tensor W = placeholder({3, 2, 3, 3}, DType::f32(), "W");
  Tensor P = compute(
      {1, 2, 7, 7},
      [&](const std::vector<Var>& v) {
        Expr in = v[2] >= 1 && v[2] < 6 && v[3] >= 1 && v[3] < 6;
        return select(in, X(v[0], v[1], max(v[2] - 1, 0), max(v[3] - 1, 0)), 0.0f);
      },
      "P");
  IterVar rc = reduce_axis(2, "rc"), rr = reduce_axis(3, "rr"), rs = reduce_axis(3, "rs");
  Tensor Y = compute(
      {1, 3, 5, 5},
      [&](const std::vector<Var>& v) {
        return sum(P(v[0], rc->var, v[2] + rr->var, v[3] + rs->var) * W(v[1], rc->var, rr->var, rs->var), {rc, rr, rs});
      },
      "Y");
  Schedule s({Y});
  s[P].compute_at(s[Y], s[Y].axis()[2]);
  CHECK(check_schedule(s, {X, W}, {X, W, Y}, {Y}, 9) == "");
}
