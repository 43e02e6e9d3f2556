// Stage::storage_swizzle: the 128-byte swizzled layout of a buffer's last
// two dimensions (schedule/passes/storage_flatten.cpp), element by element
// against its definition, the messages of what cannot be, and a kernel that
// fills a swizzled shared tile 16 bytes at a time, emulated.
#include <catch2/catch.hpp>
#include <set>

#include "base/error.h"
#include "compute/expr_ops.h"
#include "compute/ir_functor.h"
#include "compute/printer.h"
#include "compute/simplify.h"
#include "compute/tensor_intrin.h"
#include "kernels/cuda_tensor_intrinsics.h"
#include "schedule/lower.h"
#include "schedule/passes/storage_flatten.h"
#include "support/gpu_check.h"
#include "support/mma_config.h"
#include "support/skip.h"
#include "support/temp_dir.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Matchers::Contains;

namespace {

// The flat index storage_flatten gives element (b, r, c) of a swizzled
// [outer, rows, cols] buffer of `t`, evaluated to a constant.
struct SwizzledIndex {
  Stmt flat;
  Var b{"b"}, r{"r"}, c{"c"};
  Expr index;

  SwizzledIndex(DType t, int64_t outer, int64_t rows, int64_t cols) {
    const Expr o = make_const(DType::i32(), outer), rs = make_const(DType::i32(), rows),
               cs = make_const(DType::i32(), cols), zero = make_const(DType::i32(), int64_t{0});
    Tensor T = placeholder({o, rs, cs}, t, "T");
    std::vector<RealizeNode::Align> align(3);
    align[2].swizzle = 128;
    const Stmt s = RealizeNode::make(T, {Range(zero, o), Range(zero, rs), Range(zero, cs)}, MemScope::kShared, align,
                                     ProvideNode::make(T, make_zero(t), {b, r, c}));
    flat = passes::storage_flatten(s);
    post_order_visit(flat, [&](const Ref<Object>& n) {
      if (n->kind() == NodeKind::Store) index = static_cast<const StoreNode*>(n.get())->index;
    });
  }
  int64_t at(int64_t bv, int64_t rv, int64_t cv) const {
    auto i32 = [](int64_t v) { return make_const(DType::i32(), v); };
    const VarMap m{{b.node(), i32(bv)}, {r.node(), i32(rv)}, {c.node(), i32(cv)}};
    int64_t v = -1;
    REQUIRE(as_const_int(simplify(substitute(index, m)), &v));
    return v;
  }
};

}  // namespace

TEST_CASE("storage_swizzle: each 16-byte chunk of a row moves to chunk ^ (row % 8) within its 128-byte strip",
          "[schedule][flatten][swizzle]") {
  struct Case {
    DType t;
    int64_t outer, rows, cols;
  };
  for (const Case& k : {Case{DType::f16(), 2, 16, 128}, Case{DType::f32(), 1, 24, 64}, Case{DType::i8(), 1, 8, 256}}) {
    INFO(k.t.str() << " " << k.outer << " x " << k.rows << " x " << k.cols);
    const SwizzledIndex s(k.t, k.outer, k.rows, k.cols);
    REQUIRE(s.index.defined());
    const int64_t e = k.t.bytes(), w = 128 / e, chunk = 16 / e, size = k.outer * k.rows * k.cols;
    CHECK_THAT(to_string(s.flat), Contains("[" + k.t.str() + " * " + std::to_string(size) + "] @shared"));
    std::set<int64_t> seen;
    int wrong = 0;
    for (int64_t b = 0; b < k.outer; ++b)
      for (int64_t r = 0; r < k.rows; ++r)
        for (int64_t c = 0; c < k.cols; ++c) {
          // Strip c / w, row r of it, chunk (c % w) / chunk XOR r % 8.
          const int64_t want =
              b * k.rows * k.cols + (c / w) * k.rows * w + r * w + (((c % w) / chunk) ^ (r % 8)) * chunk + c % chunk;
          const int64_t got = s.at(b, r, c);
          wrong += got != want;
          seen.insert(got);
        }
    CHECK(wrong == 0);
    // A permutation of the buffer's elements.
    CHECK(static_cast<int64_t>(seen.size()) == size);
    CHECK(*seen.begin() == 0);
    CHECK(*seen.rbegin() == size - 1);
  }
}

