// Warp scope's user errors: every message that guards tensor-core fragments
// (MemScope::kWarp), each triggered by the schedule mistake it describes and
// checked by its text. The schedules are small hand-written tensor-core
// GEMMs (the structure of kernels/gpu_mma_gemm.cpp, one warp per block),
// broken one thing at a time, plus a few user-declared intrinsics.
// The sm_75 message ("needs sm_80 or later") is checked in
// test_gpu_tensor_cores.cpp.
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "base/error.h"
#include "codegen/build.h"
#include "codegen/cuda_codegen.h"
#include "codegen/target.h"
#include "compute/expr_ops.h"
#include "compute/hw_instructions.h"
#include "compute/tensor_intrin.h"
#include "kernels/cuda_tensor_intrinsics.h"
#include "kernels/tensor_intrinsics.h"
#include "schedule/gpu_limits.h"
#include "schedule/lower.h"
#include "test_codegen_util.h"

using namespace kiln;
using Catch::Matchers::Contains;

namespace {

const GpuLimits kSm80 = gpu_limits_for_arch("sm_80");

using kiln::test::user_error_of;

Stmt loop(const Var& v, int64_t n, Stmt body) {
  return ForNode::make(v, Expr(0), Expr(static_cast<int>(n)), ForKind::kSerial, std::move(body));
}

// ---- user-declared intrinsics, lowered to plain loops over their operands

// frag[rows, cols] = src[rows, cols].
TensorIntrin user_copy(const std::string& name, DType t, int rows, int cols) {
  Tensor src = placeholder({Expr(rows), Expr(cols)}, t, "src");
  Tensor frag = compute({Expr(rows), Expr(cols)}, [&](Var i, Var j) { return src(i, j); }, "frag");
  TensorIntrinLowering lower;
  lower.body = [rows, cols](const std::vector<IntrinBuffer>& ops) {
    Var i("i"), j("j");
    return loop(i, rows, loop(j, cols, ops[1].store({i, j}, ops[0].load({i, j}))));
  };
  return decl_tensor_intrin(name, frag, {src}, lower);
}

// c[m, n] (+)= sum_k acc(a[m, k]) * acc(b[k, n]).
TensorIntrin user_mma(const std::string& name, DType in, DType acc, int m, int n, int k) {
  Tensor a = placeholder({Expr(m), Expr(k)}, in, "a");
  Tensor b = placeholder({Expr(k), Expr(n)}, in, "b");
  IterVar r = reduce_axis(k, "k");
  Tensor c = compute(
      {Expr(m), Expr(n)}, [&](Var i, Var j) { return sum(cast(acc, a(i, r->var)) * cast(acc, b(r->var, j)), {r}); },
      "c");
  TensorIntrinLowering lower;
  lower.reset = [m, n, acc](const IntrinBuffer& out) {
    Var i("i"), j("j");
    return loop(i, m, loop(j, n, out.store({i, j}, make_zero(acc))));
  };
  lower.update = [m, n, k, acc](const std::vector<IntrinBuffer>& ops) {
    Var i("i"), j("j"), kk("kk");
    Expr product = cast(acc, ops[0].load({i, kk})) * cast(acc, ops[1].load({kk, j}));
    return loop(i, m, loop(j, n, loop(kk, k, ops[2].store({i, j}, ops[2].load({i, j}) + product))));
  };
  return decl_tensor_intrin(name, c, {a, b}, lower);
}

// out[16, 8] = 0 by the accumulator fragment's reset instruction
// (cuda.mma.zero.16x8), whatever memory `out` is in.
TensorIntrin user_mma_zero() {
  Tensor out = compute({Expr(16), Expr(8)}, [&](Var, Var) { return make_zero(DType::f32()); }, "out");
  TensorIntrinLowering lower;
  lower.body = [](const std::vector<IntrinBuffer>& ops) {
    const Expr zero = make_zero(ops[0].offset.dtype());
    return TensorIntrinCallNode::make(kCudaMmaZero, {ops[0].at({zero, zero}, 128)}, {});
  };
  return decl_tensor_intrin("user_mma_zero_16x8", out, {}, lower);
}

// ---- a tensor-core GEMM written by hand, and the mistakes made in it

// What the GEMM is tensorized with: the cuda intrinsics by default.
struct GemmIntrinsics {
  DType input = DType::f16(), acc = DType::f32();
  int fm = 16, fn = 8, fk = 16;  // the fragment shape (m16n8k16)
  TensorIntrin load_a, load_b, mma, store;
};

GemmIntrinsics cuda_intrinsics() {
  GemmIntrinsics g;
  g.load_a = cuda_mma_load_a(DType::f16(), false);
  g.load_b = cuda_mma_load_b(DType::f16(), false);
  g.mma = cuda_mma_m16n8k16(DType::f16(), false, false);
  g.store = cuda_mma_store();
  return g;
}

// The same GEMM on intrinsics declared by the user: fragments of fm x fn x fk
// in `input` summed into `acc`, each lowered to plain loops.
GemmIntrinsics user_intrinsics(DType input, DType acc, int fm, int fn, int fk) {
  GemmIntrinsics g;
  g.input = input;
  g.acc = acc;
  g.fm = fm;
  g.fn = fn;
  g.fk = fk;
  g.load_a = user_copy("user_load_a", input, fm, fk);
  g.load_b = user_copy("user_load_b", input, fk, fn);
  g.mma = user_mma("user_mma", input, acc, fm, fn, fk);
  g.store = user_copy("user_store", acc, fm, fn);
  return g;
}

enum class Mistake {
  kNone,
  kNoTensorize,          // warp scope asked for, but no stage tensorized
  kStoreNotTensorized,   // the accumulators copied out element by element
  kLoadBNotTensorized,   // the B fragment filled element by element
  kLoadAWithLoadB,       // A's fragment loaded with B's 16 x 8 ldmatrix
  kAccOnLanes,           // the accumulators computed per fragment of a lane loop
  kStoreOnLanes,         // the store of the m fragments bound to threadIdx.x
  kHalfWarp,             // the block's threads are 16 lanes, not a warp
  kNoBindings,           // no GPU bindings: the schedule lowered for a CPU
  kMisalignedRows,       // A's shared rows padded to 17 elements: ldmatrix rows not 16-byte aligned
};

struct Gemm {
  Tensor A, B, C;
  std::shared_ptr<Schedule> s;
  std::vector<Tensor> args() const { return {A, B, C}; }
};

// C[M, N] = sum_k acc(A[m, k]) * acc(B[k, n]) with M = 4 fragments, N one,
// K two: per block (blockIdx.x) one warp computes 2 x 1 fragments, the k
// steps in an outer loop; A and B tiles are copied to shared memory by the
// 32 lanes, loaded into fragments (warp), multiplied into the accumulators
// (warp) and stored to C.
Gemm tensor_core_gemm(Mistake mistake, const GemmIntrinsics& in = cuda_intrinsics()) {
  const int M = 4 * in.fm, N = in.fn, K = 2 * in.fk;
  const bool gpu = mistake != Mistake::kNoBindings;
  const int64_t lanes = mistake == Mistake::kHalfWarp ? 16 : 32;
  Gemm g;
  g.A = placeholder({Expr(M), Expr(K)}, in.input, "A");
  g.B = placeholder({Expr(K), Expr(N)}, in.input, "B");
  IterVar k = reduce_axis(K, "k");
  const DType acc_t = in.acc;
  Tensor A = g.A, B = g.B;
  g.C = compute(
      {Expr(M), Expr(N)}, [&](Var i, Var j) { return sum(cast(acc_t, A(i, k->var)) * cast(acc_t, B(k->var, j)), {k}); },
      "C");
  g.s = std::make_shared<Schedule>(std::vector<Tensor>{g.C});
  Schedule& s = *g.s;
  const bool tensorize = mistake != Mistake::kNoTensorize;

  Tensor acc = s.cache_write(g.C, MemScope::kWarp);
  Tensor As = s.cache_read(g.A, MemScope::kShared, {s.current_op(acc)});
  Tensor Bs = s.cache_read(g.B, MemScope::kShared, {s.current_op(acc)});
  Tensor Af = s.cache_read(As, MemScope::kWarp, {s.current_op(acc)});
  Tensor Bf = s.cache_read(Bs, MemScope::kWarp, {s.current_op(acc)});

  // C: blocks of 2 m fragments, each fragment one store.
  Stage sc = s[g.C];
  IterVar bi, ri, mi, m16;
  sc.split(sc.axis()[0], 2 * in.fm, &bi, &ri);
  sc.split(ri, in.fm, &mi, &m16);
  sc.reorder({bi, mi, m16, sc.axis()[1]});
  if (gpu) sc.bind(bi, "blockIdx.x");
  if (mistake == Mistake::kStoreOnLanes || mistake == Mistake::kAccOnLanes)
    sc.bind(mi, "threadIdx.x");
  else
    sc.unroll(mi);
  if (tensorize && mistake != Mistake::kStoreNotTensorized) sc.tensorize(m16, in.store);

  // The accumulators: per k step, per m fragment, one mma.
  Stage sa = s[acc];
  sa.compute_at(sc, mistake == Mistake::kAccOnLanes ? mi : bi);
  IterVar ko, k16, ami, am16;
  sa.split(sa.reduce_axis()[0], in.fk, &ko, &k16);
  sa.split(sa.axis()[0], in.fm, &ami, &am16);
  sa.reorder({ko, ami, am16, sa.axis()[1], k16});
  sa.unroll(ami);
  if (tensorize) sa.tensorize(am16, in.mma);

  // Shared tiles per k step, copied by the block's lanes (with the
  // accumulators under a lane loop: the whole block's tiles before it).
  for (const Tensor& t : {As, Bs}) {
    Stage st = s[t];
    if (mistake == Mistake::kAccOnLanes)
      st.compute_at(sc, bi);
    else
      st.compute_at(sa, ko);
    IterVar rounds, tx;
    st.split(st.fuse(st.axis()), lanes, &rounds, &tx);
    if (gpu) st.bind(tx, "threadIdx.x");
  }
  if (mistake == Mistake::kMisalignedRows) s[As].storage_align(0, 32, 17);

  // Fragments: A per m fragment, B once per k step.
  Stage sfa = s[Af];
  sfa.compute_at(sa, ami);
  if (mistake == Mistake::kLoadAWithLoadB) {
    IterVar kb, k8;
    sfa.split(sfa.axis()[1], in.fk / 2, &kb, &k8);
    sfa.reorder({kb, sfa.axis()[0], k8});
    sfa.tensorize(sfa.axis()[0], cuda_mma_load_b(in.input, false));
  } else if (tensorize) {
    sfa.tensorize(sfa.axis()[0], in.load_a);
  }
  Stage sfb = s[Bf];
  sfb.compute_at(sa, ko);
  if (tensorize && mistake != Mistake::kLoadBNotTensorized) sfb.tensorize(sfb.axis()[0], in.load_b);
  return g;
}

LoweredFunc lower_gemm(const Gemm& g) { return lower_gpu(*g.s, g.args(), "gemm", kSm80); }

}  // namespace

