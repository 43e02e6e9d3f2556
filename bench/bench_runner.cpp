#include "bench/bench_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <functional>
#include <iomanip>
#include <optional>
#include <ostream>

#include "base/error.h"
#include "bench/bench_common.h"
#include "bench/bench_suite.h"
#include "bench/contenders/baselines.h"
#include "bench/contenders/halide_client.h"
#include "bench/gpu_bench.h"
#include "bench/kiln_alternatives.h"
#include "bench/machine_probe.h"
#include "bench/report_writer.h"
#include "codegen/build.h"
#include "codegen/runtime_dtype.h"
#include "costmodel/features.h"
#include "costmodel/xgb_model.h"
#include "runtime/process_util.h"
#include "runtime/thread_pool.h"
#include "runtime/time_evaluator.h"
#include "tasks/kernel_build.h"
#include "tasks/neighbors.h"
#include "tasks/reference_check.h"
#include "tasks/task_factory.h"
#include "tasks/tuner_factory.h"
#include "tasks/variant_tuning.h"
#include "tuner/database.h"
#include "tuner/local_builder.h"
#include "tuner/local_runner.h"
#include "tuner/tuning_loop.h"
#include "tuner/xgb_tuner.h"

namespace kiln {

using nlohmann::json;

namespace {

// The entry name of an alternative while it is timed ("kiln:winograd_f4").
const std::string kVariantPrefix = "kiln:";

std::vector<std::string> chosen_baselines(const BenchOptions& o) {
  std::vector<std::string> out;
  if (o.baselines.empty()) {
    for (auto& b : baselines::baseline_names())
      if (baselines::baseline_available(b)) out.push_back(b);
    return out;
  }
  for (auto& b : o.baselines) {
    auto names = baselines::baseline_names();
    user_check(!baselines::is_gpu_baseline(b))
        << "baseline '" << b << "' runs on a GPU: compare with it in `kiln bench --target cuda`";
    user_check(std::find(names.begin(), names.end(), b) != names.end())
        << "unknown baseline '" << b << "' (baselines: onednn, openblas, halide; with --target cuda: cublas, cudnn)";
    const std::string why = baselines::baseline_unavailable_reason(b);
    user_check(why.empty()) << "baseline '" << b << "' is not available: " << why;
    if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
  }
  return out;
}

// Tunes one workload into the database up to `trials` in total (earlier
// runs included). Workloads without a tunable template are skipped (-1).
double tune_workload(const std::string& w, int trials, const BenchOptions& o, Database& db, std::ostream& log) {
  Target target = Target::host();
  OpInstance op = build_workload(w);
  const OpDef& def = find_op(op.op);
  if (!def.define_space || def.define_space(op, cpu_info_for(target))->size() <= 1) {
    log << "not tuning " << op.canonical << ": op '" << op.op << "' has no tunable template\n";
    return -1;
  }
  Task task = make_task(w, target);
  const Task search = search_task(task);  // refine knobs held, swept at the end
  // `kiln tune`'s search: the template's default config measured first
  // (a tuned record never ends slower than the default), then the best
  // configs of tuned neighbours.
  TunerChoice choice;
  choice.batch = std::min(64, trials);
  std::unique_ptr<Tuner> tuner = make_tuner(choice, search, db, target, log);
  LocalBuilder builder(LocalBuilderOptions{});
  LocalRunner runner(MeasureOptions{});
  TuneOptions to;
  to.trials = trials;
  to.batch = choice.batch;
  to.early_stop = o.tune_early_stop;
  TuneResult r = tune_and_refine(task, search, *tuner, builder, runner, db, to, [](const TuneProgress&) {});
  log << "tuned " << r.workload << ": " << r.trials << " trials, best " << std::fixed << std::setprecision(1)
      << r.best_gflops << " GFLOP/s\n";
  return r.best_gflops;
}

// Tunes every workload with a tunable template into the database, before
// any kernel runs (the builder forks; no threads may exist yet). A workload
// and the kernels of its alternatives (Winograd) share one budget of
// --tune-trials (tasks/variant_tuning.h).
void tune_workloads(const std::vector<std::string>& workloads, const BenchOptions& o, std::ostream& log) {
  auto db = Database::open(o.db);
  for (auto& w : workloads)
    tune_variants(
        workload_variants(w), o.tune_trials,
        [&](const std::string& v, int trials) { return tune_workload(v, trials, o, *db, log); }, log);
}

// The workloads of the unfused forms of the fused ops among `workloads`.
std::vector<std::string> unfused_workloads(const std::vector<std::string>& workloads) {
  std::vector<std::string> out;
  for (auto& w : workloads) {
    OpInstance op = build_workload(w);
    const OpDef& def = find_op(op.op);
    if (!def.unfused) continue;
    for (auto& step : def.unfused(op)) out.push_back(build_workload(step.workload).canonical);
  }
  return out;
}

// A fused op's unfused form with kiln's kernels (each its best record in the
// database, else its default config), one after the other on the same
// inputs, through intermediate arrays: what the fused kernel saves.
class UnfusedChain {
 public:
  UnfusedChain(const std::vector<UnfusedStep>& steps, const std::vector<rt::NDArray>& inputs, const rt::NDArray& out,
               const std::string& db) {
    for (size_t i = 0; i < steps.size(); ++i) {
      BuiltKernel k = build_kernel(steps[i].workload, "", db);
      sources_ += (i ? ", " : "") + k.config_source;
      jits_.push_back(JitModule::compile({k.func}, k.target));
      fns_.push_back(jits_.back()->get_function(k.func.name));
      std::vector<void*> p;
      for (int in : steps[i].inputs) p.push_back(in < 0 ? arrays_.back().data() : inputs.at(static_cast<size_t>(in)).data());
      const BufferArg& o = k.func.args.back();
      arrays_.push_back(i + 1 == steps.size() ? out : rt::NDArray::empty(o.shape, to_runtime_dtype(o.dtype)));
      p.push_back(arrays_.back().data());
      internal_assert(p.size() == k.func.args.size()) << "unfused step " << steps[i].workload << " takes "
                                                      << k.func.args.size() << " arrays, not " << p.size();
      ptrs_.push_back(p);
    }
  }
  void run() {
    for (size_t i = 0; i < fns_.size(); ++i) fns_[i](ptrs_[i].data());
  }
  std::string impl() const { return "kiln " + std::to_string(fns_.size()) + " kernels (" + sources_ + " configs)"; }

