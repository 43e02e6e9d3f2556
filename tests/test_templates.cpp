// The tunable schedule templates of matmul and conv2d: space sizes, the
// default config (the default schedule), random configs of small odd shapes
// compiled and checked against the reference interpreter, and random
// configs of large shapes instantiated to annotated loops (cheaply).
#include <catch2/catch.hpp>
#include <cstdio>
#include <random>

#include "base/error.h"
#include "compute/printer.h"
#include "kernels/conv2d.h"
#include "kernels/matmul.h"
#include "kernels/op_registry.h"
#include "support/kernel_check.h"
#include "support/template_check.h"

using namespace kiln;
using Catch::Contains;
using kiln::testing::avx512_cpu;
using kiln::testing::check_schedule;
using kiln::testing::check_template_configs;

TEST_CASE("template spaces are large and expose the conv layouts", "[templates]") {
  CpuInfo cpu = avx512_cpu();
  OpInstance mm = build_workload("matmul:M=1024,N=1024,K=1024");
  auto ms = find_op("matmul").define_space(mm, cpu);
  OpInstance cv = build_workload("conv2d:C=64,H=56,W=56,K=64,R=3,S=3,pad=1");
  auto cs = find_op("conv2d").define_space(cv, cpu);
  std::printf("space sizes: matmul 1024^3 %llu, conv2d resnet 3x3 C=K=64 56x56 %llu\n",
              static_cast<unsigned long long>(ms->size()), static_cast<unsigned long long>(cs->size()));
  CHECK(ms->size() >= 100000);
  CHECK(cs->size() >= 100000);
  CHECK(cs->knob("layout").labels == std::vector<std::string>{"nchw", "nchwc"});
  // Register tiles: multiples of the vector (16 f32 lanes) among the column widths.
  bool has_64 = false;
  for (auto& o : ms->knob("tile_x").options) has_64 |= o[2] == 64;
  CHECK(has_64);
  // Integer accumulators (i32) have 16 lanes at 512 bits, f64 has 8.
  auto m64 = find_op("matmul").define_space(build_workload("matmul:M=64,N=64,K=8,dtype=f64"), cpu);
  for (auto& o : m64->knob("tile_x").options) CHECK(o[2] <= 32);
}

TEST_CASE("default schedules and other configs agree with the reference", "[templates]") {
  CpuInfo cpu = avx512_cpu();
  uint64_t seed = 20;
  for (const char* w : {"matmul:M=13,N=40,K=9", "matmul:M=12,N=32,K=8,bias=1,relu=1",
                        "conv2d:C=3,H=9,W=9,K=8,R=3,S=3,stride=2,pad=1", "conv2d:C=64,H=56,W=56,K=64,R=3,S=3,pad=1"})
    kiln::testing::check_default_and_random_config(w, seed++);
  // The matmul default is the classic 6 x 4-vector register tile, B packed per panel.
  OpInstance mm = build_workload("matmul:M=1024,N=1024,K=1024");
  auto space = find_op("matmul").define_space(mm, cpu);
  auto j = find_op("matmul").default_config(mm, cpu, *space).to_json();
  CHECK(j["tile_y"][2] == 6);
  CHECK(j["tile_x"][2] == 64);
  CHECK(j["pack_b"] == 0);
}

TEST_CASE("random matmul configs are correct on small odd shapes", "[templates][property]") {
  check_template_configs("matmul:M=13,N=40,K=9", 6, 1);
  check_template_configs("matmul:M=7,N=17,K=33,bias=1,relu=1", 3, 2);
  check_template_configs("matmul:M=1,N=3,K=5", 2, 3);
  check_template_configs("matmul:M=9,N=20,K=6,dtype=i8", 2, 4);
}