TEST_CASE("storage_swizzle: what cannot be says why", "[schedule][flatten][swizzle][errors]") {
  auto flatten = [](int64_t rows, int64_t cols, std::vector<RealizeNode::Align> align, MemScope scope) {
    const Expr rs = make_const(DType::i32(), rows), cs = make_const(DType::i32(), cols),
               zero = make_const(DType::i32(), int64_t{0});
    Tensor T = placeholder({rs, cs}, DType::f16(), "T");
    Var r("r"), c("c");
    return passes::storage_flatten(RealizeNode::make(T, {Range(zero, rs), Range(zero, cs)}, scope, std::move(align),
                                                     ProvideNode::make(T, make_zero(DType::f16()), {r, c})));
  };
  auto swizzled = [](int64_t factor, int64_t tile) {
    std::vector<RealizeNode::Align> a(2);
    a[0].factor = factor;
    a[0].tile = tile;
    a[1].tile = tile;
    a[1].swizzle = 128;
    return a;
  };
  CHECK_NOTHROW(flatten(8, 64, swizzled(0, 0), MemScope::kShared));
  CHECK_THROWS_WITH(flatten(12, 64, swizzled(0, 0), MemScope::kShared),
                    Contains("'T' (storage_swizzle) spans 12 rows, not a constant multiple of 8: the swizzle permutes "
                             "the chunks of each 8 rows"));
  CHECK_THROWS_WITH(flatten(8, 96, swizzled(0, 0), MemScope::kShared),
                    Contains("'T' (storage_swizzle) has rows of 96 elements, not a constant multiple of 64 (128 bytes "
                             "of f16): the swizzle moves whole strips of 128-byte rows"));
  CHECK_THROWS_WITH(flatten(8, 64, swizzled(64, 0), MemScope::kShared),
                    Contains("'T' has storage_swizzle and storage_align; the swizzle places every element itself"));
  CHECK_THROWS_WITH(flatten(8, 64, swizzled(0, 8), MemScope::kShared),
                    Contains("'T' has storage_swizzle and storage_tile"));
  CHECK_THROWS_WITH(flatten(8, 64, swizzled(0, 0), MemScope::kWarp),
                    Contains("'T' is in warp scope (tensor-core fragments, laid out by the intrinsics); "
                             "storage_swizzle is for shared and global buffers"));

  // Stage::storage_swizzle's own checks.
  Tensor X = placeholder({Expr(64)}, DType::f32(), "X");
  Tensor Y = compute(
      {Expr(64)}, [&](Var i) { return X(i) + make_const(DType::f32(), 1.0); }, "Y");
  Tensor Z = compute(
      {Expr(8), Expr(8)}, [&](Var i, Var j) { return X(i * 8 + j); }, "Z");
  Schedule s({Y, Z});
  CHECK_THROWS_WITH(s[Y].storage_swizzle(128),
                    Contains("storage_swizzle: stage 'Y' has 1 dimension(s); it swizzles the last two of a buffer"));
  CHECK_THROWS_WITH(s[Z].storage_swizzle(64),
                    Contains("storage_swizzle: kiln swizzles rows of 128 bytes (Hopper's 128-byte swizzle), got 64"));
  CHECK_NOTHROW(s[Z].storage_swizzle(128));
}

TEST_CASE("storage layouts: an inlined stage or an argument has no buffer of kiln's to lay out",
          "[schedule][flatten][swizzle][errors]") {
  auto stages = [](Tensor* A, Tensor* T, Tensor* O) {
    *A = placeholder({16, 64}, DType::f16(), "A");
    const Tensor a = *A;
    *T = compute(
        {16, 64}, [&](Var i, Var j) { return a(i, j) * make_const(DType::f16(), 2.0); }, "T");
    const Tensor t = *T;
    *O = compute(
        {16, 64}, [&](Var i, Var j) { return t(i, j) + make_const(DType::f16(), 1.0); }, "O");
  };
  Tensor A, T, O;
  stages(&A, &T, &O);
  {
    Schedule s({O});
    s[T].storage_swizzle(128);
    s[T].compute_inline();
    CHECK_THROWS_WITH(lower(s, {A, O}, "f"),
                      Contains("storage_swizzle: stage 'T' is computed inline and stores nothing; lay out the buffer "
                               "of a stage that is stored"));
  }
  {
    Schedule s({O});
    s[O].storage_tile(8, 8);
    CHECK_THROWS_WITH(lower(s, {A, O}, "f"),
                      Contains("storage_tile: stage 'O' is argument 'O' of the function, stored in the caller's "
                               "buffer, dense as its shape says; lay out a copy of it instead (cache_read or "
                               "cache_write)"));
  }
  {
    Schedule s({O});
    s[O].storage_align(0, 64, 8);
    CHECK_THROWS_WITH(lower(s, {A, O}, "f"), Contains("storage_align: stage 'O' is argument 'O'"));
  }
  {
    // The intermediate stage stored: laid out as asked.
    Schedule s({O});
    s[T].storage_swizzle(128);
    CHECK_NOTHROW(lower(s, {A, O}, "f"));
  }
}

