// Reducing to unit stride (kernels/conv2d_common.h): a 1x1 strided unpadded
// layer of conv2d_nchwc, qconv2d_nchwc or conv2d_nchwc_bf16 may copy the
// pixels it reads into a dense buffer first ("unit_stride": "dense") and
// read that as a stride-1 layer. Random shapes (1, primes, odd sizes,
// strides 2 and 3, groups, epilogues) and random configs with the copy
// agree with the interpreter (integers exactly), tensorized or not; the
// knob is offered only where it applies; the defaults take it where it was
// measured to win.
#include <catch2/catch.hpp>
#include <random>

#include "compute/printer.h"
#include "kernels/op_registry.h"
#include "schedule/lower.h"
#include "support/quantized_check.h"
#include "support/skip.h"
#include "support/template_check.h"
#include "support/test_seed.h"
#include "test_ops_conv_check.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Contains;

namespace {

const Knob* find_knob(const ConfigSpace& space, const std::string& name) {
  for (const Knob& k : space.knobs())
    if (k.name == name) return &k;
  return nullptr;
}

std::vector<std::string> labels(const std::string& workload, const std::string& knob, const CpuInfo& cpu) {
  const OpInstance op = build_workload(workload);
  const auto space = find_op(op.op).define_space(op, cpu);
  const Knob* k = find_knob(*space, knob);
  return k ? k->labels : std::vector<std::string>{};
}

size_t option_count(const std::string& workload, const std::string& knob, const CpuInfo& cpu) {
  const OpInstance op = build_workload(workload);
  const auto space = find_op(op.op).define_space(op, cpu);
  const Knob* k = find_knob(*space, knob);
  return k ? k->size() : 0;
}

CpuInfo amx_cpu() {
  CpuInfo cpu = cpu_with(true, true);
  cpu.amx_int8 = true;
  cpu.amx_bf16 = true;
  return cpu;
}

// A random strided 1x1 layer of `op` ("qconv2d_nchwc" needs cb a multiple
// of 4, "conv2d_nchwc_bf16" an even one; `amx`: blocks AMX takes).
std::string random_strided_layer(std::mt19937_64& rng, const std::string& op, bool amx) {
  const bool quantized = op == "qconv2d_nchwc", bf16 = op == "conv2d_nchwc_bf16";
  const int64_t groups = amx || rng() % 4 != 0 ? 1 : 2;
  const int64_t cb = amx         ? (quantized ? 64 : 32)
                     : quantized ? 4 * pick(rng, 1, 2)
                     : bf16      ? 2 * pick(rng, 1, 3)
                                 : pick(rng, 1, 4);
  const int64_t kb = amx ? 32 : (op == "conv2d_nchwc" ? std::vector<int64_t>{1, 3, 16}[pick(rng, 0, 2)] : 16);
  std::string w = op + ":N=" + std::to_string(pick(rng, 1, 2)) + ",C=" + std::to_string(groups * cb * pick(rng, 1, 2)) +
                  ",H=" + std::to_string(odd_extent(rng)) + ",W=" + std::to_string(odd_extent(rng)) +
                  ",K=" + std::to_string(groups * kb * pick(rng, 1, 2)) +
                  ",R=1,S=1,stride=" + std::to_string(pick(rng, 2, 3)) + ",cb=" + std::to_string(cb) +
                  ",kb=" + std::to_string(kb) + ",groups=" + std::to_string(groups) +
                  ",bias=" + std::to_string(pick(rng, 0, 1));
  if (quantized) return w + ",relu=" + std::to_string(pick(rng, 0, 1)) + ",out=" + (rng() % 2 ? "u8" : "i8");
  return w + random_activation(rng);
}

}  // namespace

