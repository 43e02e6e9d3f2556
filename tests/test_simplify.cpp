// Tests for the arithmetic analyzer and simplifier (compute/analyzer.h,
// compute/simplify.h): one check per rule, a randomized equivalence check on
// bounded affine expressions, and statement simplification.
#include <catch2/catch.hpp>
#include <random>
#include <unordered_map>

#include "compute/analyzer.h"
#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/printer.h"
#include "compute/simplify.h"

using namespace kiln;

namespace {

// Raw node builders: the operators in expr_ops.h fold, which would hide what
// the simplifier does.
Expr add(Expr a, Expr b) { return AddNode::make(a, b); }
Expr sub(Expr a, Expr b) { return SubNode::make(a, b); }
Expr mul(Expr a, Expr b) { return MulNode::make(a, b); }
Expr fdiv(Expr a, Expr b) { return FloorDivNode::make(a, b); }
Expr fmod(Expr a, Expr b) { return FloorModNode::make(a, b); }
Expr i32(int64_t v) { return make_const(DType::i32(), v); }

std::string simp(Analyzer& an, const Expr& e) { return to_string(an.simplify(e)); }

}  // namespace

TEST_CASE("simplify: constant folding", "[simplify]") {
  Analyzer an;
  CHECK(simp(an, add(i32(3), mul(i32(4), i32(5)))) == "23");
  CHECK(simp(an, fdiv(i32(-7), i32(2))) == "-4");
  CHECK(simp(an, fmod(i32(-7), i32(2))) == "1");
  CHECK(simp(an, DivNode::make(i32(-7), i32(2))) == "-3");
  CHECK(simp(an, ModNode::make(i32(-7), i32(2))) == "-1");
  CHECK(simp(an, MinNode::make(i32(3), i32(-2))) == "-2");
  // A signed result the type cannot hold is not folded (the simplifier never
  // wraps); the backends wrap data arithmetic when they compute it.
  Expr a8 = make_const(DType::i8(), int64_t{100});
  CHECK(simp(an, add(a8, a8)) == "(100i8 + 100i8)");
  CHECK(simp(an, add(a8, make_const(DType::i8(), int64_t{27}))) == "127i8");
  Expr big = i32(1 << 30);
  CHECK(simp(an, mul(big, i32(2))) == "(1073741824*2)");
  CHECK(simp(an, sub(i32(INT32_MIN), i32(1))) == "(-2147483648 - 1)");
  Expr b64 = make_const(DType::i64(), int64_t{1} << 62);
  CHECK(simp(an, mul(b64, make_const(DType::i64(), int64_t{4}))) == "(4611686018427387904i64*4i64)");
  CHECK(simp(an, DivNode::make(make_const(DType::i64(), INT64_MIN), make_const(DType::i64(), int64_t{-1}))).find("/") !=
        std::string::npos);
  // Unsigned arithmetic is modular by definition and folds.
  Expr u = make_const(DType::u8(), int64_t{250});
  CHECK(simp(an, add(u, make_const(DType::u8(), int64_t{10}))) == "4u8");
  CHECK(simp(an, LTNode::make(make_const(DType::u8(), int64_t{3}), u)) == "true");
  // f32 folds in float precision, f64 in double.
  Expr f = an.simplify(add(Expr(0.1f), Expr(0.2f)));
  REQUIRE(f.as<FloatImmNode>());
  CHECK(f.as<FloatImmNode>()->value == static_cast<double>(0.1f + 0.2f));
  CHECK(an.simplify(add(Expr(0.1), Expr(0.2))).as<FloatImmNode>()->value == 0.1 + 0.2);
  CHECK(simp(an, cast(DType::i32(), Var("x", DType::f32()))) == "i32(x)");
  CHECK(simp(an, CastNode::make(DType::i32(), Expr(-2.7f))) == "-2");
  CHECK(simp(an, CastNode::make(DType::u8(), i32(300))) == "44u8");
  CHECK(simp(an, CastNode::make(DType::f32(), i32(3))) == "3f");
  CHECK(simp(an, LTNode::make(Expr(1.5f), Expr(2.5f))) == "true");
}

