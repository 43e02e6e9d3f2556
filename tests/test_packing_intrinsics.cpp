// The packing intrinsics (kernels/tensor_intrinsics.h): the 16 x 16 word
// transpose (x86_transpose_16x16), which moves a matrix stored along k into
// 16-column blocks by a word of k, and the interleave (x86_interleave_16),
// which moves one stored along its columns into the same blocks. Pack stages
// tensorized with them, against the interpreter (bit for bit: the values
// are moved, not computed), for every element type they move; the
// operands' requirements; and the GEMM templates packing B with them.
// Running the kernels needs AVX-512 (skipped elsewhere); matching and its
// messages do not.
#include <catch2/catch.hpp>
#include <random>

#include "codegen/target.h"
#include "compute/expr_ops.h"
#include "compute/interpreter.h"
#include "compute/printer.h"
#include "kernels/op_registry.h"
#include "kernels/tensor_intrinsics.h"
#include "schedule/lower.h"
#include "support/kernel_check.h"
#include "support/quantized_check.h"
#include "support/skip.h"
#include "support/test_seed.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Contains;

namespace {

// PB[jo, ko, ji, e] = B[jo*16 + ji + row0, ko*g + e] over N rows of B and
// K / g words of k (g = 4 / bytes: the elements of one word), B with
// `extra_rows` more rows than the pack reads and `pitch_words` words per
// row (at least K / g). f32 packs drop the word dimension: PB[jo, ko, ji].
struct Pack {
  Tensor B, PB;
  int g;
};

Pack pack_stage(DType t, int64_t N, int64_t words, int64_t pitch_words, int64_t row0, int64_t extra_rows) {
  Pack p;
  p.g = static_cast<int>(4 / t.bytes());
  const int g = p.g;
  p.B = placeholder({Expr(static_cast<int>(N + extra_rows)), Expr(static_cast<int>(pitch_words * g))}, t, "B");
  const Tensor B = p.B;
  const Expr r0(static_cast<int>(row0));
  std::vector<Expr> shape{Expr(static_cast<int>(N / 16)), Expr(static_cast<int>(words)), Expr(16)};
  if (g > 1) shape.push_back(Expr(g));
  p.PB = compute(
      shape,
      [&](const std::vector<Var>& v) {
        Expr k = g > 1 ? v[1] * g + v[3] : Expr(v[1]);
        return B(v[0] * 16 + v[2] + r0, k);
      },
      "PB", "pack");
  return p;
}

// The word loop in blocks of 16, the transpose over (words, rows, e).
void schedule_transposed(Schedule& s, const Pack& p) {
  Stage st = s[p.PB];
  IterVar kb, kw;
  st.split(st.axis()[1], 16, &kb, &kw);
  st.tensorize(kw, x86_transpose_16x16(p.PB.dtype()));
}

std::string run_pack(const Schedule& s, const Pack& p, uint64_t seed) {
  std::vector<int64_t> shape;
  for (const Expr& e : p.B.shape()) shape.push_back(*as_const_int(e));
  HostTensor b(p.B.dtype(), shape);
  b.fill_random(seed, p.B.dtype().is_float() ? -1e3 : -1e9, p.B.dtype().is_float() ? 1e3 : 1e9);
  HostTensor got = run_schedule(s, {p.B, p.PB}, {b});
  HostTensor want = interpret({p.PB}, {{p.B, b}})[0];
  return compare_tensors(want, got, 0, 0);
}

// The scheduled pack lowers to `instruction` and, where the host has
// AVX-512, runs bit for bit as the interpreter.
void check_pack(const Schedule& s, const Pack& p, const std::string& instruction, std::mt19937_64& rng) {
  CHECK_THAT(to_string(lower(s, {p.B, p.PB}, "f")), Contains(instruction));
  if (host_has("avx512f")) CHECK(run_pack(s, p, rng()) == "");
}

}  // namespace

TEST_CASE("transpose intrinsic: packs rows stored along k into 16-column blocks, bit for bit",
          "[tensorize][transpose]") {
  const uint64_t seed = run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed);
  for (DType t : {DType::f32(), DType::bf16(), DType::i8(), DType::u8()}) {
    // Two row blocks, up to three word blocks, rows of any pitch (odd: rows
    // that start off their alignment) and a first row inside B.
    const int64_t N = 16 * static_cast<int64_t>(1 + rng() % 2), words = 16 * static_cast<int64_t>(1 + rng() % 3);
    const int64_t pitch = words + static_cast<int64_t>(rng() % 5), row0 = static_cast<int64_t>(rng() % 3);
    INFO(t.str() << " N=" << N << " words=" << words << " pitch=" << pitch << " row0=" << row0);
    Pack p = pack_stage(t, N, words, pitch, row0, row0 + 1);
    Schedule s({p.PB});
    schedule_transposed(s, p);
    check_pack(s, p, "x86.transpose.16x16." + t.str(), rng);
  }
  if (!host_has("avx512f")) KILN_SKIP("this CPU has no AVX-512 (the packs lowered to transposes, unrun)");
}

