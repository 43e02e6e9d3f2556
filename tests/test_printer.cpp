// Golden tests for the IR printer (compute/printer.h). The format is relied on
// by other golden tests; a change here must be deliberate.
#include <catch2/catch.hpp>
#include <sstream>

#include "compute/expr_ops.h"
#include "compute/function.h"
#include "compute/printer.h"
#include "compute/tensor.h"

using namespace kiln;

TEST_CASE("printer: arithmetic and immediates", "[printer]") {
  Var i("i"), j("j");
  CHECK(to_string(i * 16 + j) == "((i*16) + j)");
  CHECK(to_string(SubNode::make(i, Expr(3))) == "(i - 3)");
  CHECK(to_string(floordiv(i, 4)) == "floordiv(i, 4)");
  CHECK(to_string(floormod(i, 4)) == "floormod(i, 4)");
  CHECK(to_string(DivNode::make(i, Expr(4))) == "(i / 4)");
  CHECK(to_string(ModNode::make(i, Expr(4))) == "(i % 4)");
  CHECK(to_string(min(i, j)) == "min(i, j)");
  CHECK(to_string(max(i, Expr(0))) == "max(i, 0)");
  CHECK(to_string(i < j && !(i == 3)) == "((i < j) && !(i == 3))");
  CHECK(to_string(i >= 2 || j != 5) == "((i >= 2) || (j != 5))");

  CHECK(to_string(Expr(16)) == "16");
  CHECK(to_string(Expr(-3)) == "-3");
  CHECK(to_string(make_const(DType::i64(), int64_t{16})) == "16i64");
  CHECK(to_string(make_const(DType::u8(), int64_t{3})) == "3u8");
  CHECK(to_string(make_const(DType::i8(), int64_t{-7})) == "-7i8");
  CHECK(to_string(make_const(DType::boolean(), int64_t{1})) == "true");
  CHECK(to_string(make_const(DType::boolean(), int64_t{0})) == "false");
  CHECK(to_string(Expr(1.5f)) == "1.5f");
  CHECK(to_string(Expr(0.0f)) == "0f");
  CHECK(to_string(Expr(0.1f)) == "0.1f");
  CHECK(to_string(Expr(1.5)) == "1.5");
  CHECK(to_string(Expr(2.0)) == "2.0");
  CHECK(to_string(Expr(0.1)) == "0.1");
  CHECK(to_string(Expr(1e20)) == "1e+20");
  CHECK(to_string(make_const(DType::f16(), 1.5)) == "1.5f16");
  CHECK(to_string(make_const(DType::bf16(), -2.0)) == "-2bf16");
  CHECK(to_string(make_const(DType::f32(), -std::numeric_limits<double>::infinity())) == "-inff");
  CHECK(to_string(StringImmNode::make("a\"b")) == "\"a\\\"b\"");
}

TEST_CASE("printer: vectors, casts, calls, selects, lets", "[printer]") {
  Var i("i"), x("x", DType::f32());
  Expr r = RampNode::make(i * 16, Expr(1), 16);
  CHECK(to_string(r) == "ramp((i*16), 1, 16)");
  CHECK(to_string(BroadcastNode::make(x, 16)) == "x16(x)");
  CHECK(to_string(cast(DType::f32(), i)) == "f32(i)");
  CHECK(to_string(CastNode::make(DType::f32().with_lanes(16), r)) == "f32x16(ramp((i*16), 1, 16))");
  CHECK(to_string(exp(x)) == "exp(x)");
  CHECK(to_string(pow(x, Expr(2.0f))) == "pow(x, 2f)");
  CHECK(to_string(select(i < 3, x, Expr(0.0f))) == "select((i < 3), x, 0f)");
  Var t("t");
  CHECK(to_string(LetNode::make(t, i + 1, t * t)) == "(let t = (i + 1) in (t*t))");
}

