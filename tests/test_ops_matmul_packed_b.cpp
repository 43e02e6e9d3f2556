// The "packed_b" alternative of matmul and dense (kernels/matmul_packed_b.h):
// pack_matmul_b packs B once into panels, matmul_packed_b reads them; int8
// and bf16 weights (qmatmul, qdense, bf16 matmul and dense) in k steps, the
// tensor instructions' blocked layout, read by tensorized kernels. On
// random shapes (1, primes, odd sizes, N not a multiple of the panel or
// narrower than one), every dtype's packing and random configs of the
// kernel, compiled, agree with the original op's reference; the kernel's
// space keeps the register tile one panel wide; bad workloads and configs
// are user errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <sstream>

#include "base/error.h"
#include "compute/interpreter.h"
#include "kernels/matmul_packed_b.h"
#include "kernels/op_registry.h"
#include "support/kernel_check.h"
#include "support/quantized_check.h"
#include "support/skip.h"
#include "support/template_check.h"
#include "support/test_seed.h"
#include "tasks/variant_tuning.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Contains;

namespace {

std::vector<int64_t> shape_of(const Tensor& t) {
  std::vector<int64_t> s;
  for (const Expr& e : t.shape()) s.push_back(*as_const_int(e));
  return s;
}

// Runs a workload's default schedule, compiled, on `inputs`.
HostTensor run_default(const std::string& workload, const std::vector<HostTensor>& inputs) {
  OpInstance op = build_workload(workload);
  ScheduledOp so = find_op(op.op).default_schedule(op, avx512_cpu());
  return run_schedule(*so.schedule, so.args, inputs);
}

// The alternative of `workload`, on random inputs: the compiled packing
// equals its definition exactly (zero past N included), and the kernel
// under its default and `count` random configs equals the original op's
// reference.
void check_packed_b(const std::string& workload, int count, uint64_t seed) {
  INFO(workload);
  OpInstance op = build_workload(workload);
  std::vector<OpAlternative> alts = find_op(op.op).alternatives(op);
  REQUIRE(alts.size() == 1);
  const OpAlternative& a = alts[0];
  CHECK(a.name == "packed_b");
  REQUIRE(a.prepare.size() == 1);
  std::vector<HostTensor> in;
  std::vector<std::pair<Tensor, HostTensor>> bound;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    HostTensor h(op.inputs[i].dtype(), shape_of(op.inputs[i]));
    h.fill_random(seed + i, -3.0, 3.0);
    in.push_back(h);
    bound.emplace_back(op.inputs[i], h);
  }
  HostTensor want = interpret(op.outputs, bound)[0];

  OpInstance pack = build_workload(a.prepare[0].workload);
  HostTensor packed = run_default(pack.canonical, {in.at(static_cast<size_t>(a.prepare[0].inputs.at(0)))});
  HostTensor packed_ref = interpret(pack.outputs, {{pack.inputs[0], in[1]}})[0];
  CHECK(compare_tensors(packed_ref, packed, 0, 0) == "");

  OpInstance kernel = build_workload(a.kernel.workload);
  CHECK(kernel.flops == op.flops);
  std::vector<HostTensor> kin;
  for (int i : a.kernel.inputs) kin.push_back(i >= 0 ? in.at(static_cast<size_t>(i)) : packed);
  const OpDef& def = find_op(kernel.op);
  auto space = def.define_space(kernel, avx512_cpu());
  std::mt19937_64 rng(seed);
  for (int c = 0; c <= count; ++c) {
    Config cfg = c == 0 ? def.default_config(kernel, avx512_cpu(), *space) : space->random(rng);
    INFO(kernel.canonical << " config " << cfg.str());
    ScheduledOp so = def.apply_config(kernel, cfg);
    HostTensor got = run_schedule(*so.schedule, so.args, kin);
    CHECK(compare_tensors(want, got, tolerance_for(want.dtype), tolerance_for(want.dtype)) == "");
  }
}

int64_t odd(std::mt19937_64& rng) {
  static const int64_t kExtents[] = {1, 2, 3, 5, 7, 11, 13, 17, 19, 23};
  return kExtents[std::uniform_int_distribution<int>(0, 9)(rng)];
}

