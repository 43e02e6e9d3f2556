// Synthetic inputs for kiln report at scale (bench/report_scale.sh and the
// browser checks of tests/browser_report.sh):
//   report_fixture records TASKS TRIALS > records.jsonl   (then `kiln import`)
//   report_fixture bench WORKLOADS > bench.json
//   report_fixture model-curve SCHEDULER ROUNDS > curve.json   (a `kiln tune-model --curve` file)
// Records: TASKS real workloads (matmul and conv2d shapes, so the roofline
// can place them), TRIALS trials each in batches of 64 over two jobs, with a
// rising best, errors of every kind, and model predictions that rank about
// 70% of pairs right. Deterministic (a fixed LCG), so sizes repeat.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

namespace {

using nlohmann::json;

struct Lcg {
  uint64_t s = 0x2545F4914F6CDD1DULL;
  double uniform() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(s >> 11) / 9007199254740992.0;
  }
};

const char* const kTarget =
    "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512 -mattr=+avx512f,+avx512bw,+avx512dq,+avx512vl";

std::string workload(int i) {
  if (i % 2 == 0) {
    int m = 64 + 16 * i, n = 128 + 64 * (i % 5), k = 64 + 64 * (i % 3);
    return "matmul:M=" + std::to_string(m) + ",N=" + std::to_string(n) + ",K=" + std::to_string(k) +
           ",dtype=f32,bias=0,relu=0";
  }
  int c = 16 << (i % 3), hw = 8 + i;
  return "conv2d:N=1,C=" + std::to_string(c) + ",H=" + std::to_string(hw) + ",W=" + std::to_string(hw) +
         ",K=" + std::to_string(2 * c) + ",R=3,S=3,stride=1,pad=1,dilation=1,dtype=f32";
}

double flops_of(int i) {
  if (i % 2 == 0) return 2.0 * (64 + 16 * i) * (128 + 64 * (i % 5)) * (64 + 64 * (i % 3));
  double c = 16 << (i % 3), hw = 8 + i;
  return 2.0 * c * 2 * c * hw * hw * 9;
}

int records(int tasks, int trials) {
  const char* kinds[] = {"compile_error", "runtime_crash", "runtime_timeout", "wrong_result", "invalid_config"};
  Lcg rng;
  const int64_t start = 1795000000;
  for (int t = 0; t < tasks; ++t) {
    const double flops = flops_of(t), ceiling = 80 + 160 * rng.uniform();
    for (int i = 0; i < trials; ++i) {
      const int round = i / 64;
      // Quality rises with the batch; the model sees it through noise.
      const double quality = std::min(
          1.0, 0.3 + 0.6 * std::sqrt((round + 1.0) / (trials / 64.0 + 1)) * rng.uniform() + 0.1 * rng.uniform());
      const bool failed = rng.uniform() < 0.04;
      const double gflops = failed ? 0 : ceiling * quality;
      const double ms = failed ? 0 : flops / (gflops * 1e6);
      json r = {{"workload", workload(t)},
                {"op", t % 2 == 0 ? "matmul" : "conv2d"},
                {"target", kTarget},
                {"flops", flops},
                {"config", {{"tile_x", {1 + i % 8, 16}}, {"tile_y", {1 + (i / 8) % 8, 4}}, {"unroll", i % 2}}},
                {"config_index", std::to_string(static_cast<uint64_t>(t) * 1000003 + i)},
                {"samples_ms", failed ? json::array() : json::array({ms, ms * 1.01, ms * 0.99})},
                {"error", failed ? kinds[i % 5] : "none"},
                {"error_msg", failed ? "synthetic failure" : ""},
                {"device", "local"},
                {"compile_ms", 40 + 20 * rng.uniform()},
                {"timestamp", start + t * 4000 + i * 3},
                {"kiln_version", KILN_VERSION},
                {"job", t < tasks / 2 ? "tune-fixture-a" : "tune-fixture-b"},
                {"round", round}};
      if (round > 0) r["predicted"] = std::clamp(quality + 0.25 * (rng.uniform() - 0.5), 0.0, 1.0);
      std::cout << r.dump() << "\n";
    }
  }
  return 0;
}