 private:
  std::vector<std::unique_ptr<JitModule>> jits_;
  std::vector<kiln_packed_fn> fns_;
  std::vector<rt::NDArray> arrays_;
  std::vector<std::vector<void*>> ptrs_;
  std::string sources_;
};

// kiln's variants of a workload with alternatives: "direct" (the op's own
// kernel, timed as "kiln") and each alternative (timed as "kiln:<name>").
// The fastest with a correct output becomes "kiln"; all of them are listed
// under "variants", and "kiln_variant" names the one kept.
void choose_variant(json& w, const std::vector<std::unique_ptr<AlternativeRun>>& alternatives) {
  json& results = w["results"];
  w["variants"]["direct"] = results["kiln"];
  for (auto& alt : alternatives) {
    const std::string key = kVariantPrefix + alt->name();
    w["variants"][alt->name()] = results[key];
    results.erase(key);
  }
  std::string chosen = "direct";
  double best = -1;
  for (auto& [name, r] : w["variants"].items())
    if (r.contains("gflops") && r.value("check", json("")) == "ok" && r["gflops"].get<double>() > best) {
      best = r["gflops"].get<double>();
      chosen = name;
    }
  w["kiln_variant"] = chosen;
  results["kiln"] = w["variants"][chosen];
  for (auto& alt : alternatives)
    if (alt->name() == chosen) {
      w["kiln_config"] = alt->config_source();
      if (alt->config().is_null())
        w.erase("kiln_tuned_config");
      else
        w["kiln_tuned_config"] = alt->config();
    }
}

json bench_workload(const std::string& workload, const BenchOptions& o, const std::vector<std::string>& names,
                    baselines::HalideHelper* halide, std::ostream& log) {
  BuiltKernel k = build_kernel(workload, "", o.db);
  log << k.op.canonical << "\n";
  auto jit = JitModule::compile({k.func}, k.target);
  kiln_packed_fn fn = jit->get_function(k.func.name);
  std::vector<rt::NDArray> arrays, inputs;
  std::vector<void*> ptrs;
  for (size_t i = 0; i < k.func.args.size(); ++i) {
    const BufferArg& a = k.func.args[i];
    arrays.push_back(rt::NDArray::empty(a.shape, to_runtime_dtype(a.dtype)));
    if (i < k.op.inputs.size()) {
      fill_bench_input(arrays.back(), i);
      inputs.push_back(arrays.back());
    }
    ptrs.push_back(arrays.back().data());
  }
  internal_assert(arrays.size() == k.op.inputs.size() + 1) << "bench expects ops with one output";
  const rt::NDArray& kiln_out = arrays.back();
  fn(ptrs.data());

  json w = workload_json(k, arrays);
  std::vector<BenchEntry> entries;
  entries.push_back({"kiln",
                     [&](const rt::TimeOptions& t) { return rt::time_function([&] { fn(ptrs.data()); }, t).median_ms; },
                     {},
                     {}});
  entries.back().result["check"] = check_json(check_outputs(k.op, inputs, {kiln_out}, kBenchCheckSeed));
  entries.back().result["impl"] = "kiln " + k.config_source + " config";

  std::vector<std::unique_ptr<baselines::Contender>> contenders;
  std::vector<rt::NDArray> outs;
  std::unique_ptr<UnfusedChain> unfused;
  if (const OpDef& def = find_op(k.op.op); def.unfused) {
    rt::NDArray out = rt::NDArray::empty(kiln_out.shape(), kiln_out.dtype());
    outs.push_back(out);
    unfused = std::make_unique<UnfusedChain>(def.unfused(k.op), inputs, out, o.db);
    UnfusedChain* u = unfused.get();
    u->run();
    entries.push_back({kUnfused,
                       [u](const rt::TimeOptions& t) { return rt::time_function([u] { u->run(); }, t).median_ms; },
                       {},
                       {{"impl", u->impl()}}});
    entries.back().result["check"] = check_json(check_outputs(k.op, inputs, {out}, kBenchCheckSeed));
  }
  std::vector<std::unique_ptr<AlternativeRun>> alternatives;
  if (const OpDef& def = find_op(k.op.op); def.alternatives) {
    for (const OpAlternative& a : def.alternatives(k.op)) {
      rt::NDArray out = rt::NDArray::empty(kiln_out.shape(), kiln_out.dtype());
      outs.push_back(out);
      try {
        alternatives.push_back(std::make_unique<AlternativeRun>(a, inputs, out, o.db));
      } catch (const UserError& e) {
        w["variants"][a.name] = {{"error", e.what()}};
        log << "  " << a.name << ": " << e.what() << "\n";
        continue;
      }
      AlternativeRun* alt = alternatives.back().get();
      entries.push_back({kVariantPrefix + a.name,
                         [alt](const rt::TimeOptions& t) { return rt::time_function([alt] { alt->run(); }, t).median_ms; },
                         {},
                         {{"impl", alt->impl()}}});
      entries.back().result["check"] = check_json(check_outputs(k.op, inputs, {out}, kBenchCheckSeed));
    }
  }
  for (auto& name : names) {
    if (!baselines::baseline_supports(name, k.op)) continue;
    rt::NDArray out = rt::NDArray::empty(kiln_out.shape(), kiln_out.dtype());
    outs.push_back(out);
    try {
      json r;
      if (name == "halide") {
        r["impl"] = halide->setup(baselines::contender_op(k.op), inputs, out);
        entries.push_back({name, [halide](const rt::TimeOptions& t) { return halide->time_round(t); }, {}, r});
      } else {
        contenders.push_back(baselines::make_contender(name, k.op, inputs, out));
        baselines::Contender* c = contenders.back().get();
        c->run();
        c->finish();
        r["impl"] = c->impl();
        entries.push_back(
            {name, [c](const rt::TimeOptions& t) { return rt::time_function([c] { c->run(); }, t).median_ms; }, {}, r});
      }
      entries.back().result["check"] = check_json(check_outputs(k.op, inputs, {out}, kBenchCheckSeed));
    } catch (const UserError& e) {
      w["results"][name] = {{"error", e.what()}};
      log << "  " << name << ": " << e.what() << "\n";
    }
  }

  rt::TimeOptions topt;
  topt.warmup = 2;
  topt.repeat = o.repeat;
  topt.min_repeat_ms = o.min_repeat_ms;
  run_rounds(entries, o.rounds, topt);
  record_results(w, entries, k.op.flops, w["bytes"].get<double>());
  if (!alternatives.empty()) choose_variant(w, alternatives);
  set_best_baseline(w);
  return w;
}

}  // namespace

bool bench_outputs_ok(const json& result) {
  for (auto& w : result.at("workloads"))
    for (auto& [name, r] : w.at("results").items())
      if (r.contains("check") && r["check"] != "ok") return false;
  return true;
}

json run_bench(const BenchOptions& o, std::ostream& log) {
  user_check(o.rounds >= 1) << "--rounds must be at least 1";
  user_check(o.tune_trials == 0 || !o.db.empty())
      << "--tune-trials needs --db F: the database the tuning records go to";
  if (!o.target.empty()) {
    const Target t = Target::parse(o.target);
    if (t.is_cuda()) return run_gpu_bench(o, log);
    user_check(t.is_host()) << "kiln bench measures on this machine: target '" << t.str()
                            << "' is neither this CPU nor a cuda target";
  }
  Suite suite = load_suite(o.suite);
  // Every workload must be valid before anything runs.
  std::vector<std::string> workloads;
  for (auto& sw : suite.workloads) {
    try {
      workloads.push_back(build_workload(sw.text).canonical);
    } catch (const UserError& e) {
      user_error() << "suite '" << suite.path << "' line " << sw.line << ": " << e.what();
    }
  }
  // This machine's roof, for the report's % of peak and roofline, measured
  // in this run (the speed of a shared machine drifts between runs) and
  // stored in the database; before anything forks or starts threads
  // (loading a baseline plug-in may start OpenBLAS's).
  const Target host = Target::host();
  std::optional<Database::Machine> machine;
  if (proc::count_threads() == 1) {
    try {
      machine = machine_record(host, probe_machine(host));
      log << "machine probe: fp32 peak " << std::fixed << std::setprecision(1) << machine->peak_gflops
          << " GFLOP/s, bandwidth " << machine->bandwidth_gbs << " GB/s\n";
      if (!o.db.empty()) Database::open(o.db)->put_machine(*machine);
    } catch (const UserError& e) {
      log << "machine probe failed: " << e.what() << "\n";
    }
  } else {
    log << "machine probe skipped: this process already runs threads\n";
  }
  std::vector<std::string> names = chosen_baselines(o);
  if (o.tune_trials > 0) {
    // A fused op's unfused kernels are tuned too, for a fair comparison.
    std::vector<std::string> all = workloads;
    for (auto& w : unfused_workloads(workloads))
      if (std::find(all.begin(), all.end(), w) == all.end()) all.push_back(w);
    // The kernels of kiln's alternatives (Winograd) are tuned with their
    // workload, sharing its budget (tune_workloads).
    tune_workloads(all, o, log);
  }
  int threads = rt::default_num_threads();
  std::unique_ptr<baselines::HalideHelper> halide;
  json result;
  result["suite"] = suite.name;
  result["date"] = utc_timestamp("%Y-%m-%d %H:%M UTC");
  result["machine"] = cpu_model_name();
  result["target"] = host.str();
  if (machine)
    result["machine_probe"] = {{"cpu", machine->cpu},
                               {"threads", machine->threads},
                               {"peak_gflops", machine->peak_gflops},
                               {"bandwidth_gbs", machine->bandwidth_gbs}};
  result["threads"] = threads;
  result["command"] = o.command;
  result["rounds"] = o.rounds;
  result["min_repeat_ms"] = o.min_repeat_ms;
  result["baselines"] = json::object();
  for (auto& n : names) {
    if (n == "halide") {
      halide = std::make_unique<baselines::HalideHelper>(threads);
      result["baselines"][n] = halide->version();
    } else {
      result["baselines"][n] = baselines::baseline_version(n);
    }
  }
  result["workloads"] = json::array();
  for (auto& w : workloads) result["workloads"].push_back(bench_workload(w, o, names, halide.get(), log));
  result["geomean"] = geomeans(result["workloads"], names);
  return result;
}

}  // namespace kiln
