// `kiln run-model MODEL --input NAME=SHAPE [--db F] [--in FILE] [--out FILE]
// [--compare ort] [--samples N]`: wiring only; bench/model_run.h does the work.
#include <unistd.h>

#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "bench/model_run.h"
#include "cli/commands.h"
#include "graph/graph.h"
#include "graph/model_tuning.h"
#include "graph/onnx_import.h"
#include "tasks/tuner_factory.h"

namespace kiln::cli {

namespace {

struct RunModelOptions {
  ModelRunOptions run;
  std::vector<std::string> inputs;
  std::string compare;
  bool json = false, no_time = false;
};

std::string mib(int64_t bytes) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << static_cast<double>(bytes) / (1 << 20) << " MiB";
  return s.str();
}

int run_model_command(RunModelOptions& o) {
  o.run.input_shapes = graph::parse_input_options(o.inputs);
  user_check(o.compare.empty() || o.compare == "ort") << "--compare takes 'ort' (ONNX Runtime), got '" << o.compare << "'";
  o.run.compare_ort = o.compare == "ort";
  o.run.time = !o.no_time;
  const ModelRunResult r = run_model(o.run);
  nlohmann::json j;
  j["model"] = o.run.model;
  j["model_nodes"] = r.model_nodes;
  j["passes"] = {{"folded_affine", r.folded_affine}, {"fused_activations", r.fused_activations},
                 {"fused_biases", r.fused_biases},   {"packed_weights", r.packed_weights},
                 {"padded_inputs", r.padded_inputs}, {"gemm_conv_transposes", r.gemm_conv_transposes}};
  j["layouts"] = {{"blocked_convolutions", r.blocked_convs},
                  {"blocked_nodes", r.blocked_nodes},
                  {"conversions", r.layout_conversions}};
  j["nodes"] = r.nodes;
  j["folded"] = r.folded;
  j["views"] = r.views;
  j["fused_elementwise"] = r.fused_elementwise;
  j["kernels"] = {{"steps", r.steps}, {"distinct", r.distinct_kernels}, {"tuned", r.tuned_steps},
                  {"default", r.default_steps}, {"generic", r.generic_steps}};
  j["compile_s"] = r.compile_s;
  j["memory"] = {{"peak_bytes", r.peak_bytes}, {"intermediate_bytes", r.intermediate_bytes}, {"buffers", r.buffers}};
  j["threads"] = r.threads;
  if (!r.device.empty()) j["device"] = r.device;
  j["samples"] = r.samples;
  for (const auto& c : r.outputs) {
    nlohmann::json oc = {{"name", c.name}, {"shape", c.shape}, {"min", c.min}, {"max", c.max}, {"argmax", c.argmax}};
    if (o.run.compare_ort)
      oc.update({{"max_abs_error", c.max_abs_error}, {"ort_range", c.range}, {"match", c.match}, {"same_argmax", c.same_argmax}});
    j["outputs"].push_back(oc);
  }
  if (r.kiln_time) j["kiln_ms"] = {{"median", r.kiln_time->median_ms}, {"min", r.kiln_time->min_ms}, {"samples", r.kiln_time->samples_ms}};
  if (r.ort_time) {
    j["ort_ms"] = {{"median", r.ort_time->median_ms}, {"min", r.ort_time->min_ms}, {"samples", r.ort_time->samples_ms}};
    j["ort_version"] = r.ort_version;
    j["speedup_vs_ort"] = r.ort_time->median_ms / r.kiln_time->median_ms;
  }
  if (o.run.compare_ort) j["match"] = r.match;
  if (o.run.profile > 0) {
    j["profile_total_ms"] = r.profile_total_ms;
    for (const auto& p : r.profile)
      j["profile"].push_back({{"node", p.node}, {"op", p.op_type}, {"workload", p.workload}, {"config", p.config_source},
                              {"fused_nodes", p.fused_nodes}, {"ms", p.ms}});
  }
  if (o.json) {
    std::cout << j.dump() << "\n";
  } else {
    std::cout << o.run.model << ": " << r.model_nodes << " nodes; passes folded " << r.folded_affine
              << " batch norms and per-channel affines into convolutions, fused " << r.fused_activations
              << " activations and " << r.fused_biases << " biases, packed " << r.packed_weights
              << " matrix weights, padded " << r.padded_inputs << " convolution inputs, ran " << r.gemm_conv_transposes
              << " transposed convolutions as matrix products; layouts: " << r.blocked_convs
              << " convolutions on NCHW[x]c with weights packed at compile time, " << r.blocked_nodes
              << " element-wise and pool nodes blocked, " << r.layout_conversions << " conversions; " << r.nodes
              << " nodes left: " << r.folded << " folded at compile time, " << r.views << " views, "
              << r.fused_elementwise << " fused into element-wise kernels; " << r.steps << " kernels ("
              << r.distinct_kernels << " distinct; " << r.tuned_steps << " tuned, " << r.default_steps
              << " default configs, " << r.generic_steps << " generic), compiled in " << std::fixed
              << std::setprecision(1) << r.compile_s << " s\n";
    std::cout << "  memory: " << mib(r.peak_bytes) << " in " << r.buffers << " shared buffers, for "
              << mib(r.intermediate_bytes) << " of intermediate tensors\n";
    for (const auto& c : r.outputs) {
      std::cout << "  output " << c.name << " " << graph::shape_str(c.shape) << ": min " << std::setprecision(4)
                << c.min << ", max " << c.max << " at " << c.argmax;
      if (o.run.compare_ort)
        std::cout << "; vs ONNX Runtime: max abs error " << std::scientific << std::setprecision(2) << c.max_abs_error
                  << " (range " << c.range << ")" << std::fixed << (c.match ? ", match" : ", MISMATCH")
                  << ", same argmax on " << c.same_argmax << "/" << r.samples << " inputs";
      std::cout << "\n";
    }
    std::cout << std::setprecision(3);
    if (o.run.profile > 0) {
      std::cout << "  slowest kernels (each timed alone; all " << r.steps << " sum to " << r.profile_total_ms << " ms):\n";
      for (const auto& p : r.profile)
        std::cout << "    " << std::setw(8) << p.ms << " ms  " << p.op_type << " '" << p.node << "'"
                  << (p.fused_nodes > 1 ? " (+" + std::to_string(p.fused_nodes - 1) + " fused)" : "") << "  "
                  << (p.workload.empty() ? "generic" : p.workload + " [" + p.config_source + "]") << "\n";
    }
    if (r.kiln_time)
      std::cout << "  kiln: median " << r.kiln_time->median_ms << " ms (best " << r.kiln_time->min_ms << "), "
                << (r.device.empty() ? std::to_string(r.threads) + " thread" + (r.threads == 1 ? "" : "s")
                                     : "on " + r.device)
                << "\n";
    if (r.ort_time)
      std::cout << "  ONNX Runtime " << r.ort_version
                << (r.device.empty() ? "" : " (on the CPU, " + std::to_string(r.threads) + " threads)") << ": median "
                << r.ort_time->median_ms << " ms (best " << r.ort_time->min_ms << "); kiln is " << std::setprecision(2)
                << r.ort_time->median_ms / r.kiln_time->median_ms << "x ONNX Runtime\n";
  }
  return r.match ? 0 : 1;
}

// "90s", "30m", "1.5h" or plain seconds -> seconds.
double parse_duration(const std::string& text) {
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
  }
  const std::string unit = text.substr(used);
  const double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  user_check(v > 0 && scale > 0) << "--time '" << text << "': write a duration such as 90s, 30m or 1.5h";
  return v * scale;
}

