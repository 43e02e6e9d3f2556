#include "bench/gpu_bench.h"

#include <algorithm>
#include <ostream>

#include "base/error.h"
#include "bench/bench_common.h"
#include "bench/bench_suite.h"
#include "bench/contenders/baselines.h"
#include "bench/report_writer.h"
#include "codegen/cuda_codegen.h"
#include "codegen/gpu_build.h"
#include "runtime/cuda_driver.h"
#include "runtime/temp_dir.h"
#include "tasks/gpu_runner.h"
#include "tasks/kernel_build.h"
#include "tasks/task_factory.h"

namespace kiln {

using nlohmann::json;

namespace {

// The seed of the inputs: input i is filled with fill_random(i + 1), the
// CPU bench's values (fill_bench_input) for every type a GPU op reads; only
// u8, which no GPU op reads, keeps 7 bits there.
constexpr uint64_t kInputSeed = 1;

std::vector<std::string> chosen_gpu_baselines(const BenchOptions& o, std::ostream& log) {
  std::vector<std::string> out;
  if (o.baselines.empty()) {
    for (auto& b : baselines::gpu_baseline_names()) {
      const std::string why = baselines::baseline_unavailable_reason(b);
      if (why.empty())
        out.push_back(b);
      else
        log << "baseline " << b << " left out: " << why << "\n";
    }
    return out;
  }
  for (auto& b : o.baselines) {
    auto all = baselines::all_baseline_names();
    user_check(std::find(all.begin(), all.end(), b) != all.end())
        << "unknown baseline '" << b << "' (with --target cuda: cublas, cudnn)";
    user_check(baselines::is_gpu_baseline(b))
        << "baseline '" << b << "' runs on the CPU; kiln bench --target cuda compares with cublas and cudnn";
    const std::string why = baselines::baseline_unavailable_reason(b);
    user_check(why.empty()) << "baseline '" << b << "' is not available: " << why;
    if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
  }
  return out;
}

std::string kernels_text(const std::vector<CudaKernelResources>& resources, size_t kernels) {
  std::string s = std::to_string(kernels) + (kernels == 1 ? " kernel" : " kernels");
  for (size_t i = 0; i < resources.size(); ++i)
    s += (i ? ", " : " (") + std::to_string(resources[i].registers) + " registers" +
         (resources[i].spill_store_bytes > 0 ? " " + std::to_string(resources[i].spill_store_bytes) + " B spilled"
                                              : "") +
         (i + 1 == resources.size() ? ")" : "");
  return s;
}

json bench_gpu_workload(const std::string& workload, const Target& target, const BenchOptions& o,
                        const std::vector<std::string>& names, rt::cuda::Context& ctx, const std::string& image_dir,
                        std::ostream& log) {
  BuiltKernel k = build_kernel(workload, target.str(), o.db);
  log << k.op.canonical << "\n";
  const CudaSource src = emit_cuda(k.func, k.gpu);
  std::vector<CudaKernelResources> resources;
  const std::vector<char> image = gpu_image(src, k.gpu.arch, image_dir, &resources);
  GpuKernelRunner runner(ctx, src, k.func.args, image);
  std::vector<rt::NDArray> arrays = random_arguments(k, kInputSeed);
  const size_t n_in = k.op.inputs.size();
  internal_assert(arrays.size() == n_in + 1) << "bench expects ops with one output";
  runner.run(arrays, n_in);
  const std::vector<rt::NDArray> inputs(arrays.begin(), arrays.begin() + static_cast<std::ptrdiff_t>(n_in));
  const rt::NDArray& kiln_out = arrays.back();

  json w = workload_json(k, arrays);

  std::vector<BenchEntry> entries;
  entries.push_back({"kiln", [&runner](const rt::TimeOptions& t) { return runner.time(t).median_ms; }, {}, {}});
  entries.back().result["check"] = check_json(check_outputs(k.op, inputs, {kiln_out}, kBenchCheckSeed));
  entries.back().result["impl"] =
      "kiln " + k.config_source + " config, " + kernels_text(resources, src.launches.size());

  // The baselines read kiln's input buffers and write their own output.
  std::vector<baselines::DeviceTensor> device_inputs;
  for (size_t i = 0; i < n_in; ++i) device_inputs.push_back({runner.device_pointers()[i], inputs[i].shape()});
  std::vector<rt::cuda::DeviceBuffer> outs;
  std::vector<std::unique_ptr<baselines::GpuContender>> contenders;
  const int64_t l2 = ctx.device().l2_bytes;
  for (auto& name : names) {
    if (!baselines::baseline_supports(name, k.op)) continue;
    try {
      outs.emplace_back(kiln_out.nbytes());
      rt::cuda::DeviceBuffer& out = outs.back();
      out.fill_bytes(0xff);  // NaN: an output the baseline does not write fails the check
      contenders.push_back(
          baselines::make_gpu_contender(name, k.op, device_inputs, {out.ptr(), kiln_out.shape()}));
      baselines::GpuContender* c = contenders.back().get();
      c->enqueue();
      ctx.synchronize();
      rt::NDArray host = rt::NDArray::empty(kiln_out.shape(), kiln_out.dtype());
      out.download(host.data(), host.nbytes());
      json r;
      r["impl"] = c->impl();
      entries.push_back(
          {name, [c, l2](const rt::TimeOptions& t) { return rt::cuda::time_enqueued([c] { c->enqueue(); }, t, l2).median_ms; },
           {}, r});
      entries.back().result["check"] = check_json(check_outputs(k.op, inputs, {host}, kBenchCheckSeed));
    } catch (const UserError& e) {
      w["results"][name] = {{"error", e.what()}};
      log << "  " << name << ": " << e.what() << "\n";
    }
  }

  rt::TimeOptions topt;
  topt.warmup = 2;
  topt.repeat = o.repeat;
  topt.min_repeat_ms = o.min_repeat_ms;
  topt.flush_cache = true;
  run_rounds(entries, o.rounds, topt);
  record_results(w, entries, k.op.flops, w["bytes"].get<double>());
  set_best_baseline(w);
  return w;
}

}  // namespace

json run_gpu_bench(const BenchOptions& o, std::ostream& log) {
  user_check(o.tune_trials == 0)
      << "--tune-trials is for CPU benches; for --target cuda tune first with `kiln tune WORKLOAD --target cuda --db "
         "F` (each workload of the suite), then `kiln bench --target cuda --db F` runs the tuned records";
  Suite suite = load_suite(o.suite);
  // Every workload must be valid and have a cuda template before anything runs.
  std::vector<std::string> workloads;
  for (auto& sw : suite.workloads) {
    try {
      OpInstance op = build_workload(sw.text);
      gpu_template_of(find_op(op.op));
      workloads.push_back(op.canonical);
    } catch (const UserError& e) {
      user_error() << "suite '" << suite.path << "' line " << sw.line << ": " << e.what();
    }
  }
  // The driver's devices are probed (in a child process) before this process
  // initializes CUDA: later probes get the cached answer.
  std::string why;
  user_check(rt::cuda::available(&why))
      << "kiln bench --target cuda times kernels on a GPU, and " << why
      << "; `kiln run WORKLOAD --target cuda --emulate --check` runs a workload's CUDA C on this CPU";
  const Target target = Target::parse(o.target);
  rt::cuda::Context ctx(0);
  const rt::cuda::DeviceInfo& dev = ctx.device();
  check_target_runs_on(dev, target);
  // kiln's context is current: the GPU plug-ins' CUDA runtime binds to it.
  const std::vector<std::string> names = chosen_gpu_baselines(o, log);

  json result;
  result["suite"] = suite.name;
  result["date"] = utc_timestamp("%Y-%m-%d %H:%M UTC");
  result["machine"] = dev.name;
  result["target"] = target.str();
  result["gpu"] = {{"name", dev.name},
                   {"arch", dev.arch()},
                   {"sm_count", dev.sm_count},
                   {"memory_gib", static_cast<double>(dev.total_memory) / (1 << 30)},
                   {"l2_bytes", dev.l2_bytes},
                   {"driver", rt::cuda::driver_path()}};
  result["command"] = o.command;
  result["rounds"] = o.rounds;
  result["min_repeat_ms"] = o.min_repeat_ms;
  result["baselines"] = json::object();
  for (auto& n : names) result["baselines"][n] = baselines::baseline_version(n);
  log << "GPU 0: " << dev.name << ", " << dev.arch() << ", " << dev.sm_count << " SMs; baselines: "
      << (names.empty() ? std::string("none") : "") ;
  for (size_t i = 0; i < names.size(); ++i) log << (i ? ", " : "") << names[i];
  log << "\n";
  // The stand-in driver's images (KILN_GPU_IMAGE=emulated), removed at the end.
  rt::TempDir images("kiln-bench-gpu", "GPU images");
  result["workloads"] = json::array();
  for (auto& w : workloads)
    result["workloads"].push_back(bench_gpu_workload(w, target, o, names, ctx, images.path(), log));
  result["geomean"] = geomeans(result["workloads"], names);
  return result;
}

}  // namespace kiln
