// The GEMM op family (matmul with transposes and gelu, batch_matmul, dense):
// existing matmul task keys and the 1024^3 ConfigSpace stay as they were,
// random configs of random small shapes (1, primes, odd) and random flags
// compile and agree with the reference interpreter, so do the default
// schedules, and bad workloads are user errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "base/error.h"
#include "compute/interpreter.h"
#include "compute/printer.h"
#include "kernels/op_registry.h"
#include "support/kernel_check.h"
#include "support/template_check.h"

using namespace kiln;
using Catch::Contains;
using kiln::testing::avx512_cpu;
using kiln::testing::check_schedule;
using kiln::testing::check_template_configs;

namespace {

int64_t odd_extent(std::mt19937_64& rng) {
  static const int64_t kExtents[] = {1, 2, 3, 5, 7, 11, 13, 17, 19, 23};
  return kExtents[std::uniform_int_distribution<int>(0, 9)(rng)];
}

int flag(std::mt19937_64& rng) { return static_cast<int>(rng() % 2); }


}  // namespace

TEST_CASE("matmul task keys and its 1024^3 space are unchanged by the new flags", "[ops][gemm]") {
  CHECK(build_workload("matmul:M=8,N=16,K=4").canonical == "matmul:M=8,N=16,K=4,dtype=f32,bias=0,relu=0");
  CHECK(build_workload("matmul:M=8,N=16,K=4,bias=1,relu=1,trans_a=0,trans_b=0,gelu=0").canonical ==
        "matmul:M=8,N=16,K=4,dtype=f32,bias=1,relu=1");
  CHECK(build_workload("matmul:M=8,N=16,K=4,trans_b=1").canonical ==
        "matmul:M=8,N=16,K=4,dtype=f32,bias=0,relu=0,trans_b=1");
  CHECK(build_workload("matmul:M=8,N=16,K=4,gelu=1,trans_a=1").canonical ==
        "matmul:M=8,N=16,K=4,dtype=f32,bias=0,relu=0,trans_a=1,gelu=1");

  // The space and default of the existing parameters, as recorded before
  // transposes and gelu existed (tuning databases hold configs of it), and
  // the knobs added since: prefetch (4 options; a stored config without it
  // means 0, no prefetch), store (2 options; without it: cached) and
  // pack_buffers (2 options; without it: 1, B packed into one buffer).
  CpuInfo cpu = avx512_cpu();
  OpInstance mm = build_workload("matmul:M=1024,N=1024,K=1024");
  const OpDef& def = find_op("matmul");
  auto space = def.define_space(mm, cpu);
  CHECK(space->size() == 233342208ull * 4 * 2 * 2);
  std::vector<std::string> names;
  for (auto& k : space->knobs()) names.push_back(k.name);
  CHECK(names == std::vector<std::string>{"tile_y", "tile_x", "tile_k", "order", "acc_at", "k_outer", "pack_b",
                                          "unroll_k", "unroll_y", "parallel", "prefetch", "store", "pack_buffers"});
  CHECK(space->knob("prefetch").added_later);
  CHECK(space->knob("store").added_later);
  CHECK(space->knob("pack_buffers").added_later);
  CHECK(def.default_config(mm, cpu, *space).str() ==
        R"({"acc_at":3,"k_outer":0,"order":[1,0,3,2],"pack_b":0,"pack_buffers":1,"parallel":1,"prefetch":0,)"
        R"("store":"cached",)"
        R"("tile_k":[1,1024],"tile_x":[16,1,64],"tile_y":[171,1,6],"unroll_k":4,"unroll_y":"unroll"})");
  // A config stored before the store knob reads as cached.
  CHECK(space
            ->from_json(nlohmann::json::parse(
                R"({"acc_at":3,"k_outer":0,"order":[1,0,3,2],"pack_b":0,"parallel":1,"prefetch":0,)"
                R"("tile_k":[1,1024],"tile_x":[16,1,64],"tile_y":[171,1,6],"unroll_k":4,)"
                R"("unroll_y":"unroll"})"))
            .annotate("store") == "cached");
  // ... and packs into one buffer.
  CHECK(space
            ->from_json(nlohmann::json::parse(
                R"({"acc_at":3,"k_outer":0,"order":[1,0,3,2],"pack_b":0,"parallel":1,"prefetch":0,)"
                R"("tile_k":[1,1024],"tile_x":[16,1,64],"tile_y":[171,1,6],"unroll_k":4,)"
                R"("unroll_y":"unroll"})"))
            .choice("pack_buffers") == 1);
  CHECK(space
            ->from_json(nlohmann::json::parse(
                R"({"acc_at":3,"k_outer":0,"order":[1,0,3,2],"pack_b":0,"parallel":1,"tile_k":[1,1024],)"
                R"("tile_x":[16,1,64],"tile_y":[171,1,6],"unroll_k":4,"unroll_y":"unroll"})"))
            .choice("prefetch") == 0);
  // trans_a and gelu tune in the same space; trans_b adds dot products along k.
  auto ta = def.define_space(build_workload("matmul:M=1024,N=1024,K=1024,trans_a=1,gelu=1"), cpu);
  CHECK(ta->size() == space->size());
  auto tb = def.define_space(build_workload("matmul:M=1024,N=1024,K=1024,trans_b=1"), cpu);
  // With AVX-512, a packed B also moves by transposes or gathers.
  CHECK(tb->knobs().back().name == "pack_moves");
  CHECK(tb->knob("reduce_vector").size() == 3);  // off, 16 or 32 lanes
  CHECK(tb->size() == space->size() * 3 * 2);
}