TEST_CASE("printer: tensor reads, loads and reductions", "[printer]") {
  Tensor A = placeholder({8, 16}, DType::f32(), "A");
  Tensor B = placeholder({16, 4}, DType::f32(), "B");
  IterVar k = reduce_axis(16, "k");
  Var i("i"), j("j");
  Expr red = sum(A(i, k->var) * B(k->var, j), {k});
  CHECK(to_string(red) == "sum((A[i, k]*B[k, j]), axis=[k: 0..16])");
  IterVar r = reduce_axis(Range(Expr(2), Expr(3)), "r");
  Expr mx = max_reduce(A(i, r->var), {k, r}, r->var > 2);
  CHECK(to_string(mx) == "max(A[i, r], axis=[k: 0..16, r: 2..5], where (r > 2))");

  Var buf = Var::handle("A", DType::f32());
  CHECK(to_string(LoadNode::make(DType::f32(), buf, i * 16 + j)) == "A[((i*16) + j)]");
  Expr pred = BroadcastNode::make(i < 3, 4);
  CHECK(to_string(LoadNode::make(DType::f32().with_lanes(4), buf, RampNode::make(i, Expr(1), 4), pred)) ==
        "A[ramp(i, 1, 4) if x4((i < 3))]");
}

TEST_CASE("printer: statements", "[printer]") {
  Var i("i"), j("j");
  Var C = Var::handle("C", DType::f32());
  Var L = Var::handle("C.local", DType::f32());
  Stmt store = StoreNode::make(C, LoadNode::make(DType::f32(), L, j), i * 16 + j);
  Stmt loop = ForNode::make(j, Expr(0), Expr(16), ForKind::kUnrolled, store);
  Stmt alloc = AllocateNode::make(L, DType::f32(), {Expr(4), Expr(16)}, MemScope::kLocal, loop);
  Stmt guarded = IfThenElseNode::make(i < 10, alloc, EvaluateNode::make(Expr(0)));
  Stmt body = SeqNode::make({guarded, BarrierNode::make(MemScope::kShared)});
  Stmt outer = ForNode::make(i, Expr(0), Expr(12), ForKind::kThreadBinding, body, "threadIdx.x");
  IterVar iv = IterVar::make(i, Range(Expr(0), Expr(12)), IterKind::kDataPar);
  Stmt attr = AttrStmtNode::make(iv, "pragma_unroll", Expr(1), outer);
  CHECK(to_string(attr) ==
        "// attr [i] pragma_unroll = 1\n"
        "thread_binding(threadIdx.x) (i, 0, 12) {\n"
        "  if ((i < 10)) {\n"
        "    allocate C.local[f32 * 4 * 16] @local\n"
        "    unrolled (j, 0, 16) {\n"
        "      C[((i*16) + j)] = C.local[j]\n"
        "    }\n"
        "  } else {\n"
        "    0\n"
        "  }\n"
        "  barrier(shared)\n"
        "}\n");

  Tensor T = placeholder({64, 16}, DType::f32(), "T");
  Stmt provide = ProvideNode::make(T, Expr(1.0f), {i, j});
  Stmt realize =
      RealizeNode::make(T, {Range(Expr(0), Expr(64)), Range(Expr(0), Expr(16))}, MemScope::kGlobal, {}, provide);
  CHECK(to_string(realize) == "realize T([0, 64], [0, 16]) @global\nT[i, j] = 1f\n");
  Stmt aligned = RealizeNode::make(T, {Range(Expr(0), Expr(64)), Range(Expr(0), Expr(16))}, MemScope::kShared,
                                   {{0, 0}, {16, 1}}, provide);
  CHECK(to_string(aligned) == "realize T([0, 64], [0, 16]) @shared align=[(0, 0), (16, 1)]\nT[i, j] = 1f\n");

  Var t("t");
  Stmt let = LetStmtNode::make(t, i * 2, StoreNode::make(C, Expr(0.0f), t, i < 5));
  CHECK(to_string(let) == "let t = (i*2)\nC[t if (i < 5)] = 0f\n");

  Var A = Var::handle("A", DType::i8());
  Stmt intrin = TensorIntrinCallNode::make("dot_4x4", {{C, i * 16, Expr(64), Expr(16)}, {A, Expr(0), Expr(4), Expr(4)}},
                                           {Expr(1.5f)});
  CHECK(to_string(intrin) == "tensor_intrin dot_4x4(C[(i*16), extent=64, stride=16], A[0, extent=4, stride=4], 1.5f)\n");
  CHECK(to_string(AttrStmtNode::make(Ref<Object>(), "double_buffer", Expr(1), intrin)) ==
        "// attr double_buffer = 1\ntensor_intrin dot_4x4(C[(i*16), extent=64, stride=16], A[0, extent=4, stride=4], "
        "1.5f)\n");
}