TEST_CASE("warp scope errors: the hand-written tensor-core GEMM they break is correct as written",
          "[gpu][tensorcore][errors]") {
  // The baseline every mistake below changes one thing of.
  const CudaSource src = emit_cuda(lower_gemm(tensor_core_gemm(Mistake::kNone)), kSm80);
  CHECK(src.code.find("kiln_mma_f16(") != std::string::npos);
  CHECK(src.code.find("kiln_mma_load_a<0>(") != std::string::npos);
  CHECK(src.code.find("kiln_mma_store(") != std::string::npos);
  REQUIRE(src.launches.size() == 1);
  CHECK(src.launches[0].block == std::array<int64_t, 3>{{32, 1, 1}});
}

TEST_CASE("warp scope errors: a warp-scope stage that no tensorized stage uses", "[gpu][tensorcore][errors]") {
  // The user caches the GEMM's operands and accumulators in warp scope but
  // forgets every tensorize: nothing would ever fill the fragments.
  const Gemm g = tensor_core_gemm(Mistake::kNoTensorize);
  CHECK_THAT(user_error_of([&] { lower_gemm(g); }),
             Contains("'C.warp' is in warp scope (a tensor-core fragment) but no tensorized stage reads or writes it; "
                      "warp scope is for tensor intrinsics' operands"));
}