struct TuneModelOptions {
  graph::ModelTuneOptions tune;
  std::vector<std::string> inputs;
  std::string time, scheduler = "gradient", curve;
  bool json = false;
};

int tune_model_command(TuneModelOptions& o) {
  o.tune.input_shapes = graph::parse_input_options(o.inputs);
  if (!o.time.empty()) o.tune.time_s = parse_duration(o.time);
  user_check(o.scheduler == "gradient" || o.scheduler == "round-robin")
      << "--scheduler takes gradient or round-robin, got '" << o.scheduler << "'";
  check_tuner_name(o.tune.tuner.name);
  o.tune.policy = o.scheduler == "gradient" ? graph::SchedulePolicy::kGradient : graph::SchedulePolicy::kRoundRobin;
  o.tune.tuner.batch = o.tune.batch;
  if (o.tune.job.empty()) o.tune.job = "tune-model-" + std::to_string(::getpid());
  nlohmann::json curve = nlohmann::json::array();
  auto on_round = [&](const graph::ModelTuneRound& r, const graph::TaskScheduler&) {
    std::cerr << "round " << r.round + 1 << ": " << r.workload << " best " << std::fixed << std::setprecision(3)
              << r.best_ms << " ms; " << r.trials << " trials, estimated end-to-end " << r.estimated_ms << " ms ("
              << std::setprecision(0) << r.elapsed_s << " s)\n";
    curve.push_back({{"round", r.round}, {"workload", r.workload}, {"trials", r.trials}, {"best_ms", r.best_ms},
                     {"estimated_ms", r.estimated_ms}, {"elapsed_s", r.elapsed_s}});
  };
  const graph::ModelTuneResult r = graph::tune_model(o.tune, on_round);
  nlohmann::json j;
  j["model"] = o.tune.model;
  j["scheduler"] = o.scheduler;
  j["db"] = o.tune.db;
  j["initial_estimated_ms"] = r.initial_estimated_ms;
  j["other_ms"] = r.other_ms;
  j["measured_before_ms"] = r.measured_before_ms;
  j["measured_after_ms"] = r.measured_after_ms;
  j["elapsed_s"] = r.elapsed_s;
  j["curve"] = curve;
  for (const auto& t : r.tasks)
    j["tasks"].push_back({{"workload", t.workload}, {"weight", t.weight}, {"trials", t.trials}, {"best_ms", t.best_ms},
                          {"batches", t.batches}});
  if (!o.curve.empty()) {
    std::ofstream f(o.curve);
    user_check(f.good()) << "cannot write --curve file '" << o.curve << "'";
    f << j.dump(1) << "\n";
  }
  if (o.json) {
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::cout << o.tune.model << ": " << r.tasks.size() << " tasks, " << r.rounds.size() << " rounds in " << std::fixed
            << std::setprecision(0) << r.elapsed_s << " s (" << o.scheduler << " scheduler)\n";
  for (const auto& t : r.tasks)
    std::cout << "  " << t.workload << " x" << t.weight << ": " << t.trials << " trials, best " << std::setprecision(3)
              << t.best_ms << " ms\n";
  std::cout << "  end to end: " << std::setprecision(3) << r.measured_before_ms << " ms before, "
            << r.measured_after_ms << " ms after (measured; estimated " << r.initial_estimated_ms << " -> "
            << (r.rounds.empty() ? r.initial_estimated_ms : r.rounds.back().estimated_ms) << " ms)\n";
  return 0;
}

// The model file and its --input options, shared by run-model and tune-model.
void add_model_options(CLI::App* sub, std::string* model, std::vector<std::string>* inputs) {
  sub->add_option("model", *model, "the .onnx file")->required();
  sub->add_option("--input", *inputs, "NAME=SHAPE for an input with symbolic extents, e.g. x=1x3x48x192");
}

}  // namespace