TEST_CASE("simplify: canonical sums of products", "[simplify]") {
  Analyzer an;
  Var i("i"), j("j"), x("x"), y("y");
  CHECK(simp(an, sub(add(mul(i, i32(16)), j), mul(i, i32(16)))) == "j");
  CHECK(simp(an, add(add(x, i32(3)), sub(y, i32(3)))) == "(x + y)");
  CHECK(simp(an, mul(add(x, i32(2)), i32(4))) == "((x*4) + 8)");
  CHECK(simp(an, mul(i32(16), i)) == "(i*16)");
  CHECK(simp(an, sub(x, x)) == "0");
  CHECK(simp(an, mul(x, i32(0))) == "0");
  CHECK(simp(an, add(x, i32(0))) == "x");
  CHECK(simp(an, mul(x, i32(1))) == "x");
  CHECK(simp(an, sub(i32(16), i)) == "(16 - i)");
  CHECK(simp(an, sub(sub(x, y), x)) == "(y*-1)");
  CHECK(simp(an, add(sub(x, y), add(y, y))) == "(x + y)");
  CHECK(simp(an, sub(add(x, i32(1)), i32(5))) == "(x - 4)");
  // Products of non-constants are atoms and still collect.
  CHECK(simp(an, sub(add(mul(x, y), mul(x, y)), mul(x, y))) == "(x*y)");
  // A coefficient that would wrap leaves the expression as it was.
  CHECK(simp(an, mul(mul(x, i32(65536)), i32(65536))) == "((x*65536)*65536)");
  CHECK(simp(an, fdiv(mul(mul(x, i32(65536)), i32(65536)), i32(4))) == "floordiv(((x*65536)*65536), 4)");
  // Unsigned: identities only.
  Var u("u", DType(DType::kUInt, 32));
  CHECK(simp(an, add(u, make_const(DType(DType::kUInt, 32), int64_t{0}))) == "u");
  CHECK(simp(an, sub(u, u)) == "0u32");
}

TEST_CASE("simplify: floordiv and floormod", "[simplify]") {
  Analyzer an;
  Var i("i"), j("j"), k("k"), x("x"), f("f"), n("n");
  an.bind(j, Range(0, 16));
  an.bind(k, Range(0, 4));
  an.bind(f, Range(0, 64));
  an.bind(n, Range(-8, 16));
  Expr ij = add(mul(i, i32(16)), j);
  CHECK(simp(an, fdiv(ij, i32(16))) == "i");
  CHECK(simp(an, fmod(ij, i32(16))) == "j");
  CHECK(simp(an, fdiv(add(ij, i32(32)), i32(16))) == "(i + 2)");
  CHECK(simp(an, fmod(add(ij, i32(35)), i32(16))) == "floormod((j + 3), 16)");
  CHECK(simp(an, fmod(j, i32(16))) == "j");
  CHECK(simp(an, fdiv(j, i32(16))) == "0");
  CHECK(simp(an, fdiv(add(j, i32(16)), i32(16))) == "1");
  CHECK(simp(an, fmod(add(j, i32(16)), i32(16))) == "j");
  CHECK(simp(an, fdiv(x, i32(16))) == "floordiv(x, 16)");
  CHECK(simp(an, fdiv(n, i32(16))) == "floordiv(n, 16)");  // n may be negative
  // Nested floordiv by positive constants.
  CHECK(simp(an, fdiv(fdiv(x, i32(4)), i32(8))) == "floordiv(x, 32)");
  CHECK(simp(an, fmod(fmod(x, i32(32)), i32(8))) == "floormod(x, 8)");
  // Split by a common factor: (i*16 + k*4 + ...) with small remainders.
  Var k2("k2");
  an.bind(k2, Range(0, 4));
  CHECK(simp(an, fdiv(add(mul(i, i32(16)), add(mul(k, i32(4)), k2)), i32(64))) == "floordiv(i, 4)");
  CHECK(simp(an, fmod(add(mul(i, i32(16)), add(mul(k, i32(4)), k2)), i32(64))) ==
        "(((floormod(i, 4)*16) + (k*4)) + k2)");
  // j*4 + k reaches 63: only the k part splits off.
  CHECK(simp(an, fdiv(add(mul(i, i32(16)), add(mul(j, i32(4)), k)), i32(64))) == "floordiv(((i*4) + j), 16)");
  CHECK(simp(an, fdiv(add(mul(x, i32(8)), k), i32(16))) == "floordiv(x, 2)");
  // Fused loops: floordiv(f, 16)*16 + floormod(f, 16) -> f.
  CHECK(simp(an, add(mul(fdiv(f, i32(16)), i32(16)), fmod(f, i32(16)))) == "f");
  CHECK(simp(an, add(mul(fdiv(x, i32(3)), i32(6)), mul(fmod(x, i32(3)), i32(2)))) == "(x*2)");
  // Three axes fused in two levels, (n, (h, w)) with h*w = 25, w = 5: the
  // inner pair reads floormod(x, 25) whose floormod by 5 was folded to
  // floormod(x, 5); it still recombines, then with the outer pair.
  const Expr hw = fmod(x, i32(25));
  CHECK(simp(an, add(mul(fdiv(hw, i32(5)), i32(5)), fmod(hw, i32(5)))) == "floormod(x, 25)");
  CHECK(simp(an, add(add(mul(fdiv(x, i32(25)), i32(25)), mul(fdiv(hw, i32(5)), i32(5))), fmod(hw, i32(5)))) == "x");
  // Scaled by a common coefficient (3 * the pair).
  CHECK(simp(an, add(mul(fdiv(hw, i32(5)), i32(15)), mul(fmod(hw, i32(5)), i32(3)))) == "(floormod(x, 25)*3)");
  // Not where 5 does not divide the outer modulus (floormod(x, 7) % 5 is not x % 5).
  const Expr h7 = fmod(x, i32(7));
  CHECK(simp(an, add(mul(fdiv(h7, i32(5)), i32(5)), fmod(x, i32(5)))) ==
        "((floordiv(floormod(x, 7), 5)*5) + floormod(x, 5))");
  // Modular set decides the remainder.
  CHECK(simp(an, fmod(add(mul(x, i32(8)), i32(4)), i32(4))) == "0");
  // Truncating division of a provably non-negative value follows the floor rules.
  Expr fj = add(mul(f, i32(16)), j);
  CHECK(simp(an, DivNode::make(fj, i32(16))) == "f");
  CHECK(simp(an, ModNode::make(fj, i32(16))) == "j");
  CHECK(simp(an, DivNode::make(ij, i32(16))) == "(((i*16) + j) / 16)");  // i may be negative
  CHECK(simp(an, add(mul(DivNode::make(x, i32(4)), i32(4)), ModNode::make(x, i32(4)))) == "x");
}