TEST_CASE("warp scope errors: two intrinsics that see one warp buffer as fragments of different shapes",
          "[gpu][tensorcore][errors]") {
  // The user loads the A fragment with B's ldmatrix (16 x 8, two calls per
  // 16 x 16 tile); the mma reads A as one 16 x 16 fragment.
  const Gemm g = tensor_core_gemm(Mistake::kLoadAWithLoadB);
  CHECK_THAT(user_error_of([&] { lower_gemm(g); }),
             Contains("'A.shared.warp' is in warp scope, where each intrinsic call owns one fragment, but '") &&
                 Contains("cuda_mma_load_b_kn_f16") && Contains("cuda_mma_m16n8k16_mk_kn_f16") &&
                 Contains("' use fragments of different shapes"));
}

TEST_CASE("warp scope errors: a warp buffer that is not a whole number of fragments", "[gpu][tensorcore][errors]") {
  // A warp-scope tile of accumulators (24 x 8) read by two tensorized
  // stores, the second half a fragment down (rows 8 to 23): the buffer
  // spans one and a half 16 x 8 fragments. (A warp stage that a tensorized
  // stage produces always spans whole fragments: tensorize refuses tails.
  // So the tile here is filled element by element, which lowering would
  // report next.)
  Tensor X = placeholder({Expr(24), Expr(8)}, DType::f32(), "X");
  Tensor W = compute({Expr(24), Expr(8)}, [&](Var i, Var j) { return X(i, j); }, "W");
  Tensor Top = compute({Expr(16), Expr(8)}, [&](Var i, Var j) { return W(i, j); }, "Top");
  Tensor Bottom = compute({Expr(16), Expr(8)}, [&](Var i, Var j) { return W(i + 8, j); }, "Bottom");
  Tensor O = compute({Expr(16), Expr(8)}, [&](Var i, Var j) { return Top(i, j) + Bottom(i, j); }, "O");
  Schedule s({O});
  s[W].set_scope(MemScope::kWarp);
  s[Top].set_scope(MemScope::kShared);
  s[Bottom].set_scope(MemScope::kShared);
  Stage so = s[O];
  IterVar b, rest, rounds, tx;
  so.split(so.axis()[0], 16, &b, &rest);
  so.bind(b, "blockIdx.x");
  so.split(so.fuse(rest, so.axis()[1]), 32, &rounds, &tx);
  so.bind(tx, "threadIdx.x");
  for (const Tensor& t : {W, Top, Bottom}) s[t].compute_at(so, b);
  s[Top].tensorize(s[Top].axis()[0], cuda_mma_store());
  s[Bottom].tensorize(s[Bottom].axis()[0], cuda_mma_store());
  CHECK_THAT(user_error_of([&] { lower_gpu(s, {X, O}, "shifted", kSm80); }),
             Contains("'W' (warp scope) spans 24 elements along dimension 0, not a whole number of its fragments' "
                      "16: tile the axes by the intrinsic's shape"));
}

