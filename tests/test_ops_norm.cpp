// The row-wise ops over the last axis (softmax, layer_norm): random configs
// of random small shapes (1, primes, odd) compile and agree with the
// reference interpreter, every knob value is exercised, the default schedules
// agree too, and bad workloads are user errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "base/error.h"
#include "compute/interpreter.h"
#include "compute/printer.h"
#include "kernels/op_registry.h"
#include "support/kernel_check.h"
#include "support/template_check.h"
#include "support/test_seed.h"

using namespace kiln;
using Catch::Contains;
using kiln::testing::avx512_cpu;
using kiln::testing::check_schedule;

namespace {

std::string check_config(const OpInstance& op, const Config& cfg, uint64_t seed) {
  std::string err, ir;
  try {
    ScheduledOp so = find_op(op.op).apply_config(op, cfg);
    err = check_schedule(*so.schedule, op.inputs, so.args, op.outputs, seed, &ir);
  } catch (const std::exception& e) {
    err = std::string("exception: ") + e.what();
  }
  return err.empty() ? "" : err + "\n" + ir;
}

// The default config and `random` random configs of the workload.
void check_workload(const std::string& workload, int random, uint64_t seed) {
  OpInstance op = build_workload(workload);
  const OpDef& def = find_op(op.op);
  CpuInfo cpu = avx512_cpu();
  auto space = def.define_space(op, cpu);
  std::mt19937_64 rng(seed);
  for (int c = 0; c <= random; ++c) {
    Config cfg = c == 0 ? def.default_config(op, cpu, *space) : space->random(rng);
    INFO(workload << " config " << cfg.str());
    CHECK(check_config(op, cfg, seed + static_cast<uint64_t>(c)) == "");
  }
}

// Each value of each knob once (the rest at the default).
void check_every_knob_value(const std::string& workload) {
  OpInstance op = build_workload(workload);
  const OpDef& def = find_op(op.op);
  CpuInfo cpu = avx512_cpu();
  auto space = def.define_space(op, cpu);
  const Config base = def.default_config(op, cpu, *space);
  for (size_t k = 0; k < space->knobs().size(); ++k)
    for (size_t v = 0; v < space->knobs()[k].size(); ++v) {
      std::vector<int> choices = base.choices();
      if (choices[k] == static_cast<int>(v)) continue;
      choices[k] = static_cast<int>(v);
      Config cfg(space.get(), choices);
      INFO(workload << " config " << cfg.str());
      CHECK(check_config(op, cfg, 7 + k * 10 + v) == "");
    }
}

std::string random_row_workload(const char* op, std::mt19937_64& rng) {
  static const int64_t kExtents[] = {1, 2, 3, 5, 7, 13, 17, 31, 37, 64};
  auto pick = [&] { return kExtents[std::uniform_int_distribution<int>(0, 9)(rng)]; };
  std::string w = std::string(op) + ":M=" + std::to_string(pick()) + ",N=" + std::to_string(pick());
  if (rng() % 4 == 0) w += ",dtype=f64";
  return w;
}


}  // namespace

TEST_CASE("random softmax configs are correct", "[ops][norm][property]") {
  std::mt19937_64 rng(51);
  for (int c = 0; c < 6; ++c) check_workload(random_row_workload("softmax", rng), 1, 500 + static_cast<uint64_t>(c));
  // And 3 shapes and configs from this run's fresh seed (KILN_SEED reproduces).
  const uint64_t run = kiln::testing::run_seed();
  INFO(kiln::testing::seed_note(run));
  std::mt19937_64 fresh(run + 51);
  for (int c = 0; c < 3; ++c) check_workload(random_row_workload("softmax", fresh), 1, run + static_cast<uint64_t>(c));
  check_every_knob_value("softmax:M=5,N=37");
}

TEST_CASE("random layer_norm configs are correct", "[ops][norm][property]") {
  std::mt19937_64 rng(52);
  for (int c = 0; c < 6; ++c) check_workload(random_row_workload("layer_norm", rng), 1, 600 + static_cast<uint64_t>(c));
  // And 3 shapes and configs from this run's fresh seed (KILN_SEED reproduces).
  const uint64_t run = kiln::testing::run_seed();
  INFO(kiln::testing::seed_note(run));
  std::mt19937_64 fresh(run + 52);
  for (int c = 0; c < 3; ++c) check_workload(random_row_workload("layer_norm", fresh), 1, run + static_cast<uint64_t>(c));
  check_every_knob_value("layer_norm:M=3,N=35");
}

