// `kiln run WORKLOAD [--db F] [--config JSON] [--check] [--json]`: compiles the workload's schedule
// for this machine, runs it on random inputs, times it, and (with --check)
// compares its output with the reference interpreter. With `--target cuda
// --emulate` the workload's CUDA C runs on this CPU through the emulation
// header (codegen/cuda_emulation.h), which reports shared-memory races and
// barrier divergence; its timings say nothing about a GPU. Without
// --emulate it is compiled by NVRTC and runs on the first GPU (the CUDA
// driver opened with dlopen), timed with events.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/error.h"
#include "cli/commands.h"
#include "codegen/build.h"
#include "codegen/cuda_codegen.h"
#include "codegen/cuda_emulation.h"
#include "codegen/nvrtc.h"
#include "codegen/runtime_dtype.h"
#include "runtime/c_api.h"
#include "runtime/cuda_driver.h"
#include "runtime/module.h"
#include "runtime/ndarray.h"
#include "runtime/temp_dir.h"
#include "runtime/time_evaluator.h"
#include "tasks/gpu_runner.h"
#include "tasks/kernel_build.h"
#include "tasks/reference_check.h"

namespace kiln::cli {

namespace {

struct RunOptions {
  std::string workload, target, db, config;
  bool check = false, json = false, emulate = false;
  int repeat = 10, number = 0;
  double min_repeat_ms = 100;
  uint64_t seed = 1;
};

rt::TimeOptions time_options(const RunOptions& o) {
  rt::TimeOptions topt;
  topt.repeat = o.repeat;
  topt.number = o.number > 0 ? o.number : 1;
  topt.min_repeat_ms = o.number > 0 ? 0 : o.min_repeat_ms;
  topt.warmup = 1;
  return topt;
}

// Fills the check and timing fields of `out`, prints, returns the exit code.
int report(const RunOptions& o, const BuiltKernel& k, const std::vector<rt::NDArray>& arrays,
           const rt::TimeResult& tr, nlohmann::json out, const std::string& where) {
  bool correct = true;
  if (o.check) {
    std::vector<rt::NDArray> ins(arrays.begin(), arrays.begin() + static_cast<long>(k.op.inputs.size()));
    std::vector<rt::NDArray> outs(arrays.begin() + static_cast<long>(k.op.inputs.size()), arrays.end());
    CheckResult cr = check_outputs(k.op, ins, outs, o.seed);
    correct = cr.ok;
    out["correct"] = cr.ok;
    out["checked_points"] = cr.checked;
    if (!cr.ok) out["mismatch"] = cr.detail;
  }
  out["median_ms"] = tr.median_ms;
  out["min_ms"] = tr.min_ms;
  out["samples_ms"] = tr.samples_ms;
  out["number"] = tr.number;
  out["gflops"] = k.op.flops / (tr.median_ms * 1e6);
  out["gflops_best"] = k.op.flops / (tr.min_ms * 1e6);
  if (o.json) {
    std::cout << out.dump() << "\n";
  } else {
    std::cout << k.op.canonical << " on " << k.target.str() << where << "\n";
    if (o.check) std::cout << "  correct: " << (correct ? "yes" : "NO: " + out["mismatch"].get<std::string>()) << "\n";
    std::cout << "  median " << tr.median_ms << " ms, " << out["gflops"].get<double>() << " GFLOP/s (best "
              << out["gflops_best"].get<double>() << ")\n";
  }
  return correct ? 0 : 1;
}

// The kernel's CUDA C compiled by NVRTC for the first GPU, run and timed
// there with events (L2 flushed before each measurement).
int run_on_gpu(const RunOptions& o, const BuiltKernel& k) {
  std::string why;
  user_check(rt::cuda::available(&why)) << "kiln run --target cuda runs the kernel on a GPU, and " << why
                                        << "; --emulate runs its CUDA C on this CPU instead (correctness, not "
                                           "GPU timings)";
  rt::cuda::Context ctx(0);
  check_target_runs_on(ctx.device(), k.target);
  const CudaSource src = emit_cuda(k.func, k.gpu);
  const NvrtcOutput compiled = nvrtc_compile(src.code, src.function + ".cu", k.gpu.arch);
  GpuKernelRunner runner(ctx, src, k.func.args, compiled.cubin);
  std::vector<rt::NDArray> arrays = random_arguments(k, o.seed);
  runner.run(arrays, k.op.inputs.size());
  rt::TimeOptions topt = time_options(o);
  topt.flush_cache = true;
  const rt::TimeResult tr = runner.time(topt);
  nlohmann::json out;
  out["workload"] = k.op.canonical;
  out["target"] = k.target.str();
  out["device"] = ctx.device().name;
  out["config_source"] = k.config_source;
  if (k.config_source != "default") out["config"] = k.config;
  nlohmann::json res = nlohmann::json::array();
  for (auto& r : compiled.resources)
    res.push_back({{"kernel", r.kernel}, {"registers", r.registers}, {"spill_bytes", r.spill_store_bytes},
                   {"shared_bytes", r.shared_bytes}});
  out["kernels"] = res;
  return report(o, k, arrays, tr, out, " (" + ctx.device().name + ")");
}

int run(const RunOptions& o) {
  BuiltKernel k = build_kernel(o.workload, o.target, o.db, o.config);
  std::unique_ptr<JitModule> jit;
  std::optional<rt::TempDir> emu_dir;  // declared first: removed after the module unloads
  std::shared_ptr<rt::Module> emulated;
  kiln_packed_fn fn = nullptr;
  if (k.target.is_cuda() && !o.emulate) return run_on_gpu(o, k);
  if (k.target.is_cuda()) {
    emu_dir.emplace("kiln-emulate", "the emulated kernel");
    EmulatedModule em = build_emulated_module(emit_cuda(k.func, k.gpu), emu_dir->path());
    emulated = rt::Module::load(em.path);
    fn = emulated->get_function(k.func.name);
  } else {
    user_check(!o.emulate) << "--emulate is for cuda targets";
    user_check(k.target.is_host()) << "kiln run measures on this machine; target '" << k.target.str()
                                   << "' is not this machine's (use kiln source to cross-compile)";
    jit = JitModule::compile({k.func}, k.target);
    fn = jit->get_function(k.func.name);
  }
  internal_assert(fn) << "compiled module lacks " << k.func.name;

  std::vector<rt::NDArray> arrays = random_arguments(k, o.seed);
  std::vector<void*> ptrs;
  for (auto& a : arrays) ptrs.push_back(a.data());
  int32_t rc = fn(ptrs.data());
  if (rc != 0 && emulated) {
    std::cerr << "kiln: the emulated kernel failed: " << emulated_error(*emulated) << "\n";
    return 1;
  }
  internal_assert(rc == 0) << "kernel returned " << rc;

  nlohmann::json out;
  out["workload"] = k.op.canonical;
  out["target"] = k.target.str();
  out["threads"] = kiln_num_threads();
  if (emulated) out["emulated"] = true;
  out["config_source"] = k.config_source;
  if (k.config_source != "default") out["config"] = k.config;
  const rt::TimeResult tr = rt::time_function([&] { fn(ptrs.data()); }, time_options(o));
  return report(o, k, arrays, tr, out, emulated ? " (emulated on the CPU)" : "");
}

}  // namespace

Handler add_run_command(CLI::App& app) {
  auto* sub = app.add_subcommand("run", "compile, run and time a workload on this machine");
  auto o = std::make_shared<RunOptions>();
  sub->add_option("workload", o->workload, "e.g. conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1")->required();
  sub->add_option("--target", o->target, "target string (default: this machine)");
  sub->add_flag("--check", o->check, "compare the output with the reference interpreter");
  sub->add_flag("--emulate", o->emulate,
                "cuda targets: run the kernel's CUDA C on this CPU (each CUDA thread a fiber, shared-memory races "
                "and barrier divergence reported)");
  sub->add_option("--db", o->db, "use the best tuned config of this database (else the template's default)");
  sub->add_option("--config", o->config,
                  "knob values as a JSON object, e.g. '{\"border\":\"clip\"}'; knobs not named keep the "
                  "database's or the default's values");
  sub->add_flag("--json", o->json, "print one JSON object");
  sub->add_option("--repeat", o->repeat, "measurements (default 10)")->check(CLI::Range(1, 100000));
  sub->add_option("--number", o->number, "runs per measurement (default: grown to --min-repeat-ms)")
      ->check(CLI::Range(0, 100000000));
  sub->add_option("--min-repeat-ms", o->min_repeat_ms, "minimum time of one measurement (default 100)")
      ->check(CLI::Range(0.0, 1e6));
  sub->add_option("--seed", o->seed, "seed of the random inputs");
  return [o]() { return run(*o); };
}

}  // namespace kiln::cli