TEST_CASE("transpose intrinsic: a destination whose words are not contiguous rows is refused",
          "[tensorize][transpose][errors]") {
  // PB[ko, ji, h, e] = B[ji + 16h, 2ko + e] with h outside the call: the
  // call's 16 words of a row are 4 elements apart, not 2.
  Tensor B = placeholder({32, 32}, DType::bf16(), "B");
  Tensor PB = compute(
      {16, 16, 2, 2}, [&](Var ko, Var ji, Var h, Var e) { return B(ji + h * 16, ko * 2 + e); }, "PB");
  Schedule s({PB});
  Stage st = s[PB];
  st.reorder({st.axis()[2], st.axis()[0], st.axis()[1], st.axis()[3]});
  st.tensorize(st.axis()[0], x86_transpose_16x16(DType::bf16()));
  CHECK_THROWS_WITH(to_string(lower(s, {B, PB}, "f")),
                    Contains("'PB', bound to the intrinsic's 'dst', is accessed with strides (64, 4, 1) in the "
                             "intrinsic's dimensions; the intrinsic needs its innermost 2 to be contiguous rows, "
                             "strides (2, 1)"));
}

TEST_CASE("transpose intrinsic: only 32-bit words of f32, bf16, i8 or u8", "[tensorize][transpose][errors]") {
  CHECK_THROWS_WITH(x86_transpose_16x16(DType::f64()),
                    Contains("the 16 x 16 word transpose moves f32, bf16, i8 or u8, not f64"));
}

namespace {

// PB[jo, ko, ji, e] = B[ko*g + e + row0, jo*16 + ji + col0]: B stored [K, N]
// (rows along the columns) with `pitch` columns per row.
Pack interleave_stage(DType t, int64_t N, int64_t words, int64_t pitch, int64_t row0, int64_t col0) {
  Pack p;
  p.g = static_cast<int>(4 / t.bytes());
  const int g = p.g;
  p.B = placeholder({Expr(static_cast<int>(words * g + row0 + 1)), Expr(static_cast<int>(pitch))}, t, "B");
  const Tensor B = p.B;
  p.PB = compute(
      {Expr(static_cast<int>(N / 16)), Expr(static_cast<int>(words)), Expr(16), Expr(g)},
      [&](const std::vector<Var>& v) {
        return B(v[1] * g + v[3] + static_cast<int>(row0), v[0] * 16 + v[2] + static_cast<int>(col0));
      },
      "PB", "pack");
  return p;
}

}  // namespace

TEST_CASE("interleave intrinsic: packs rows stored along the columns into words, bit for bit",
          "[tensorize][transpose]") {
  const uint64_t seed = run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed);
  for (DType t : {DType::bf16(), DType::i8(), DType::u8()}) {
    // Rows of any pitch and a first column inside them (blocks that start
    // off their alignment), a first row inside B.
    const int64_t N = 16 * static_cast<int64_t>(1 + rng() % 3), words = 1 + static_cast<int64_t>(rng() % 5);
    const int64_t col0 = static_cast<int64_t>(rng() % 3), pitch = N + col0 + static_cast<int64_t>(rng() % 5);
    const int64_t row0 = static_cast<int64_t>(rng() % 3);
    INFO(t.str() << " N=" << N << " words=" << words << " pitch=" << pitch << " row0=" << row0 << " col0=" << col0);
    Pack p = interleave_stage(t, N, words, pitch, row0, col0);
    Schedule s({p.PB});
    s[p.PB].tensorize(s[p.PB].axis()[2], x86_interleave_16(t));
    check_pack(s, p, "x86.interleave.16." + t.str(), rng);
  }
  if (!host_has("avx512f")) KILN_SKIP("this CPU has no AVX-512 (the packs lowered to interleaves, unrun)");
}

