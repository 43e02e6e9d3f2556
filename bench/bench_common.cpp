#include "bench/bench_common.h"

#include <algorithm>
#include <cmath>

#include "bench/bench_runner.h"

namespace kiln {

using nlohmann::json;

json workload_json(const BuiltKernel& k, const std::vector<rt::NDArray>& arguments) {
  json w;
  w["workload"] = k.op.canonical;
  w["op"] = k.op.op;
  w["flops"] = k.op.flops;
  double bytes = 0;
  for (const rt::NDArray& a : arguments) bytes += static_cast<double>(a.nbytes());
  w["bytes"] = bytes;
  w["kiln_config"] = k.config_source;
  if (!k.config.is_null()) w["kiln_tuned_config"] = k.config;
  return w;
}

void fill_bench_input(const rt::NDArray& input, size_t i) {
  input.fill_random(i + 1);
  if (input.dtype() != rt::DataType::u8()) return;
  auto* bytes = static_cast<uint8_t*>(input.data());
  for (int64_t e = 0; e < input.num_elements(); ++e) bytes[e] &= 0x7f;
}

json check_json(const CheckResult& c) { return c.ok ? json("ok") : json("wrong: " + c.detail); }

void run_rounds(std::vector<BenchEntry>& entries, int rounds, const rt::TimeOptions& options) {
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < entries.size(); ++i) {  // a different contender starts each round
      BenchEntry& e = entries[(i + static_cast<size_t>(r)) % entries.size()];
      e.round_ms.push_back(e.time_round(options));
    }
}

void record_results(json& w, std::vector<BenchEntry>& entries, double flops, double bytes) {
  for (BenchEntry& e : entries) {
    double best = *std::min_element(e.round_ms.begin(), e.round_ms.end());
    e.result["median_ms"] = best;
    e.result["gflops"] = flops / (best * 1e6);
    e.result["gbps"] = bytes / (best * 1e6);
    e.result["round_ms"] = e.round_ms;
    w["results"][e.name] = e.result;
  }
}

void set_best_baseline(json& w) {
  std::string best_name;
  double best_gflops = 0;
  for (auto& [name, r] : w["results"].items())
    if (name != "kiln" && name != kUnfused && r.contains("gflops") && r["check"] == "ok" &&
        r["gflops"].get<double>() > best_gflops) {
      best_gflops = r["gflops"].get<double>();
      best_name = name;
    }
  if (!best_name.empty()) {
    w["best_baseline"] = best_name;
    w["ratio"] = w["results"]["kiln"]["gflops"].get<double>() / best_gflops;
  }
}

json geomeans(const json& workloads, const std::vector<std::string>& names) {
  json g = json::object();
  for (auto& name : names) {
    double sum = 0;
    int n = 0;
    for (auto& w : workloads) {
      const json& res = w["results"];
      if (!res.contains(name) || !res[name].contains("gflops") || res[name]["check"] != "ok" ||
          res["kiln"]["check"] != "ok")
        continue;
      sum += std::log(res["kiln"]["gflops"].get<double>() / res[name]["gflops"].get<double>());
      ++n;
    }
    if (n > 0) g[name] = {{"ratio", std::exp(sum / n)}, {"workloads", n}};
  }
  return g;
}

}  // namespace kiln