TEST_CASE("warp scope errors: fragments too small for the 32 lanes of a warp", "[gpu][tensorcore][errors]") {
  // The user declares a 4 x 4 x 4 "tensor-core" mma of their own and keeps
  // its operands in warp scope: a 4 x 4 fragment has 16 elements, half an
  // element per lane.
  const GemmIntrinsics user = user_intrinsics(DType::f32(), DType::f32(), 4, 4, 4);
  const Gemm g = tensor_core_gemm(Mistake::kNone, user);
  CHECK_THAT(user_error_of([&] { lower_gemm(g); }),
             Contains("'C.warp' (warp scope) has fragments of 16 elements, which the 32 lanes of a warp cannot share "
                      "evenly"));
}

TEST_CASE("warp scope errors: element-wise reads and writes of a warp buffer", "[gpu][tensorcore][errors]") {
  // The user forgets to tensorize the store: C reads the accumulator
  // fragments element by element.
  CHECK_THAT(user_error_of([] { lower_gemm(tensor_core_gemm(Mistake::kStoreNotTensorized)); }),
             Contains("'C.warp' is in warp scope (a tensor-core fragment, spread over a warp's lanes) and is read "
                      "element by element here; only tensor intrinsics may access it (tensorize the stage)"));
  // The user forgets to tensorize B's fragment load: its copy writes the
  // fragment element by element.
  CHECK_THAT(user_error_of([] { lower_gemm(tensor_core_gemm(Mistake::kLoadBNotTensorized)); }),
             Contains("'B.shared.warp' is in warp scope (a tensor-core fragment, spread over a warp's lanes) and is "
                      "written element by element here; only tensor intrinsics may access it (tensorize the stage)"));
}