TEST_CASE("interleave intrinsic: only 16-bit or 8-bit elements, into a dense block", "[tensorize][transpose][errors]") {
  CHECK_THROWS_WITH(x86_interleave_16(DType::f32()),
                    Contains("the interleave of rows into 32-bit words moves bf16, i8 or u8, not f32"));
  // PB[ji, h, e] = B[e, ji + 16h] with h outside the call: the block's
  // words are 4 elements apart, not one dense block.
  Tensor B = placeholder({2, 32}, DType::bf16(), "B");
  Tensor PB = compute(
      {16, 2, 2}, [&](Var ji, Var h, Var e) { return B(e, ji + h * 16); }, "PB");
  Schedule s({PB});
  Stage st = s[PB];
  st.reorder({st.axis()[1], st.axis()[0], st.axis()[2]});
  st.tensorize(st.axis()[0], x86_interleave_16(DType::bf16()));
  CHECK_THROWS_WITH(to_string(lower(s, {B, PB}, "f")),
                    Contains("'PB', bound to the intrinsic's 'dst', is accessed with strides (4, 1) in the "
                             "intrinsic's dimensions; the intrinsic needs one dense block, strides (2, 1)"));
}

namespace {

// The workload's default config for `cpu`, with the knobs of `pinned`
// (a JSON object) set, lowered.
std::string lowered_default(const std::string& workload, const CpuInfo& cpu = cpu_with(true, true),
                            const nlohmann::json& pinned = nlohmann::json::object()) {
  return lowered_default_config(workload, cpu, pinned);
}

}  // namespace

TEST_CASE("GEMMs pack B with the transpose (stored [N, K]) or the interleave (stored [K, N]) on whole blocks",
          "[ops][gemm][transpose]") {
  // bf16 words are 2 elements of k, int8 words 4.
  CHECK_THAT(lowered_default("batch_matmul:B=2,M=5,N=32,K=64,trans_a=0,trans_b=1,dtype=bf16"),
             Contains("x86.transpose.16x16.bf16"));
  CHECK_THAT(lowered_default("qdense:N=3,IN=128,OUT=48"), Contains("x86.transpose.16x16.i8"));
  // K of 24 words, and columns that end inside a block: the copy loops.
  CHECK_THAT(lowered_default("matmul:M=4,N=32,K=48,trans_b=1,dtype=bf16"), !Contains("x86.transpose"));
  CHECK_THAT(lowered_default("qdense:N=3,IN=128,OUT=40"), !Contains("x86.transpose"));
  // B stored [K, N]: each block row interleaves 2 (bf16) or 4 (int8) rows.
  CHECK_THAT(lowered_default("batch_matmul:B=2,M=5,N=32,K=6,trans_a=0,trans_b=0,dtype=bf16"),
             Contains("x86.interleave.16.bf16"));
  CHECK_THAT(lowered_default("qmatmul:M=3,N=48,K=8"), Contains("x86.interleave.16.i8"));
  CHECK_THAT(lowered_default("qmatmul:M=3,N=20,K=8"), !Contains("x86.interleave"));
  if (!host_has("avx512vnni") || !host_has("avx512bf16"))
    KILN_SKIP("this CPU has no AVX512-VNNI and AVX512-BF16 (the packs lowered to transposes, unrun)");
  const uint64_t seed = run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const std::vector<int64_t> rows = {1, 3, 7, 13};
  for (int w = 0; w < 4; ++w) {
    const int64_t m = rows[rng() % rows.size()], n = 16 * static_cast<int64_t>(1 + rng() % 4),
                  k = 32 * static_cast<int64_t>(1 + rng() % 3);
    const std::string bm = "batch_matmul:B=2,M=" + std::to_string(m) + ",N=" + std::to_string(n) +
                           ",K=" + std::to_string(k) + ",trans_a=0,trans_b=1,dtype=bf16";
    check_random_configs(bm, cpu_with(false, true), "bf16", 3, rng, 2e-2);
    const std::string qd = "qdense:N=" + std::to_string(m) + ",IN=" + std::to_string(2 * k) +
                           ",OUT=" + std::to_string(n) + ",bias=1,out=" + (rng() % 2 ? "u8" : "i32");
    check_random_configs(qd, cpu_with(true, false), "vnni", 3, rng);
    const std::string bk = "batch_matmul:B=2,M=" + std::to_string(m) + ",N=" + std::to_string(n) +
                           ",K=" + std::to_string(k / 16) + ",trans_a=0,trans_b=0,dtype=bf16";
    check_random_configs(bk, cpu_with(false, true), "bf16", 3, rng, 2e-2);
    const std::string qm = "qmatmul:M=" + std::to_string(m) + ",N=" + std::to_string(n) +
                           ",K=" + std::to_string(k / 8) + ",bias=1,out=" + (rng() % 2 ? "i8" : "f32");
    check_random_configs(qm, cpu_with(true, false), "vnni", 3, rng);
  }
}

