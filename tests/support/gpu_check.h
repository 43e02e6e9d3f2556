// Checking GPU schedules without a GPU: a config of an op's cuda template
// is lowered, printed as CUDA C, compiled by the host C++ compiler against
// the emulation header and run on the CPU on random inputs, then compared
// with the reference interpreter (tasks/reference_check.h). Every config so
// emulated is also compiled by NVRTC for sm_80 and sm_90 and its resource
// use checked against their limits (below: "NVRTC for the emulated
// configs"); check_nvrtc compiles configs of larger, realistic shapes.
#pragma once

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "codegen/cuda_codegen.h"
#include "codegen/cuda_emulation.h"
#include "codegen/nvrtc.h"
#include "codegen/runtime_dtype.h"
#include "compute/expr_ops.h"
#include "compute/tensor.h"
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
// resnet50's layers; 36 of stores and 28 of loads, at 80 registers, on
// the random small layer conv2d_nhwc N=2 H=16 W=2 C=13 K=1 5x2 taps with
// hswish, seen 2026-11-27 on sm_80 and sm_90); the other templates'
// defaults do not spill. The bound catches spilling that explodes.
constexpr int64_t kDefaultConfigSpillBytes = 64;
// A random config may legitimately spill much more: its register tile can
// need more registers than __launch_bounds__ leaves each thread of its block
// (65536 / threads: 64 at 1024 threads), and ptxas spills around conv2d's
// fully unrolled windows on large tiles (up to 1008 bytes of stores and 1296
// of loads seen on resnet50's layers for sm_80). Such a config is correct
// and slow, and the tuner measures it so; the bound catches a change that
// makes spilling explode. (Seen on 2026-11-26: 5884 bytes of stores and 5488
// of loads for a direct conv2d_nhwc config of 3x3 taps unrolled inside, 16
// output channels x 2 columns a thread, on resnet50's 28x28 layer, sm_80.)
constexpr int64_t kRandomConfigSpillBytes = 8192;
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

// Y = 2 * X^T (X of rows x cols f32) on the GPU through a shared copy of
// 16 rows of X per block, which 64 threads fill `vec` elements at a time
// (vectorized when vec > 1) and `layout` lays out; lowered for `gpu`.
inline LoweredFunc transpose_through_shared(int64_t rows, int64_t cols, int64_t vec,
                                            const std::function<void(Stage&)>& layout, const std::string& name,
                                            const GpuLimits& gpu) {
  Tensor X = placeholder({Expr(rows), Expr(cols)}, DType::f32(), "X");
  Tensor Y = compute(
      {Expr(cols), Expr(rows)}, [&](Var i, Var j) { return X(j, i) * make_const(DType::f32(), 2.0); }, "Y");
  Schedule s({Y});
  Tensor Xs = s.cache_read(X, MemScope::kShared, {s.current_op(Y)});
  Stage sy = s[Y];
  IterVar b, rest, rounds, tx;
  sy.split(sy.axis()[1], 16, &b, &rest);
  sy.reorder({b, sy.axis()[0], rest});
  sy.bind(b, "blockIdx.x");
  sy.split(sy.fuse(sy.axis()[0], rest), 64, &rounds, &tx);
  sy.bind(tx, "threadIdx.x");
  Stage sx = s[Xs];
  sx.compute_at(sy, b);
  IterVar xr, xt, xo, xv;
  IterVar fill = sx.fuse(sx.axis()[0], sx.axis()[1]);
  if (vec > 1) {
    sx.split(fill, vec, &xo, &xv);
    sx.vectorize(xv);
    fill = xo;
  }
  sx.split(fill, 64, &xr, &xt);
  sx.bind(xt, "threadIdx.x");
  layout(sx);
  return lower_gpu(s, {X, Y}, name, gpu);
}

