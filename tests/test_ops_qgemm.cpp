// Quantized GEMMs (qmatmul, qdense) and bf16 GEMMs: the requantization's
// rounding and saturation, the tensorize knob offered only where the CPU has
// the instruction, and random configs of the template (tensorized with VNNI
// or not) on random shapes against the interpreter: integers and the
// dequantized f32 exactly, over the whole range of u8 and i8 inputs.
#include <catch2/catch.hpp>

#include <random>

#include "base/error.h"
#include "codegen/target.h"
#include "compute/interpreter.h"
#include "kernels/gemm_common.h"
#include "kernels/op_registry.h"
#include "support/kernel_check.h"
#include "support/quantized_check.h"
#include "support/skip.h"
#include "support/template_check.h"
#include "support/test_seed.h"

using namespace kiln;
using Catch::Contains;
using namespace kiln::testing;

TEST_CASE("qgemm: requantization rounds halfway cases to even and saturates", "[ops][qgemm]") {
  // qmatmul with K=1: out = sat(round_even(A*B*scale)).
  for (const char* out : {"u8", "i8"}) {
    OpInstance op = build_workload(std::string("qmatmul:M=1,N=8,K=1,out=") + out);
    HostTensor a(DType::u8(), {1, 1}), b(DType::i8(), {1, 8}), scale(DType::f32(), {8});
    a.set_int(0, 1);
    const int64_t bs[] = {5, 7, -5, -3, 127, -128, 1, 3};
    const double ss[] = {0.5, 0.5, 0.5, 0.5, 4.0, 4.0, 0.5, 0.5};  // 2.5, 3.5, -2.5, -1.5, 508, -512, 0.5, 1.5
    for (int j = 0; j < 8; ++j) {
      b.set_int(j, bs[j]);
      scale.set_float(j, ss[j]);
    }
    HostTensor r = interpret(op.outputs, {{op.inputs[0], a}, {op.inputs[1], b}, {op.inputs[2], scale}})[0];
    std::vector<int64_t> got;
    for (int j = 0; j < 8; ++j) got.push_back(r.get_int(j));
    if (std::string(out) == "u8") {
      CHECK(got == std::vector<int64_t>{2, 4, 0, 0, 255, 0, 0, 2});
    } else {
      CHECK(got == std::vector<int64_t>{2, 4, -2, -2, 127, -128, 0, 2});
    }
  }
  // relu clamps i8 at 0; f32 output is dequantized as is; i32 has no scale.
  OpInstance relu = build_workload("qmatmul:M=1,N=2,K=1,out=i8,relu=1");
  CHECK(relu.inputs.size() == 3);
  OpInstance f = build_workload("qmatmul:M=1,N=2,K=1,out=f32");
  CHECK(f.outputs[0].dtype() == DType::f32());
  OpInstance i = build_workload("qdense:N=1,IN=4,OUT=2,out=i32,bias=1");
  CHECK(i.inputs.size() == 3);
  CHECK(i.inputs[2].dtype() == DType::i32());
  CHECK(i.outputs[0].dtype() == DType::i32());
  CHECK(build_workload("qdense:N=1,IN=4,OUT=2").canonical == "qdense:N=1,IN=4,OUT=2,bias=0,relu=0,out=u8");
}

TEST_CASE("qgemm: a bad output type is a user error", "[ops][qgemm][errors]") {
  CHECK_THROWS_WITH(build_workload("qmatmul:M=1,N=2,K=1,out=f16"),
                    Contains("a quantized GEMM: the output is u8 or i8 (requantized), i32 (the sums) or f32 "
                             "(dequantized), not f16"));
}