TEST_CASE("random conv2d configs are correct on small odd shapes", "[templates][property]") {
  check_template_configs("conv2d:C=3,H=9,W=9,K=8,R=3,S=3,stride=2,pad=1", 6, 5);
  check_template_configs("conv2d:N=2,C=5,H=7,W=6,K=12,R=3,S=2,pad=1,dilation=2", 3, 6);
  check_template_configs("conv2d:C=4,H=5,W=5,K=3,R=1,S=1", 2, 7);
  check_template_configs("conv2d:C=3,H=6,W=7,K=17,R=3,S=3,pad=1,dtype=i32", 2, 8);
}

TEST_CASE("the packed NCHW[x]c layout is correct for every channel block", "[templates][property]") {
  OpInstance op = build_workload("conv2d:C=6,H=5,W=5,K=20,R=3,S=3,stride=2,pad=1");
  const OpDef& def = find_op("conv2d");
  CpuInfo cpu = avx512_cpu();
  auto space = def.define_space(op, cpu);
  nlohmann::json j = def.default_config(op, cpu, *space).to_json();
  j["layout"] = "nchwc";
  j["data_at"] = 0;
  for (auto& cb : space->knob("tile_c").options) {
    j["tile_c"] = cb;
    ScheduledOp so = def.apply_config(op, space->from_json(j));
    INFO("tile_c " << nlohmann::json(cb).dump());
    CHECK(check_schedule(*so.schedule, op.inputs, so.args, op.outputs, 9) == "");
  }
}

TEST_CASE("random configs of large shapes instantiate to annotated loops", "[templates]") {
  CpuInfo cpu = avx512_cpu();
  for (const char* w : {"matmul:M=1024,N=1024,K=1024", "conv2d:C=64,H=56,W=56,K=64,R=3,S=3,pad=1"}) {
    OpInstance op = build_workload(w);
    const OpDef& def = find_op(op.op);
    auto space = def.define_space(op, cpu);
    std::mt19937_64 rng(11);
    const int n = 40;
    for (int c = 0; c < n; ++c) {
      Config cfg = space->random(rng);
      INFO(w << " config " << cfg.str());
      ScheduledOp so = def.apply_config(op, cfg);
      LoweredFunc f = lower(*so.schedule, so.args, "k", LowerDepth::kAnnotatedLoops);
      CHECK(f.body.defined());
    }
  }
}

TEST_CASE("the legacy fixed-parameter schedules go through the templates", "[templates]") {
  OpInstance mm = build_workload("matmul:M=13,N=40,K=9");
  MatmulSchedule mc;
  mc.mb = 5;
  mc.nb = 24;
  mc.kb = 4;
  mc.k_unroll = 2;
  ScheduledOp so = matmul_schedule(mm, mc);
  CHECK(check_schedule(*so.schedule, mm.inputs, so.args, mm.outputs, 3) == "");
  OpInstance cv = build_workload("conv2d:C=3,H=9,W=9,K=8,R=3,S=3,stride=2,pad=1");
  Conv2dSchedule cc;
  cc.kb = 16;
  cc.owb = 3;
  so = conv2d_schedule(cv, cc);
  CHECK(check_schedule(*so.schedule, cv.inputs, so.args, cv.outputs, 4) == "");
}

TEST_CASE("template misuse is a user error", "[templates][user_error]") {
  OpInstance mm = build_workload("matmul:M=8,N=8,K=8");
  OpInstance cv = build_workload("conv2d:C=3,H=9,W=9,K=8,R=3,S=3");
  CpuInfo cpu = avx512_cpu();
  auto ms = find_op("matmul").define_space(mm, cpu);
  CHECK_THROWS_WITH(find_op("conv2d").apply_config(cv, ms->get(0)), Contains("no knob named"));
  CHECK_THROWS_WITH(find_op("matmul").apply_config(cv, ms->get(0)), Contains("cannot schedule op 'conv2d'"));
  ConfigSpace s;
  CHECK_THROWS_WITH(s.define_split_levels("t", 4, {{8, 16}}), Contains("no factors of split 't' fit the extent 4"));
}