TEST_CASE("simplify: min, max, comparisons, select, logic", "[simplify]") {
  Analyzer an;
  Var i("i"), j("j"), x("x"), y("y");
  an.bind(i, Range(0, 16));
  an.bind(j, Range(0, 16));
  CHECK(simp(an, MinNode::make(i, i32(16))) == "i");
  CHECK(simp(an, MaxNode::make(i, i32(16))) == "16");
  CHECK(simp(an, MaxNode::make(i, i32(-1))) == "i");
  CHECK(simp(an, MinNode::make(i, i32(8))) == "min(i, 8)");
  CHECK(simp(an, MinNode::make(add(x, i32(4)), add(x, i32(8)))) == "(x + 4)");
  CHECK(simp(an, MaxNode::make(add(x, i32(4)), add(x, i32(8)))) == "(x + 8)");
  CHECK(simp(an, MaxNode::make(x, x)) == "x");
  CHECK(simp(an, MinNode::make(MinNode::make(x, i32(8)), i32(4))) == "min(x, 4)");

  CHECK(simp(an, LTNode::make(i, i32(16))) == "true");
  CHECK(simp(an, GENode::make(i, i32(16))) == "false");
  CHECK(simp(an, LTNode::make(add(mul(i, i32(16)), j), i32(256))) == "true");
  CHECK(simp(an, LTNode::make(add(mul(i, i32(16)), j), i32(100))) == "(((i*16) + j) < 100)");
  CHECK(simp(an, EQNode::make(i, i32(17))) == "false");
  CHECK(simp(an, NENode::make(i, i32(17))) == "true");
  CHECK(simp(an, EQNode::make(mul(x, i32(4)), i32(2))) == "false");  // modular set: 4x != 2
  CHECK(simp(an, LTNode::make(x, add(x, i32(1)))) == "true");
  CHECK(simp(an, LENode::make(add(x, i32(1)), x)) == "false");
  CHECK(simp(an, EQNode::make(add(x, y), add(y, x))) == "true");
  CHECK(an.can_prove(GENode::make(add(mul(i, i32(16)), j), i32(0))));
  CHECK(!an.can_prove(LTNode::make(x, i32(3))));

  Expr fx = Var("fx", DType::f32());
  CHECK(simp(an, SelectNode::make(LTNode::make(i, i32(16)), fx, Expr(0.0f))) == "fx");
  CHECK(simp(an, SelectNode::make(LTNode::make(x, i32(3)), fx, fx)) == "fx");
  CHECK(simp(an, SelectNode::make(LTNode::make(x, i32(3)), fx, Expr(0.0f))) == "select((x < 3), fx, 0f)");

  Expr c = LTNode::make(x, y);
  Expr t = make_const(DType::boolean(), int64_t{1}), f = make_const(DType::boolean(), int64_t{0});
  CHECK(simp(an, AndNode::make(c, t)) == "(x < y)");
  CHECK(simp(an, AndNode::make(c, f)) == "false");
  CHECK(simp(an, OrNode::make(c, t)) == "true");
  CHECK(simp(an, OrNode::make(f, c)) == "(x < y)");
  CHECK(simp(an, NotNode::make(t)) == "false");
  CHECK(simp(an, NotNode::make(NotNode::make(c))) == "(x < y)");
  CHECK(simp(an, NotNode::make(c)) == "(x >= y)");
  CHECK(simp(an, AndNode::make(LTNode::make(i, i32(16)), c)) == "(x < y)");
}