TEST_CASE("qgemm: the tensorize knob is offered where the CPU has the instruction and the shape its blocks",
          "[ops][qgemm]") {
  auto has_knob = [](const std::string& w, const CpuInfo& cpu) {
    OpInstance op = build_workload(w);
    const auto space = find_op(op.op).define_space(op, cpu);
    for (const Knob& k : space->knobs())
      if (k.name == "tensorize") return true;
    return false;
  };
  CHECK(has_knob("qmatmul:M=4,N=32,K=8", cpu_with(true, false)));
  CHECK_FALSE(has_knob("qmatmul:M=4,N=32,K=8", cpu_with(false, true)));
  // N not whole 16-column blocks: the sums run to 32 columns over zeros;
  // narrower than one block, nothing to tensorize.
  CHECK(has_knob("qmatmul:M=4,N=20,K=8", cpu_with(true, true)));
  CHECK_FALSE(has_knob("qmatmul:M=4,N=5,K=8", cpu_with(true, true)));
  CHECK_FALSE(has_knob("qdense:N=4,IN=6,OUT=32", cpu_with(true, true)));  // K not whole 4-step blocks
  CHECK(has_knob("matmul:M=4,N=32,K=8,dtype=bf16", cpu_with(false, true)));
  CHECK_FALSE(has_knob("matmul:M=4,N=32,K=8,dtype=bf16", cpu_with(true, false)));
  CHECK_FALSE(has_knob("matmul:M=4,N=32,K=8", cpu_with(true, true)));  // f32: nothing to tensorize with
  // The default config uses it.
  OpInstance op = build_workload("qmatmul:M=4,N=32,K=8");
  const OpDef& def = find_op("qmatmul");
  auto space = def.define_space(op, cpu_with(true, false));
  CHECK(def.default_config(op, cpu_with(true, false), *space).annotate("tensorize") == "vnni");
}

TEST_CASE("qgemm: random configs on random shapes equal the interpreter exactly", "[ops][qgemm]") {
  const uint64_t seed = kiln::testing::run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed);
  const std::vector<int64_t> rows = {1, 2, 3, 7, 13};
  const std::vector<int64_t> cols = {16, 32, 48, 5, 20};
  const std::vector<int64_t> depth = {4, 8, 12, 20, 7};
  const std::vector<std::string> outs = {"u8", "i8", "i32", "f32"};
  // Without the instruction: the plain template only.
  for (int w = 0; w < 6; ++w) {
    std::string wl = std::string(rng() % 2 ? "qmatmul:M=" : "qdense:N=") + std::to_string(rows[rng() % rows.size()]);
    const bool dense = wl[1] == 'd';
    wl += std::string(dense ? ",IN=" : ",N=") + std::to_string(cols[rng() % cols.size()]);
    wl += std::string(dense ? ",OUT=" : ",K=") + std::to_string(depth[rng() % depth.size()]);
    wl += ",bias=" + std::to_string(rng() % 2) + ",relu=" + std::to_string(rng() % 2) + ",out=" + outs[rng() % 4];
    check_random_configs(wl, cpu_with(false, false), "", 3, rng);
  }
}

TEST_CASE("qgemm: VNNI-tensorized configs equal the interpreter exactly", "[ops][qgemm][vnni]") {
  if (!host_has("avx512vnni")) KILN_SKIP("this CPU has no AVX512-VNNI");
  const uint64_t seed = kiln::testing::run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed + 1);
  const std::vector<int64_t> rows = {1, 2, 3, 7, 13, 29};
  // Whole 16-column blocks, and columns that end inside a block.
  const std::vector<int64_t> cols = {16, 32, 48, 64, 17, 20, 37, 53};
  const std::vector<std::string> outs = {"u8", "i8", "i32", "f32"};
  for (int w = 0; w < 10; ++w) {
    const int64_t m = rows[rng() % rows.size()], n = cols[rng() % cols.size()],
                  k = 4 * static_cast<int64_t>(1 + rng() % 6);
    const bool dense = rng() % 2;
    std::string wl = dense ? "qdense:N=" + std::to_string(m) + ",IN=" + std::to_string(k) + ",OUT=" + std::to_string(n)
                           : "qmatmul:M=" + std::to_string(m) + ",N=" + std::to_string(n) + ",K=" + std::to_string(k);
    wl += ",bias=" + std::to_string(rng() % 2) + ",relu=" + std::to_string(rng() % 2) + ",out=" + outs[rng() % 4];
    check_random_configs(wl, cpu_with(true, false), "vnni", 3, rng);
  }
}

