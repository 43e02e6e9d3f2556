// Unit tests for the lowering passes in schedule/passes/ and the IR verifier:
// hand-built input IR, expected output as printed IR (golden text), plus
// execution checks with the interpreter of test_passes_exec.h where the point
// is what the code does rather than how it looks.
#include <catch2/catch.hpp>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/ir_functor.h"
#include "compute/printer.h"
#include "schedule/passes/hoist_guards.h"
#include "schedule/passes/loop_partition.h"
#include "schedule/passes/remove_no_op.h"
#include "schedule/passes/storage_flatten.h"
#include "schedule/passes/unroll.h"
#include "schedule/passes/vectorize.h"
#include "schedule/verify.h"
#include "tests/test_passes_exec.h"

using namespace kiln;

namespace {

// Golden text: a raw string starting with a newline, for readability.
std::string golden(const char* text) { return std::string(text).substr(1); }

const DType f32 = DType::f32();
const DType i32 = DType::i32();

Stmt loop(const Var& v, Expr min, Expr extent, ForKind kind, Stmt body) {
  return ForNode::make(v, std::move(min), std::move(extent), kind, std::move(body));
}
Stmt loop(const Var& v, int extent, ForKind kind, Stmt body) { return loop(v, Expr(0), Expr(extent), kind, body); }

Expr load(const Var& buf, Expr index) { return LoadNode::make(buf->pointee, buf, std::move(index)); }
Stmt store(const Var& buf, Expr value, Expr index) { return StoreNode::make(buf, std::move(value), std::move(index)); }

int count_kind(const Stmt& s, NodeKind k) {
  int n = 0;
  post_order_visit(s, [&](const Ref<Object>& o) { n += o->kind() == k; });
  return n;
}

bool has_for_kind(const Stmt& s, ForKind k) {
  bool found = false;
  post_order_visit(s, [&](const Ref<Object>& o) {
    if (o->kind() == NodeKind::For) found |= static_cast<const ForNode*>(o.get())->for_kind == k;
  });
  return found;
}

}  // namespace

// ---------------------------------------------------------------- storage_flatten