int64_t columns(std::mt19937_64& rng) {  // narrower than a panel, one, several, and a part of one
  static const int64_t kColumns[] = {1, 5, 17, 31, 32, 33, 45, 64, 71};
  return kColumns[std::uniform_int_distribution<int>(0, 8)(rng)];
}

int flag(std::mt19937_64& rng) { return static_cast<int>(rng() % 2); }

}  // namespace

TEST_CASE("packed_b: B packed once, then the kernel, agrees with matmul and dense", "[ops][gemm][packed_b][property]") {
  std::mt19937_64 rng(5101);
  for (int t = 0; t < 6; ++t) {
    const int relu = flag(rng), gelu = relu ? 0 : flag(rng);
    std::ostringstream mm, dense;
    mm << "matmul:M=" << odd(rng) << ",N=" << columns(rng) << ",K=" << odd(rng) << ",trans_a=" << flag(rng)
       << ",trans_b=" << flag(rng) << ",bias=" << flag(rng) << ",relu=" << relu << ",gelu=" << gelu;
    dense << "dense:N=" << odd(rng) << ",IN=" << odd(rng) << ",OUT=" << columns(rng) << ",bias=" << flag(rng)
          << ",relu=" << gelu << ",gelu=" << relu;
    check_packed_b(mm.str(), 2, 5200 + static_cast<uint64_t>(t));
    check_packed_b(dense.str(), 2, 5300 + static_cast<uint64_t>(t));
  }
  // Integers accumulate in i32 and must match exactly; f64 keeps its width.
  check_packed_b("matmul:M=6,N=40,K=9,trans_b=1,bias=1,relu=1,dtype=i8", 2, 5400);
  check_packed_b("dense:N=3,IN=7,OUT=35,dtype=u8", 2, 5401);
  check_packed_b("matmul:M=5,N=33,K=4,gelu=1,dtype=f64", 2, 5402);
  // A bert-like shape, scaled down: several panels, K blocked.
  check_packed_b("matmul:M=24,N=96,K=200,bias=1,gelu=1", 3, 5403);
}

TEST_CASE("packed_b: matmul and dense have it, batch_matmul does not, the tile is one panel wide",
          "[ops][gemm][packed_b]") {
  auto v = workload_variants("matmul:M=128,N=768,K=3072,bias=1");
  REQUIRE(v.size() == 2);
  CHECK(v[1] == "matmul_packed_b:M=128,N=768,K=3072,nb=32,trans_a=0,bias=1,relu=0,gelu=0,dtype=f32");
  auto d = workload_variants("dense:N=1,IN=2048,OUT=1000,bias=1");
  REQUIRE(d.size() == 2);
  CHECK(build_workload("pack_matmul_b:K=2048,N=1000,trans_b=1").outputs[0].shape().size() == 3);
  CHECK(workload_variants("batch_matmul:B=2,M=8,N=8,K=8").size() == 1);

  CpuInfo cpu = avx512_cpu();
  for (const auto& [w, width] : std::vector<std::pair<std::string, int64_t>>{
           {"matmul_packed_b:M=128,N=768,K=3072", 32}, {"matmul_packed_b:M=8,N=20,K=8", 20}}) {
    INFO(w);
    OpInstance op = build_workload(w);
    auto space = find_op(op.op).define_space(op, cpu);
    for (const Knob& k : space->knobs()) CHECK(k.name != "pack_b");
    for (const auto& option : space->knob("tile_x").options) CHECK(option.back() == width);
  }
}

