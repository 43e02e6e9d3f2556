#include "bench/bench_table.h"

#include <iomanip>
#include <sstream>
#include <vector>

#include "bench/bench_runner.h"
#include "bench/contenders/baselines.h"

namespace kiln {

using nlohmann::json;

std::vector<std::string> bench_columns(const json& result) {
  std::vector<std::string> cols = result_baselines(result);
  bool unfused = false;
  for (auto& w : result.at("workloads")) unfused |= w["results"].contains(kUnfused);
  if (unfused) cols.insert(cols.begin(), kUnfused);
  cols.insert(cols.begin(), "kiln");
  return cols;
}

namespace {

std::string fixed(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}


// A contender's cell: GFLOP/s (and GB/s for a memory-bound workload), "-"
// (no contender for the op), "n/a" (it could not run this instance) or
// "WRONG" (its output differs).
std::string cell(const json& w, const std::string& name) {
  const json& results = w["results"];
  if (!results.contains(name)) return "-";
  const json& r = results[name];
  if (r.contains("error")) return "n/a";
  if (r.value("check", std::string("ok")) != "ok") return "WRONG";
  double g = r.at("gflops").get<double>();
  std::string s = fixed(g, g < 10 ? 2 : 1);
  if (memory_bound(w) && r.contains("gbps")) s += " (" + fixed(r["gbps"].get<double>(), 1) + ")";
  return s;
}

// kiln's cell notes the variant it chose when the workload had alternatives.
std::string kiln_cell(const json& w) {
  std::string c = cell(w, "kiln");
  if (w.contains("kiln_variant") && w["kiln_variant"] != "direct") c += " " + w["kiln_variant"].get<std::string>();
  return c;
}

std::string ratio_cell(const json& w) {
  if (!w.contains("ratio")) return "-";
  return fixed(w["ratio"].get<double>(), 2) + "x " + baseline_display_name(w["best_baseline"].get<std::string>());
}

std::string check_cell(const json& results) {
  for (auto& [name, r] : results.items())
    if (r.contains("check") && r["check"] != "ok") return baseline_display_name(name) + " differs";
  return "ok";
}

}  // namespace

std::string bench_machine_text(const json& result) {
  if (result.contains("gpu")) {
    const json& g = result["gpu"];
    return "GPU " + g.value("name", std::string("?")) + " (" + g.value("arch", std::string("?")) + ", " +
           std::to_string(g.value("sm_count", 0)) + " SMs)";
  }
  return result.value("machine", std::string("?")) + ", " + std::to_string(result.value("threads", 0)) + " threads";
}

bool memory_bound(const json& w) {
  return w.contains("bytes") && w.contains("flops") && w["bytes"].is_number() && w["flops"].is_number() &&
         w["bytes"].get<double>() > w["flops"].get<double>();
}

std::vector<std::string> geomean_lines(const json& result) {
  std::vector<std::string> lines;
  for (auto& name : result_baselines(result)) {
    if (!result.at("geomean").contains(name)) continue;
    const json& g = result["geomean"][name];
    lines.push_back("geomean kiln/" + baseline_display_name(name) + ": " + fixed(g["ratio"].get<double>(), 2) +
                    "x over " + std::to_string(g["workloads"].get<int>()) +
                    (g["workloads"].get<int>() == 1 ? " workload" : " workloads"));
  }
  return lines;
}

std::vector<std::string> result_baselines(const json& result) {
  std::vector<std::string> names;
  for (const auto& name : baselines::all_baseline_names())
    if (result.at("baselines").contains(name)) names.push_back(name);
  return names;
}

std::string baseline_display_name(const std::string& key) {
  if (key == "onednn") return "oneDNN";
  if (key == "openblas") return "OpenBLAS";
  if (key == "halide") return "Halide";
  if (key == "cublas") return "cuBLAS";
  if (key == "cudnn") return "cuDNN";
  if (key == kUnfused) return "kiln unfused";
  return key;
}

std::string format_bench_text(const json& result) {
  std::ostringstream os;
  auto cols = bench_columns(result);
  size_t wl = 8;
  for (auto& w : result.at("workloads")) wl = std::max(wl, w["workload"].get<std::string>().size());
  os << "suite " << result["suite"].get<std::string>() << ", " << result["date"].get<std::string>() << ", "
     << bench_machine_text(result) << ", " << result["rounds"].get<int>()
     << " interleaved rounds (GFLOP/s of the best round's median; memory-bound workloads: GFLOP/s (GB/s))\n";
  os << std::left << std::setw(static_cast<int>(wl) + 2) << "workload" << std::right;
  for (auto& c : cols) os << std::setw(c == "kiln" ? 24 : 15) << baseline_display_name(c);
  os << std::setw(18) << "kiln/best"
     << "  check\n";
  for (auto& w : result.at("workloads")) {
    os << std::left << std::setw(static_cast<int>(wl) + 2) << w["workload"].get<std::string>() << std::right;
    for (auto& c : cols) os << std::setw(c == "kiln" ? 24 : 15) << (c == "kiln" ? kiln_cell(w) : cell(w, c));
    os << std::setw(18) << ratio_cell(w) << "  " << check_cell(w["results"]) << "\n";
  }
  for (auto& l : geomean_lines(result)) os << l << "\n";
  return os.str();
}

std::string format_bench_markdown(const json& result) {
  std::ostringstream os;
  auto cols = bench_columns(result);
  os << "Suite `" << result["suite"].get<std::string>() << "`, " << result["date"].get<std::string>() << ", "
     << bench_machine_text(result);
  if (!result.value("command", std::string()).empty()) os << ", `" << result["command"].get<std::string>() << "`";
  os << ". GFLOP/s (best of " << result["rounds"].get<int>()
     << " interleaved rounds; memory-bound workloads: GFLOP/s (GB/s)).\n\n";
  os << "| workload |";
  for (auto& c : cols) os << " " << baseline_display_name(c) << " |";
  os << " kiln/best | check |\n|---|";
  for (size_t i = 0; i < cols.size(); ++i) os << "---:|";
  os << "---:|---|\n";
  for (auto& w : result.at("workloads")) {
    os << "| `" << w["workload"].get<std::string>() << "` |";
    for (auto& c : cols) os << " " << (c == "kiln" ? kiln_cell(w) : cell(w, c)) << " |";
    os << " " << ratio_cell(w) << " | " << check_cell(w["results"]) << " |\n";
  }
  auto lines = geomean_lines(result);
  if (!lines.empty()) os << "\n";
  for (auto& l : lines) os << "- " << l << "\n";
  os << "\nBaselines: ";
  bool first = true;
  for (auto& name : result_baselines(result)) {
    os << (first ? "" : "; ") << result["baselines"][name].get<std::string>();
    first = false;
  }
  os << "\n";
  return os.str();
}

}  // namespace kiln