// Runs the emulated kernel `src` that computes Y = 2 * X^T (arguments X,
// Y; X of rows x cols f32) on random X; the elements of Y that differ.
inline int emulated_transpose_mismatches(const CudaSource& src, const std::string& dir, int64_t rows, int64_t cols,
                                         uint64_t seed) {
  EmulatedModule em = build_emulated_module(src, dir);
  auto mod = rt::Module::load(em.path);
  kiln_packed_fn fn = mod->get_function(src.function);
  REQUIRE(fn);
  rt::NDArray x = rt::NDArray::empty({rows, cols}, to_runtime_dtype(DType::f32()));
  rt::NDArray y = rt::NDArray::empty({cols, rows}, to_runtime_dtype(DType::f32()));
  x.fill_random(seed);
  y.fill_zero();
  std::vector<void*> ptrs = {x.data(), y.data()};
  REQUIRE(fn(ptrs.data()) == 0);
  const float* xv = static_cast<const float*>(x.data());
  const float* yv = static_cast<const float*>(y.data());
  int wrong = 0;
  for (int64_t i = 0; i < cols; ++i)
    for (int64_t j = 0; j < rows; ++j) wrong += yv[i * rows + j] != 2.0f * xv[j * cols + i];
  return wrong;
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

// ---- NVRTC for the emulated configs
//
// The configs the emulation checks (each template's default, given and
// random configs on the test files' fixed and random small shapes: 1,
// primes, odd sizes) are also compiled by NVRTC for sm_80 and sm_90, and
// their resources checked against those architectures' limits
// (compile_for_gpu), where NVRTC is available: a config that emulates
// correctly then also compiles for a real GPU. Every emulated config is
// compiled: an NVRTC compile of these small kernels takes 50 to 500 ms
// (conv2d's the longest), and the 164 configs the five test files emulate
// add 12 s to `ctest -j2` of those files on 2 idle cores (24 s of summed
// test time; 25 s and 53 s on a loaded machine).
// KILN_NVRTC_EVERY=n compiles only every n-th emulated config of a test
// process (its first always; 0: none) on a slower machine. Without NVRTC
// only the emulation runs, and the files' own NVRTC cases show as skipped.
// Each process prints its counts on exit ("kiln-test-note: ...").
constexpr int kNvrtcEvery = 1;

struct EmulatedNvrtcCounts {
  int emulated = 0;          // configs emulated and checked
  int sampled = 0;           // of those, chosen for NVRTC
  int compiled[2] = {0, 0};  // compiled within the limits: sm_80, sm_90
  int rejected[2] = {0, 0};  // over that architecture's launch limits (not compiled)
};

// This process's counts, printed when it exits.
inline EmulatedNvrtcCounts& emulated_nvrtc_counts() {
  static struct Report {
    EmulatedNvrtcCounts counts;
    ~Report() {
      if (counts.emulated == 0) return;
      std::printf(
          "kiln-test-note: %d configs emulated; NVRTC compiled %d of them for sm_80 (%d more over its launch "
          "limits) and %d for sm_90 (%d more over)\n",
          counts.emulated, counts.compiled[0], counts.rejected[0], counts.compiled[1], counts.rejected[1]);
    }
  } report;
  return report.counts;
}

inline int nvrtc_every() {
  static const int every = [] {
    const char* env = std::getenv("KILN_NVRTC_EVERY");
    return env && *env ? std::atoi(env) : kNvrtcEvery;
  }();
  return every;
}

// Whether the next emulated config is also compiled by NVRTC.
inline bool nvrtc_for_next_emulated() {
  EmulatedNvrtcCounts& counts = emulated_nvrtc_counts();
  const bool chosen = nvrtc_every() > 0 && (counts.emulated - 1) % nvrtc_every() == 0 && nvrtc_available();
  if (chosen) ++counts.sampled;
  return chosen;
}

// CHECKs that NVRTC compiled for sm_80 and sm_90 (or found over their
// launch limits) every config emulated since `before` was taken, when NVRTC
// is available and every config is compiled.
inline void check_nvrtc_covered(const EmulatedNvrtcCounts& before) {
  if (!nvrtc_available() || nvrtc_every() != 1) return;
  const EmulatedNvrtcCounts& now = emulated_nvrtc_counts();
  const int emulated = now.emulated - before.emulated;
  CHECK(emulated > 0);
  for (int a = 0; a < 2; ++a) {
    INFO((a == 0 ? "sm_80" : "sm_90") << ": configs emulated and NVRTC-compiled (or over the limits)");
    CHECK(now.compiled[a] - before.compiled[a] + now.rejected[a] - before.rejected[a] == emulated);
  }
}

// The config as sm_80 has it: without sm_90's bulk copies (a knob sm_80's
// space does not offer).
inline Config without_sm90_knobs(const Config& cfg) {
  if (!cfg.has("bulk_copy") || cfg.choice("bulk_copy") == 0) return cfg;
  nlohmann::json j = cfg.to_json();
  j["bulk_copy"] = 0;
  return cfg.space()->from_json(j);
}

// NVRTC-compiles an emulated config for sm_80 and sm_90 (a CHECK per
// architecture; a config over that architecture's launch limits is not
// compiled).
inline void compile_emulated_config(const OpInstance& op, const Config& cfg, int64_t max_spill_bytes) {
  EmulatedNvrtcCounts& counts = emulated_nvrtc_counts();
  const char* archs[2] = {"sm_80", "sm_90"};
  for (int a = 0; a < 2; ++a) {
    const GpuLimits gpu = gpu_limits_for_arch(archs[a]);
    std::string err;
    try {
      err = compile_for_gpu(gpu_source(op, a == 0 ? without_sm90_knobs(cfg) : cfg, gpu), gpu, max_spill_bytes);
      if (err.empty()) ++counts.compiled[a];
    } catch (const UserError& e) {
      err = e.what();
      if (is_launch_limit(err)) {
        err = "";
        ++counts.rejected[a];
      }
    }
    INFO("NVRTC for " << archs[a] << ": " << op.canonical << " config " << cfg.str());
    CHECK(err == "");
  }
}

// Emulates one config of the op's cuda template for sm_90 and checks it
// against the interpreter (a CHECK per config); every kNvrtcEvery-th one is
// also compiled by NVRTC (above), with `max_spill_bytes` the spill bound.
inline void check_config(const OpInstance& op, const Config& cfg, const std::string& dir, uint64_t seed, Tally* tally,
                         int64_t max_spill_bytes = kRandomConfigSpillBytes) {
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  std::string err;
  bool emulated = false;
  try {
    err = run_emulated_and_check(op, gpu_source(op, cfg, gpu), dir, seed);
    ++tally->ran;
    emulated = true;
  } catch (const UserError& e) {
    err = e.what();
    if (is_launch_limit(err)) {
      err = "";
      ++tally->rejected;
    }
  } catch (const std::exception& e) {
    err = std::string("exception: ") + e.what();
  }
  {
    INFO(op.canonical << " config " << cfg.str());
    CHECK(err == "");
  }
  if (!emulated || !err.empty()) return;
  ++emulated_nvrtc_counts().emulated;
  if (nvrtc_for_next_emulated()) compile_emulated_config(op, cfg, max_spill_bytes);
}

// The default config, `configs` (JSON, may be empty) and `random` random
// configs of a workload, emulated and checked (and some compiled by NVRTC).
inline Tally check_emulated(const std::string& workload, const std::vector<std::string>& configs, int random,
                            uint64_t seed, const std::string& dir) {
  const GpuLimits gpu = gpu_limits_for_arch("sm_90");
  OpInstance op = build_workload(workload);
  const GpuTemplate& t = find_op(op.op).gpu;
  REQUIRE(t.defined());
  auto space = t.define_space(op, gpu);
  std::mt19937_64 rng(seed);
  Tally tally;
  check_config(op, t.default_config(op, gpu, *space), dir, seed, &tally, kDefaultConfigSpillBytes);
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