TEST_CASE("qgemm: AMX-tensorized configs equal the interpreter exactly", "[ops][qgemm][amx]") {
  if (!host_has("amx-int8")) KILN_SKIP("this CPU has no AMX-INT8");
  const uint64_t seed = kiln::testing::run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed + 3);
  CpuInfo cpu = cpu_with(true, false);
  cpu.amx_int8 = true;
  // M and N whole 32 x 32 blocks, K whole 64-element steps; the random
  // configs' k tiles round to the steps that divide K.
  const std::vector<std::string> outs = {"u8", "i8", "i32", "f32"};
  for (int w = 0; w < 5; ++w) {
    const int64_t m = 32 * static_cast<int64_t>(1 + rng() % 3), n = 32 * static_cast<int64_t>(1 + rng() % 3),
                  k = 64 * static_cast<int64_t>(1 + rng() % 4);
    const bool dense = rng() % 2;
    std::string wl = dense ? "qdense:N=" + std::to_string(m) + ",IN=" + std::to_string(k) + ",OUT=" + std::to_string(n)
                           : "qmatmul:M=" + std::to_string(m) + ",N=" + std::to_string(n) + ",K=" + std::to_string(k);
    wl += ",bias=" + std::to_string(rng() % 2) + ",relu=" + std::to_string(rng() % 2) + ",out=" + outs[rng() % 4];
    check_random_configs(wl, cpu, "amx", 3, rng);
  }
  // The knob offers amx only for whole blocks.
  auto options = [&](const std::string& wl) {
    OpInstance op = build_workload(wl);
    return find_op(op.op).define_space(op, cpu)->knob("tensorize").options.size();
  };
  CHECK(options("qmatmul:M=64,N=64,K=128") == 3);  // none, vnni, amx
  CHECK(options("qmatmul:M=48,N=64,K=128") == 2);  // M not whole 32-row blocks
}

TEST_CASE("bf16 GEMMs sum in f32 and round once, tensorized with AVX512-BF16 or not", "[ops][gemm][bf16]") {
  // The definition: C in f32, the epilogue rounds to bf16.
  OpInstance op = build_workload("matmul:M=3,N=16,K=4,dtype=bf16");
  REQUIRE(op.parts.count("matmul"));
  CHECK(op.parts.at("matmul").dtype() == DType::f32());
  CHECK(op.outputs[0].dtype() == DType::bf16());
  const uint64_t seed = kiln::testing::run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed + 2);
  // Sums of bf16 products in another order: within a few bf16 ulps.
  check_random_configs("matmul:M=5,N=32,K=10,dtype=bf16,bias=1", cpu_with(false, false), "", 3, rng, 2e-2);
  check_random_configs("dense:N=3,IN=6,OUT=16,dtype=bf16,relu=1", cpu_with(false, false), "", 2, rng, 2e-2);
  if (!host_has("avx512bf16")) KILN_SKIP("this CPU has no AVX512-BF16 (the plain bf16 configs passed)");
  check_random_configs("matmul:M=5,N=32,K=10,dtype=bf16,bias=1", cpu_with(false, true), "bf16", 4, rng, 2e-2);
  check_random_configs("matmul:M=3,N=21,K=10,dtype=bf16,relu=1", cpu_with(false, true), "bf16", 3, rng, 2e-2);
  check_random_configs("batch_matmul:B=2,M=3,N=16,K=4,dtype=bf16", cpu_with(false, true), "bf16", 3, rng, 2e-2);
  if (!host_has("amx-bf16")) KILN_SKIP("this CPU has no AMX-BF16 (the AVX512-BF16 configs passed)");
  CpuInfo amx = cpu_with(false, true);
  amx.amx_bf16 = true;
  check_random_configs("matmul:M=64,N=32,K=96,dtype=bf16,bias=1", amx, "amx", 4, rng, 2e-2);
  check_random_configs("dense:N=32,IN=64,OUT=64,dtype=bf16,gelu=1", amx, "amx", 3, rng, 2e-2);
  check_random_configs("batch_matmul:B=2,M=32,N=32,K=32,dtype=bf16", amx, "amx", 3, rng, 2e-2);
}

TEST_CASE("qgemm: a tensorized schedule with tiles that are not whole blocks says so", "[ops][qgemm][errors]") {
  // The space offers whole blocks only; the template's parameters checked directly.
  OpInstance op = build_workload("qmatmul:M=4,N=32,K=8");
  GemmShape g;
  g.M = 4;
  g.N = 32;
  g.K = 8;
  g.quantized = true;
  g.out_type = DType::u8();
  MatmulParams p;
  p.tile_y = {1, 1, 4};
  p.tile_x = {1, 4, 8};
  p.tile_k = {1, 8};
  p.tensorize = "vnni";
  CHECK_THROWS_WITH(gemm_schedule(op, g, p), Contains("tensorize=vnni needs a register tile of whole 16-column blocks "
                                                      "(got 8) and k tiles of whole 4-step blocks (got 8)"));
  p.tensorize = "amx";  // M = 4 is not a whole 32-row block
  CHECK_THROWS_WITH(gemm_schedule(op, g, p), Contains("tensorize=amx needs M and N multiples of 32 and K of 64"));
  p.tensorize = "sme";
  CHECK_THROWS_WITH(gemm_schedule(op, g, p), Contains("unknown tensorize option 'sme' (none, vnni, bf16 or amx)"));
}