Handler add_tune_model_command(CLI::App& app) {
  auto* sub = app.add_subcommand("tune-model", "tune the kernels of an ONNX model, trials going where they cut its latency most");
  auto o = std::make_shared<TuneModelOptions>();
  add_model_options(sub, &o->tune.model, &o->inputs);
  sub->add_option("--db", o->tune.db, "tuning database (default kiln.db); records already there count");
  sub->add_option("--trials", o->tune.trials, "measured configs over all tasks, earlier ones included")
      ->check(CLI::Range(1, 100000000));
  sub->add_option("--time", o->time, "wall-clock budget of this job, e.g. 30m");
  sub->add_option("--batch", o->tune.batch, "trials per round (default 32)")->check(CLI::Range(1, 4096));
  sub->add_option("--scheduler", o->scheduler,
                  "gradient (default: the task whose trials cut the latency most) or round-robin");
  sub->add_option("--tuner", o->tune.tuner.name, "xgb (default), random or grid");
  sub->add_option("--seed", o->tune.tuner.seed, "seed of the search");
  sub->add_option("--curve", o->curve, "write the rounds (estimated latency against trials) as JSON here");
  sub->add_option("--job", o->tune.job, "job name stored with every record");
  sub->add_option("--target", o->tune.target, "target string (default: this machine); cuda tunes on the first GPU");
  sub->add_flag("--json", o->json, "print one JSON object");
  return [o]() { return tune_model_command(*o); };
}

Handler add_run_model_command(CLI::App& app) {
  auto* sub = app.add_subcommand("run-model", "compile an ONNX model with kiln, run it, time it, compare it");
  auto o = std::make_shared<RunModelOptions>();
  add_model_options(sub, &o->run.model, &o->inputs);
  sub->add_option("--db", o->run.db, "use the best tuned config of each kernel in this database");
  sub->add_option("--target", o->run.target,
                  "target string (default: this machine); cuda runs the network on the first GPU (ONNX Runtime, "
                  "with --compare, on the CPU)");
  sub->add_option("--in", o->run.in_files, "raw input file: FILE (one input) or NAME=FILE (default: random)");
  sub->add_option("--out", o->run.out_file, "write the first output here, raw");
  sub->add_option("--compare", o->compare,
                  "ort: run ONNX Runtime (onnxruntime-node) on the same inputs and threads, compare the outputs "
                  "(exit 1 beyond 1e-4 of the output's range) and time it interleaved with kiln");
  sub->add_option("--samples", o->run.samples, "random inputs to compare (default 1)")->check(CLI::Range(1, 10000));
  sub->add_option("--seed", o->run.seed, "seed of the random inputs");
  sub->add_option("--repeat", o->run.timing.repeat, "measurements per round (default 5)")->check(CLI::Range(1, 100000));
  sub->add_option("--rounds", o->run.rounds, "interleaved timing rounds (default 3)")->check(CLI::Range(1, 1000));
  sub->add_flag("--no-time", o->no_time, "run and compare only");
  sub->add_flag(
      "--nchw", [o](int64_t) { o->run.plan_layouts = false; },
      "keep every tensor NCHW: no layout planning (convolutions pack their operands per call)");
  sub->add_option("--profile", o->run.profile, "list the N slowest kernels, each timed alone")->check(CLI::Range(0, 100000));
  sub->add_flag("--json", o->json, "print one JSON object");
  return [o]() { return run_model_command(*o); };
}

}  // namespace kiln::cli
