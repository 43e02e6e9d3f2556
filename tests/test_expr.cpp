#include <catch2/catch.hpp>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/ir_functor.h"
#include "compute/tensor.h"

using namespace kiln;

TEST_CASE("constant folding and promotion", "[expr]") {
  Var x("x");
  Expr e = x * 1 + 0;
  CHECK(e.same_as(x));
  CHECK(is_const_int(Expr(3) * 4 + 2, 14));
  CHECK(is_const_int(floordiv(Expr(-7), Expr(2)), -4));
  CHECK(is_const_int(floormod(Expr(-7), Expr(2)), 1));
  CHECK(is_const_int(Expr(-7) / 2, -3));
  CHECK(is_const_int(Expr(-7) % 2, -1));
  Expr f = x + 1.5f;  // int var + float imm -> float
  CHECK(f.dtype() == DType::f32());
}

TEST_CASE("var identity is by object, not name", "[expr]") {
  Var a("v"), b("v");
  CHECK(!a.same_as(b));
  VarMap m{{a.node(), Expr(5)}};
  Expr e = substitute(a + b, m);
  CHECK(uses_var(e, b.node()));
  CHECK(!uses_var(e, a.node()));
}

TEST_CASE("tensor indexing with the wrong arity is a user error", "[expr][user_error]") {
  Tensor A = placeholder({4, 4}, DType::f32(), "A");
  CHECK_THROWS_WITH(A(Expr(1)), Catch::Contains("has 2 dimensions but is indexed with 1"));
}

TEST_CASE("compute builds axes and finds inputs", "[expr]") {
  Tensor A = placeholder({8, 16}, DType::f32(), "A");
  Tensor B = placeholder({16, 4}, DType::f32(), "B");
  IterVar k = reduce_axis(16, "k");
  Tensor C = compute(
      {8, 4}, [&](Var i, Var j) { return sum(A(i, k->var) * B(k->var, j), {k}); }, "C");
  auto* op = C->op.as<ComputeOpNode>();
  REQUIRE(op);
  CHECK(op->axis.size() == 2);
  CHECK(op->reduce_axis.size() == 1);
  CHECK(input_tensors(C->op).size() == 2);
  CHECK(post_dfs_order({C}).size() == 3);
}

TEST_CASE("a reduction nested in an expression is a user error", "[expr][user_error]") {
  Tensor A = placeholder({8}, DType::f32(), "A");
  IterVar k = reduce_axis(8, "k");
  CHECK_THROWS_AS(compute(
                      {1}, [&](Var) { return sum(A(k->var), {k}) + 1.0f; }, "bad"),
                  UserError);
}