TEST_CASE("storage_flatten: realize, provide and reads become allocate, store and loads", "[passes][flatten]") {
  Tensor A = placeholder({2, 3}, f32, "A"), T = placeholder({2, 3}, f32, "T"), C = placeholder({2, 3}, f32, "C");
  Var Ah = Var::handle("A", f32), Ch = Var::handle("C", f32);
  Var i("i"), j("j");
  Stmt compute_t =
      loop(i, 2, ForKind::kSerial, loop(j, 3, ForKind::kSerial, ProvideNode::make(T, A(i, j) * 2.0f, {i, j})));
  Stmt compute_c =
      loop(i, 2, ForKind::kSerial, loop(j, 3, ForKind::kSerial, ProvideNode::make(C, T(i, j) + 1.0f, {i, j})));
  Stmt s = RealizeNode::make(T, {Range(Expr(0), Expr(2)), Range(Expr(0), Expr(3))}, MemScope::kLocal, {},
                             SeqNode::make({compute_t, compute_c}));
  s = AttrStmtNode::make(C, passes::kBufferBind, Ch, s);
  s = AttrStmtNode::make(A, passes::kBufferBind, Ah, s);
  Stmt r = passes::storage_flatten(s);
  CHECK(to_string(r) == golden(R"(
allocate T.local[f32 * 6] @local
for (i, 0, 2) {
  for (j, 0, 3) {
    T.local[((i*3) + j)] = (A[((i*3) + j)]*2f)
  }
}
for (i, 0, 2) {
  for (j, 0, 3) {
    C[((i*3) + j)] = (T.local[((i*3) + j)] + 1f)
  }
}
)"));
  verify_ir(r, "storage_flatten", true, {Ah, Ch});
}

TEST_CASE("storage_flatten: storage_align pads the stride of the aligned dimension", "[passes][flatten]") {
  Tensor T = placeholder({4, 5}, f32, "T");
  Var i("i"), j("j");
  // stride of dim 0 is 5, padded to 9 so that 9 % 8 == 1.
  Stmt body = loop(i, 4, ForKind::kSerial, loop(j, 5, ForKind::kSerial, ProvideNode::make(T, Expr(1.0f), {i, j})));
  Stmt s = RealizeNode::make(T, {Range(Expr(0), Expr(4)), Range(Expr(0), Expr(5))}, MemScope::kShared, {{8, 1}, {0, 0}},
                             body);
  CHECK(to_string(passes::storage_flatten(s)) == golden(R"(
allocate T.shared[f32 * 36] @shared
for (i, 0, 4) {
  for (j, 0, 5) {
    T.shared[((i*9) + j)] = 1f
  }
}
)"));
  // Alignment of the innermost dimension pads the element stride itself.
  Tensor U = placeholder({3}, f32, "U");
  Stmt s1 = RealizeNode::make(U, {Range(Expr(0), Expr(3))}, MemScope::kGlobal, {{4, 2}},
                              ProvideNode::make(U, Expr(1.0f), {Expr(1)}));
  CHECK(to_string(passes::storage_flatten(s1)) == golden(R"(
allocate U[f32 * 6] @global
U[2] = 1f
)"));
  // A cache stage already named for its scope gets no second suffix.
  Tensor L = placeholder({2}, f32, "C.local");
  Stmt s2 = RealizeNode::make(L, {Range(Expr(0), Expr(2))}, MemScope::kLocal, {},
                              ProvideNode::make(L, Expr(1.0f), {Expr(1)}));
  CHECK(to_string(passes::storage_flatten(s2)) == golden(R"(
allocate C.local[f32 * 2] @local
C.local[1] = 1f
)"));
}

TEST_CASE("storage_flatten: indices are relative to the realized region", "[passes][flatten]") {
  Tensor A = placeholder({8, 4}, f32, "A"), T = placeholder({8, 4}, f32, "T");
  Var Ah = Var::handle("A", f32);
  Var io("io"), ii("ii"), j("j");
  Expr row = io * 2 + ii;
  Stmt produce = loop(ii, 2, ForKind::kSerial, loop(j, 4, ForKind::kSerial, ProvideNode::make(T, A(row, j), {row, j})));
  Stmt consume = AttrStmtNode::make(T, attr::kDoubleBuffer, Expr(1), EvaluateNode::make(T(row, Expr(3))));
  Stmt s = loop(io, 4, ForKind::kSerial,
                RealizeNode::make(T, {Range(io * 2, Expr(2)), Range(Expr(0), Expr(4))}, MemScope::kGlobal, {},
                                  SeqNode::make({produce, consume})));
  s = AttrStmtNode::make(A, passes::kBufferBind, Ah, s);
  Stmt r = passes::storage_flatten(s);
  // The double_buffer attribute now names the buffer instead of the tensor.
  CHECK(to_string(r) == golden(R"(
for (io, 0, 4) {
  allocate T[f32 * 8] @global
  for (ii, 0, 2) {
    for (j, 0, 4) {
      T[(((((io*2) + ii) - (io*2))*4) + j)] = A[((((io*2) + ii)*4) + j)]
    }
  }
  // attr [T] double_buffer = 1
  T[(((((io*2) + ii) - (io*2))*4) + 3)]
}
)"));
  auto* attr = r.as<ForNode>()->body.as<AllocateNode>()->body.as<SeqNode>()->seq[1].as<AttrStmtNode>();
  REQUIRE(attr);
  CHECK(attr->node.get() == r.as<ForNode>()->body.as<AllocateNode>()->buffer.get());
}

TEST_CASE("storage_flatten: a tensor neither realized nor bound is an internal error", "[passes][flatten]") {
  Tensor A = placeholder({4}, f32, "A"), C = placeholder({4}, f32, "C");
  Var Ch = Var::handle("C", f32);
  Var i("i");
  Stmt s =
      AttrStmtNode::make(C, passes::kBufferBind, Ch, loop(i, 4, ForKind::kSerial, ProvideNode::make(C, A(i), {i})));
  CHECK_THROWS_WITH(passes::storage_flatten(s), Catch::Contains("tensor 'A' is read but neither realized nor bound"));
}

// ---------------------------------------------------------------- vectorize

TEST_CASE("vectorize: loads and stores widen, lane-invariant loads broadcast", "[passes][vectorize]") {
  Var A = Var::handle("A", f32), B = Var::handle("B", f32), C = Var::handle("C", f32);
  Var o("o"), i("i");
  Stmt body = store(C, load(A, o * 4 + i) * load(B, o), o * 4 + i);
  Stmt s = loop(o, 8, ForKind::kSerial, loop(i, 4, ForKind::kVectorized, body));
  Stmt r = passes::vectorize(s);
  CHECK(to_string(r) == golden(R"(
for (o, 0, 8) {
  C[ramp((o*4), 1, 4)] = (A[ramp((o*4), 1, 4)]*x4(B[o]))
}
)"));
  verify_ir(r, "vectorize", VerifyOptions{true, true, {A, B, C}});
}

TEST_CASE("vectorize: ramp arithmetic keeps strides, casts, selects and lets widen", "[passes][vectorize]") {
  Var A = Var::handle("A", f32), C = Var::handle("C", f32);
  Var i("i"), t("t", f32);
  // C[15 - 2*i] = let t = f32(i) in select(i < 2, A[i*3], t)
  Expr value = LetNode::make(t, cast(f32, i), select(i < 2, load(A, i * 3), Expr(t)));
  Stmt s = loop(i, 4, ForKind::kVectorized, store(C, value, Expr(15) - i * 2));
  Stmt r = passes::vectorize(s);
  CHECK(to_string(r) == golden(R"(
C[ramp(15, -2, 4)] = (let t = f32x4(ramp(0, 1, 4)) in select((ramp(0, 1, 4) < x4(2)), A[ramp(0, 3, 4) if (ramp(0, 1, 4) < x4(2))], t))
)"));
  verify_ir(r, "vectorize", VerifyOptions{true, true, {A, C}});
}

TEST_CASE("vectorize: a lane-varying guard becomes a predicate", "[passes][vectorize]") {
  Var A = Var::handle("A", f32), C = Var::handle("C", f32);
  Var o("o"), i("i"), n("n");
  Expr idx = o * 4 + i;
  Stmt guarded = IfThenElseNode::make(idx < 10 && n > 0, store(C, load(A, idx) + load(A, o), idx));
  Stmt s = loop(o, 3, ForKind::kSerial, loop(i, 4, ForKind::kVectorized, guarded));
  Stmt r = passes::vectorize(s);
  // n > 0 does not vary across lanes and stays a branch; A[o] is loaded only
  // by the lanes that run.
  CHECK(to_string(r) == golden(R"(
for (o, 0, 3) {
  if ((n > 0)) {
    C[ramp((o*4), 1, 4) if (ramp((o*4), 1, 4) < x4(10))] = (A[ramp((o*4), 1, 4) if (ramp((o*4), 1, 4) < x4(10))] + A[x4(o) if (ramp((o*4), 1, 4) < x4(10))])
  }
}
)"));
  verify_ir(r, "vectorize", VerifyOptions{true, true, {A, C, n}});
}

TEST_CASE("vectorize: a guard false in every lane reads nothing", "[passes][vectorize][exec]") {
  // for o in 0..3: vectorized i in 0..4: if (o*4 + i < 5) C[o*4 + i] = B[o]
  // B has 2 elements: B[2] is read by no iteration of the scalar loop.
  Var B = Var::handle("B", i32), C = Var::handle("C", i32);
  Var o("o"), i("i");
  Expr idx = o * 4 + i;
  Stmt s = loop(o, 3, ForKind::kSerial,
                loop(i, 4, ForKind::kVectorized, IfThenElseNode::make(idx < 5, store(C, load(B, o), idx))));
  Stmt r = passes::vectorize(s);
  REQUIRE(!has_for_kind(r, ForKind::kVectorized));
  REQUIRE(count_kind(r, NodeKind::IfThenElse) == 0);
  kiln_test::Buffer bb("B", 2, true), cb("C", 5, false);
  bb.data = {7, 8};
  kiln_test::Interpreter interp({{B.node(), &bb}, {C.node(), &cb}});
  REQUIRE_NOTHROW(interp.exec(r));
  CHECK(cb.data == std::vector<double>{7, 7, 7, 7, 8});
}

TEST_CASE("vectorize: widens through an inner loop that does not depend on the var", "[passes][vectorize]") {
  Var A = Var::handle("A", f32), C = Var::handle("C", f32);
  Var i("i"), k("k");
  Stmt update = store(C, load(C, i) + load(A, k * 4 + i), i);
  Stmt s = loop(i, 4, ForKind::kVectorized,
                SeqNode::make({store(C, Expr(0.0f), i), loop(k, 8, ForKind::kUnrolled, update)}));
  CHECK(to_string(passes::vectorize(s)) == golden(R"(
C[ramp(0, 1, 4)] = x4(0f)
unrolled (k, 0, 8) {
  C[ramp(0, 1, 4)] = (C[ramp(0, 1, 4)] + A[ramp((k*4), 1, 4)])
}
)"));
}

TEST_CASE("vectorize: falls back to a serial loop when the body cannot be widened", "[passes][vectorize]") {
  Var A = Var::handle("A", f32), B = Var::handle("B", f32), C = Var::handle("C", f32);
  Var i("i"), k("k"), n("n");
  auto vloop = [&](Expr extent, Stmt body) { return loop(i, Expr(0), extent, ForKind::kVectorized, body); };
  auto serial_unchanged = [&](const Stmt& in) {
    Stmt r = passes::vectorize(in);
    auto* f = r.as<ForNode>();
    REQUIRE(f);
    CHECK(f->for_kind == ForKind::kSerial);
    CHECK(f->body.same_as(in.as<ForNode>()->body));
    CHECK(!has_for_kind(r, ForKind::kVectorized));
  };
  Stmt simple = store(C, load(A, i), i);
  SECTION("extent 1") { serial_unchanged(vloop(Expr(1), simple)); }
  SECTION("non-constant extent") { serial_unchanged(vloop(n, simple)); }
  SECTION("inner loop bounds depend on the var") {
    serial_unchanged(vloop(Expr(4), loop(k, Expr(0), i + 1, ForKind::kSerial, store(C, load(A, k), i))));
  }
  SECTION("allocation inside") {
    Var T = Var::handle("T", f32);
    serial_unchanged(vloop(Expr(4), AllocateNode::make(T, f32, {Expr(4)}, MemScope::kLocal, simple)));
  }
  SECTION("reduction into one element") {
    serial_unchanged(vloop(Expr(4), store(C, load(C, Expr(0)) + load(A, i), Expr(0))));
  }
  SECTION("lanes read what other lanes write") {
    // B[i] = A[i]; C[i] = B[i + 1]: lane 0 must see the old B[1].
    serial_unchanged(vloop(Expr(4), SeqNode::make({store(B, load(A, i), i), store(C, load(B, i + 1), i)})));
  }
  SECTION("lane-varying guard with an else branch") {
    serial_unchanged(vloop(Expr(4), IfThenElseNode::make(i < 2, simple, store(C, Expr(0.0f), i))));
  }
  SECTION("integer division by a lane-varying divisor under a guard") {
    Var D = Var::handle("D", i32), E = Var::handle("E", i32);
    serial_unchanged(vloop(Expr(4), IfThenElseNode::make(i < n, store(E, load(E, i) / load(D, i), i))));
  }
  SECTION("attribute value depends on the var") {
    serial_unchanged(vloop(Expr(4), AttrStmtNode::make(Ref<Object>(), "pragma_x", i, simple)));
  }
}

TEST_CASE("vectorize: nested vectorized loops vectorize the inner one only", "[passes][vectorize]") {
  Var A = Var::handle("A", f32), C = Var::handle("C", f32);
  Var i("i"), j("j");
  Stmt s = loop(i, 2, ForKind::kVectorized, loop(j, 4, ForKind::kVectorized, store(C, load(A, i * 4 + j), i * 4 + j)));
  CHECK(to_string(passes::vectorize(s)) == golden(R"(
for (i, 0, 2) {
  C[ramp((i*4), 1, 4)] = A[ramp((i*4), 1, 4)]
}
)"));
}

// ---------------------------------------------------------------- unroll

TEST_CASE("unroll: constant-extent unrolled loops become copies", "[passes][unroll]") {
  Var C = Var::handle("C", i32);
  Var i("i"), j("j"), n("n");
  Stmt s =
      loop(i, Expr(1), Expr(3), ForKind::kUnrolled, loop(j, 2, ForKind::kUnrolled, store(C, i * 10 + j, i * 2 + j)));
  CHECK(to_string(passes::unroll(s)) == golden(R"(
C[((1*2) + 0)] = ((1*10) + 0)
C[((1*2) + 1)] = ((1*10) + 1)
C[((2*2) + 0)] = ((2*10) + 0)
C[((2*2) + 1)] = ((2*10) + 1)
C[((3*2) + 0)] = ((3*10) + 0)
C[((3*2) + 1)] = ((3*10) + 1)
)"));
  // Non-constant extent: a serial loop; other kinds are left alone.
  Stmt dyn = passes::unroll(loop(i, Expr(0), n, ForKind::kUnrolled, loop(j, 2, ForKind::kParallel, store(C, j, i))));
  CHECK(to_string(dyn) == golden(R"(
for (i, 0, n) {
  parallel (j, 0, 2) {
    C[i] = j
  }
}
)"));
  // Extent 0: nothing left.
  CHECK(is_const_int(passes::unroll(loop(i, 0, ForKind::kUnrolled, store(C, i, i))).as<EvaluateNode>()->value, 0));
}

// ---------------------------------------------------------------- remove_no_op

TEST_CASE("remove_no_op: drops statements that do nothing", "[passes][remove_no_op]") {
  Var C = Var::handle("C", i32), T = Var::handle("T", i32);
  Var i("i"), x("x"), n("n");
  Stmt nop = EvaluateNode::make(Expr(0));
  Stmt work = store(C, i, i);
  Stmt s = SeqNode::make({
      loop(i, 4, ForKind::kSerial, nop),                                     // empty loop
      loop(i, 0, ForKind::kSerial, work),                                    // zero trips
      IfThenElseNode::make(n > 0, nop, nop),                                 // empty branches
      IfThenElseNode::make(n > 0, nop, loop(i, 2, ForKind::kSerial, work)),  // empty then
      IfThenElseNode::make(make_const(DType::boolean(), int64_t{0}), work, EvaluateNode::make(Expr(1))),  // constant
      AllocateNode::make(T, i32, {Expr(4)}, MemScope::kLocal, loop(i, 3, ForKind::kSerial, work)),  // unused buffer
      LetStmtNode::make(x, n + 1, loop(i, 5, ForKind::kSerial, work)),                              // unused let
      LetStmtNode::make(x, n + 1, store(C, x, Expr(0))),                                            // used let stays
  });
  CHECK(to_string(passes::remove_no_op(s)) == golden(R"(
if (!(n > 0)) {
  for (i, 0, 2) {
    C[i] = i
  }
}
for (i, 0, 3) {
  C[i] = i
}
for (i, 0, 5) {
  C[i] = i
}
let x = (n + 1)
C[0] = x
)"));
  Stmt empty = passes::remove_no_op(loop(i, 4, ForKind::kSerial, SeqNode::make({nop, nop})));
  REQUIRE(empty.as<EvaluateNode>());
  CHECK(is_zero(empty.as<EvaluateNode>()->value));
}

// ---------------------------------------------------------------- loop_partition

TEST_CASE("loop_partition: a split tail is peeled off and the main loop loses its guard", "[passes][partition]") {
  Var A = Var::handle("A", f32), C = Var::handle("C", f32);
  Var io("io"), ii("ii");
  Expr idx = io * 4 + ii;
  Stmt s = loop(io, 4, ForKind::kSerial,
                loop(ii, 4, ForKind::kSerial, IfThenElseNode::make(idx < 14, store(C, load(A, idx), idx))));
  Stmt r = passes::loop_partition(s);
  CHECK(to_string(r) == golden(R"(
for (io, 0, 3) {
  for (ii, 0, 4) {
    C[((io*4) + ii)] = A[((io*4) + ii)]
  }
}
for (ii, 0, 2) {
  C[((3*4) + ii)] = A[((3*4) + ii)]
}
)"));
}

TEST_CASE("loop_partition: a vectorized loop keeps its kind, its guarded tail becomes serial", "[passes][partition]") {
  Var C = Var::handle("C", f32);
  Var o("o"), i("i");
  // i + o < 10 with o in [0, 5): o in [0, 2] never needs the guard; for
  // o in [3, 4], lanes i <= 5 never do, i in [6, 7] keep it.
  Stmt s = loop(o, 5, ForKind::kSerial,
                loop(i, 8, ForKind::kVectorized, IfThenElseNode::make(i + o < 10, store(C, Expr(1.0f), o * 8 + i))));
  CHECK(to_string(passes::loop_partition(s)) == golden(R"(
for (o, 0, 3) {
  vectorized (i, 0, 8) {
    C[((o*8) + i)] = 1f
  }
}
for (o, 3, 2) {
  vectorized (i, 0, 6) {
    C[((o*8) + i)] = 1f
  }
  for (i, 6, 2) {
    if (((i + o) < 10)) {
      C[((o*8) + i)] = 1f
    }
  }
}
)"));
}

TEST_CASE("loop_partition: a parallel loop stays one loop and branches inside", "[passes][partition]") {
  Var C = Var::handle("C", f32);
  Var io("io"), ii("ii");
  Expr idx = io * 4 + ii;
  Stmt s = loop(io, 4, ForKind::kParallel,
                loop(ii, 4, ForKind::kSerial, IfThenElseNode::make(idx < 14, store(C, Expr(1.0f), idx))));
  CHECK(to_string(passes::loop_partition(s)) == golden(R"(
parallel (io, 0, 4) {
  if ((io <= 2)) {
    for (ii, 0, 4) {
      C[((io*4) + ii)] = 1f
    }
  } else {
    for (ii, 0, 2) {
      C[((3*4) + ii)] = 1f
    }
  }
}
)"));
}

TEST_CASE("loop_partition: two-sided guards peel both ends", "[passes][partition]") {
  Var C = Var::handle("C", f32);
  Var i("i");
  Stmt s = loop(i, 8, ForKind::kUnrolled,
                IfThenElseNode::make(i >= 1 && i < 7, store(C, Expr(1.0f), i), store(C, Expr(0.0f), i)));
  CHECK(to_string(passes::loop_partition(s)) == golden(R"(
C[0] = 0f
unrolled (i, 1, 6) {
  C[i] = 1f
}
C[7] = 0f
)"));
}

TEST_CASE("loop_partition: guards no iteration passes all split the loop where each changes", "[passes][partition]") {
  Var C = Var::handle("C", f32);
  Var t("t"), r("r");
  // A row of two tiles of 14 columns with clipped borders: the first tile
  // holds the left padding (its first column skips a tap), the second the
  // right. No tile passes both guards; each piece decides both.
  Stmt taps = SeqNode::make({IfThenElseNode::make(t * 14 - 1 >= 0, store(C, Expr(1.0f), t)),
                             IfThenElseNode::make(t * 14 + 14 < 28, store(C, Expr(2.0f), t))});
  CHECK(to_string(passes::loop_partition(loop(t, 2, ForKind::kSerial, loop(r, 3, ForKind::kSerial, taps)))) ==
        golden(R"(
for (r, 0, 3) {
  C[0] = 2f
}
for (r, 0, 3) {
  C[1] = 1f
}
)"));
  // Three tiles: [0], [1], [2].
  Stmt three = SeqNode::make(
      {IfThenElseNode::make(t >= 1, store(C, Expr(1.0f), t)), IfThenElseNode::make(t < 2, store(C, Expr(2.0f), t))});
  CHECK(to_string(passes::loop_partition(loop(t, 3, ForKind::kSerial, three))) == golden(R"(
C[0] = 2f
C[1] = 1f
C[1] = 2f
C[2] = 1f
)"));
  // More than four pieces would be: the loop stays whole. So does a
  // parallel loop (a branch inside it is cheaper than serial pieces).
  Stmt many = SeqNode::make(
      {IfThenElseNode::make(t >= 4, store(C, Expr(1.0f), t)), IfThenElseNode::make(t < 3, store(C, Expr(2.0f), t)),
       IfThenElseNode::make(t >= 6, store(C, Expr(3.0f), t)), IfThenElseNode::make(t < 2, store(C, Expr(4.0f), t))});
  Stmt wide = loop(t, 8, ForKind::kSerial, many);
  CHECK(passes::loop_partition(wide).same_as(wide));
  Stmt par = loop(t, 2, ForKind::kParallel, taps);
  CHECK(passes::loop_partition(par).same_as(par));
}

TEST_CASE("loop_partition: a split's last partial tile is peeled from the empty tiles after it",
          "[passes][partition]") {
  Var C = Var::handle("C", f32);
  Var t("t"), x("x");
  // `tiles` tiles t of 5 rows x; row t*5 + x stores `value` where `guard` holds.
  auto rows = [&](int tiles, Expr guard, float value) {
    return loop(t, tiles, ForKind::kSerial,
                loop(x, 5, ForKind::kSerial, IfThenElseNode::make(guard, store(C, Expr(value), t * 5 + x))));
  };
  // Rows 10..12 of 13 in tiles of 5 (the tail of a split by 10, then by 5):
  // tile 0 holds 3 rows, tile 1 none. No tile passes the guard; the cut
  // where it turns false in every row leaves tile 0 alone, its guard
  // decided row by row, and drops tile 1.
  CHECK(to_string(passes::loop_partition(rows(2, t * 5 + x + 10 < 13, 1.0f))) == golden(R"(
for (x, 0, 3) {
  C[((0*5) + x)] = 1f
}
)"));
  // Rows 0..7 of 8 in tiles of 5, seven tiles: tile 0 is whole (the main
  // part), tile 1 holds 3 rows, tiles 2..6 none. The peeled part splits
  // where the guard turns false, so tile 1 is a piece of its own.
  CHECK(to_string(passes::loop_partition(rows(7, t * 5 + x < 8, 2.0f))) == golden(R"(
for (x, 0, 5) {
  C[((0*5) + x)] = 2f
}
for (x, 0, 3) {
  C[((1*5) + x)] = 2f
}
)"));
  // A guard that turns false from the other side (a negative coefficient):
  // the tiles before the first it holds in are dropped.
  CHECK(to_string(passes::loop_partition(rows(4, t * 5 + x >= 12, 3.0f))) == golden(R"(
for (x, 2, 3) {
  C[((2*5) + x)] = 3f
}
for (x, 0, 5) {
  C[((3*5) + x)] = 3f
}
)"));
}

TEST_CASE("loop_partition: a padded copy's select guard splits serial loops, not parallel ones",
          "[passes][partition]") {
  Var A = Var::handle("A", f32), P = Var::handle("P", f32);
  Var i("i"), r("r");
  // P[i] = select(1 <= i < 7, A[i - 1], 0) over i in [0, 8): a row of a
  // one-pixel padded copy.
  Stmt copy = store(P, select(i >= 1 && i < 7, load(A, i - 1), Expr(0.0f)), i);
  CHECK(to_string(passes::loop_partition(loop(i, 8, ForKind::kSerial, copy))) == golden(R"(
P[0] = 0f
for (i, 1, 6) {
  P[i] = A[(i - 1)]
}
P[7] = 0f
)"));
  // The row guard of an outer parallel loop stays (splitting it would
  // branch the whole task), the inner loop still loses the column guard.
  Stmt rows = store(P, select(r >= 1 && i >= 1 && i < 7, load(A, r * 6 + i - 7), Expr(0.0f)), r * 8 + i);
  CHECK(to_string(passes::loop_partition(loop(r, 4, ForKind::kParallel, loop(i, 8, ForKind::kSerial, rows)))) ==
        golden(R"(
parallel (r, 0, 4) {
  P[((r*8) + 0)] = 0f
  for (i, 1, 6) {
    P[((r*8) + i)] = select((r >= 1), A[(((r*6) + i) - 7)], 0f)
  }
  P[((r*8) + 7)] = 0f
}
)"));
  // A select that is not a store's whole value is no guard.
  Stmt inner = store(P, select(i < 4, Expr(1.0f), Expr(2.0f)) + Expr(1.0f), i);
  Stmt s = loop(i, 8, ForKind::kSerial, inner);
  CHECK(passes::loop_partition(s).same_as(s));
}

TEST_CASE("loop_partition: leaves guards it cannot reason about", "[passes][partition]") {
  Var C = Var::handle("C", f32);
  Var i("i"), n("n"), j("j");
  Stmt work = store(C, Expr(1.0f), i);
  // Not affine in i; depends on a var of unknown range; non-constant extent;
  // a thread-binding loop.
  for (Stmt s : {loop(i, 8, ForKind::kSerial, IfThenElseNode::make(floormod(i, 3) < 2, work)),
                 loop(i, 8, ForKind::kSerial, IfThenElseNode::make(i < n, work)),
                 loop(i, Expr(0), n, ForKind::kSerial, IfThenElseNode::make(i < 5, work)),
                 ForNode::make(i, Expr(0), Expr(8), ForKind::kThreadBinding, IfThenElseNode::make(i < 5, work),
                               "threadIdx.x")}) {
    Stmt r = passes::loop_partition(s);
    CHECK(r.same_as(s));
  }
  // A guard true in the whole loop is dropped without splitting.
  Stmt always = loop(i, 8, ForKind::kSerial, loop(j, 2, ForKind::kSerial, IfThenElseNode::make(i + j < 9, work)));
  CHECK(to_string(passes::loop_partition(always)) == golden(R"(
for (i, 0, 8) {
  for (j, 0, 2) {
    C[i] = 1f
  }
}
)"));
  // The range of a thread-binding loop still decides inner guards.
  Stmt bound = ForNode::make(i, Expr(0), Expr(8), ForKind::kThreadBinding,
                             loop(j, 4, ForKind::kSerial, IfThenElseNode::make(i * 4 + j < 40, work)), "threadIdx.x");
  CHECK(count_kind(passes::loop_partition(bound), NodeKind::IfThenElse) == 0);
}

// ---------------------------------------------------------------- hoist_guards

TEST_CASE("hoist_guards: a condition on every statement that the loops do not change leaves them", "[passes][hoist]") {
  Var C = Var::handle("C", f32);
  Var f("f"), r("r"), s("s");
  // The row test of a fused parallel loop, on each update of an unrolled tile.
  Expr row = floormod(f, 7) * 2 + r >= 3;
  Stmt body = SeqNode::make({IfThenElseNode::make(row && s >= 1, store(C, Expr(1.0f), s)),
                             IfThenElseNode::make(row, store(C, Expr(2.0f), s + 1))});
  Stmt nest = loop(f, 14, ForKind::kParallel, loop(r, 3, ForKind::kSerial, loop(s, 3, ForKind::kSerial, body)));
  CHECK(to_string(passes::hoist_guards(nest)) == golden(R"(
parallel (f, 0, 14) {
  for (r, 0, 3) {
    if ((((floormod(f, 7)*2) + r) >= 3)) {
      for (s, 0, 3) {
        if ((s >= 1)) {
          C[s] = 1f
        }
        C[(s + 1)] = 2f
      }
    }
  }
}
)"));
}

TEST_CASE("hoist_guards: leaves guards that a statement lacks, that read memory or that the loop changes",
          "[passes][hoist]") {
  Var C = Var::handle("C", f32), A = Var::handle("A", i32);
  Var i("i"), n("n");
  Stmt work = store(C, Expr(1.0f), i);
  for (Stmt s : {
           // One statement is not guarded: hoisting would skip it.
           loop(i, 4, ForKind::kSerial, SeqNode::make({IfThenElseNode::make(n > 0, work), work})),
           // The condition reads memory the loop may write.
           loop(i, 4, ForKind::kSerial, IfThenElseNode::make(load(A, Expr(0)) > 0, work)),
           // The condition depends on the loop's own var.
           loop(i, 4, ForKind::kSerial, IfThenElseNode::make(i < n, work)),
           // An else branch runs when the condition is false.
           loop(i, 4, ForKind::kSerial, IfThenElseNode::make(n > 0, work, store(C, Expr(0.0f), i))),
           // A thread-binding loop.
           ForNode::make(i, Expr(0), Expr(4), ForKind::kThreadBinding, IfThenElseNode::make(n > 0, work),
                         "threadIdx.x"),
       }) {
    CHECK(passes::hoist_guards(s).same_as(s));
  }
}

TEST_CASE("hoist_guards: the hoisted nest computes what the original computes", "[passes][hoist][exec]") {
  Var C = Var::handle("C", f32);
  Var f("f"), r("r"), s("s");
  Expr row = floormod(f, 3) + r >= 2;
  Stmt body = SeqNode::make({IfThenElseNode::make(row && s >= 1, store(C, Expr(1.0f) + cast(f32, f), f * 9 + r * 3 + s)),
                             IfThenElseNode::make(row, store(C, Expr(2.0f), 60 + f * 3 + r))});
  Stmt nest = loop(f, 6, ForKind::kParallel, loop(r, 3, ForKind::kSerial, loop(s, 3, ForKind::kSerial, body)));
  Stmt hoisted = passes::hoist_guards(nest);
  REQUIRE(!hoisted.same_as(nest));
  auto run = [&](const Stmt& st) {
    kiln_test::Buffer out("C", 80, true);
    kiln_test::Interpreter in({{C.node(), &out}});
    in.exec(st);
    return std::make_pair(out.data, in.stats.if_evals);
  };
  auto [want, ifs_before] = run(nest);
  auto [got, ifs_after] = run(hoisted);
  CHECK(got == want);
  CHECK(ifs_after < ifs_before);
}

// ---------------------------------------------------------------- verify_ir

TEST_CASE("verify_ir: accepts well-formed IR, sibling scopes may reuse a var", "[verify]") {
  Var C = Var::handle("C", f32);
  Var i("i");
  Stmt s = SeqNode::make(
      {loop(i, 4, ForKind::kSerial, store(C, Expr(1.0f), i)), loop(i, 4, ForKind::kSerial, store(C, Expr(2.0f), i))});
  CHECK_NOTHROW(verify_ir(s, "test", true, {C}));
}

TEST_CASE("verify_ir: catches planted violations and names the pass", "[verify]") {
  Var C = Var::handle("C", f32), T = Var::handle("T", f32);
  Var i("i"), x("x");
  auto fails = [&](const Stmt& s, const std::string& what, VerifyOptions opt = VerifyOptions{true, false, {}}) {
    opt.free_vars.push_back(C);
    CHECK_THROWS_WITH(verify_ir(s, "my_pass", opt),
                      Catch::StartsWith("IR check after pass 'my_pass'") && Catch::Contains(what));
  };
  fails(loop(i, 4, ForKind::kSerial, store(C, Expr(1.0f), x)), "variable 'x' is used but not defined");
  fails(store(T, Expr(1.0f), Expr(0)), "variable 'T' is used but not defined");
  fails(loop(i, 4, ForKind::kSerial, loop(i, 2, ForKind::kSerial, store(C, Expr(1.0f), i))),
        "variable 'i' is bound by For while already in scope");
  // Built with raw constructors, bypassing the make() checks.
  Expr ramp = RampNode::make(Expr(0), Expr(1), 4);
  fails(Stmt(new StoreNode(C, Expr(1.0f), ramp, Expr())),
        "at `C[ramp(0, 1, 4)] = 1f`: Store of 'C': value has 1 lanes, index 4");
  fails(EvaluateNode::make(Expr(new LoadNode(f32, C, ramp, Expr()))), "Load of 'C': value has 1 lanes, index 4");
  fails(Stmt(new IfThenElseNode(Expr(1), store(C, Expr(1.0f), Expr(0)), Stmt())), "IfThenElse condition has type i32");
  fails(Stmt(new ForNode(i, make_const(DType::i64(), int64_t{0}), Expr(4), ForKind::kSerial, "",
                         store(C, Expr(1.0f), i))),
        "has min i64");
  fails(AllocateNode::make(T, f32, {Expr(0)}, MemScope::kLocal, store(T, Expr(1.0f), Expr(0))), "with extent 0");
  fails(AllocateNode::make(T, i32, {Expr(4)}, MemScope::kLocal, store(T, Expr(1.0f), Expr(0))), "allocated as i32");
  fails(EvaluateNode::make(Expr(new AddNode(f32, Expr(1.0f), Expr(1)))), "Add operands have types f32 and i32");
  Tensor A = placeholder({4}, f32, "A");
  fails(EvaluateNode::make(A(Expr(0))), "TensorRead of 'A' remains after flattening");
  fails(AttrStmtNode::make(A, passes::kBufferBind, Var::handle("A", f32), EvaluateNode::make(Expr(0))),
        "buffer_bind attribute remains after flattening");
  fails(loop(i, 4, ForKind::kVectorized, store(C, Expr(1.0f), i)), "vectorized loop 'i' remains",
        VerifyOptions{true, true, {}});
  // Before flattening, tensor reads and buffer_bind are fine.
  Var Ah = Var::handle("A", f32);
  CHECK_NOTHROW(verify_ir(AttrStmtNode::make(A, passes::kBufferBind, Ah, EvaluateNode::make(A(Expr(0)))), "p", false));
}
