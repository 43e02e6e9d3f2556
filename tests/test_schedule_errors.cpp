// One test per schedule user error: each misuse gives a message in schedule
// terms (never a crash or an internal assertion).
#include <catch2/catch.hpp>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "schedule/lower.h"
#include "schedule/schedule.h"
#include "support/te_examples.h"

using namespace kiln;
using Catch::Contains;

namespace {

using Mm = kiln::testing::PlainMatmul;
using kiln::testing::plain_matmul;

}  // namespace

TEST_CASE("split of an axis that is no longer a leaf", "[schedule][user_error]") {
  Mm m = plain_matmul();
  Schedule s({m.C});
  IterVar i = s[m.C].axis()[0], o, in;
  s[m.C].split(i, 4, &o, &in);
  CHECK_THROWS_WITH(s[m.C].split(i, 2, &o, &in), Contains("axis 'C.i' of stage 'C' is not a leaf axis"));
}

TEST_CASE("split of another stage's axis", "[schedule][user_error]") {
  Mm m = plain_matmul();
  Tensor D = compute(
      {16, 16}, [&](Var i, Var j) { return m.C(i, j) * 2.0f; }, "D");
  Schedule s({D});
  IterVar o, in;
  CHECK_THROWS_WITH(s[D].split(s[m.C].axis()[0], 4, &o, &in), Contains("does not belong to stage 'D'"));
}

TEST_CASE("split factor must be positive", "[schedule][user_error]") {
  Mm m = plain_matmul();
  Schedule s({m.C});
  IterVar o, in;
  CHECK_THROWS_WITH(s[m.C].split(s[m.C].axis()[0], 0, &o, &in), Contains("must be positive, got 0"));
  CHECK_THROWS_WITH(s[m.C].split_nparts(s[m.C].axis()[0], -2, &o, &in), Contains("must be positive, got -2"));
}

TEST_CASE("fuse of non-adjacent axes", "[schedule][user_error]") {
  Mm m = plain_matmul();
  Schedule s({m.C});
  auto ax = s[m.C].axis();
  CHECK_THROWS_WITH(s[m.C].fuse(ax[1], ax[0]), Contains("must be adjacent, outer first"));
}

TEST_CASE("fuse of a reduction with a data-parallel axis", "[schedule][user_error]") {
  Mm m = plain_matmul();
  Schedule s({m.C});
  CHECK_THROWS_WITH(s[m.C].fuse(s[m.C].axis()[1], m.k), Contains("cannot fuse reduction and data-parallel axes"));
}

TEST_CASE("reorder naming an axis twice", "[schedule][user_error]") {
  Mm m = plain_matmul();
  Schedule s({m.C});
  auto ax = s[m.C].axis();
  CHECK_THROWS_WITH(s[m.C].reorder({ax[0], ax[0]}), Contains("appears twice"));
}

TEST_CASE("vectorize a reduction axis", "[schedule][user_error]") {
  Mm m = plain_matmul();
  Schedule s({m.C});
  CHECK_THROWS_WITH(s[m.C].vectorize(m.k), Contains("'k' of stage 'C' is a reduction axis; vectorize a data-parallel"));
}

TEST_CASE("parallel over a reduction axis", "[schedule][user_error]") {
  Mm m = plain_matmul();
  Schedule s({m.C});
  CHECK_THROWS_WITH(s[m.C].parallel(m.k), Contains("is a reduction axis; its iterations depend on each other"));
}

TEST_CASE("compute_at a stage at itself", "[schedule][user_error]") {
  Mm m = plain_matmul();
  Tensor D = compute(
      {16, 16}, [&](Var i, Var j) { return m.C(i, j) + 1.0f; }, "D");
  Schedule s({D});
  CHECK_THROWS_WITH(s[m.C].compute_at(s[m.C], s[m.C].axis()[0]), Contains("cannot be computed at itself"));
}

TEST_CASE("compute_at an output", "[schedule][user_error]") {
  Mm m = plain_matmul();
  Tensor D = compute(
      {16, 16}, [&](Var i, Var j) { return m.C(i, j) + 1.0f; }, "D");
  Schedule s({D});
  CHECK_THROWS_WITH(s[D].compute_at(s[m.C], s[m.C].axis()[0]), Contains("'D' is an output of the schedule"));
}

TEST_CASE("compute_at a stage that does not enclose the consumer", "[schedule][user_error]") {
  Tensor A = placeholder({8}, DType::f32(), "A");
  Tensor P = compute(
      {8}, [&](Var i) { return A(i) * 2.0f; }, "P");
  Tensor Q = compute(
      {8}, [&](Var i) { return A(i) + 1.0f; }, "Q");
  Tensor R = compute(
      {8}, [&](Var i) { return P(i) + Q(i); }, "R");
  Schedule s({R});
  s[P].compute_at(s[Q], s[Q].axis()[0]);  // Q does not read P
  CHECK_THROWS_WITH(lower(s, {A, R}, "f"), Contains("its consumer 'R' is computed outside that loop"));
}

TEST_CASE("compute_at cycle", "[schedule][user_error]") {
  Tensor A = placeholder({8}, DType::f32(), "A");
  Tensor P = compute(
      {8}, [&](Var i) { return A(i) * 2.0f; }, "P");
  Tensor Q = compute(
      {8}, [&](Var i) { return P(i) + 1.0f; }, "Q");
  Tensor R = compute(
      {8}, [&](Var i) { return Q(i) + 1.0f; }, "R");
  Schedule s({R});
  s[P].compute_at(s[Q], s[Q].axis()[0]);
  s[Q].compute_at(s[P], s[P].axis()[0]);
  CHECK_THROWS_WITH(lower(s, {A, R}, "f"), Contains("a cycle"));
}