TEST_CASE("printer: lowered function", "[printer]") {
  Var A = Var::handle("A", DType::f32());
  Var B = Var::handle("B", DType::f32());
  Var C = Var::handle("C", DType::f32());
  Var io("i.outer"), ii("i.inner"), j("j"), k("k");
  Expr row = io * 16 + ii;
  Expr c_idx = row * 16 + j;
  Expr a_idx = row * 32 + RampNode::make(k * 8, Expr(1), 8);
  Stmt init = StoreNode::make(C, Expr(0.0f), c_idx);
  Expr acc = LoadNode::make(DType::f32(), C, c_idx);
  Stmt update = StoreNode::make(C, acc + Expr(1.0f), c_idx);
  Stmt vec = ForNode::make(k, Expr(0), Expr(4), ForKind::kSerial,
                           EvaluateNode::make(LoadNode::make(DType::f32().with_lanes(8), A, a_idx)));
  Stmt jl = ForNode::make(j, Expr(0), Expr(16), ForKind::kVectorized, SeqNode::make({init, update, vec}));
  Stmt il = ForNode::make(ii, Expr(0), Expr(16), ForKind::kSerial, jl);
  Stmt ol = ForNode::make(io, Expr(0), Expr(4), ForKind::kParallel, il);
  LoweredFunc f{"matmul",
                {{A, "A", DType::f32(), {64, 32}}, {B, "B", DType::f32(), {32, 16}}, {C, "C", DType::f32(), {64, 16}}},
                ol};
  const char* expected =
      "func matmul(A: f32[64, 32], B: f32[32, 16], C: f32[64, 16]) {\n"
      "  parallel (i.outer, 0, 4) {\n"
      "    for (i.inner, 0, 16) {\n"
      "      vectorized (j, 0, 16) {\n"
      "        C[((((i.outer*16) + i.inner)*16) + j)] = 0f\n"
      "        C[((((i.outer*16) + i.inner)*16) + j)] = (C[((((i.outer*16) + i.inner)*16) + j)] + 1f)\n"
      "        for (k, 0, 4) {\n"
      "          A[(x8((((i.outer*16) + i.inner)*32)) + ramp((k*8), 1, 8))]\n"
      "        }\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n";
  CHECK(to_string(f) == expected);
  std::ostringstream os;
  os << f;
  CHECK(os.str() == expected);
}

TEST_CASE("printer: distinct variables with the same name are disambiguated", "[printer]") {
  Var a("i"), b("i"), c("i"), d("i_1");
  CHECK(to_string(a + b) == "(i + i_1)");
  CHECK(to_string(b + a) == "(i + i_1)");  // by first appearance
  CHECK(to_string((a + b) * a) == "((i + i_1)*i)");
  // A variable really named i_1 appearing first keeps its name.
  CHECK(to_string(d + a + b + c) == "(((i_1 + i) + i_2) + i_3)");
  // The same object printed twice is one name.
  CHECK(to_string(a * a) == "(i*i)");

  Var buf = Var::handle("C", DType::f32());
  Stmt s = SeqNode::make({ForNode::make(a, Expr(0), Expr(4), ForKind::kSerial, StoreNode::make(buf, Expr(1.0f), a)),
                          ForNode::make(b, Expr(0), Expr(4), ForKind::kSerial, StoreNode::make(buf, Expr(2.0f), b))});
  CHECK(to_string(s) ==
        "for (i, 0, 4) {\n"
        "  C[i] = 1f\n"
        "}\n"
        "for (i_1, 0, 4) {\n"
        "  C[i_1] = 2f\n"
        "}\n");
}

TEST_CASE("printer: stream operators", "[printer]") {
  std::ostringstream os;
  Var x("x");
  os << (x + 1) << " " << DType::f32().with_lanes(16) << " " << DType::bf16();
  CHECK(os.str() == "(x + 1) f32x16 bf16");
}