TEST_CASE("random matmul configs with transposes and epilogues are correct", "[ops][gemm][property]") {
  std::mt19937_64 rng(41);
  for (int c = 0; c < 6; ++c) {
    const int relu = flag(rng), gelu = relu ? 0 : flag(rng);
    std::string w = "matmul:M=" + std::to_string(odd_extent(rng)) + ",N=" + std::to_string(odd_extent(rng) * 3) +
                    ",K=" + std::to_string(odd_extent(rng)) + ",trans_a=" + std::to_string(flag(rng)) +
                    ",trans_b=" + std::to_string(flag(rng)) + ",bias=" + std::to_string(flag(rng)) +
                    ",relu=" + std::to_string(relu) + ",gelu=" + std::to_string(gelu);
    check_template_configs(w, 2, 100 + static_cast<uint64_t>(c));
  }
  check_template_configs("matmul:M=7,N=20,K=9,trans_a=1,trans_b=1,dtype=i8", 2, 120);
  check_template_configs("matmul:M=5,N=11,K=3,trans_b=1,gelu=1,bias=1,dtype=f64", 2, 121);
}

TEST_CASE("random batch_matmul configs are correct", "[ops][gemm][property]") {
  std::mt19937_64 rng(42);
  for (int c = 0; c < 5; ++c) {
    std::string w = "batch_matmul:B=" + std::to_string(odd_extent(rng) % 5 + 1) +
                    ",M=" + std::to_string(odd_extent(rng)) + ",N=" + std::to_string(odd_extent(rng) * 2) +
                    ",K=" + std::to_string(odd_extent(rng)) + ",trans_a=" + std::to_string(flag(rng)) +
                    ",trans_b=" + std::to_string(flag(rng));
    check_template_configs(w, 2, 200 + static_cast<uint64_t>(c));
  }
  check_template_configs("batch_matmul:B=3,M=6,N=17,K=5,trans_b=1,dtype=i32", 2, 210);
}

TEST_CASE("random dense configs are correct", "[ops][gemm][property]") {
  std::mt19937_64 rng(43);
  for (int c = 0; c < 5; ++c) {
    const int relu = flag(rng), gelu = relu ? 0 : flag(rng);
    std::string w = "dense:N=" + std::to_string(odd_extent(rng)) + ",IN=" + std::to_string(odd_extent(rng)) +
                    ",OUT=" + std::to_string(odd_extent(rng) * 3) + ",bias=" + std::to_string(flag(rng)) +
                    ",relu=" + std::to_string(relu) + ",gelu=" + std::to_string(gelu);
    check_template_configs(w, 2, 300 + static_cast<uint64_t>(c));
  }
  check_template_configs("dense:N=4,IN=9,OUT=13,bias=1,relu=1,dtype=u8", 2, 310);
}

TEST_CASE("dot products along k are correct for every lane count", "[ops][gemm][property]") {
  CpuInfo cpu = avx512_cpu();
  for (const char* w : {"dense:N=1,IN=37,OUT=5,bias=1", "matmul:M=3,N=7,K=40,trans_b=1,trans_a=1,gelu=1",
                        "batch_matmul:B=2,M=3,N=5,K=19,trans_b=1,dtype=i8"}) {
    OpInstance op = build_workload(w);
    const OpDef& def = find_op(op.op);
    auto space = def.define_space(op, cpu);
    nlohmann::json j = def.default_config(op, cpu, *space).to_json();
    j["unroll_k"] = 2;
    for (auto& lanes : space->knob("reduce_vector").options) {
      j["reduce_vector"] = lanes[0];
      ScheduledOp so = def.apply_config(op, space->from_json(j));
      std::string ir;
      INFO(w << " reduce_vector " << lanes[0]);
      CHECK(check_schedule(*so.schedule, op.inputs, so.args, op.outputs, 17, &ir) == "");
      if (lanes[0] > 0) CHECK_THAT(ir, Contains(".rf[ramp("));
    }
  }
  // A single row defaults to dot products of two vectors per step.
  OpInstance gemv = build_workload("dense:N=1,IN=2048,OUT=1000,bias=1");
  auto space = find_op("dense").define_space(gemv, cpu);
  CHECK(find_op("dense").default_config(gemv, cpu, *space).to_json()["reduce_vector"] == 32);
}

