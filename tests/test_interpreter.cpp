// Tests for the reference interpreter (compute/interpreter.h): hand-computed
// tiny cases for each semantic rule, 16-bit float conversions, user errors.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/interpreter.h"
#include "compute/tensor.h"

using namespace kiln;

namespace {

HostTensor make_f32(std::vector<int64_t> shape, std::vector<float> v) {
  HostTensor t(DType::f32(), std::move(shape));
  REQUIRE(static_cast<int64_t>(v.size()) == t.num_elements());
  std::memcpy(t.bytes.data(), v.data(), v.size() * 4);
  return t;
}

HostTensor make_ints(DType dt, std::vector<int64_t> shape, std::vector<int64_t> v) {
  HostTensor t(dt, std::move(shape));
  REQUIRE(static_cast<int64_t>(v.size()) == t.num_elements());
  for (size_t i = 0; i < v.size(); ++i) t.set_int(static_cast<int64_t>(i), v[i]);
  return t;
}

std::vector<double> floats(const HostTensor& t) {
  std::vector<double> r;
  for (int64_t i = 0; i < t.num_elements(); ++i) r.push_back(t.get_float(i));
  return r;
}
std::vector<int64_t> ints(const HostTensor& t) {
  std::vector<int64_t> r;
  for (int64_t i = 0; i < t.num_elements(); ++i) r.push_back(t.get_int(i));
  return r;
}

// Evaluates a 1-d elementwise definition out[i] = f(A[i]) on `a`.
HostTensor unary(DType in, DType out_t, const HostTensor& a, const std::function<Expr(Expr)>& f) {
  Tensor A = placeholder({a.shape[0]}, in, "A");
  Tensor out = compute(
      {a.shape[0]}, [&](Var i) { return f(A(i)); }, "out");
  HostTensor r = interpret({out}, {{A, a}})[0];
  REQUIRE(r.dtype == out_t);
  return r;
}

}  // namespace