int bench(int workloads) {
  json b = {
      {"suite", "fixture"},
      {"date", "2026-11-23 00:00 UTC"},
      {"machine", "synthetic"},
      {"target", kTarget},
      {"machine_probe", {{"cpu", "synthetic CPU"}, {"threads", 2}, {"peak_gflops", 300.0}, {"bandwidth_gbs", 30.0}}},
      {"threads", 2},
      {"command", "report_fixture bench"},
      {"rounds", 3},
      {"min_repeat_ms", 100},
      {"baselines", {{"onednn", "oneDNN (synthetic)"}}},
      {"workloads", json::array()}};
  Lcg rng;
  double log_sum = 0;
  for (int i = 0; i < workloads; ++i) {
    double flops = flops_of(i), kiln = 100 + 150 * rng.uniform(), onednn = 100 + 150 * rng.uniform();
    json w = {
        {"workload", workload(i)},
        {"op", i % 2 == 0 ? "matmul" : "conv2d"},
        {"flops", flops},
        {"bytes", flops / (8 + 20 * rng.uniform())},
        {"kiln_config", "database"},
        {"best_baseline", "onednn"},
        {"ratio", kiln / onednn},
        {"results",
         {{"kiln", {{"gflops", kiln}, {"median_ms", flops / (kiln * 1e6)}, {"check", "ok"}, {"impl", "kiln"}}},
          {"onednn", {{"gflops", onednn}, {"median_ms", flops / (onednn * 1e6)}, {"check", "ok"}, {"impl", "jit"}}}}}};
    log_sum += std::log(kiln / onednn);
    b["workloads"].push_back(w);
  }
  b["geomean"] = {{"onednn", {{"ratio", std::exp(log_sum / std::max(1, workloads))}, {"workloads", workloads}}}};
  std::cout << b.dump(2) << "\n";
  return 0;
}

// A network of four tasks tuned in rounds of 32 trials: gradient puts its
// rounds on the task that cuts the estimate most, round-robin takes turns.
int model_curve(const std::string& scheduler, int rounds) {
  const int weights[] = {4, 2, 1, 1};
  const double start_ms[] = {0.9, 0.6, 0.5, 0.2};
  double best[] = {0.9, 0.6, 0.5, 0.2};
  int trials[] = {0, 0, 0, 0};
  const double other_ms = 1.2;
  auto estimated = [&] {
    double ms = other_ms;
    for (int t = 0; t < 4; ++t) ms += weights[t] * best[t];
    return ms;
  };
  json curve = json::array();
  const double initial = estimated();
  for (int r = 0; r < rounds; ++r) {
    int t = r % 4;
    if (scheduler == "gradient") {
      double gain = -1;
      for (int k = 0; k < 4; ++k) {
        double g = weights[k] * best[k] / (1 + trials[k] / 32.0);
        if (g > gain) {
          gain = g;
          t = k;
        }
      }
    }
    trials[t] += 32;
    best[t] = start_ms[t] * (0.4 + 0.6 / std::sqrt(1 + trials[t] / 32.0));
    int total = 0;
    for (int n : trials) total += n;
    curve.push_back({{"round", r},
                     {"workload", workload(t)},
                     {"trials", total},
                     {"best_ms", best[t]},
                     {"estimated_ms", estimated()},
                     {"elapsed_s", 4.0 * (r + 1)}});
  }
  json tasks = json::array();
  for (int t = 0; t < 4; ++t)
    tasks.push_back({{"workload", workload(t)},
                     {"weight", weights[t]},
                     {"trials", trials[t]},
                     {"best_ms", best[t]},
                     {"batches", trials[t] / 32}});
  json j = {{"model", "/models/fixture.onnx"},
            {"scheduler", scheduler},
            {"db", "fixture-" + scheduler + ".db"},
            {"initial_estimated_ms", initial},
            {"other_ms", other_ms},
            {"measured_before_ms", initial * 1.03},
            {"measured_after_ms", estimated() * 1.03},
            {"elapsed_s", 4.0 * rounds + 2},
            {"curve", curve},
            {"tasks", tasks}};
  std::cout << j.dump(1) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "records" && argc == 4) return records(std::atoi(argv[2]), std::atoi(argv[3]));
  if (mode == "bench" && argc == 3) return bench(std::atoi(argv[2]));
  if (mode == "model-curve" && argc == 4) return model_curve(argv[2], std::atoi(argv[3]));
  std::cerr << "usage: report_fixture records TASKS TRIALS | report_fixture bench WORKLOADS | report_fixture "
               "model-curve SCHEDULER ROUNDS\n";
  return 2;
}