TEST_CASE("simplify: floating point is only folded exactly", "[simplify]") {
  Analyzer an;
  Var x("x", DType::f32());
  CHECK(simp(an, mul(x, Expr(1.0f))) == "x");
  CHECK(simp(an, add(x, Expr(-0.0f))) == "x");
  CHECK(simp(an, sub(x, Expr(0.0f))) == "x");
  CHECK(simp(an, add(x, Expr(0.0f))) == "(x + 0f)");  // -0 + 0 is +0
  CHECK(simp(an, mul(x, Expr(0.0f))) == "(x*0f)");    // NaN, inf, -0
  CHECK(simp(an, sub(x, x)) == "(x - x)");
  CHECK(simp(an, add(add(x, Expr(1.0f)), Expr(2.0f))) == "((x + 1f) + 2f)");  // not reassociated
  CHECK(simp(an, mul(Expr(1.5f), Expr(2.0f))) == "3f");
}

TEST_CASE("simplify: vectors", "[simplify]") {
  Analyzer an;
  Var i("i"), a("a"), b("b");
  an.bind(i, Range(0, 8));
  auto bc = [](Expr v) { return BroadcastNode::make(v, 16); };
  Expr r = RampNode::make(a, i32(1), 16);
  CHECK(simp(an, add(r, bc(b))) == "ramp((a + b), 1, 16)");
  CHECK(simp(an, add(bc(b), r)) == "ramp((b + a), 1, 16)");
  CHECK(simp(an, sub(r, bc(a))) == "ramp(0, 1, 16)");
  CHECK(simp(an, add(r, RampNode::make(b, i32(2), 16))) == "ramp((a + b), 3, 16)");
  CHECK(simp(an, mul(r, bc(i32(4)))) == "ramp((a*4), 4, 16)");
  CHECK(simp(an, sub(r, r)) == "x16(0)");
  CHECK(simp(an, add(bc(a), bc(i32(2)))) == "x16((a + 2))");
  Expr ri = RampNode::make(mul(i, i32(16)), i32(1), 16);
  CHECK(simp(an, fdiv(ri, bc(i32(16)))) == "x16(i)");
  CHECK(simp(an, fmod(ri, bc(i32(16)))) == "ramp(0, 1, 16)");
  CHECK(simp(an, fdiv(RampNode::make(mul(i, i32(32)), i32(16), 16), bc(i32(16)))) == "ramp((i*2), 1, 16)");
  CHECK(simp(an, fmod(RampNode::make(mul(i, i32(32)), i32(16), 16), bc(i32(16)))) == "x16(0)");
  CHECK(simp(an, fdiv(RampNode::make(a, i32(1), 16), bc(i32(16)))) == "floordiv(ramp(a, 1, 16), x16(16))");
  // The flattened index of a vectorized inner loop: x16(i*16) + ramp(0,1,16) -> ramp(i*16, 1, 16).
  Expr flat = add(bc(mul(i, i32(16))), RampNode::make(i32(0), i32(1), 16));
  CHECK(simp(an, flat) == "ramp((i*16), 1, 16)");
  CHECK(simp(an, LTNode::make(ri, bc(i32(128)))) == "x16(true)");
  CHECK(simp(an, LTNode::make(ri, bc(i32(100)))) == "(ramp((i*16), 1, 16) < x16(100))");
  CHECK(simp(an, RampNode::make(a, i32(0), 4)) == "x4(a)");
  ConstIntBound rb = an.const_int_bound(ri);
  CHECK(rb.min_value == 0);
  CHECK(rb.max_value == 127);
}