TEST_CASE("f32 GEMMs with B stored [N, K] pack whole panels with transposes on AVX-512", "[ops][gemm][transpose]") {
  CpuInfo avx512;  // 512-bit vectors
  CpuInfo avx2;
  avx2.vector_bits = 256;
  // The default packs 64-column panels: 4 x 2 blocks of 16 x 16 per panel.
  const std::string bm = "batch_matmul:B=2,M=5,N=64,K=32,trans_a=0,trans_b=1";
  CHECK_THAT(lowered_default(bm, avx512), Contains("x86.transpose.16x16.f32"));
  CHECK_THAT(lowered_default(bm, avx512, {{"pack_moves", "gather"}}), !Contains("x86.transpose"));
  CHECK_THAT(lowered_default("dense:N=4,IN=64,OUT=32", avx512), Contains("x86.transpose.16x16.f32"));
  // No AVX-512: no knob, gathers. Columns that end inside a panel, or K
  // not whole blocks of 16: gathers.
  for (const Knob& knob : find_op("batch_matmul").define_space(build_workload(bm), avx2)->knobs())
    CHECK(knob.name != "pack_moves");
  CHECK_THAT(lowered_default(bm, avx2), !Contains("x86.transpose"));
  CHECK_THAT(lowered_default("batch_matmul:B=2,M=5,N=40,K=32,trans_a=0,trans_b=1", avx512), !Contains("x86.transpose"));
  CHECK_THAT(lowered_default("batch_matmul:B=2,M=5,N=64,K=24,trans_a=0,trans_b=1", avx512), !Contains("x86.transpose"));
  if (!host_has("avx512f")) KILN_SKIP("this CPU has no AVX-512 (the packs lowered to transposes, unrun)");
  const uint64_t seed = run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed + 5);
  const std::vector<int64_t> rows = {1, 3, 7, 13};
  for (int w = 0; w < 4; ++w) {
    const int64_t m = rows[rng() % rows.size()], n = 16 * static_cast<int64_t>(1 + rng() % 4),
                  k = 16 * static_cast<int64_t>(1 + rng() % 4);
    // Packed at the root or in any band loop, no dot products: the
    // transposes move every panel whose width is whole blocks dividing N.
    const nlohmann::json pinned{{"pack_moves", "transpose"}, {"reduce_vector", 0}, {"pack_b", -1 + int(rng() % 5)}};
    check_pinned_random_configs("batch_matmul:B=2,M=" + std::to_string(m) + ",N=" + std::to_string(n) +
                                    ",K=" + std::to_string(k) + ",trans_a=" + std::to_string(rng() % 2) + ",trans_b=1",
                                avx512, pinned, 4, rng, 1e-4);
    check_pinned_random_configs("dense:N=" + std::to_string(m) + ",IN=" + std::to_string(k) +
                                    ",OUT=" + std::to_string(n) + ",bias=1,relu=" + std::to_string(rng() % 2),
                                avx512, pinned, 3, rng, 1e-4);
  }
}

TEST_CASE("AMX GEMMs pack B stored [N, K] with two transposes per 32-column panel", "[ops][gemm][transpose][amx]") {
  // AMX panels are 32 columns of words: two 16 x 16 transposes side by side
  // per 16 words of k (bf16 words are 2 elements of k, int8 words 4).
  CpuInfo amx = cpu_with(true, true);
  amx.amx_bf16 = true;
  amx.amx_int8 = true;
  auto lowered_amx = [&](const std::string& workload) {
    return lowered_default(workload, amx, {{"tensorize", "amx"}});
  };
  CHECK_THAT(lowered_amx("batch_matmul:B=2,M=32,N=64,K=64,trans_a=0,trans_b=1,dtype=bf16"),
             Contains("x86.transpose.16x16.bf16"));
  CHECK_THAT(lowered_amx("qdense:N=32,IN=128,OUT=64"), Contains("x86.transpose.16x16.i8"));
  if (!host_has("amx-bf16") || !host_has("amx-int8"))
    KILN_SKIP("this CPU has no AMX-BF16 and AMX-INT8 (the packs lowered to transposes, unrun)");
  const uint64_t seed = run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed + 3);
  for (int w = 0; w < 3; ++w) {
    const int64_t m = 32 * static_cast<int64_t>(1 + rng() % 2), n = 32 * static_cast<int64_t>(1 + rng() % 3),
                  k = 32 * static_cast<int64_t>(1 + rng() % 4);
    const std::string bm = "batch_matmul:B=2,M=" + std::to_string(m) + ",N=" + std::to_string(n) +
                           ",K=" + std::to_string(k) + ",trans_a=0,trans_b=1,dtype=bf16";
    check_random_configs(bm, amx, "amx", 3, rng, 2e-2);
    const std::string qd = "qdense:N=" + std::to_string(m) + ",IN=" + std::to_string(2 * k) +
                           ",OUT=" + std::to_string(n) + ",bias=1,out=" + (rng() % 2 ? "u8" : "i32");
    check_random_configs(qd, amx, "amx", 3, rng);
  }
}
