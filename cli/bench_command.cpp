// `kiln bench --suite NAME|FILE [--target cuda] [--db F] [--tune-trials N]
//  [--baselines onednn,openblas,halide|cublas,cudnn] [--json F] [--md F] [--rounds R]`
#include "cli/bench_command.h"

#include <fstream>
#include <iostream>
#include <sstream>

#include "bench/bench_runner.h"
#include "bench/bench_table.h"
#include "base/error.h"

namespace kiln::cli {

namespace {

struct BenchCommandOptions {
  BenchOptions bench;
  std::string baselines;
  std::string json_path, md_path;
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  user_check(f.good()) << "cannot write '" << path << "'";
}

int run(BenchCommandOptions o) {
  o.bench.baselines = split_list(o.baselines);
  user_check(o.baselines.empty() || !o.bench.baselines.empty()) << "--baselines needs a comma-separated list";
  std::ostringstream cmd;
  cmd << "kiln bench --suite " << o.bench.suite;
  if (!o.bench.target.empty()) cmd << " --target \"" << o.bench.target << "\"";
  if (!o.bench.db.empty()) cmd << " --db " << o.bench.db;
  if (o.bench.tune_trials > 0) cmd << " --tune-trials " << o.bench.tune_trials;
  if (o.bench.tune_early_stop > 0) cmd << " --tune-early-stop " << o.bench.tune_early_stop;
  if (!o.baselines.empty()) cmd << " --baselines " << o.baselines;
  cmd << " --rounds " << o.bench.rounds << " --min-repeat-ms " << o.bench.min_repeat_ms;
  o.bench.command = cmd.str();
  nlohmann::json result = run_bench(o.bench, std::cerr);
  std::cout << format_bench_text(result);
  if (!o.json_path.empty()) write_file(o.json_path, result.dump(2) + "\n");
  if (!o.md_path.empty()) write_file(o.md_path, format_bench_markdown(result));
  if (!bench_outputs_ok(result)) {
    std::cerr << "kiln bench: some outputs differ from kiln's reference (see the check column)\n";
    return 1;
  }
  return 0;
}

}  // namespace

Handler add_bench_command(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "bench",
      "compare kiln's kernels with oneDNN, OpenBLAS and Halide (with --target cuda: cuBLAS and cuDNN on GPU 0) on a "
      "suite of workloads, interleaved in one run");
  auto o = std::make_shared<BenchCommandOptions>();
  sub->add_option("--suite", o->bench.suite, "suite name (resnet50, resnet50-int8, resnet50-bf16, bert-base, bert-base-bf16, bert-base-int8, mobilenet-v2, mobilenet-v3, smoke, cuda-...: see bench/suites) or file")
      ->required();
  sub->add_option("--target", o->bench.target,
                  "where kernels run: this CPU (default), or 'cuda' / 'cuda -arch=sm_XX' for GPU 0 against cuBLAS and "
                  "cuDNN");
  sub->add_option("--db", o->bench.db,
                  "tuning database: kiln runs each workload's best record (else the default config)");
  sub->add_option("--tune-trials", o->bench.tune_trials, "tune each workload into --db first, up to N trials")
      ->check(CLI::Range(0, 1 << 20));
  sub->add_option("--tune-early-stop", o->bench.tune_early_stop,
                  "with --tune-trials: stop tuning a workload after N trials without improvement (default 0: never)")
      ->check(CLI::Range(0, 1 << 20));
  sub->add_option("--baselines", o->baselines, "comma-separated: onednn,openblas,halide; with --target cuda: cublas,cudnn (default: every available)");
  sub->add_option("--json", o->json_path, "write the results as JSON (input of kiln report --bench)");
  sub->add_option("--md", o->md_path, "write the table as Markdown");
  sub->add_option("--rounds", o->bench.rounds, "interleaved rounds (default 5)")->check(CLI::Range(1, 1000));
  sub->add_option("--repeat", o->bench.repeat, "measurements per contender per round (default 5)")
      ->check(CLI::Range(1, 1000));
  sub->add_option("--min-repeat-ms", o->bench.min_repeat_ms, "minimum time of one measurement (default 100)")
      ->check(CLI::Range(0.0, 1e5));
  return [o]() { return run(*o); };
}

}  // namespace kiln::cli