TEST_CASE("analyzer: bounds, modular sets, bindings", "[simplify]") {
  Analyzer an;
  Var i("i"), j("j"), x("x"), t("t");
  an.bind(i, Range(0, 4));
  an.bind(j, Range(mul(i, i32(8)), i32(8)));  // j in [8i, 8i + 8)
  CHECK(an.const_int_bound(j) == ConstIntBound(0, 31));
  CHECK(an.const_int_bound(add(mul(i, i32(16)), j)) == ConstIntBound(0, 79));
  CHECK(an.const_int_bound(sub(i32(3), i)) == ConstIntBound(0, 3));
  CHECK(an.const_int_bound(fmod(x, i32(8))) == ConstIntBound(0, 7));
  CHECK(an.const_int_bound(fdiv(j, i32(8))) == ConstIntBound(0, 3));
  CHECK(an.const_int_bound(ModNode::make(x, i32(8))) == ConstIntBound(-7, 7));
  CHECK(an.const_int_bound(MinNode::make(i, j)) == ConstIntBound(0, 3));
  CHECK(an.const_int_bound(x) == ConstIntBound(INT32_MIN, INT32_MAX));
  CHECK(an.const_int_bound(Var("w", DType::i64())) == ConstIntBound::everything());
  CHECK(an.const_int_bound(Var("b", DType::u8())) == ConstIntBound(0, 255));
  CHECK(an.const_int_bound(LTNode::make(x, i)) == ConstIntBound(0, 1));

  CHECK(an.modular_set(add(mul(x, i32(8)), i32(4))) == ModularSet(8, 4));
  CHECK(an.modular_set(add(mul(x, i32(8)), i32(12))) == ModularSet(8, 4));
  CHECK(an.modular_set(add(mul(x, i32(8)), mul(i, i32(12)))) == ModularSet(4, 0));
  CHECK(an.modular_set(fdiv(mul(x, i32(8)), i32(2))) == ModularSet(4, 0));
  CHECK(an.modular_set(i32(7)) == ModularSet(0, 7));
  CHECK(an.modular_set(x) == ModularSet::everything());
  CHECK(an.modular_set(RampNode::make(mul(x, i32(16)), i32(1), 4)) == ModularSet(1, 0));
  CHECK(an.modular_set(RampNode::make(mul(x, i32(16)), i32(4), 4)) == ModularSet(4, 0));

  an.bind(t, add(mul(x, i32(16)), i32(4)));  // let t = x*16 + 4
  CHECK(an.modular_set(t) == ModularSet(16, 4));
  CHECK(simp(an, fmod(t, i32(4))) == "0");
  CHECK(simp(an, fmod(t, i32(8))) == "4");
  an.constrain(x, 0, 9);
  CHECK(an.const_int_bound(x) == ConstIntBound(0, 9));
  an.unbind(x);
  CHECK(an.const_int_bound(x) == ConstIntBound(INT32_MIN, INT32_MAX));
  {
    Analyzer::VarScope scope(&an, i);
    an.bind(i, Range(10, 1));
    CHECK(simp(an, add(i, i32(1))) == "11");
  }
  CHECK(an.const_int_bound(i) == ConstIntBound(0, 3));
  // An unchanged expression is returned as the same object.
  Expr e = add(mul(x, i32(16)), j);
  CHECK(an.simplify(e).same_as(e));
}

