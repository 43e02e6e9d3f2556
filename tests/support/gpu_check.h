// Checking GPU schedules without a GPU: a config of an op's cuda template
// is lowered, printed as CUDA C, compiled by the host C++ compiler against
// the emulation header and run on the CPU on random inputs, then compared
// with the reference interpreter (tasks/reference_check.h). Optionally the
// same source is compiled by NVRTC for real architectures and its resource
// use checked against their limits.
#pragma once

#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "base/error.h"
#include "codegen/cuda_codegen.h"
#include "codegen/cuda_emulation.h"
#include "codegen/nvrtc.h"
#include "codegen/runtime_dtype.h"
#include "kernels/op_registry.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"
#include "schedule/lower.h"
#include "tasks/kernel_build.h"
#include "tasks/reference_check.h"

namespace kiln::testing {

// The CUDA source of a config of the workload's cuda template.
inline CudaSource gpu_source(const OpInstance& op, const Config& cfg, const GpuLimits& gpu) {
  ScheduledOp so = find_op(op.op).gpu.apply_config(op, cfg);
  LoweredFunc f = lower_gpu(*so.schedule, so.args, "kiln_" + op.op, gpu);
  return emit_cuda(f, gpu);
}

// Runs `src` under emulation on random inputs and checks the outputs;
// "" when they match, else what went wrong.
inline std::string run_emulated_and_check(const OpInstance& op, const CudaSource& src, const std::string& dir,
                                          uint64_t seed) {
  EmulatedModule em = build_emulated_module(src, dir);
  auto mod = rt::Module::load(em.path);
  kiln_packed_fn fn = mod->get_function(src.function);
  if (!fn) return "the emulated module has no entry point " + src.function;
  std::vector<rt::NDArray> arrays;
  std::vector<void*> ptrs;
  const std::vector<Tensor> args = op.args();  // inputs, then outputs
  for (size_t i = 0; i < args.size(); ++i) {
    std::vector<int64_t> shape;
    for (auto& e : args[i].shape()) shape.push_back(*as_const_int(e));
    rt::NDArray a = rt::NDArray::empty(shape, to_runtime_dtype(args[i].dtype()));
    if (i < op.inputs.size())
      a.fill_random(seed + i);
    else
      a.fill_zero();
    arrays.push_back(a);
    ptrs.push_back(a.data());
  }
  if (fn(ptrs.data()) != 0) return "emulated launch failed: " + emulated_error(*mod);
  const auto split = arrays.begin() + static_cast<long>(op.inputs.size());
  std::vector<rt::NDArray> ins(arrays.begin(), split), outs(split, arrays.end());
  CheckResult cr = check_outputs(op, ins, outs, seed);
  return cr.ok ? "" : "wrong result: " + cr.detail;
}

// How much ptxas may spill (bytes of spill stores, and of spill loads, per
// kernel) in the configs the tests compile with NVRTC.
//
// A template's default config (what kiln runs untuned and tuning starts
// from) spills at most a few bytes: ptxas keeps a couple of values of
// conv2d's unrolled window loops in local memory (12 to 16 bytes on
// resnet50's layers); the other templates' defaults do not spill.
constexpr int64_t kDefaultConfigSpillBytes = 32;
// A random config may legitimately spill much more: its register tile can
// need more registers than __launch_bounds__ leaves each thread of its block
// (65536 / threads: 64 at 1024 threads), and ptxas spills around conv2d's
// fully unrolled windows on large tiles (up to 1008 bytes of stores and 1296
// of loads seen on resnet50's layers for sm_80). Such a config is correct
// and slow, and the tuner measures it so; the bound catches a change that
// makes spilling explode.
constexpr int64_t kRandomConfigSpillBytes = 4096;
// A thread's local memory (its stack frame, spills included) on sm_70 and
// newer.
constexpr int64_t kLocalMemoryPerThread = 512 * 1024;

// NVRTC-compiles `src` for `gpu`'s architecture; "" when it compiles within
// the limits: every kernel's registers, static shared memory and stack
// frame, and at most `max_spill_bytes` of spill stores and of spill loads
// (ptxas's report).
inline std::string compile_for_gpu(const CudaSource& src, const GpuLimits& gpu, int64_t max_spill_bytes) {
  NvrtcOutput out;
  try {
    out = nvrtc_compile(src.code, src.function + ".cu", gpu.arch);
  } catch (const UserError& e) {
    return e.what();
  }
  if (out.cubin.empty()) return "no cubin";
  if (out.resources.size() != src.launches.size())
    return "ptxas reported " + std::to_string(out.resources.size()) + " kernels, the source has " +
           std::to_string(src.launches.size());
  for (auto& r : out.resources) {
    if (r.registers > gpu.max_registers_per_thread) return r.kernel + ": too many registers";
    if (r.shared_bytes > gpu.max_shared_static_per_block) return r.kernel + ": too much shared memory";
    if (r.stack_bytes > kLocalMemoryPerThread) return r.kernel + ": a stack frame over the local memory limit";
    if (r.spill_store_bytes > max_spill_bytes || r.spill_load_bytes > max_spill_bytes)
      return r.kernel + ": " + std::to_string(r.spill_store_bytes) + " bytes of spill stores and " +
             std::to_string(r.spill_load_bytes) + " of spill loads, over the bound of " +
             std::to_string(max_spill_bytes) + " (" + std::to_string(r.registers) + " registers)";
  }
  return "";
}

inline bool have_host_compiler() { return !host_cxx_compiler().empty(); }

// A config whose block the architecture cannot launch (too many threads,
// too much shared memory) is a user error the tuner records, not a bug.
inline bool is_launch_limit(const std::string& what) {
  return what.find("allows at most") != std::string::npos || what.find("limits to") != std::string::npos;
}

struct Tally {
  int ran = 0;       // emulated and checked (or compiled)
  int rejected = 0;  // over the launch limits
  void add(const Tally& o) {
    ran += o.ran;
    rejected += o.rejected;
  }
};

// Emulates one config of the op's cuda template for sm_90 and checks it
// against the interpreter (a CHECK per config).
inline void check_config(const OpInstance& op, const Config& cfg, const std::string& dir, uint64_t seed, Tally* tally) {
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  std::string err;
  try {
    err = run_emulated_and_check(op, gpu_source(op, cfg, gpu), dir, seed);
    ++tally->ran;
  } catch (const UserError& e) {
    err = e.what();
    if (is_launch_limit(err)) {
      err = "";
      ++tally->rejected;
    }
  } catch (const std::exception& e) {
    err = std::string("exception: ") + e.what();
  }
  INFO(op.canonical << " config " << cfg.str());
  CHECK(err == "");
}

// The default config, `configs` (JSON, may be empty) and `random` random
// configs of a workload, emulated and checked.
inline Tally check_emulated(const std::string& workload, const std::vector<std::string>& configs, int random,
                            uint64_t seed, const std::string& dir) {
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  OpInstance op = build_workload(workload);
  const GpuTemplate& t = find_op(op.op).gpu;
  REQUIRE(t.defined());
  auto space = t.define_space(op, gpu);
  std::mt19937_64 rng(seed);
  Tally tally;
  check_config(op, t.default_config(op, gpu, *space), dir, seed, &tally);
  for (const std::string& c : configs) check_config(op, space->from_json_string(c), dir, seed, &tally);
  for (int c = 0; c < random; ++c)
    check_config(op, space->random(rng), dir, seed + 1 + static_cast<uint64_t>(c), &tally);
  return tally;
}

// NVRTC-compiles the default and `random` random configs of each workload
// for sm_80 and sm_90 (a CHECK per config); `ran` counts those that compiled.
inline Tally check_nvrtc(const std::vector<std::string>& workloads, int random, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Tally tally;
  for (const char* arch : {"sm_80", "sm_90"}) {
    const GpuLimits gpu = gpu_limits_for_arch(arch);
    for (const std::string& w : workloads) {
      OpInstance op = build_workload(w);
      const GpuTemplate& t = find_op(op.op).gpu;
      auto space = t.define_space(op, gpu);
      for (int c = 0; c <= random; ++c) {
        Config cfg = c == 0 ? t.default_config(op, gpu, *space) : space->random(rng);
        std::string err;
        try {
          err = compile_for_gpu(gpu_source(op, cfg, gpu), gpu,
                                c == 0 ? kDefaultConfigSpillBytes : kRandomConfigSpillBytes);
          ++tally.ran;
        } catch (const UserError& e) {
          err = e.what();
          if (is_launch_limit(err)) {
            err = "";
            ++tally.rejected;
          }
        }
        INFO(arch << " " << w << " config " << cfg.str());
        CHECK(err == "");
      }
    }
  }
  return tally;
}

}  // namespace kiln::testing
