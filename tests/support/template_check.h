// Checking an op's schedule template: its default config, then random
// configs of its space, each applied, lowered, compiled and compared with the
// reference interpreter on random inputs (kernel_check.h). Shared by the
// template and operator tests.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <exception>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "compute/printer.h"
#include "kernel_check.h"
#include "kernels/op_registry.h"
#include "schedule/lower.h"
#include "test_seed.h"

namespace kiln::testing {

// The CPU the templates are checked for (AVX-512, 2 threads).
inline CpuInfo avx512_cpu() {
  CpuInfo cpu;
  cpu.vector_bits = 512;
  cpu.num_threads = 2;
  return cpu;
}

// The workload's default config for `cpu` with the knobs of `pinned` (a
// JSON object) set, lowered and printed.
inline std::string lowered_default_config(const std::string& workload, const CpuInfo& cpu,
                                          const nlohmann::json& pinned) {
  OpInstance op = build_workload(workload);
  const OpDef& def = find_op(op.op);
  auto space = def.define_space(op, cpu);
  nlohmann::json j = def.default_config(op, cpu, *space).to_json();
  for (auto it = pinned.begin(); it != pinned.end(); ++it) j[it.key()] = it.value();
  ScheduledOp so = def.apply_config(op, space->from_json(j));
  return to_string(lower(*so.schedule, so.args, "f"));
}

// Checks `count` configs of the workload's template: the default config
// first, then random ones from the fixed regression `seed`, then
// max(1, count / 2) more from this run's fresh seed (test_seed.h;
// KILN_SEED=<n> reproduces a run). The knobs of `pinned` (a JSON object of
// knob values) take its values in every config. `tolerance` >= 0 replaces
// the dtype's (kernel_check.h). Returns the number checked.
inline int check_pinned_configs(const std::string& workload, const nlohmann::json& pinned, int count, uint64_t seed,
                                const CpuInfo& cpu = avx512_cpu(), double tolerance = -1) {
  OpInstance op = build_workload(workload);
  const OpDef& def = find_op(op.op);
  auto space = def.define_space(op, cpu);
  const uint64_t run = run_seed();
  const int fresh = std::max(1, count / 2);
  std::mt19937_64 rng(seed), fresh_rng(run * 1000003 + seed);
  INFO(seed_note(run));
  for (int c = 0; c < count + fresh; ++c) {
    Config cfg = c == 0 ? def.default_config(op, cpu, *space) : c < count ? space->random(rng) : space->random(fresh_rng);
    if (!pinned.empty()) {
      nlohmann::json j = cfg.to_json();
      for (auto it = pinned.begin(); it != pinned.end(); ++it) j[it.key()] = it.value();
      cfg = space->from_json(j);
    }
    std::string err, ir;
    try {
      ScheduledOp so = def.apply_config(op, cfg);
      err = check_schedule(*so.schedule, op.inputs, so.args, op.outputs, seed + static_cast<uint64_t>(c), &ir,
                           tolerance);
    } catch (const std::exception& e) {
      err = std::string("exception: ") + e.what();
    }
    INFO(workload << " config " << cfg.str() << "\n" << ir);
    CHECK(err == "");
  }
  return count + fresh;
}

inline int check_template_configs(const std::string& workload, int count, uint64_t seed,
                                  const CpuInfo& cpu = avx512_cpu(), double tolerance = -1) {
  return check_pinned_configs(workload, nlohmann::json::object(), count, seed, cpu, tolerance);
}

// The default schedule (the template's default config) and a random config
// of the space that differs from it are both run and checked against the
// reference interpreter (comparing the two lowered IRs with each other would
// prove nothing). Workloads too big for the
// interpreter (over `max_flops`) only check that the default round-trips
// through JSON. Returns the number of schedules run.
inline int check_default_and_random_config(const std::string& workload, uint64_t seed,
                                                 const CpuInfo& cpu = avx512_cpu(), double max_flops = 4e6) {
  OpInstance op = build_workload(workload);
  const OpDef& def = find_op(op.op);
  auto space = def.define_space(op, cpu);
  Config d = def.default_config(op, cpu, *space);
  INFO(workload << " default " << d.str());
  CHECK(space->from_json(d.to_json()) == d);
  if (op.flops > max_flops) return 0;
  std::mt19937_64 rng(seed);
  Config other = space->random(rng);
  for (int i = 0; i < 50 && space->size() > 1 && other == d; ++i) other = space->random(rng);
  int run = 0;
  for (int which = 0; which < 2; ++which) {
    std::string err, ir;
    try {
      ScheduledOp so = which == 0 ? def.default_schedule(op, cpu) : def.apply_config(op, other);
      err = check_schedule(*so.schedule, op.inputs, so.args, op.outputs, seed + static_cast<uint64_t>(which), &ir);
    } catch (const std::exception& e) {
      err = std::string("exception: ") + e.what();
    }
    INFO((which == 0 ? std::string("default schedule") : "random config " + other.str()) << "\n" << ir);
    CHECK(err == "");
    ++run;
  }
  return run;
}

}  // namespace kiln::testing