namespace {

// A tiny integer evaluator over the node kinds the random generator emits.
int64_t eval(const Expr& e, const std::unordered_map<const VarNode*, int64_t>& env) {
  if (auto* c = e.as<IntImmNode>()) return c->value;
  if (auto* v = e.as<VarNode>()) return env.at(v);
  if (auto* s = e.as<SelectNode>())
    return eval(s->condition, env) ? eval(s->true_value, env) : eval(s->false_value, env);
  if (auto* n = e.as<NotNode>()) return !eval(n->a, env);
  if (!is_binary_kind(e->kind())) throw std::runtime_error(std::string("unexpected node ") + node_kind_name(e->kind()));
  auto* op = static_cast<const BinaryNode*>(e.get());
  int64_t a = eval(op->a, env), b = eval(op->b, env);
  switch (e->kind()) {
    case NodeKind::Add:
      return a + b;
    case NodeKind::Sub:
      return a - b;
    case NodeKind::Mul:
      return a * b;
    case NodeKind::Div:
      return a / b;
    case NodeKind::Mod:
      return a % b;
    case NodeKind::FloorDiv:
      return floordiv_int(a, b);
    case NodeKind::FloorMod:
      return floormod_int(a, b);
    case NodeKind::Min:
      return std::min(a, b);
    case NodeKind::Max:
      return std::max(a, b);
    case NodeKind::EQ:
      return a == b;
    case NodeKind::NE:
      return a != b;
    case NodeKind::LT:
      return a < b;
    case NodeKind::LE:
      return a <= b;
    case NodeKind::GT:
      return a > b;
    case NodeKind::GE:
      return a >= b;
    case NodeKind::And:
      return a && b;
    case NodeKind::Or:
      return a || b;
    default:
      throw std::runtime_error(std::string("unexpected node ") + node_kind_name(e->kind()));
  }
}

struct RandomExprs {
  std::mt19937 rng{12345};
  std::vector<Var> vars;
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }
  int range(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

  Expr leaf() { return pick(3) ? Expr(vars[pick(static_cast<int>(vars.size()))]) : i32(range(-8, 8)); }

  Expr gen(int depth) {
    if (depth == 0) return leaf();
    switch (pick(12)) {
      case 0:
      case 1:
        return add(gen(depth - 1), gen(depth - 1));
      case 2:
        return sub(gen(depth - 1), gen(depth - 1));
      case 3:
        return mul(gen(depth - 1), i32(range(-4, 16)));
      case 4:
        return pick(4) ? mul(i32(range(1, 16)), gen(depth - 1)) : mul(leaf(), leaf());
      case 5:
        return fdiv(gen(depth - 1), i32(range(1, 17)));
      case 6:
        return fmod(gen(depth - 1), i32(range(1, 17)));
      case 7:
        return pick(2) ? DivNode::make(gen(depth - 1), i32(range(1, 9)))
                       : ModNode::make(gen(depth - 1), i32(range(1, 9)));
      case 8:
        return MinNode::make(gen(depth - 1), gen(depth - 1));
      case 9:
        return MaxNode::make(gen(depth - 1), gen(depth - 1));
      case 10: {
        Expr c = LTNode::make(gen(depth - 1), gen(depth - 1));
        return SelectNode::make(c, gen(depth - 1), gen(depth - 1));
      }
      default:
        return add(mul(gen(depth - 1), i32(range(1, 8))), leaf());
    }
  }
};

}  // namespace

TEST_CASE("simplify: random bounded affine expressions keep their value", "[simplify][random]") {
  RandomExprs g;
  const std::vector<Var> all = {Var("x"), Var("y"), Var("z")};
  const int64_t lo[] = {0, -5, 3}, ext[] = {8, 13, 33};
  int changed = 0;
  for (int n = 0; n < 1000; ++n) {
    int nvars = 2 + g.pick(2);
    Analyzer an;
    for (int v = 0; v < nvars; ++v) an.bind(all[v], Range(i32(lo[v]), i32(ext[v])));
    g.vars.assign(all.begin(), all.begin() + nvars);
    Expr e = g.gen(1 + g.pick(4));
    Expr s = an.simplify(e);
    REQUIRE(s.dtype() == e.dtype());
    changed += !s.same_as(e);
    INFO("original:   " << e);
    INFO("simplified: " << s);
    for (int p = 0; p < 24; ++p) {
      std::unordered_map<const VarNode*, int64_t> env;
      for (int v = 0; v < 3; ++v) env[all[v].node()] = lo[v] + g.range(0, static_cast<int>(ext[v]) - 1);
      REQUIRE(eval(s, env) == eval(e, env));
    }
    // Simplifying again changes nothing.
    CHECK(to_string(an.simplify(s)) == to_string(s));
  }
  CHECK(changed > 500);
}

