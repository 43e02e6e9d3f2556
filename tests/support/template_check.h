// Checking an op's schedule template: its default config, then random
// configs of its space, each applied, lowered, compiled and compared with the
// reference interpreter on random inputs (kernel_check.h). Shared by the
// template and operator tests.
#pragma once

#include <catch2/catch.hpp>
#include <exception>
#include <random>
#include <string>

#include "kernel_check.h"
#include "kernels/op_registry.h"

namespace kiln::testing {

// The CPU the templates are checked for (AVX-512, 2 threads).
inline CpuInfo avx512_cpu() {
  CpuInfo cpu;
  cpu.vector_bits = 512;
  cpu.num_threads = 2;
  return cpu;
}

// Checks `count` configs of the workload's template: the default config
// first, then random ones. Returns the number checked.
inline int check_template_configs(const std::string& workload, int count, uint64_t seed,
                                  const CpuInfo& cpu = avx512_cpu()) {
  OpInstance op = build_workload(workload);
  const OpDef& def = find_op(op.op);
  auto space = def.define_space(op, cpu);
  std::mt19937_64 rng(seed);
  for (int c = 0; c < count; ++c) {
    Config cfg = c == 0 ? def.default_config(op, cpu, *space) : space->random(rng);
    std::string err, ir;
    try {
      ScheduledOp so = def.apply_config(op, cfg);
      err = check_schedule(*so.schedule, op.inputs, so.args, op.outputs, seed + static_cast<uint64_t>(c), &ir);
    } catch (const std::exception& e) {
      err = std::string("exception: ") + e.what();
    }
    INFO(workload << " config " << cfg.str() << "\n" << ir);
    CHECK(err == "");
  }
  return count;
}

}  // namespace kiln::testing