TEST_CASE("unit stride: only 1x1 strided unpadded layers have the knob", "[ops][conv][unit_stride]") {
  const std::vector<std::string> both{"strided", "dense"}, strided{"strided"};
  const CpuInfo cpu = amx_cpu();
  CHECK(labels("conv2d_nchwc:C=16,H=8,W=8,K=16,R=1,S=1,stride=2", "unit_stride", cpu) == both);
  CHECK(labels("qconv2d_nchwc:C=64,H=9,W=9,K=32,R=1,S=1,stride=3,cb=64,kb=32", "unit_stride", cpu) == both);
  CHECK(labels("conv2d_nchwc_bf16:C=32,H=8,W=8,K=32,R=1,S=1,stride=2,cb=32,kb=32", "unit_stride", cpu) == both);
  for (const char* w :
       {"conv2d_nchwc:C=16,H=8,W=8,K=16,R=1,S=1", "conv2d_nchwc:C=16,H=8,W=8,K=16,R=1,S=1,stride=2,pad=1",
        "conv2d_nchwc:C=16,H=8,W=8,K=16,R=3,S=3,stride=2", "conv2d_nchwc:C=16,H=8,W=8,K=16,R=1,S=3,stride=2",
        "qconv2d_nchwc:C=64,H=8,W=8,K=32,R=3,S=3,stride=2,pad=1,cb=64,kb=32"}) {
    INFO(w);
    CHECK(labels(w, "unit_stride", cpu) == strided);
  }
  // The copy's placement is a knob of its own; so are AMX's flat rows, which
  // a strided layer gets through the copy.
  CHECK(option_count("conv2d_nchwc:C=16,H=8,W=8,K=16,R=1,S=1,stride=2", "data_at", cpu) == 4);
  CHECK(option_count("conv2d_nchwc:C=16,H=8,W=8,K=16,R=1,S=1", "data_at", cpu) == 1);
  CHECK(labels("qconv2d_nchwc:C=64,H=9,W=9,K=32,R=1,S=1,stride=2,cb=64,kb=32", "amx_rows", cpu) ==
        std::vector<std::string>{"tile", "flat"});
}

TEST_CASE("unit stride: the dense copy is one stage that the convolution reads at unit stride",
          "[ops][conv][unit_stride]") {
  const OpInstance op = build_workload("conv2d_nchwc:C=32,H=9,W=9,K=16,R=1,S=1,stride=2");
  const OpDef& def = find_op(op.op);
  auto space = def.define_space(op, avx512_cpu());
  nlohmann::json j = def.default_config(op, avx512_cpu(), *space).to_json();
  j["unit_stride"] = "dense";
  j["data_at"] = -1;
  ScheduledOp so = def.apply_config(op, space->from_json(j));
  const std::string ir = to_string(lower(*so.schedule, so.args, "f"));
  INFO(ir);
  // 5x5 of the 9x9 pixels, 2 blocks of 16 channels, made once at the root.
  CHECK_THAT(ir, Contains("allocate data_dense[f32 * 800]"));
  j["unit_stride"] = "strided";
  so = def.apply_config(op, space->from_json(j));
  CHECK(to_string(lower(*so.schedule, so.args, "f")).find("data_dense") == std::string::npos);
}

TEST_CASE("unit stride: conv2d_nchwc with the dense copy agrees with the interpreter",
          "[ops][conv][unit_stride][property]") {
  std::mt19937_64 rng(4101);
  for (int t = 0; t < 6; ++t)
    check_pinned_configs(random_strided_layer(rng, "conv2d_nchwc", false), {{"unit_stride", "dense"}}, 3,
                         4200 + static_cast<uint64_t>(t));
  // A ResNet downsampling layer, scaled down, and a 1-pixel image.
  check_pinned_configs("conv2d_nchwc:C=32,H=14,W=14,K=64,R=1,S=1,stride=2,bias=1", {{"unit_stride", "dense"}}, 4, 4300);
  check_pinned_configs("conv2d_nchwc:C=16,H=1,W=1,K=16,R=1,S=1,stride=2,relu=1", {{"unit_stride", "dense"}}, 2, 4301);
}

TEST_CASE("unit stride: int8 and bf16 layers with the dense copy equal the interpreter", "[ops][conv][unit_stride]") {
  const uint64_t seed = run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed + 41);
  for (int t = 0; t < 4; ++t) {
    check_pinned_random_configs(random_strided_layer(rng, "qconv2d_nchwc", false), cpu_with(false, false),
                                {{"unit_stride", "dense"}}, 2, rng, 0);
    check_pinned_random_configs(random_strided_layer(rng, "conv2d_nchwc_bf16", false), cpu_with(false, false),
                                {{"unit_stride", "dense"}}, 2, rng, 2e-2);
  }
}