// The rule floordiv(floormod(x, c1), c)*c + floormod(x, c) -> floormod(x, c1)
// (c dividing c1) holds for negative x too, scaled or not, and is not taken
// where the pair's operands or coefficients differ.
TEST_CASE("simplify: recombined nested div/mod pairs keep their value for negative operands", "[simplify]") {
  Analyzer an;
  Var x("x"), y("y");
  const Expr hw = fmod(x, i32(24));
  const std::vector<Expr> pairs = {
      add(mul(fdiv(hw, i32(4)), i32(4)), fmod(hw, i32(4))),                 // floormod(x, 4) after folding
      add(mul(fdiv(hw, i32(4)), i32(4)), fmod(x, i32(4))),                  // floormod(x, 4) as written
      add(mul(fdiv(hw, i32(6)), i32(-18)), mul(fmod(x, i32(6)), i32(-3))),  // a negative common coefficient
      add(mul(fdiv(hw, i32(24)), i32(24)), fmod(x, i32(24))),               // c == c1
  };
  const std::vector<std::string> want = {"floormod(x, 24)", "floormod(x, 24)", "(floormod(x, 24)*-3)",
                                         "floormod(x, 24)"};
  for (size_t p = 0; p < pairs.size(); ++p) {
    const Expr s = an.simplify(pairs[p]);
    INFO(pairs[p] << " -> " << s);
    CHECK(to_string(s) == want[p]);
    for (int64_t v = -60; v <= 60; ++v) {
      std::unordered_map<const VarNode*, int64_t> env = {{x.node(), v}};
      REQUIRE(eval(s, env) == eval(pairs[p], env));
    }
  }
  // Not taken: another operand in the remainder, or coefficients not in the ratio c : 1.
  CHECK(simp(an, add(mul(fdiv(hw, i32(4)), i32(4)), fmod(y, i32(4)))) ==
        "((floordiv(floormod(x, 24), 4)*4) + floormod(y, 4))");
  CHECK(simp(an, add(mul(fdiv(hw, i32(4)), i32(8)), mul(fmod(x, i32(4)), i32(3)))) ==
        "((floordiv(floormod(x, 24), 4)*8) + (floormod(x, 4)*3))");
}

TEST_CASE("simplify: statements", "[simplify]") {
  Var i("i"), j("j"), t("t");
  Var C = Var::handle("C", DType::f32());
  auto store = [&](Expr idx) { return StoreNode::make(C, Expr(1.0f), idx); };

  SECTION("loop vars are bound; provable guards disappear") {
    Stmt body = IfThenElseNode::make(LTNode::make(add(mul(i, i32(16)), j), i32(64)),
                                     store(fmod(add(mul(i, i32(16)), j), i32(16))));
    Stmt s =
        ForNode::make(i, i32(0), i32(4), ForKind::kParallel, ForNode::make(j, i32(0), i32(16), ForKind::kSerial, body));
    CHECK(to_string(simplify(s)) ==
          "parallel (i, 0, 4) {\n"
          "  for (j, 0, 16) {\n"
          "    C[j] = 1f\n"
          "  }\n"
          "}\n");
  }
  SECTION("false guards take the else branch or vanish") {
    Stmt s =
        ForNode::make(i, i32(0), i32(4), ForKind::kSerial,
                      SeqNode::make({IfThenElseNode::make(GENode::make(i, i32(4)), store(i), store(add(i, i32(1)))),
                                     IfThenElseNode::make(GTNode::make(i, i32(7)), store(i))}));
    CHECK(to_string(simplify(s)) == "for (i, 0, 4) {\n  C[(i + 1)] = 1f\n}\n");
  }
  SECTION("extent-0 loops vanish, extent-1 loops are substituted") {
    Stmt zero = ForNode::make(i, i32(0), i32(0), ForKind::kSerial, store(i));
    Stmt one = ForNode::make(j, i32(3), i32(1), ForKind::kVectorized, store(mul(j, i32(2))));
    CHECK(to_string(simplify(SeqNode::make({zero, one}))) == "C[6] = 1f\n");
    CHECK(to_string(simplify(zero)) == "0\n");
    Stmt bound = ForNode::make(j, i32(0), i32(1), ForKind::kThreadBinding, store(j), "threadIdx.x");
    CHECK(to_string(simplify(bound)) == "thread_binding(threadIdx.x) (j, 0, 1) {\n  C[0] = 1f\n}\n");
  }
  SECTION("guards refine the bounds of their branches") {
    Stmt inner = IfThenElseNode::make(LTNode::make(i, i32(10)), store(fmod(i, i32(16))),
                                      IfThenElseNode::make(GENode::make(i, i32(8)), store(fdiv(i, i32(8))), store(i)));
    Stmt s = ForNode::make(i, i32(0), i32(16), ForKind::kSerial, inner);
    CHECK(to_string(simplify(s)) ==
          "for (i, 0, 16) {\n"
          "  if ((i < 10)) {\n"
          "    C[i] = 1f\n"
          "  } else {\n"
          "    C[1] = 1f\n"
          "  }\n"
          "}\n");
  }
  SECTION("let values are known in their body") {
    Stmt s = ForNode::make(
        i, i32(0), i32(4), ForKind::kSerial,
        LetStmtNode::make(t, mul(i, i32(8)), IfThenElseNode::make(EQNode::make(fmod(t, i32(4)), i32(0)), store(t))));
    CHECK(to_string(simplify(s)) == "for (i, 0, 4) {\n  let t = (i*8)\n  C[t] = 1f\n}\n");
  }
  SECTION("vectorized index math and all-true predicates") {
    Expr idx = add(BroadcastNode::make(mul(i, i32(16)), 8), RampNode::make(i32(0), i32(1), 8));
    Expr pred = LTNode::make(idx, BroadcastNode::make(i32(64), 8));
    Stmt s = ForNode::make(i, i32(0), i32(4), ForKind::kSerial,
                           StoreNode::make(C, BroadcastNode::make(Expr(1.0f), 8), idx, pred));
    CHECK(to_string(simplify(s)) == "for (i, 0, 4) {\n  C[ramp((i*16), 1, 8)] = x8(1f)\n}\n");
  }
  SECTION("unchanged statements are the same object") {
    Stmt s = ForNode::make(i, i32(0), i32(4), ForKind::kSerial, store(add(mul(i, i32(16)), j)));
    CHECK(simplify(s).same_as(s));
  }
}