TEST_CASE("warp scope errors: a fragment allocated inside the lane loop", "[gpu][tensorcore][errors]") {
  // The user spreads the block's m fragments over threadIdx.x and computes
  // the accumulators per fragment: each lane would allocate its own.
  CHECK_THAT(user_error_of([] { lower_gemm(tensor_core_gemm(Mistake::kAccOnLanes)); }),
             Contains("buffer 'C.warp' is in warp scope (a tensor-core fragment that the 32 lanes of a warp "
                      "share) but is allocated inside a loop bound to threadIdx.x, the lanes: compute it at a loop "
                      "outside the lanes"));
}

TEST_CASE("warp scope errors: a warp-wide instruction inside the lane loop", "[gpu][tensorcore][errors]") {
  // The user binds the loop over the stored fragments to threadIdx.x: each
  // store (all 32 lanes together) would run once per lane.
  CHECK_THAT(user_error_of([] { lower_gemm(tensor_core_gemm(Mistake::kStoreOnLanes)); }),
             Contains("'cuda.mma.store.16x8' is a warp-wide instruction (all 32 lanes take part) but runs inside a "
                      "loop bound to threadIdx.x, the lanes: tensorize a stage computed at a loop outside the lanes"));
}

TEST_CASE("warp scope errors: shared rows that ldmatrix cannot read", "[gpu][tensorcore][errors]") {
  // The user pads A's shared rows against bank conflicts by one element:
  // 17-element rows are not 16-byte aligned, which ldmatrix needs.
  CHECK_THAT(user_error_of([] { lower_gemm(tensor_core_gemm(Mistake::kMisalignedRows)); }),
             Contains("needs every row stride to be a multiple of 8 elements (aligned rows)"));
}

TEST_CASE("warp scope errors: a block whose threadIdx.x is not one warp", "[gpu][tensorcore][errors]") {
  // The user copies the shared tiles with 16 lanes: the block is 16 x 1 x 1,
  // and threadIdx.x no longer numbers the lanes of one warp.
  CHECK_THAT(user_error_of([] { lower_gemm(tensor_core_gemm(Mistake::kHalfWarp)); }),
             Contains("buffer 'C.warp' is in warp scope (a tensor-core fragment), which needs blocks of 32 x Y "
                      "threads (threadIdx.x the lane of a warp, threadIdx.y the warp); this block has 16 x 1 x 1"));
}

TEST_CASE("warp scope errors: a tensor-core instruction on an operand in the wrong memory",
          "[gpu][tensorcore][errors]") {
  // The user declares a "zero the accumulators" intrinsic that calls
  // cuda.mma.zero.16x8, and uses it on a stage in local (then shared)
  // memory instead of a warp-scope fragment.
  for (MemScope scope : {MemScope::kLocal, MemScope::kShared}) {
    Tensor A = placeholder({Expr(32), Expr(8)}, DType::f32(), "A");
    Tensor Z = compute({Expr(32), Expr(8)}, [&](Var, Var) { return make_zero(DType::f32()); }, "Z");
    Tensor O = compute({Expr(32), Expr(8)}, [&](Var i, Var j) { return A(i, j) + Z(i, j); }, "O");
    Schedule s({O});
    s[Z].set_scope(scope);
    Stage so = s[O];
    IterVar b, rest, rounds, tx;
    so.split(so.axis()[0], 16, &b, &rest);
    so.bind(b, "blockIdx.x");
    so.split(so.fuse(rest, so.axis()[1]), 32, &rounds, &tx);
    so.bind(tx, "threadIdx.x");
    s[Z].compute_at(so, b);
    s[Z].tensorize(s[Z].axis()[0], user_mma_zero());
    const LoweredFunc f = lower_gpu(s, {A, O}, "zeros", kSm80);
    const std::string where = scope == MemScope::kLocal ? "local" : "shared";
    CHECK_THAT(user_error_of([&] { emit_cuda(f, kSm80); }),
               Contains("'cuda.mma.zero.16x8' operand 0 (acc) is 'Z." + where + "' in " + where +
                        " memory; it needs warp memory"));
  }
}