TEST_CASE("packed_b: bad workloads and configs are user errors", "[ops][gemm][packed_b][user_error]") {
  CHECK_THROWS_WITH(build_workload("matmul_packed_b:M=4,N=4,K=4,nb=0"), Contains("nb=0 must be at least 1"));
  CHECK_THROWS_WITH(build_workload("pack_matmul_b:K=4,N=4,nb=0"), Contains("nb=0 must be at least 1"));
  CHECK_THROWS_WITH(build_workload("matmul_packed_b:M=4,N=4,K=4,relu=1,gelu=1"), Contains("relu and gelu are exclusive"));
  CHECK_THROWS_WITH(build_workload("matmul_packed_b:M=4,N=4,K=4,trans_b=1"), Contains("trans_b"));
  OpInstance op = build_workload("matmul_packed_b:M=8,N=64,K=8");
  auto space = find_op(op.op).define_space(op, avx512_cpu());
  nlohmann::json narrower = find_op(op.op).default_config(op, avx512_cpu(), *space).to_json();
  narrower["tile_x"] = {2, 2, 16};
  CHECK_THROWS_WITH(space->from_json(narrower), Contains("tile_x"));
  OpInstance mm = build_workload("matmul:M=8,N=64,K=8");
  CHECK_THROWS_WITH(find_op("matmul_packed_b").apply_config(mm, space->get(0)),
                    Contains("matmul_packed_b template cannot schedule op 'matmul'"));
}

TEST_CASE("packed_b: int8 and bf16 weights packed in k steps agree with qmatmul, qdense and bf16 matmul",
          "[ops][gemm][packed_b][qgemm][bf16][property]") {
  // Without the instructions (avx512_cpu has none): the plain kernel reads
  // the blocked layout. N not a multiple of the panel, K of several steps.
  check_packed_b("qmatmul:M=7,N=48,K=20,bias=1,relu=1,out=u8", 3, 5500);
  check_packed_b("qdense:N=5,IN=12,OUT=33,out=f32", 3, 5501);
  check_packed_b("qdense:N=3,IN=8,OUT=64,bias=1,out=i32", 2, 5502);
  check_packed_b("qmatmul:M=1,N=17,K=4,out=i8", 2, 5503);
  check_packed_b("matmul:M=3,N=32,K=10,dtype=bf16,bias=1", 2, 5504);
  check_packed_b("dense:N=2,IN=6,OUT=40,dtype=bf16,gelu=1", 2, 5505);
  CHECK(workload_variants("qdense:N=4,IN=768,OUT=768,bias=1")[1] ==
        "qmatmul_packed_b:M=4,N=768,K=768,nb=32,kstep=4,bias=1,relu=0,out=u8");
  CHECK(workload_variants("matmul:M=4,N=64,K=64,dtype=bf16")[1] ==
        "matmul_packed_b:M=4,N=64,K=64,nb=32,trans_a=0,bias=0,relu=0,gelu=0,dtype=bf16,kstep=2");
  // K not whole steps: plain panels.
  CHECK(workload_variants("qmatmul:M=2,N=16,K=7")[1] ==
        "qmatmul_packed_b:M=2,N=16,K=7,nb=32,kstep=1,bias=0,relu=0,out=u8");
  CHECK(workload_variants("matmul:M=2,N=16,K=7,dtype=bf16")[1] ==
        "matmul_packed_b:M=2,N=16,K=7,nb=32,trans_a=0,bias=0,relu=0,gelu=0,dtype=bf16");
  check_packed_b("qmatmul:M=3,N=40,K=7,bias=1,out=i8", 2, 5506);
  check_packed_b("matmul:M=2,N=16,K=7,dtype=bf16", 2, 5507);
}