TEST_CASE("interpreter: matmul 2x3x2", "[interpreter]") {
  Tensor A = placeholder({2, 3}, DType::f32(), "A");
  Tensor B = placeholder({3, 2}, DType::f32(), "B");
  IterVar k = reduce_axis(3, "k");
  Tensor C = compute(
      {2, 2}, [&](Var i, Var j) { return sum(A(i, k->var) * B(k->var, j), {k}); }, "C");
  HostTensor a = make_f32({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor b = make_f32({3, 2}, {7, 8, 9, 10, 11, 12});
  auto out = interpret({C}, {{A, a}, {B, b}});
  REQUIRE(out.size() == 1);
  CHECK(out[0].shape == std::vector<int64_t>{2, 2});
  CHECK(floats(out[0]) == std::vector<double>{58, 64, 139, 154});
}

TEST_CASE("interpreter: padding select, chained ops, several outputs", "[interpreter]") {
  // pad[i] = A[i-1] for 1 <= i < 5 else 0; out[i] = sum_k pad[i+k] * W[k]
  Tensor A = placeholder({4}, DType::f32(), "A");
  Tensor W = placeholder({3}, DType::f32(), "W");
  Tensor pad = compute(
      {6}, [&](Var i) { return select(i >= 1 && i < 5, A(i - 1), Expr(0.0f)); }, "pad");
  IterVar k = reduce_axis(3, "k");
  Tensor out = compute(
      {4}, [&](Var i) { return sum(pad(i + k->var) * W(k->var), {k}); }, "out");
  HostTensor a = make_f32({4}, {1, 2, 3, 4});
  HostTensor w = make_f32({3}, {1, 10, 100});
  auto r = interpret({out, pad}, {{W, w}, {A, a}});
  REQUIRE(r.size() == 2);
  // out[0] = 0*1 + 1*10 + 2*100, out[3] = 3*1 + 4*10 + 0*100
  CHECK(floats(r[0]) == std::vector<double>{210, 321, 432, 43});
  CHECK(floats(r[1]) == std::vector<double>{0, 1, 2, 3, 4, 0});
}

TEST_CASE("interpreter: max/min reductions with a condition", "[interpreter]") {
  Tensor A = placeholder({2, 4}, DType::f32(), "A");
  IterVar k = reduce_axis(4, "k");
  // Only odd k count.
  Tensor mx = compute(
      {2}, [&](Var i) { return max_reduce(A(i, k->var), {k}, floormod(k->var, 2) == 1); }, "mx");
  Tensor mn = compute(
      {2}, [&](Var i) { return min_reduce(A(i, k->var), {k}, floormod(k->var, 2) == 1); }, "mn");
  // Nothing counts: the identity.
  Tensor none = compute(
      {2}, [&](Var i) { return max_reduce(A(i, k->var), {k}, k->var > 10); }, "none");
  HostTensor a = make_f32({2, 4}, {9, 1, 8, 3, -1, -7, 5, -2});
  auto r = interpret({mx, mn, none}, {{A, a}});
  CHECK(floats(r[0]) == std::vector<double>{3, -2});
  CHECK(floats(r[1]) == std::vector<double>{1, -7});
  CHECK(floats(r[2])[0] == -INFINITY);

  // A reduction over a range with a non-zero min, and a product.
  Tensor Ai = placeholder({5}, DType::i32(), "Ai");
  IterVar r2 = reduce_axis(Range(Expr(1), Expr(3)), "r");
  Tensor prod = compute(
      {1}, [&](Var) { return ReduceNode::make(Combiner::kProd, Ai(r2->var), {r2}); }, "prod");
  CHECK(ints(interpret({prod}, {{Ai, make_ints(DType::i32(), {5}, {2, 3, 5, 7, 11})}})[0]) ==
        std::vector<int64_t>{105});
}

TEST_CASE("interpreter: integer types wrap and divide like C", "[interpreter]") {
  SECTION("i8") {
    HostTensor a = make_ints(DType::i8(), {3}, {100, -128, 127});
    HostTensor r = unary(DType::i8(), DType::i8(), a, [](Expr x) { return x + x; });
    CHECK(ints(r) == std::vector<int64_t>{-56, 0, -2});
    r = unary(DType::i8(), DType::i8(), a, [](Expr x) { return x * make_const(DType::i8(), int64_t{3}); });
    CHECK(ints(r) == std::vector<int64_t>{44, -128, 125});
    r = unary(DType::i8(), DType::i8(), a, [](Expr x) { return x / make_const(DType::i8(), int64_t{-1}); });
    CHECK(ints(r) == std::vector<int64_t>{-100, -128, -127});
  }
  SECTION("u8") {
    HostTensor a = make_ints(DType::u8(), {3}, {250, 3, 128});
    HostTensor r = unary(DType::u8(), DType::u8(), a, [](Expr x) { return x + make_const(DType::u8(), int64_t{10}); });
    CHECK(ints(r) == std::vector<int64_t>{4, 13, 138});
    r = unary(DType::u8(), DType::u8(), a, [](Expr x) { return x - make_const(DType::u8(), int64_t{4}); });
    CHECK(ints(r) == std::vector<int64_t>{246, 255, 124});
    r = unary(DType::u8(), DType::u8(), a, [](Expr x) { return x / make_const(DType::u8(), int64_t{7}); });
    CHECK(ints(r) == std::vector<int64_t>{35, 0, 18});
    // Unsigned comparison: 250 > 127.
    r = unary(DType::u8(), DType::boolean(), a, [](Expr x) { return x > make_const(DType::u8(), int64_t{127}); });
    CHECK(ints(r) == std::vector<int64_t>{1, 0, 1});
  }
  SECTION("i32") {
    HostTensor a = make_ints(DType::i32(), {4}, {-7, 7, 2147483647, -2147483647 - 1});
    auto c = [](int64_t v) { return make_const(DType::i32(), v); };
    CHECK(ints(unary(DType::i32(), DType::i32(), a, [&](Expr x) { return DivNode::make(x, c(2)); })) ==
          std::vector<int64_t>{-3, 3, 1073741823, -1073741824});
    CHECK(ints(unary(DType::i32(), DType::i32(), a, [&](Expr x) { return ModNode::make(x, c(2)); })) ==
          std::vector<int64_t>{-1, 1, 1, 0});
    CHECK(ints(unary(DType::i32(), DType::i32(), a, [&](Expr x) { return FloorDivNode::make(x, c(2)); })) ==
          std::vector<int64_t>{-4, 3, 1073741823, -1073741824});
    CHECK(ints(unary(DType::i32(), DType::i32(), a, [&](Expr x) { return FloorModNode::make(x, c(-2)); })) ==
          std::vector<int64_t>{-1, -1, -1, 0});
    CHECK(ints(unary(DType::i32(), DType::i32(), a, [&](Expr x) { return AddNode::make(x, c(1)); })) ==
          std::vector<int64_t>{-6, 8, -2147483647 - 1, -2147483647});
    CHECK(ints(unary(DType::i32(), DType::i32(), a, [&](Expr x) { return MinNode::make(x, c(0)); })) ==
          std::vector<int64_t>{-7, 0, 0, -2147483647 - 1});
  }
  SECTION("integer division by zero is a user error") {
    HostTensor a = make_ints(DType::i32(), {2}, {1, 0});
    CHECK_THROWS_WITH(unary(DType::i32(), DType::i32(), a, [](Expr x) { return DivNode::make(Expr(5), x); }),
                      Catch::Contains("division by zero"));
    // select evaluates only the chosen branch.
    HostTensor r = unary(DType::i32(), DType::i32(), a,
                         [](Expr x) { return select(x != 0, DivNode::make(Expr(5), x), Expr(-1)); });
    CHECK(ints(r) == std::vector<int64_t>{5, -1});
  }
}

TEST_CASE("interpreter: f32 rounds after every operation, f64 does not", "[interpreter]") {
  HostTensor a = make_f32({2}, {1e8f, 0.1f});
  HostTensor r = unary(DType::f32(), DType::f32(), a, [](Expr x) { return (x + 1.0f) - x; });
  CHECK(floats(r) == std::vector<double>{0.0, static_cast<double>((0.1f + 1.0f) - 0.1f)});
  HostTensor d(DType::f64(), {2});
  d.set_float(0, 1e8);
  d.set_float(1, 0.1);
  r = unary(DType::f64(), DType::f64(), d, [](Expr x) { return (x + 1.0) - x; });
  CHECK(floats(r) == std::vector<double>{1.0, (0.1 + 1.0) - 0.1});
  // f32 reductions accumulate in float.
  Tensor A = placeholder({3}, DType::f32(), "A");
  IterVar k = reduce_axis(3, "k");
  Tensor s = compute(
      {1}, [&](Var) { return sum(A(k->var), {k}); }, "s");
  HostTensor v = make_f32({3}, {1e8f, 1.0f, -1e8f});
  CHECK(floats(interpret({s}, {{A, v}})[0]) == std::vector<double>{0.0});
}

TEST_CASE("interpreter: casts have C semantics", "[interpreter]") {
  HostTensor a = make_f32({5}, {-2.7f, 2.7f, 300.5f, -0.0f, 0.5f});
  CHECK(ints(unary(DType::f32(), DType::i32(), a, [](Expr x) { return cast(DType::i32(), x); })) ==
        std::vector<int64_t>{-2, 2, 300, 0, 0});
  CHECK(ints(unary(DType::f32(), DType::boolean(), a, [](Expr x) { return cast(DType::boolean(), x); })) ==
        std::vector<int64_t>{1, 1, 1, 0, 1});
  HostTensor i = make_ints(DType::i32(), {4}, {300, -1, 16777217, 255});
  CHECK(ints(unary(DType::i32(), DType::u8(), i, [](Expr x) { return cast(DType::u8(), x); })) ==
        std::vector<int64_t>{44, 255, 1, 255});
  CHECK(ints(unary(DType::i32(), DType::i8(), i, [](Expr x) { return cast(DType::i8(), x); })) ==
        std::vector<int64_t>{44, -1, 1, -1});
  CHECK(floats(unary(DType::i32(), DType::f32(), i, [](Expr x) { return cast(DType::f32(), x); })) ==
        std::vector<double>{300, -1, 16777216, 255});
  CHECK(floats(unary(DType::i32(), DType::f64(), i, [](Expr x) { return cast(DType::f64(), x); })) ==
        std::vector<double>{300, -1, 16777217, 255});
  HostTensor u = make_ints(DType::u8(), {2}, {200, 7});
  CHECK(ints(unary(DType::u8(), DType::i32(), u, [](Expr x) { return cast(DType::i32(), x); })) ==
        std::vector<int64_t>{200, 7});
  CHECK(ints(unary(DType::u8(), DType::i8(), u, [](Expr x) { return cast(DType::i8(), x); })) ==
        std::vector<int64_t>{-56, 7});
  HostTensor d(DType::f64(), {1});
  d.set_float(0, 0.1);
  CHECK(floats(unary(DType::f64(), DType::f32(), d, [](Expr x) { return cast(DType::f32(), x); }))[0] ==
        static_cast<double>(0.1f));
}

TEST_CASE("interpreter: math functions match <cmath> in the argument's precision", "[interpreter]") {
  std::vector<float> xs = {-2.5f, -0.5f, 0.25f, 0.5f, 1.5f, 2.5f, 3.7f};
  HostTensor a = make_f32({7}, xs);
  struct Case {
    std::function<Expr(Expr)> f;
    std::function<float(float)> ref;
  };
  std::vector<Case> cases = {
      {[](Expr x) { return exp(x); }, [](float x) { return std::exp(x); }},
      {[](Expr x) { return log(abs(x)); }, [](float x) { return std::log(std::fabs(x)); }},
      {[](Expr x) { return sqrt(abs(x)); }, [](float x) { return std::sqrt(std::fabs(x)); }},
      {[](Expr x) { return tanh(x); }, [](float x) { return std::tanh(x); }},
      {[](Expr x) { return erf(x); }, [](float x) { return std::erf(x); }},
      {[](Expr x) { return pow(abs(x), Expr(1.5f)); }, [](float x) { return std::pow(std::fabs(x), 1.5f); }},
      {[](Expr x) { return floor(x); }, [](float x) { return std::floor(x); }},
      {[](Expr x) { return ceil(x); }, [](float x) { return std::ceil(x); }},
      {[](Expr x) { return CallNode::make(MathOp::kRound, {x}); }, [](float x) { return std::round(x); }},
      {[](Expr x) { return round_even(x); }, [](float x) { return std::nearbyint(x); }},
      {[](Expr x) { return sigmoid(x); }, [](float x) { return 1.0f / (1.0f + std::exp(-x)); }},
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    HostTensor r = unary(DType::f32(), DType::f32(), a, cases[c].f);
    for (size_t i = 0; i < xs.size(); ++i) {
      INFO("case " << c << " x=" << xs[i]);
      CHECK(r.get_float(static_cast<int64_t>(i)) == static_cast<double>(cases[c].ref(xs[i])));
    }
  }
  // round: halfway cases away from zero.
  HostTensor r = unary(DType::f32(), DType::f32(), a, [](Expr x) { return CallNode::make(MathOp::kRound, {x}); });
  CHECK(floats(r) == std::vector<double>{-3, -1, 0, 1, 2, 3, 4});
  // round_even: halfway cases to even.
  HostTensor re = unary(DType::f32(), DType::f32(), a, [](Expr x) { return round_even(x); });
  CHECK(floats(re) == std::vector<double>{-2, 0, 0, 0, 2, 2, 4});
  HostTensor d(DType::f64(), {1});
  d.set_float(0, 0.3);
  CHECK(unary(DType::f64(), DType::f64(), d, [](Expr x) { return exp(x); }).get_float(0) == std::exp(0.3));
}

TEST_CASE("interpreter: f16 and bf16", "[interpreter]") {
  // Conversions round to nearest even.
  CHECK(f16_bits_from_float(1.0f) == 0x3c00);
  CHECK(f16_bits_from_float(65504.0f) == 0x7bff);
  CHECK(f16_bits_from_float(65519.0f) == 0x7bff);
  CHECK(f16_bits_from_float(65520.0f) == 0x7c00);                          // rounds to infinity
  CHECK(f16_bits_from_float(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);      // tie -> even
  CHECK(f16_bits_from_float(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);  // tie -> even (up)
  CHECK(f16_bits_from_float(std::ldexp(1.0f, -24)) == 0x0001);             // smallest subnormal
  CHECK(f16_bits_from_float(std::ldexp(1.0f, -25)) == 0x0000);             // tie -> 0
  CHECK(f16_bits_from_float(std::ldexp(3.0f, -26)) == 0x0001);
  CHECK(f16_bits_from_float(-2.0f) == 0xc000);
  CHECK(std::isnan(float_from_f16_bits(f16_bits_from_float(NAN))));
  CHECK(float_from_f16_bits(0x0001) == std::ldexp(1.0f, -24));
  CHECK(float_from_f16_bits(0x7bff) == 65504.0f);
  CHECK(float_from_f16_bits(0xfc00) == -INFINITY);
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // every finite half round-trips
    uint16_t bits = static_cast<uint16_t>(h);
    REQUIRE(f16_bits_from_float(float_from_f16_bits(bits)) == bits);
  }
  CHECK(bf16_bits_from_float(1.0f) == 0x3f80);
  CHECK(bf16_bits_from_float(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);      // tie -> even
  CHECK(bf16_bits_from_float(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);  // tie -> even (up)
  CHECK(float_from_bf16_bits(0xc040) == -3.0f);

  // Compute in float, round on store: (x * 3) / 3 keeps x exactly in float.
  HostTensor a(DType::f16(), {2});
  a.set_float(0, 0.1);   // stored as the nearest half
  a.set_float(1, 2049);  // rounds to 2048
  CHECK(a.get_float(1) == 2048);
  HostTensor r = unary(DType::f16(), DType::f16(), a,
                       [](Expr x) { return (x * make_const(DType::f16(), 3.0)) / make_const(DType::f16(), 3.0); });
  CHECK(r.get_float(0) == a.get_float(0));
  // 2048 + 1 is 2049 in float, stored as 2048; 2048 + 3 = 2051 stored as 2052 (nearest even).
  r = unary(DType::f16(), DType::f16(), a, [](Expr x) { return x + make_const(DType::f16(), 3.0); });
  CHECK(r.get_float(1) == 2052);
  HostTensor b(DType::bf16(), {1});
  b.set_float(0, 1.0);
  r = unary(DType::bf16(), DType::f32(), b, [](Expr x) { return cast(DType::f32(), x) + Expr(std::ldexp(1.0f, -10)); });
  CHECK(r.get_float(0) == 1.0 + std::ldexp(1.0, -10));
}

TEST_CASE("interpreter: user errors", "[interpreter][user_error]") {
  Tensor A = placeholder({2, 3}, DType::f32(), "A");
  Tensor B = compute(
      {2, 3}, [&](Var i, Var j) { return A(i, j) * 2.0f; }, "B");
  HostTensor good(DType::f32(), {2, 3});
  CHECK_THROWS_WITH(interpret({B}, {}), Catch::Contains("input tensor 'A' was not given"));
  CHECK_THROWS_WITH(interpret({B}, {{A, HostTensor(DType::f32(), {3, 2})}}),
                    Catch::Contains("input 'A' has shape [3, 2], expected [2, 3]"));
  CHECK_THROWS_WITH(interpret({B}, {{A, HostTensor(DType::i32(), {2, 3})}}),
                    Catch::Contains("input 'A' has dtype i32, expected f32"));
  CHECK_THROWS_WITH(interpret({B}, {{A, good}, {B, good}}), Catch::Contains("only placeholders take input values"));
  CHECK_THROWS_WITH(interpret({B}, {{A, good}, {A, good}}), Catch::Contains("given twice"));
  HostTensor truncated = good;
  truncated.bytes.resize(8);
  CHECK_THROWS_WITH(interpret({B}, {{A, truncated}}), Catch::Contains("holds 8 bytes, expected 24"));
  Tensor shifted = compute(
      {2, 3}, [&](Var i, Var j) { return A(i, j + 1); }, "shifted");
  CHECK_THROWS_WITH(interpret({shifted}, {{A, good}}),
                    Catch::Contains("compute 'shifted' reads 'A' at [0, 3], outside its shape [2, 3]"));
  Var free("n");
  Tensor uses_free = compute(
      {2}, [&](Var i) { return A(i, free); }, "uses_free");
  CHECK_THROWS_WITH(interpret({uses_free}, {{A, good}}), Catch::Contains("uses variable 'n'"));
  CHECK_THROWS_AS(HostTensor(DType::f32().with_lanes(4), {2}), UserError);
  CHECK_THROWS_AS(good.flat_index({2, 0}), UserError);
  // Placeholders as outputs are returned as given; the other inputs are not needed.
  good.set_float(4, 7.5);
  auto r = interpret({A}, {{A, good}});
  CHECK(r[0].get_float(4) == 7.5);
}

TEST_CASE("interpreter: HostTensor helpers", "[interpreter]") {
  HostTensor a(DType::f32(), {3, 4});
  a.fill_random(42, -2, 2);
  HostTensor b(DType::f32(), {3, 4});
  b.fill_random(42, -2, 2);
  CHECK(a.bytes == b.bytes);
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    CHECK(a.get_float(i) >= -2);
    CHECK(a.get_float(i) < 2);
  }
  CHECK(compare_tensors(a, b) == "");
  b.set_float(b.flat_index({1, 2}), a.get_float(6) + 1);
  CHECK_THAT(compare_tensors(a, b), Catch::Contains("1 of 12 elements differ; first at [1, 2]"));
  CHECK(compare_tensors(a, b, 0, 2) == "");
  HostTensor c(DType::i8(), {100});
  c.fill_random(7, -3, 3);
  bool seen_neg = false;
  for (int64_t i = 0; i < 100; ++i) {
    CHECK(c.get_int(i) >= -3);
    CHECK(c.get_int(i) <= 3);
    seen_neg |= c.get_int(i) < 0;
  }
  CHECK(seen_neg);
  CHECK(c.data<int8_t>()[0] == c.get_int(0));
  CHECK_THROWS_AS(c.data<float>(), UserError);
  CHECK_THAT(compare_tensors(a, c), Catch::Contains("dtype i8, expected f32"));
}

TEST_CASE("interpreter: test-sized matmul and conv2d agree with hand-computed elements", "[interpreter]") {
  Tensor A = placeholder({17, 31}, DType::f32(), "A");
  Tensor B = placeholder({31, 23}, DType::f32(), "B");
  IterVar k = reduce_axis(31, "k");
  Tensor C = compute(
      {17, 23}, [&](Var i, Var j) { return sum(A(i, k->var) * B(k->var, j), {k}); }, "C");
  HostTensor a(DType::f32(), {17, 31}), b(DType::f32(), {31, 23});
  a.fill_random(1);
  b.fill_random(2);
  HostTensor c = interpret({C}, {{A, a}, {B, b}})[0];
  float ref = 0;
  for (int kk = 0; kk < 31; ++kk) {
    volatile float p = static_cast<float>(a.get_float(5 * 31 + kk)) * static_cast<float>(b.get_float(kk * 23 + 7));
    ref += p;  // no FMA: the interpreter rounds the product
  }
  CHECK(c.get_float(5 * 23 + 7) == static_cast<double>(ref));

  // conv2d NCHW 1x8x15x15, 8 output channels, 3x3, padding 1.
  Tensor X = placeholder({1, 8, 15, 15}, DType::f32(), "X");
  Tensor Wt = placeholder({8, 8, 3, 3}, DType::f32(), "W");
  Tensor P = compute({1, 8, 17, 17}, ComputeFn([&](const std::vector<Var>& v) {
                       Expr in = v[2] >= 1 && v[2] < 16 && v[3] >= 1 && v[3] < 16;
                       return select(in, X(v[0], v[1], v[2] - 1, v[3] - 1), Expr(0.0f));
                     }),
                     "P");
  IterVar rc = reduce_axis(8, "rc"), ry = reduce_axis(3, "ry"), rx = reduce_axis(3, "rx");
  Tensor Y =
      compute({1, 8, 15, 15}, ComputeFn([&](const std::vector<Var>& v) {
                return sum(P(v[0], rc->var, v[2] + ry->var, v[3] + rx->var) * Wt(v[1], rc->var, ry->var, rx->var),
                           {rc, ry, rx});
              }),
              "Y");
  HostTensor x(DType::f32(), {1, 8, 15, 15}), w(DType::f32(), {8, 8, 3, 3});
  x.fill_random(3);
  w.fill_random(4);
  HostTensor y = interpret({Y}, {{X, x}, {Wt, w}})[0];
  // Corner output (0, 2, 0, 0): only ry, rx in {1, 2} see data.
  float acc = 0;
  for (int ci = 0; ci < 8; ++ci)
    for (int dy = 0; dy < 3; ++dy)
      for (int dx = 0; dx < 3; ++dx) {
        float xv = (dy == 0 || dx == 0) ? 0.0f : static_cast<float>(x.get_float(x.flat_index({0, ci, dy - 1, dx - 1})));
        volatile float p = xv * static_cast<float>(w.get_float(w.flat_index({2, ci, dy, dx})));
        acc += p;
      }
  CHECK(y.get_float(y.flat_index({0, 2, 0, 0})) == static_cast<double>(acc));
}

// ------------------------------------------------------------ interpret_at

namespace {

using Inputs = std::vector<std::pair<Tensor, HostTensor>>;

// `count` pseudo-random points of `shape` (fixed seed), plus both corners and
// a repeated point.
std::vector<std::vector<int64_t>> random_points(const std::vector<int64_t>& shape, int count, uint64_t seed) {
  std::vector<std::vector<int64_t>> pts;
  std::vector<int64_t> lo(shape.size(), 0), hi;
  for (int64_t e : shape) hi.push_back(e - 1);
  pts.push_back(lo);
  pts.push_back(hi);
  uint64_t s = seed;
  for (int p = 0; p < count; ++p) {
    std::vector<int64_t> pt;
    for (int64_t e : shape) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      pt.push_back(static_cast<int64_t>((s >> 33) % static_cast<uint64_t>(e)));
    }
    pts.push_back(pt);
  }
  pts.push_back(pts[2]);
  return pts;
}

std::vector<int64_t> const_dims(const Tensor& t) {
  std::vector<int64_t> d;
  for (auto& e : t.shape()) d.push_back(*as_const_int(e));
  return d;
}

// interpret_at agrees bit for bit with the same elements of interpret().
void check_sampled(const Tensor& out, const Inputs& inputs, int count, uint64_t seed) {
  HostTensor full = interpret({out}, inputs)[0];
  auto pts = random_points(const_dims(out), count, seed);
  HostTensor got = interpret_at(out, inputs, pts);
  REQUIRE(got.dtype == full.dtype);
  REQUIRE(got.shape == std::vector<int64_t>{static_cast<int64_t>(pts.size())});
  int64_t elem = full.dtype.bytes();
  int bad = 0;
  for (size_t p = 0; p < pts.size(); ++p) {
    int64_t f = full.flat_index(pts[p]);
    if (std::memcmp(got.bytes.data() + static_cast<int64_t>(p) * elem, full.bytes.data() + f * elem,
                    static_cast<size_t>(elem)) != 0 &&
        bad++ == 0) {
      FAIL_CHECK("point " << p << ": interpret_at " << got.get_float(static_cast<int64_t>(p)) << ", interpret "
                          << full.get_float(f));
    }
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("interpret_at: matmul with f16 epilogue stages matches interpret", "[interpreter][interpret_at]") {
  Tensor A = placeholder({19, 37}, DType::f32(), "A");
  Tensor B = placeholder({37, 23}, DType::f32(), "B");
  Tensor bias = placeholder({23}, DType::f32(), "bias");
  IterVar k = reduce_axis(37, "k");
  Tensor C = compute(
      {19, 23}, [&](Var i, Var j) { return sum(A(i, k->var) * B(k->var, j), {k}); }, "C");
  // H is f16 computed in float (the sum of two halves is rarely a half) and
  // rounded only when stored: a consumer must see the rounded value, as it
  // does after interpret() stores H.
  Tensor H = compute(
      {19, 23}, [&](Var i, Var j) { return cast(DType::f16(), C(i, j)) + cast(DType::f16(), bias(j)); }, "H");
  Tensor D = compute(
      {19, 23}, [&](Var i, Var j) { return max(cast(DType::f32(), H(i, j)) * 1.001f, Expr(0.0f)); }, "D");
  HostTensor a(DType::f32(), {19, 37}), b(DType::f32(), {37, 23}), c(DType::f32(), {23});
  a.fill_random(11, -4, 4);
  b.fill_random(12, -4, 4);
  c.fill_random(13, -2, 2);
  Inputs in = {{A, a}, {B, b}, {bias, c}};
  check_sampled(D, in, 200, 1);
  check_sampled(H, in, 50, 2);
  check_sampled(C, in, 50, 3);
}

TEST_CASE("interpret_at: padded conv2d matches interpret", "[interpreter][interpret_at]") {
  Tensor X = placeholder({2, 5, 9, 11}, DType::f32(), "X");
  Tensor Wt = placeholder({6, 5, 3, 3}, DType::f32(), "W");
  Tensor P = compute({2, 5, 11, 13}, ComputeFn([&](const std::vector<Var>& v) {
                       Expr in = v[2] >= 1 && v[2] < 10 && v[3] >= 1 && v[3] < 12;
                       return select(in, X(v[0], v[1], v[2] - 1, v[3] - 1), Expr(0.0f));
                     }),
                     "P");
  IterVar rc = reduce_axis(5, "rc"), ry = reduce_axis(3, "ry"), rx = reduce_axis(3, "rx");
  Tensor Y =
      compute({2, 6, 9, 11}, ComputeFn([&](const std::vector<Var>& v) {
                return sum(P(v[0], rc->var, v[2] + ry->var, v[3] + rx->var) * Wt(v[1], rc->var, ry->var, rx->var),
                           {rc, ry, rx});
              }),
              "Y");
  HostTensor x(DType::f32(), {2, 5, 9, 11}), w(DType::f32(), {6, 5, 3, 3});
  x.fill_random(21);
  w.fill_random(22);
  check_sampled(Y, {{X, x}, {Wt, w}}, 300, 4);
}

TEST_CASE("interpret_at: a 50-stage integer chain wraps like interpret", "[interpreter][interpret_at]") {
  // i8 stages that overflow, i8 sums that wrap, u8 round trips, and reads of
  // the previous stage at shifted (clamped) indices, 50 stages deep. Stages
  // reading 3 and 2 elements of their producer make the memo matter: without
  // it each point would evaluate 3^8 * 2^8 producer chains (seconds).
  int64_t n = 40;
  Tensor A = placeholder({n}, DType::i8(), "A");
  Tensor prev = A;
  auto c8 = [](int64_t v) { return make_const(DType::i8(), v); };
  Expr last(static_cast<int>(n - 1));
  for (int s = 0; s < 50; ++s) {
    Tensor p = prev;
    std::string name = "s" + std::to_string(s);
    if (s % 6 == 0 && s < 48) {
      IterVar k = reduce_axis(3, "k");
      prev = compute(
          {n}, [&](Var i) { return sum(p(min(i + k->var, last)) * c8(37), {k}); }, name);
    } else if (s % 6 == 3) {
      prev = compute(
          {n}, [&](Var i) { return p(i) * p(max(i - 1, 0)) + c8(101); }, name);
    } else if (s % 2 == 0) {
      prev = compute(
          {n}, [&](Var i) { return p(i) * c8(-77) - c8(90); }, name);
    } else {
      Tensor u = compute(
          {n}, [&](Var i) { return cast(DType::u8(), p(i)) + make_const(DType::u8(), int64_t{200}); }, name + "u");
      prev = compute(
          {n}, [&](Var i) { return cast(DType::i8(), u(i)) + c8(3); }, name);
    }
  }
  HostTensor a(DType::i8(), {n});
  a.fill_random(31, -128, 127);
  check_sampled(prev, {{A, a}}, 12, 5);
  // Wraparound actually happened: every stage's values stay in [-128, 127].
  HostTensor full = interpret({prev}, {{A, a}})[0];
  bool negative = false;
  for (int64_t i = 0; i < n; ++i) negative |= full.get_int(i) < 0;
  CHECK(negative);
}

TEST_CASE("interpret_at: placeholder outputs and user errors", "[interpreter][interpret_at][user_error]") {
  Tensor A = placeholder({2, 3}, DType::f32(), "A");
  Tensor B = compute(
      {2, 3}, [&](Var i, Var j) { return A(i, j) * 2.0f; }, "B");
  HostTensor a = make_f32({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(floats(interpret_at(A, {{A, a}}, {{1, 2}, {0, 1}})) == std::vector<double>{6, 2});
  CHECK(floats(interpret_at(B, {{A, a}}, {{1, 0}})) == std::vector<double>{8});
  CHECK(interpret_at(B, {{A, a}}, {}).shape == std::vector<int64_t>{0});
  CHECK_THROWS_WITH(interpret_at(B, {{A, a}}, {{0, 0}, {2, 0}}),
                    Catch::Contains("interpret_at: point 1 [2, 0] is outside the shape [2, 3] of 'B'"));
  CHECK_THROWS_WITH(interpret_at(B, {{A, a}}, {{0, -1}}), Catch::Contains("point 0 [0, -1] is outside the shape"));
  CHECK_THROWS_WITH(interpret_at(B, {{A, a}}, {{0, 0}, {1}}),
                    Catch::Contains("interpret_at: point 1 [1] has 1 coordinates, but 'B' has 2 dimensions"));
  CHECK_THROWS_WITH(interpret_at(B, {}, {{0, 0}}), Catch::Contains("input tensor 'A' was not given"));
  CHECK_THROWS_WITH(interpret_at(B, {{A, HostTensor(DType::f32(), {3, 2})}}, {{0, 0}}),
                    Catch::Contains("input 'A' has shape [3, 2], expected [2, 3]"));
  // Out-of-bounds reads are reported at the points that make them.
  Tensor shifted = compute(
      {2, 3}, [&](Var i, Var j) { return A(i, j + 1); }, "shifted");
  CHECK(floats(interpret_at(shifted, {{A, a}}, {{1, 1}})) == std::vector<double>{6});
  CHECK_THROWS_WITH(interpret_at(shifted, {{A, a}}, {{1, 2}}),
                    Catch::Contains("compute 'shifted' reads 'A' at [1, 3], outside its shape [2, 3]"));
}

TEST_CASE("interpret_at: evaluates only what the points need", "[interpreter][interpret_at]") {
  // A 512^3 matmul: interpret() would take seconds; 64 sampled points are
  // 32K multiply-adds.
  Tensor A = placeholder({512, 512}, DType::f32(), "A");
  Tensor B = placeholder({512, 512}, DType::f32(), "B");
  IterVar k = reduce_axis(512, "k");
  Tensor C = compute(
      {512, 512}, [&](Var i, Var j) { return sum(A(i, k->var) * B(k->var, j), {k}); }, "C");
  Tensor D = compute(
      {512, 512}, [&](Var i, Var j) { return C(i, j) + C(j, i); }, "D");
  HostTensor a(DType::f32(), {512, 512}), b(DType::f32(), {512, 512});
  a.fill_random(41);
  b.fill_random(42);
  auto pts = random_points({512, 512}, 64, 6);
  HostTensor got = interpret_at(D, {{A, a}, {B, b}}, pts);
  auto element = [&](int64_t i, int64_t j) {
    float acc = 0;
    for (int64_t kk = 0; kk < 512; ++kk) {
      volatile float p = static_cast<float>(a.get_float(i * 512 + kk)) * static_cast<float>(b.get_float(kk * 512 + j));
      acc += p;
    }
    return acc;
  };
  for (size_t p = 0; p < pts.size(); p += 7) {
    float want = element(pts[p][0], pts[p][1]) + element(pts[p][1], pts[p][0]);
    CHECK(got.get_float(static_cast<int64_t>(p)) == static_cast<double>(want));
  }
}