TEST_CASE("row op default schedules and other configs agree with the reference", "[ops][norm]") {
  CpuInfo cpu = avx512_cpu();
  uint64_t seed = 40;
  for (const char* w : {"softmax:M=1536,N=128", "layer_norm:M=128,N=768", "softmax:M=3,N=5,dtype=f64"}) {
    OpInstance op = build_workload(w);
    INFO(w);
    CHECK(find_op(op.op).define_space(op, cpu)->size() > 1);
    CHECK(kiln::testing::check_default_and_random_config(w, seed++) == 2);
  }
  // The default vectorizes whole registers and splits the reductions into vector partials.
  OpInstance sm = build_workload("softmax:M=1536,N=128");
  auto space = find_op("softmax").define_space(sm, cpu);
  auto j = find_op("softmax").default_config(sm, cpu, *space).to_json();
  CHECK(j["vector"] == 16);
  CHECK(j["reduce_lanes"] == 16);
  CHECK(j["exp"] == "store");
  CHECK(sm.flops == 5.0 * 1536 * 128);
  CHECK(build_workload("layer_norm:M=128,N=768").flops == 8.0 * 128 * 768);
  CHECK(build_workload("layer_norm:M=128,N=768").canonical == "layer_norm:M=128,N=768,dtype=f32");
}

TEST_CASE("bad row op workloads are user errors", "[ops][norm][user_error]") {
  CHECK_THROWS_WITH(build_workload("softmax:M=4,N=4,dtype=i32"), Contains("softmax needs a float dtype"));
  CHECK_THROWS_WITH(build_workload("layer_norm:M=4,N=4,dtype=u8"), Contains("layer_norm needs a float dtype"));
  CHECK_THROWS_WITH(build_workload("layer_norm:M=4,N=4,eps=1"), Contains("layer_norm has no parameter 'eps'"));
  CHECK_THROWS_WITH(build_workload("softmax:M=4"), Contains("missing parameter N"));
  OpInstance sm = build_workload("softmax:M=4,N=4");
  OpInstance ln = build_workload("layer_norm:M=4,N=4");
  CpuInfo cpu = avx512_cpu();
  auto lspace = find_op("layer_norm").define_space(ln, cpu);
  CHECK_THROWS_WITH(find_op("softmax").apply_config(ln, lspace->get(0)),
                    Contains("softmax template cannot schedule op 'layer_norm'"));
  CHECK_THROWS_WITH(find_op("softmax").apply_config(sm, lspace->get(0)), Contains("no knob named"));
}

TEST_CASE("softmax and layer_norm compute their formulas", "[ops][norm]") {
  const double row[] = {1.0, -2.0, 0.5, 3.0, 0.0};
  HostTensor x(DType::f64(), {1, 5}), gamma(DType::f64(), {5}), beta(DType::f64(), {5});
  for (int64_t i = 0; i < 5; ++i) {
    x.set_float(i, row[i]);
    gamma.set_float(i, 1.0 + 0.5 * static_cast<double>(i));
    beta.set_float(i, -0.25 * static_cast<double>(i));
  }
  double mx = 3.0, z = 0, mean = 0, var = 0;
  for (double v : row) {
    z += std::exp(v - mx);
    mean += v / 5;
  }
  for (double v : row) var += (v - mean) * (v - mean) / 5;

  OpInstance sm = build_workload("softmax:M=1,N=5,dtype=f64");
  HostTensor y = interpret(sm.outputs, {{sm.inputs[0], x}})[0];
  OpInstance ln = build_workload("layer_norm:M=1,N=5,dtype=f64");
  HostTensor l = interpret(ln.outputs, {{ln.inputs[0], x}, {ln.inputs[1], gamma}, {ln.inputs[2], beta}})[0];
  for (int64_t i = 0; i < 5; ++i) {
    INFO("element " << i);
    CHECK(y.get_float(i) == Approx(std::exp(row[i] - mx) / z).epsilon(1e-12));
    const double want = (row[i] - mean) / std::sqrt(var + 1e-5) * gamma.get_float(i) + beta.get_float(i);
    CHECK(l.get_float(i) == Approx(want).epsilon(1e-12));
  }
}