TEST_CASE("packed_b: VNNI- and AMX-tensorized kernels read int8 weights packed in k steps, exactly",
          "[ops][gemm][packed_b][qgemm][amx]") {
  if (!host_has("avx512vnni")) KILN_SKIP("this CPU has no AVX512-VNNI");
  const uint64_t seed = kiln::testing::run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed + 11);
  const std::vector<std::string> outs = {"u8", "i8", "i32", "f32"};
  auto workload = [&](int64_t m, int64_t n, int64_t k) {
    return "qmatmul_packed_b:M=" + std::to_string(m) + ",N=" + std::to_string(n) + ",K=" + std::to_string(k) +
           ",bias=" + std::to_string(rng() % 2) + ",relu=" + std::to_string(rng() % 2) + ",out=" + outs[rng() % 4];
  };
  // Whole panels, and columns that end inside one (the panel's zeros past N summed).
  const std::vector<int64_t> cols = {32, 64, 96, 45, 71, 1000};
  for (int w = 0; w < 5; ++w) {
    const int64_t m = 1 + static_cast<int64_t>(rng() % 13), n = cols[rng() % cols.size()],
                  k = 4 * static_cast<int64_t>(1 + rng() % 6);
    check_random_configs(workload(m, n, k), cpu_with(true, false), "vnni", 3, rng);
  }
  if (!host_has("amx-int8")) KILN_SKIP("this CPU has no AMX-INT8 (the VNNI configs passed)");
  CpuInfo cpu = cpu_with(true, false);
  cpu.amx_int8 = true;
  for (int w = 0; w < 4; ++w) {
    const int64_t m = 32 * static_cast<int64_t>(1 + rng() % 3), n = 32 * static_cast<int64_t>(1 + rng() % 4),
                  k = 64 * static_cast<int64_t>(1 + rng() % 4);
    check_random_configs(workload(m, n, k), cpu, "amx", 4, rng);
  }
  // Register tiles of one to four panels.
  OpInstance op = build_workload("qmatmul_packed_b:M=64,N=128,K=64");
  auto space = find_op(op.op).define_space(op, cpu);
  std::vector<int64_t> widths;
  for (const auto& option : space->knob("tile_x").options) widths.push_back(option.back());
  std::sort(widths.begin(), widths.end());
  widths.erase(std::unique(widths.begin(), widths.end()), widths.end());
  CHECK(widths == std::vector<int64_t>{32, 64, 96, 128});
}

TEST_CASE("packed_b: AVX512-BF16- and AMX-tensorized kernels read bf16 weights packed in k steps",
          "[ops][gemm][packed_b][bf16][amx]") {
  if (!host_has("avx512bf16")) KILN_SKIP("this CPU has no AVX512-BF16");
  const uint64_t seed = kiln::testing::run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed + 12);
  check_random_configs("matmul_packed_b:M=5,N=64,K=18,dtype=bf16,kstep=2,bias=1", cpu_with(false, true), "bf16", 4, rng,
                       2e-2);
  check_random_configs("matmul_packed_b:M=2,N=40,K=8,dtype=bf16,kstep=2", cpu_with(false, true), "bf16", 3, rng, 2e-2);
  if (!host_has("amx-bf16")) KILN_SKIP("this CPU has no AMX-BF16 (the AVX512-BF16 configs passed)");
  CpuInfo amx = cpu_with(false, true);
  amx.amx_bf16 = true;
  check_random_configs("matmul_packed_b:M=64,N=96,K=64,dtype=bf16,kstep=2,gelu=1", amx, "amx", 4, rng, 2e-2);
  check_random_configs("matmul_packed_b:M=32,N=32,K=32,dtype=bf16,kstep=2", amx, "amx", 3, rng, 2e-2);
}

TEST_CASE("packed_b: k steps that do not divide K, or that the instruction does not read, are user errors",
          "[ops][gemm][packed_b][user_error]") {
  CHECK_THROWS_WITH(build_workload("pack_matmul_b:K=6,N=8,kstep=4,dtype=i8"),
                    Contains("pack_matmul_b: K (6) must be a multiple of kstep (4)"));
  CHECK_THROWS_WITH(build_workload("qmatmul_packed_b:M=2,N=8,K=6"),
                    Contains("a packed B in k steps of 4 needs K (6) a multiple of them"));
  // VNNI reads 4 k values per column; B packed in steps of 2 is not its layout.
  OpInstance op = build_workload("qmatmul_packed_b:M=4,N=32,K=8,kstep=2");
  GemmShape g;
  g.M = 4;
  g.N = 32;
  g.K = 8;
  g.b_panel = 32;
  g.b_kstep = 2;
  g.quantized = true;
  g.b_name = "packed_B";
  MatmulParams p;
  p.tile_y = {1, 1, 4};
  p.tile_x = {1, 1, 32};
  p.tile_k = {1, 8};
  p.pack_b = -2;
  p.tensorize = "vnni";
  CHECK_THROWS_WITH(gemm_schedule(op, g, p),
                    Contains("tensorize=vnni reads a packed B in its own blocks: panels of whole 16-column blocks "
                             "and k steps of 4 (got panels of 32, k steps of 2)"));
  // ... and the knob does not offer it.
  for (const Knob& k : find_op(op.op).define_space(op, cpu_with(true, false))->knobs()) CHECK(k.name != "tensorize");
}