TEST_CASE("GEMM default schedules and other configs agree with the reference", "[ops][gemm]") {
  CpuInfo cpu = avx512_cpu();
  uint64_t seed = 30;
  for (const char* w : {"matmul:M=13,N=40,K=9,trans_a=1,trans_b=1,gelu=1", "batch_matmul:B=2,M=5,N=33,K=7,trans_b=1",
                        "dense:N=3,IN=16,OUT=40,bias=1,gelu=1"}) {
    OpInstance op = build_workload(w);
    INFO(w);
    CHECK(find_op(op.op).define_space(op, cpu)->size() > 1000);
    CHECK(kiln::testing::check_default_and_random_config(w, seed++) == 2);
  }
  // Dense is a matmul with B transposed: same FLOPs, the packed weight panels.
  OpInstance dense = build_workload("dense:N=128,IN=768,OUT=3072,bias=1,gelu=1");
  CHECK(dense.canonical == "dense:N=128,IN=768,OUT=3072,bias=1,relu=0,gelu=1,dtype=f32");
  CHECK(dense.flops == 2.0 * 128 * 768 * 3072);
  CHECK(dense.inputs.at(1).name() == "weight");
  CHECK(build_workload("batch_matmul:B=12,M=128,N=128,K=64").flops == 2.0 * 12 * 128 * 128 * 64);
}

TEST_CASE("random configs of large GEMMs instantiate to annotated loops", "[ops][gemm]") {
  CpuInfo cpu = avx512_cpu();
  for (const char* w : {"batch_matmul:B=12,M=128,N=128,K=64,trans_b=1", "dense:N=128,IN=768,OUT=3072,bias=1,gelu=1",
                        "matmul:M=512,N=512,K=512,trans_a=1"}) {
    OpInstance op = build_workload(w);
    const OpDef& def = find_op(op.op);
    auto space = def.define_space(op, cpu);
    std::mt19937_64 rng(12);
    for (int c = 0; c < 15; ++c) {
      Config cfg = space->random(rng);
      INFO(w << " config " << cfg.str());
      ScheduledOp so = def.apply_config(op, cfg);
      CHECK(lower(*so.schedule, so.args, "k", LowerDepth::kAnnotatedLoops).body.defined());
    }
  }
}

TEST_CASE("bad GEMM workloads are user errors", "[ops][gemm][user_error]") {
  CHECK_THROWS_AS(build_workload("matmul:M=4,N=4,K=4,relu=1,gelu=1"), UserError);
  CHECK_THROWS_WITH(build_workload("matmul:M=4,N=4,K=4,relu=1,gelu=1"), Contains("relu and gelu are exclusive"));
  CHECK_THROWS_WITH(build_workload("dense:N=4,IN=4,OUT=4,gelu=1,dtype=i8"), Contains("gelu needs a float dtype"));
  CHECK_THROWS_WITH(build_workload("matmul:M=4,N=4,K=4,trans_b=2"), Contains("trans_b is a flag"));
  CHECK_THROWS_WITH(build_workload("batch_matmul:B=0,M=4,N=4,K=4"), Contains("B=0 must be at least 1"));
  CHECK_THROWS_WITH(build_workload("dense:N=4,IN=4"), Contains("missing parameter OUT"));
  CpuInfo cpu = avx512_cpu();
  OpInstance mm = build_workload("matmul:M=8,N=8,K=8");
  OpInstance bmm = build_workload("batch_matmul:B=2,M=8,N=8,K=8");
  auto space = find_op("matmul").define_space(mm, cpu);
  CHECK_THROWS_WITH(find_op("batch_matmul").apply_config(mm, space->get(0)),
                    Contains("batch_matmul template cannot schedule op 'matmul'"));
  CHECK_THROWS_WITH(find_op("dense").apply_config(bmm, space->get(0)),
                    Contains("dense template cannot schedule op 'batch_matmul'"));
}

TEST_CASE("the gelu and relu epilogues compute their formulas", "[ops][gemm]") {
  // x[1, 4] . W[1, 4]^T with W = 1 and x = (v, 0, 0, 0): out = f(v + bias).
  for (const char* w : {"dense:N=1,IN=4,OUT=1,bias=1,gelu=1", "dense:N=1,IN=4,OUT=1,bias=1,relu=1"}) {
    OpInstance op = build_workload(w);
    const bool gelu = op.ints.at("gelu") != 0;
    for (double v : {-2.0, -0.5, 0.0, 0.7, 3.0}) {
      HostTensor x(DType::f32(), {1, 4}), wt(DType::f32(), {1, 4}), b(DType::f32(), {1});
      for (int64_t i = 0; i < 4; ++i) {
        x.set_float(i, i == 0 ? v : 0.0);
        wt.set_float(i, 1.0);
      }
      b.set_float(0, 0.25);
      std::vector<HostTensor> out = interpret(op.outputs, {{op.inputs[0], x}, {op.inputs[1], wt}, {op.inputs[2], b}});
      const double y = v + 0.25;
      const double want = gelu ? 0.5 * y * (1.0 + std::erf(y / std::sqrt(2.0))) : std::max(y, 0.0);
      INFO(w << " at " << y);
      CHECK(out[0].get_float(0) == Approx(want).epsilon(1e-5).margin(1e-6));
    }
  }
}