namespace {

// Executes a statement over integer stores, recording (index, value) pairs.
void exec(const Stmt& s, std::unordered_map<const VarNode*, int64_t>* env,
          std::vector<std::pair<int64_t, int64_t>>* out) {
  if (!s.defined()) return;
  if (auto* f = s.as<ForNode>()) {
    int64_t lo = eval(f->min, *env), ext = eval(f->extent, *env);
    for (int64_t v = lo; v < lo + ext; ++v) {
      (*env)[f->loop_var.node()] = v;
      exec(f->body, env, out);
    }
    env->erase(f->loop_var.node());
  } else if (auto* q = s.as<SeqNode>()) {
    for (auto& x : q->seq) exec(x, env, out);
  } else if (auto* c = s.as<IfThenElseNode>()) {
    exec(eval(c->condition, *env) ? c->then_case : c->else_case, env, out);
  } else if (auto* st = s.as<StoreNode>()) {
    out->emplace_back(eval(st->index, *env), eval(st->value, *env));
  } else if (!s.as<EvaluateNode>()) {
    throw std::runtime_error(std::string("unexpected statement ") + node_kind_name(s->kind()));
  }
}

}  // namespace

TEST_CASE("simplify: random guarded loop nests keep their stores", "[simplify][random]") {
  RandomExprs g;
  g.rng.seed(777);
  Var C = Var::handle("C", DType::i32());
  for (int n = 0; n < 300; ++n) {
    Var i("i"), j("j");
    g.vars = {i, j};
    auto cond = [&]() -> Expr {
      auto cmp = [&]() -> Expr {
        Expr v = g.pick(2) ? Expr(i) : Expr(j), c = i32(g.range(-2, 17));
        if (g.pick(2)) std::swap(v, c);
        switch (g.pick(6)) {
          case 0:
            return LTNode::make(v, c);
          case 1:
            return LENode::make(v, c);
          case 2:
            return GTNode::make(v, c);
          case 3:
            return GENode::make(v, c);
          case 4:
            return EQNode::make(v, c);
          default:
            return NENode::make(v, c);
        }
      };
      switch (g.pick(4)) {
        case 0:
          return NotNode::make(cmp());
        case 1:
          return AndNode::make(cmp(), cmp());
        case 2:
          return OrNode::make(cmp(), cmp());
        default:
          return cmp();
      }
    };
    int leaf = 0;
    std::function<Stmt(int)> body = [&](int depth) -> Stmt {
      if (depth == 0 || g.pick(4) == 0) return StoreNode::make(C, g.gen(2), i32(leaf++));
      Stmt t = body(depth - 1);
      Stmt e = g.pick(2) ? body(depth - 1) : Stmt();
      return IfThenElseNode::make(cond(), t, e);
    };
    Stmt inner =
        ForNode::make(j, i32(g.range(-2, 3)), i32(g.range(0, 5)), ForKind::kSerial, SeqNode::make({body(3), body(2)}));
    Stmt s = ForNode::make(i, i32(0), i32(16), ForKind::kSerial, inner);
    Stmt r = simplify(s);
    std::unordered_map<const VarNode*, int64_t> env;
    std::vector<std::pair<int64_t, int64_t>> before, after;
    exec(s, &env, &before);
    exec(r, &env, &after);
    INFO("original:\n" << s << "simplified:\n" << r);
    REQUIRE(before == after);
  }
}