TEST_CASE("warp scope errors: a CPU instruction on a cuda target", "[gpu][tensorcore][errors]") {
  // The user tensorizes a cuda schedule with the x86 VNNI intrinsic.
  Tensor A = placeholder({Expr(2), Expr(4)}, DType::u8(), "A");
  Tensor Bp = placeholder({Expr(1), Expr(1), Expr(16), Expr(4)}, DType::i8(), "Bp");
  IterVar k = reduce_axis(4, "k");
  Tensor C = compute(
      {Expr(2), Expr(16)},
      [&](Var i, Var j) {
        return sum(cast(DType::i32(), A(i, k->var)) *
                       cast(DType::i32(), Bp(floordiv(j, 16), floordiv(k->var, 4), floormod(j, 16), floormod(k->var, 4))),
                   {k});
      },
      "C");
  Schedule s({C});
  s[C].bind(s[C].axis()[0], "blockIdx.x");
  s[C].tensorize(s[C].axis()[1], x86_vnni_dot_16x4());
  const LoweredFunc f = lower_gpu(s, {A, Bp, C}, "vnni", kSm80);
  CHECK_THAT(user_error_of([&] { emit_cuda(f, kSm80); }),
             Contains("instruction 'x86.vpdpbusd.512' is for the llvm backend, not cuda"));
}

TEST_CASE("warp scope errors: fragments of a type tensor cores do not hold", "[gpu][tensorcore][errors]") {
  // The user declares an int8 tensor-core mma of their own (i32
  // accumulators in warp scope) on the GEMM's schedule. Its lowerings also
  // touch the fragments element by element (next case), but the warp
  // buffer's allocation is checked first.
  const GemmIntrinsics user = user_intrinsics(DType::i8(), DType::i32(), 16, 8, 16);
  const LoweredFunc f = lower_gemm(tensor_core_gemm(Mistake::kNone, user));
  CHECK_THAT(user_error_of([&] { emit_cuda(f, kSm80); }),
             Contains("warp-scope buffer 'C.warp' holds i32; tensor-core fragments hold f16, bf16 or f32"));
}

TEST_CASE("warp scope errors: an intrinsic lowering that loads and stores fragment elements",
          "[gpu][tensorcore][errors]") {
  // The user declares f16 tensor-core intrinsics of their own whose
  // lowerings are plain loops over the fragments (as a CPU microkernel's
  // would be): a lane holds 1/32 of each fragment, so the element indices
  // would run past it. The backend refuses the first such access.
  const GemmIntrinsics user = user_intrinsics(DType::f32(), DType::f32(), 16, 8, 16);
  const LoweredFunc f = lower_gemm(tensor_core_gemm(Mistake::kNone, user));
  CHECK_THAT(user_error_of([&] { emit_cuda(f, kSm80); }),
             Contains("is in warp scope (a tensor-core fragment, spread over a warp's lanes) and a statement") &&
                 Contains("element by element; only tensor-core instructions may access it"));
}

TEST_CASE("warp scope errors: a tensor-core schedule built for the CPU", "[gpu][tensorcore][errors]") {
  // The user lowers the tensor-core GEMM (without its GPU bindings) for an
  // llvm target.
  const Gemm g = tensor_core_gemm(Mistake::kNoBindings);
  const LoweredFunc f = lower(*g.s, g.args(), "gemm");
  CHECK_THAT(user_error_of([&] { emit_llvm_ir({f}, Target::host()); }),
             Contains("buffer 'C.warp' is in warp scope (a tensor-core fragment), which needs a cuda target; the "
                      "llvm backend runs on the CPU"));
}

TEST_CASE("warp scope errors: memory scope names", "[gpu][tensorcore][errors]") {
  // The scope names round-trip; an unknown one lists the four.
  for (MemScope m : {MemScope::kGlobal, MemScope::kShared, MemScope::kLocal, MemScope::kWarp})
    CHECK(parse_mem_scope(mem_scope_name(m)) == m);
  CHECK_THAT(user_error_of([] { parse_mem_scope("register"); }),
             Contains("unknown memory scope 'register' (expected global, shared, local or warp)"));
}