TEST_CASE("compute_at an inlined stage", "[schedule][user_error]") {
  Tensor A = placeholder({8}, DType::f32(), "A");
  Tensor P = compute(
      {8}, [&](Var i) { return A(i) * 2.0f; }, "P");
  Tensor Q = compute(
      {8}, [&](Var i) { return P(i) + 1.0f; }, "Q");
  Tensor R = compute(
      {8}, [&](Var i) { return Q(i) + 1.0f; }, "R");
  Schedule s({R});
  s[P].compute_at(s[Q], s[Q].axis()[0]);
  s[Q].compute_inline();
  CHECK_THROWS_WITH(lower(s, {A, R}, "f"), Contains("which is inlined and has no loops"));
}

TEST_CASE("compute_at axis split afterwards", "[schedule][user_error]") {
  Tensor A = placeholder({8}, DType::f32(), "A");
  Tensor P = compute(
      {8}, [&](Var i) { return A(i) * 2.0f; }, "P");
  Tensor R = compute(
      {8}, [&](Var i) { return P(i) + 1.0f; }, "R");
  Schedule s({R});
  IterVar i = s[R].axis()[0], o, in;
  s[P].compute_at(s[R], i);
  s[R].split(i, 2, &o, &in);
  CHECK_THROWS_WITH(lower(s, {A, R}, "f"), Contains("is no longer a leaf of stage 'R'"));
}

TEST_CASE("compute_inline a reduction", "[schedule][user_error]") {
  Mm m = plain_matmul();
  Tensor D = compute(
      {16, 16}, [&](Var i, Var j) { return m.C(i, j) + 1.0f; }, "D");
  Schedule s({D});
  CHECK_THROWS_WITH(s[m.C].compute_inline(), Contains("'C' is a reduction; only element-wise stages can be inlined"));
}

TEST_CASE("compute_inline an output", "[schedule][user_error]") {
  Tensor A = placeholder({8}, DType::f32(), "A");
  Tensor R = compute(
      {8}, [&](Var i) { return A(i) + 1.0f; }, "R");
  Schedule s({R});
  CHECK_THROWS_WITH(s[R].compute_inline(), Contains("'R' is an output of the schedule"));
}

TEST_CASE("primitives on a placeholder", "[schedule][user_error]") {
  Mm m = plain_matmul();
  Schedule s({m.C});
  CHECK_THROWS_WITH(s[m.A].compute_root(), Contains("'A' is an input placeholder and has no loops"));
}

TEST_CASE("storage_align arguments", "[schedule][user_error]") {
  Mm m = plain_matmul();
  Schedule s({m.C});
  CHECK_THROWS_WITH(s[m.C].storage_align(5, 16, 0), Contains("has 2 dimensions, axis 5 is out of range"));
  CHECK_THROWS_WITH(s[m.C].storage_align(0, 16, 16), Contains("need factor > 0 and 0 <= offset < factor"));
}

TEST_CASE("bind to an unknown thread tag", "[schedule][user_error]") {
  Mm m = plain_matmul();
  Schedule s({m.C});
  CHECK_THROWS_WITH(s[m.C].bind(s[m.C].axis()[0], "warpIdx.x"), Contains("unknown thread tag 'warpIdx.x'"));
}

TEST_CASE("cache_write after other primitives", "[schedule][user_error]") {
  Mm m = plain_matmul();
  Schedule s({m.C});
  IterVar o, in;
  s[m.C].split(s[m.C].axis()[0], 4, &o, &in);
  CHECK_THROWS_WITH(s.cache_write(m.C, MemScope::kLocal), Contains("before any other primitive"));
}

TEST_CASE("cache_read for a stage that does not read the tensor", "[schedule][user_error]") {
  Mm m = plain_matmul();
  Tensor D = compute(
      {16, 16}, [&](Var i, Var j) { return m.C(i, j) + 1.0f; }, "D");
  Schedule s({D});
  CHECK_THROWS_WITH(s.cache_read(m.A, MemScope::kShared, {D->op}), Contains("'D' does not read 'A'"));
}

TEST_CASE("rfactor of a data-parallel axis", "[schedule][user_error]") {
  Mm m = plain_matmul();
  Schedule s({m.C});
  CHECK_THROWS_WITH(s.rfactor(m.C, s[m.C].axis()[0]), Contains("is not a reduction axis"));
}

TEST_CASE("rfactor of an axis not produced by a split", "[schedule][user_error]") {
  Mm m = plain_matmul();
  Schedule s({m.C});
  CHECK_THROWS_WITH(s.rfactor(m.C, m.k), Contains("must come from splitting a reduction axis"));
}

TEST_CASE("lower with an input missing from the arguments", "[schedule][user_error]") {
  Mm m = plain_matmul();
  Schedule s({m.C});
  CHECK_THROWS_WITH(lower(s, {m.A, m.C}, "f"), Contains("input 'B' is read but is not among the function's arguments"));
}

TEST_CASE("lower without the output among the arguments", "[schedule][user_error]") {
  Mm m = plain_matmul();
  Schedule s({m.C});
  CHECK_THROWS_WITH(lower(s, {m.A, m.B}, "f"), Contains("output 'C' is not among the function's arguments"));
}
