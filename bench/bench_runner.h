// `kiln bench`: runs a suite's workloads with kiln's best kernel and the
// baseline contenders, interleaved round by round in one run, on the same
// inputs, with the same FLOP count, checking every contender's output
// against kiln's reference interpreter. The result is one JSON document
// (bench_table.h formats it; `kiln report --bench` renders it):
//   {"suite","date","machine","threads","command","rounds","min_repeat_ms",
//    "baselines":{name: version},
//    "workloads":[{"workload","flops","bytes","kiln_config","best_baseline","ratio",
//                  "results":{"kiln"|name: {"gflops","gbps","median_ms","round_ms",
//                             "impl","check":"ok"|"wrong: ..."} or {"error"}}}],
//    "geomean":{name: {"ratio","workloads"}}}
// where ratio = kiln GFLOP/s / the best baseline's (above 1: kiln is faster),
// bytes the inputs' and the output's sizes and gbps = bytes / time (GB/s).
// A workload whose op has alternatives (Winograd for a 3x3 convolution:
// kernels/op_registry.h) also has "variants":{"direct"|name: result} and
// "kiln_variant", the fastest correct one, whose result "kiln" then is. Its
// GFLOP/s count the op's FLOPs (the direct convolution's): effective rates.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kiln {

// The result of a fused op's unfused form run with kiln's own kernels one
// after the other ("kiln_unfused": dwsep_nchwc as its depthwise and
// pointwise halves), beside "kiln" (the fused kernel) in a workload's
// results; it is no baseline (neither in ratios nor in geomeans).
inline constexpr const char* kUnfused = "kiln_unfused";

struct BenchOptions {
  std::string suite;                   // name or path (bench_suite.h)
  std::string target;                  // "" or this CPU's target; "cuda ...": GPU 0 (gpu_bench.h)
  std::string db;                      // kiln's tuned configs ("" : the templates' defaults)
  int tune_trials = 0;                 // > 0: tune every workload into db first (its alternatives share the budget)
  int tune_early_stop = 0;             // stop a tuning after N trials without improvement (0: never)
  std::vector<std::string> baselines;  // empty: every available one
  int rounds = 5;
  int repeat = 5;  // measurements per contender per round
  double min_repeat_ms = 100;
  std::string command;  // the command line, for reports
};

// UserError for a bad suite, a workload that does not parse or names an op
// kiln does not have (with the suite line), an unknown or unavailable
// baseline, or --tune-trials without a database; for a cuda target also
// when there is no GPU or an op has no cuda template (gpu_bench.h).
// Progress goes to `log`.
nlohmann::json run_bench(const BenchOptions& options, std::ostream& log);

// Whether every output check of a result passed (kiln's and every contender's).
bool bench_outputs_ok(const nlohmann::json& result);

}  // namespace kiln