TEST_CASE("unit stride: VNNI calls read the dense copy", "[ops][conv][unit_stride][vnni]") {
  if (!host_has("avx512vnni")) KILN_SKIP("this CPU has no AVX512-VNNI");
  const uint64_t seed = run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed + 43);
  for (int t = 0; t < 4; ++t)
    check_pinned_random_configs(random_strided_layer(rng, "qconv2d_nchwc", false), cpu_with(true, false),
                                {{"unit_stride", "dense"}, {"tensorize", "vnni"}}, 2, rng, 0);
}

TEST_CASE("unit stride: AMX calls read the dense copy, in tiles and in flat runs of rows",
          "[ops][conv][unit_stride][amx]") {
  if (!host_has("amx-int8") || !host_has("amx-bf16")) KILN_SKIP("this CPU has no AMX-INT8 and AMX-BF16");
  const uint64_t seed = run_seed();
  INFO("KILN_SEED=" << seed);
  std::mt19937_64 rng(seed + 47);
  // Flat rows where the dense copy has at least 2 rows of 2 pixels.
  auto pinned = [](const std::string& w, const char* rows) {
    nlohmann::json j{{"unit_stride", "dense"}, {"tensorize", "amx"}, {"amx_rows", "tile"}};
    if (labels(w, "amx_rows", amx_cpu()).size() == 2) j["amx_rows"] = rows;
    return j;
  };
  for (const char* rows : {"tile", "flat"})
    for (int t = 0; t < 3; ++t) {
      const std::string q = random_strided_layer(rng, "qconv2d_nchwc", true);
      const std::string b = random_strided_layer(rng, "conv2d_nchwc_bf16", true);
      check_pinned_random_configs(q, amx_cpu(), pinned(q, rows), 2, rng, 0);
      check_pinned_random_configs(b, amx_cpu(), pinned(b, rows), 2, rng, 2e-2);
    }
  // The default of a 7x7 output: dense, and all its rows as one flat run.
  const std::string seven = "qconv2d_nchwc:C=128,H=13,W=13,K=64,R=1,S=1,stride=2,cb=64,kb=32,bias=1,out=i8";
  check_pinned_random_configs(seven, amx_cpu(), nlohmann::json::object(), 3, rng, 0);
}

TEST_CASE("unit stride: the defaults copy where it was measured to win", "[ops][conv][unit_stride]") {
  auto default_of = [](const std::string& w, const CpuInfo& cpu) {
    const OpInstance op = build_workload(w);
    const OpDef& def = find_op(op.op);
    auto space = def.define_space(op, cpu);
    return def.default_config(op, cpu, *space).to_json();
  };
  // fp32: an input past 1 MiB (3.2 MB and 1.6 MB) is copied; 0.8 MB is read in place.
  CHECK(default_of("conv2d_nchwc:C=256,H=56,W=56,K=512,R=1,S=1,stride=2", avx512_cpu())["unit_stride"] == "dense");
  CHECK(default_of("conv2d_nchwc:C=512,H=28,W=28,K=1024,R=1,S=1,stride=2", avx512_cpu())["unit_stride"] == "dense");
  CHECK(default_of("conv2d_nchwc:C=1024,H=14,W=14,K=2048,R=1,S=1,stride=2", avx512_cpu())["unit_stride"] == "strided");
  // AMX: a 7x7 output is copied and run as one flat run of rows; larger
  // outputs are read in place (tile loads take the stride as it comes).
  const nlohmann::json seven =
      default_of("qconv2d_nchwc:C=1024,H=14,W=14,K=2048,R=1,S=1,stride=2,cb=64,kb=64,out=i8", amx_cpu());
  CHECK(seven["unit_stride"] == "dense");
  CHECK(seven["amx_rows"] == "flat");
  CHECK(default_of("conv2d_nchwc_bf16:C=1024,H=14,W=14,K=2048,R=1,S=1,stride=2,cb=32,kb=32", amx_cpu())["amx_rows"] ==
        "flat");
  CHECK(default_of("qconv2d_nchwc:C=256,H=56,W=56,K=512,R=1,S=1,stride=2,cb=64,kb=64,out=i8",
                   amx_cpu())["unit_stride"] == "strided");
  // Without AMX, int8 keeps its strided reads.
  CHECK(default_of("qconv2d_nchwc:C=1024,H=14,W=14,K=2048,R=1,S=1,stride=2,cb=64,kb=64,out=i8",
                   cpu_with(true, false))["unit_stride"] == "strided");
}