TEST_CASE("storage_swizzle: a shared tile filled 16 bytes at a time and read transposed computes the same",
          "[gpu][schedule][swizzle][emulation]") {
  if (!have_host_compiler()) KILN_SKIP("no host C++ compiler for the CUDA emulation");
  // Y = 2 * X^T through a swizzled shared copy of 16 x 64 of X per block,
  // filled by float4 copies: a copy's four elements stay one 16-byte chunk.
  const GpuLimits gpu = gpu_limits_for_arch("sm_90a");
  const LoweredFunc f = transpose_through_shared(
      32, 64, 4, [](Stage& sx) { sx.storage_swizzle(128); }, "swizzled", gpu);
  const CudaSource src = emit_cuda(f, gpu);
  // 16 rows of 64 floats: two strips of 32; the fill stores whole float4s.
  CHECK_THAT(to_string(f), Contains("allocate X.shared[f32 * 1024] @shared"));
  CHECK_THAT(kernel_text(src), Contains("kiln_st(X_shared, ") && Contains(", kiln_ld<float4>(X, "));
  TempDir dir("kiln_storage_swizzle");
  CHECK(emulated_transpose_mismatches(src, dir.path, 32, 64, 9) == 0);
}

TEST_CASE("storage_swizzle: an intrinsic reads a swizzled buffer only as wgmma does, in order, from an atom's corner",
          "[schedule][flatten][swizzle][wgmma][errors]") {
  auto i32 = [](int64_t v) { return make_const(DType::i32(), v); };
  const DType f16 = DType::f16();
  // A tensorized nest over A [16, 64] and B [64, 64] (swizzled, shared)
  // into C [16, 64] (warp scope), flattened.
  auto flatten = [&](const TensorIntrin& in, std::vector<TensorizeNode::Region> regions) {
    Tensor A = Tensor(regions[0].tensor);
    Stmt s = TensorizeNode::make(in, IntrinPhase::kUpdate, std::move(regions));
    std::vector<RealizeNode::Align> swizzled(2);
    swizzled[1].swizzle = 128;
    return [=](const Tensor& B, const Tensor& C) {
      Stmt r = s;
      if (C.defined())
        r = RealizeNode::make(C, {Range(i32(0), i32(16)), Range(i32(0), i32(64))}, MemScope::kWarp, {}, r);
      if (B.defined())
        r = RealizeNode::make(B, {Range(i32(0), i32(64)), Range(i32(0), i32(64))}, MemScope::kShared, swizzled, r);
      r = RealizeNode::make(A, {Range(i32(0), i32(16)), Range(i32(0), i32(64))}, MemScope::kShared, swizzled, r);
      return passes::storage_flatten(r);
    };
  };
  Tensor A = placeholder({i32(16), i32(64)}, f16, "A.shared"), B = placeholder({i32(64), i32(64)}, f16, "B.shared");
  Tensor C = placeholder({i32(16), i32(64)}, DType::f32(), "C.warp");
  const TensorIntrin wgmma = cuda_wgmma(f16, 64, 4, false, false);
  auto gemm = [&](std::vector<int> a_dims, Expr a_col) {
    return flatten(wgmma, {{A, {i32(0), a_col}, a_dims}, {B, {i32(0), i32(0)}, {0, 1}}, {C, {i32(0), i32(0)}, {0, 1}}})(
        B, C);
  };
  // In order from the corner: the call names both tiles swizzled.
  const Stmt ok = gemm({0, 1}, i32(0));
  CHECK_THAT(to_string(ok), Contains("cuda.wgmma.m64n64k16.f16"));
  // The intrinsic's dimensions swapped over the buffer's.
  CHECK_THROWS_WITH(gemm({1, 0}, i32(0)),
                    Contains("'A.shared', bound to the intrinsic's 'a', is stored swizzled (storage_swizzle) and the "
                             "intrinsic's dimensions are not its last two in order"));
  // A chunk into the row: not an atom's corner.
  CHECK_THROWS_WITH(gemm({0, 1}, i32(8)),
                    Contains("tensorize with 'cuda_wgmma': A ('A.shared') is stored swizzled and the call starts at "
                             "element `8`, which kiln cannot prove is the corner of a swizzle atom"));
  // Half a chunk: not even a 16-byte chunk.
  CHECK_THROWS_WITH(gemm({0, 1}, i32(4)), Contains("starts at element `4` of its swizzled layout, which kiln cannot "
                                                   "prove is the start of a 16-byte chunk"));
  // ldmatrix (mma's fragment load) reads rows with one stride, not a swizzle.
  Tensor F = placeholder({i32(16), i32(16)}, f16, "A.warp");
  const TensorIntrin load = cuda_mma_load_a(f16, false);
  CHECK_THROWS_WITH(
      flatten(load, {{A, {i32(0), i32(0)}, {0, 1}}, {F, {i32(0), i32(0)}, {0, 1}}})(Tensor(), Tensor()),
      Contains("'A.shared', bound to the intrinsic's 'src', is stored swizzled (storage_swizzle), which the "
               "intrinsic does not read; drop storage_swizzle on that stage"));
}
