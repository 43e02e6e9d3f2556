// `kiln tune WORKLOAD... --trials N`: tunes each workload on this machine
// (or for --target), storing every measurement in the tuning database. With
// --pool HOST:PORT --key KEY the candidates are compiled for the target that
// the key's devices report and measured on the pool (rpc/pool_runner.h).
// With --variants a workload's alternatives (Winograd) share its budget
// (tasks/variant_tuning.h).
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/machine_probe.h"
#include "bench/report_writer.h"
#include "cli/commands.h"
#include "runtime/cuda_driver.h"
#include "cli/pool_commands.h"
#include "tasks/gpu_runner.h"
#include "tasks/task_factory.h"
#include "tasks/tuner_factory.h"
#include "tasks/variant_tuning.h"
#include "base/error.h"
#include "costmodel/features.h"
#include "rpc/client/pool_runner.h"
#include "tuner/local_builder.h"
#include "tuner/local_runner.h"
#include "tuner/tuning_loop.h"

namespace kiln::cli {

namespace {

struct TuneCommandOptions {
  std::vector<std::string> workloads;
  int trials = 0;
  std::string tuner = "xgb";
  std::string db = "kiln.db";
  std::string target;
  int batch = 64;
  uint64_t seed = 0;
  int early_stop = 0;
  int neighbor_seeds = 4;
  std::string fix;  // knob values every config keeps (JSON object)
  bool variants = false;
  bool json = false;
  int repeat = 3;
  double min_repeat_ms = 50;
  double screen = TuneOptions{}.screen_factor;
  double timeout_s = 10;
  double build_timeout_s = 20;
  // Device pool.
  std::string pool, key, token, tls_ca, job;
  std::string report;  // live report: rewritten after every batch
  int priority = 0;
  double pool_wait_s = 10;
};

// "tune-20261123-184012-4242": when the job started, and its process.
std::string default_job_name() { return "tune-" + utc_timestamp("%Y%m%d-%H%M%S") + "-" + std::to_string(getpid()); }

std::string format_eta(double s) {
  std::ostringstream os;
  int t = static_cast<int>(s + 0.5);
  if (t >= 3600)
    os << t / 3600 << "h" << std::setw(2) << std::setfill('0') << (t % 3600) / 60 << "m";
  else if (t >= 60)
    os << t / 60 << "m" << std::setw(2) << std::setfill('0') << t % 60 << "s";
  else
    os << t << "s";
  return os.str();
}

int run_tune(const TuneCommandOptions& o) {
  user_check(o.trials > 0) << "--trials must be a positive number of measured configs";
  check_tuner_name(o.tuner);
  MeasureOptions mo;
  mo.repeat = o.repeat;
  mo.min_repeat_ms = o.min_repeat_ms;
  mo.run_timeout_s = o.timeout_s;
  // On a pool the devices of the key decide the target; the pool runner
  // forks its client process first, while this process runs one thread.
  std::unique_ptr<rpc::PoolRunner> pool_runner;
  Target target;
  if (!o.pool.empty()) {
    user_check(!o.key.empty()) << "--pool needs --key: the key of the devices to measure on";
    user_check(o.target.empty()) << "--target cannot be combined with --pool: the devices of the key decide the target";
    rpc::PoolOptions po;
    po.tracker = o.pool;
    po.key = o.key;
    po.security.token = token_or_env(o.token);
    po.security.tls_ca = o.tls_ca;
    po.priority = o.priority;
    char host[128] = {};
    gethostname(host, sizeof host - 1);
    po.job = o.job.empty() ? "tune:" + std::to_string(getpid()) + "@" + host : o.job;
    po.key_wait_s = o.pool_wait_s;
    pool_runner = std::make_unique<rpc::PoolRunner>(po, mo);
    const rpc::DeviceInfo device = pool_runner->device_info();
    target = Target::parse(device.target());
    std::cerr << "tuning on the pool at " << o.pool << ": key '" << o.key << "', target '" << target.str() << "'"
              << (target.is_host() ? "" : " (cross-compiling)") << "\n";
  } else {
    user_check(o.key.empty() && o.token.empty() && o.tls_ca.empty()) << "--key, --token and --tls-ca need --pool";
    target = o.target.empty() ? Target::host() : Target::parse(o.target);
    if (target.is_cuda()) {
      std::string why;
      user_check(rt::cuda::available(&why))
          << "tuning for '" << target.str() << "' measures candidates on a GPU, and " << why
          << "; --pool measures them on a device server with a GPU, and `kiln run --target cuda --emulate --check` "
             "runs a workload's CUDA C on this CPU";
      // The candidates run on GPU 0: refuse another architecture's target
      // up front, as kiln run and bench do (asking a child process: this
      // one forks the builder and must not initialize CUDA).
      check_target_runs_on(rt::cuda::devices().at(0), target);
    } else {
      user_check(target.is_host()) << "kiln tune measures on this machine; target '" << target.str()
                                   << "' is not this machine's (remote devices come with --pool)";
    }
  }
  auto db = Database::open(o.db);
  // The machine's peak and bandwidth, once per target (for kiln report);
  // a pool's devices are probed with `kiln probe` where they run.
  if (!pool_runner) ensure_machine_figures(*db, target, std::cerr);
  ReportFiles report{o.db, {}, o.report};
  auto write_live_report = [&](bool running) {
    if (o.report.empty()) return;
    try {
      write_report(report, running);
    } catch (const std::exception& e) {  // also called from a destructor: never throws
      std::cerr << "kiln tune: the report was not written: " << e.what() << "\n";
    }
  };
  if (!o.report.empty()) {
    write_report(report, /*running=*/true);  // a bad --report path fails before any tuning
    std::cerr << "live report: " << o.report << " (rewritten after every batch)\n";
  }
  // The live report's last word: the job is over, however it ended.
  struct FinalReport {
    std::function<void(bool)> write;
    ~FinalReport() { write(false); }
  } final_report{write_live_report};
  const std::string job = o.job.empty() ? default_job_name() : o.job;
  // Build every task before the builder forks (no threads may exist then).
  // With --variants each workload brings its alternatives' kernels.
  std::vector<std::vector<std::string>> groups;
  std::map<std::string, Task> tasks;
  for (auto& w : o.workloads) {
    groups.push_back(o.variants ? workload_variants(w) : std::vector<std::string>{build_workload(w).canonical});
    for (auto& v : groups.back())
      if (!tasks.count(v)) {
        Task t = make_task(v, target);
        if (!o.fix.empty()) fix_task_knobs(&t, o.fix);
        tasks.emplace(v, std::move(t));
      }
  }
  const bool tty = isatty(STDERR_FILENO);
  int exit_code = 0;
  auto tune_one = [&](const Task& task, int trials) {
    TunerChoice choice;
    choice.name = o.tuner;
    choice.seed = o.seed;
    choice.batch = o.batch;
    choice.neighbor_seeds = o.neighbor_seeds;
    // The search holds the refine knobs (prefetch); they are swept on its
    // best configs afterwards.
    const Task search = search_task(task);
    auto tuner = make_tuner(choice, search, *db, target, std::cerr);
    LocalBuilderOptions bo;
    bo.timeout_s = o.build_timeout_s;
    LocalBuilder builder(bo);
    LocalRunner local_runner(mo);
    Runner& runner = pool_runner ? static_cast<Runner&>(*pool_runner) : local_runner;
    TuneOptions to;
    to.trials = trials;
    to.batch = o.batch;
    to.early_stop = o.early_stop;
    to.job = job;
    to.screen_factor = o.screen;
    auto progress = [&](const TuneProgress& p) {
      std::ostringstream line;
      line << task.workload << ": " << p.done << "/" << p.total << " trials, " << p.errors << " errors, best "
           << std::fixed << std::setprecision(1) << p.best_gflops << " GFLOP/s, ETA " << format_eta(p.eta_s);
      if (tty)
        std::cerr << "\r\033[K" << line.str() << std::flush;
      else
        std::cerr << line.str() << "\n";
    };
    TuneResult r = tune_and_refine(task, search, *tuner, builder, runner, *db, to, progress,
                                   [&](const TuneProgress&) { write_live_report(true); });
    if (tty) std::cerr << "\n";
    if (o.json) {
      nlohmann::json j;
      j["workload"] = r.workload;
      j["target"] = task.target;
      j["best_gflops"] = r.best_gflops;
      j["best_config"] = r.best_config;
      j["trials"] = r.trials;
      j["new_trials"] = r.new_trials;
      j["errors"] = r.errors;
      j["seconds"] = {{"build", r.timing.build_s},
                      {"run", r.timing.run_s},
                      {"search", r.timing.search_s},
                      {"total", r.timing.elapsed_s}};
      std::cout << j.dump() << std::endl;
    } else {
      std::cout << r.workload << "\n  trials " << r.trials << " (" << r.new_trials << " new), errors " << r.errors
                << "\n  best " << std::fixed << std::setprecision(1) << r.best_gflops
                << " GFLOP/s: " << (r.best_config.is_null() ? std::string("none ran correctly") : r.best_config.dump())
                << "\n";
    }
    if (r.best_config.is_null()) exit_code = 1;
    return r.best_gflops;
  };
  for (const auto& group : groups) {
    const size_t leader = tune_variants(
        group, o.trials, [&](const std::string& v, int trials) { return tune_one(tasks.at(v), trials); }, std::cerr);
    if (group.size() > 1) std::cerr << "fastest variant of " << group[0] << ": " << group[leader] << "\n";
  }
  return exit_code;
}

}  // namespace

Handler add_tune_command(CLI::App& app) {
  auto* sub =
      app.add_subcommand("tune", "tune workloads on this machine (or a device pool) and store every measurement");
  auto o = std::make_shared<TuneCommandOptions>();
  sub->add_option("workloads", o->workloads, "workload strings")->required();
  sub->add_option("--trials", o->trials, "measured configs per workload, earlier runs included")->required();
  sub->add_option("--tuner", o->tuner, "xgb (default), random or grid");
  sub->add_option("--db", o->db, "tuning database (default kiln.db)");
  sub->add_option("--target", o->target, "target string (default: this machine)");
  sub->add_option("--batch", o->batch, "candidates per batch (default 64)")->check(CLI::Range(1, 4096));
  sub->add_option("--seed", o->seed, "random seed (same seed, same proposals)");
  sub->add_option("--early-stop", o->early_stop, "stop after N trials without improvement (0: never)")
      ->check(CLI::Range(0, 1 << 30));
  sub->add_option("--neighbor-seeds", o->neighbor_seeds,
                  "xgb: measure first the best configs of the N nearest tuned shapes of the op (default 4; 0: none)")
      ->check(CLI::Range(0, 1 << 20));
  sub->add_option("--fix", o->fix,
                  "knob values as a JSON object that every tuned config keeps, e.g. '{\"prefetch\":0}' (a search with "
                  "those knobs held; earlier records with other values are not resumed from)");
  sub->add_flag("--variants", o->variants,
                "also tune each workload's alternatives (Winograd for a 3x3 stride-1 conv2d_nchwc) on the same --trials "
                "budget, and say which is fastest");
  sub->add_flag("--json", o->json, "print one JSON object per workload");
  sub->add_option("--repeat", o->repeat, "measurements per candidate (default 3)")->check(CLI::Range(1, 1000));
  sub->add_option("--min-repeat-ms", o->min_repeat_ms, "minimum time of one measurement (default 50)")
      ->check(CLI::Range(0.0, 1e5));
  sub->add_option("--screen", o->screen,
                  "a candidate whose first measurement is this many times slower than the best so far is not "
                  "measured again (default 1.5; 0: every candidate gets --repeat measurements)");
  sub->add_option("--timeout", o->timeout_s, "seconds a candidate may run (default 10)")->check(CLI::Range(0.01, 1e5));
  sub->add_option("--build-timeout", o->build_timeout_s, "seconds a candidate may compile (default 20)")
      ->check(CLI::Range(0.1, 1e5));
  sub->add_option("--pool", o->pool, "HOST:PORT of a device pool's tracker: measure there");
  sub->add_option("--key", o->key, "with --pool: the key of the devices to measure on");
  sub->add_option("--token", o->token, "with --pool: the pool's shared secret (default: $KILN_TOKEN)");
  sub->add_option("--tls-ca", o->tls_ca, "with --pool: PEM CA certificate to verify a TLS pool");
  sub->add_option("--priority", o->priority, "with --pool: higher jobs get devices first (default 0)");
  sub->add_option("--job", o->job,
                  "the job's name, stored with its records (and with --pool shown in `kiln pool status`)");
  sub->add_option("--report", o->report,
                  "write kiln report's HTML page here after every batch (reload it in a browser to follow the job)");
  sub->add_option("--pool-wait", o->pool_wait_s, "with --pool: seconds to wait for a device of the key (default 10)")
      ->check(CLI::Range(0.0, 86400.0));
  return [o]() { return run_tune(*o); };
}

}  // namespace kiln::cli
