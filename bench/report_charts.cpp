#include "bench/report_charts.h"

#include <algorithm>
#include <cmath>

#include "bench/bench_runner.h"
#include "bench/bench_table.h"

namespace kiln {

using nlohmann::json;

namespace {

const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

json axis(const std::string& title, const char* type = "linear") {
  return {{"type", type}, {"title", {{"display", true}, {"text", title}}}};
}

json base_options(const std::string& title) {
  return {{"animation", false},
          {"responsive", true},
          {"maintainAspectRatio", false},
          {"normalized", true},
          {"plugins", {{"title", {{"display", !title.empty()}, {"text", title}}}}}};
}

json xy(const std::vector<CurvePoint>& pts) {
  json a = json::array();
  for (const auto& p : pts) a.push_back({{"x", p.x}, {"y", p.y}});
  return a;
}

json line_dataset(const std::string& label, json data, const std::string& color) {
  return {{"label", label},   {"data", std::move(data)}, {"borderColor", color}, {"backgroundColor", color},
          {"pointRadius", 2}, {"borderWidth", 2},        {"stepped", "after"}};
}

}  // namespace

std::string series_color(size_t i) { return kPalette[i % (sizeof(kPalette) / sizeof(kPalette[0]))]; }

std::string contender_color(const std::string& name) {
  if (name == "kiln") return kPalette[0];
  if (name == "onednn") return kPalette[1];
  if (name == "openblas") return kPalette[2];
  if (name == "halide") return kPalette[4];
  if (name == kUnfused) return "#9ecae1";
  return kPalette[7];
}

json task_curve_chart(const TaskStats& t, bool by_seconds, const std::map<std::string, double>& baselines) {
  const auto& pts = by_seconds ? t.by_seconds : t.by_trial;
  json datasets = json::array({line_dataset("kiln best so far", xy(pts), contender_color("kiln"))});
  double x_end = pts.empty() ? 1 : std::max(1.0, pts.back().x);
  for (const auto& [name, g] : baselines) {
    json d = line_dataset(baseline_display_name(name), json::array({{{"x", 0}, {"y", g}}, {{"x", x_end}, {"y", g}}}),
                          contender_color(name));
    d["borderDash"] = {6, 4};
    d["pointRadius"] = 0;
    d["stepped"] = false;
    datasets.push_back(d);
  }
  json o = base_options(by_seconds ? "against wall-clock time" : "against trials");
  o["scales"] = {{"x", axis(by_seconds ? "seconds since the first trial" : "trials")}, {"y", axis("best GFLOP/s")}};
  o["scales"]["x"]["min"] = 0;
  o["scales"]["y"]["min"] = 0;
  o["plugins"]["legend"] = {{"display", !baselines.empty()}};
  return {{"type", "line"}, {"data", {{"datasets", datasets}}}, {"options", o}};
}

json job_chart(const JobStats& job, const std::map<std::string, std::string>& task_labels) {
  json datasets = json::array();
  size_t i = 0;
  for (const auto& [key, pts] : job.tasks) {
    auto it = task_labels.find(key);
    json d = line_dataset(it == task_labels.end() ? key : it->second, xy(pts), series_color(i++));
    d["borderWidth"] = 1.5;
    d["pointRadius"] = 0;
    datasets.push_back(d);
  }
  json o = base_options("job " + job.job + ": every task as a percentage of its best");
  o["scales"] = {{"x", axis("trials of this job")}, {"y", axis("% of the task's best")}};
  o["scales"]["x"]["min"] = 0;
  o["scales"]["y"]["min"] = 0;
  o["scales"]["y"]["max"] = 100;
  o["plugins"]["legend"] = {{"display", job.tasks.size() <= 12}};
  return {{"type", "line"}, {"data", {{"datasets", datasets}}}, {"options", o}};
}

json accuracy_chart(const std::vector<TaskStats>& tasks) {
  std::map<int, std::pair<double, int64_t>> pooled;  // round -> (right pairs, pairs)
  json datasets = json::array();
  size_t with_rounds = 0;
  for (const auto& t : tasks) with_rounds += !t.rounds.empty();
  size_t i = 1;
  for (const auto& t : tasks) {
    if (t.rounds.empty()) continue;
    json pts = json::array();
    for (const auto& r : t.rounds) {
      pooled[r.round].first += r.accuracy * static_cast<double>(r.pairs);
      pooled[r.round].second += r.pairs;
      pts.push_back(
          {{"x", r.round},
           {"y", r.accuracy},
           {"tip", t.workload + "\nbatch " + std::to_string(r.round) + ": " + std::to_string(r.pairs) + " pairs"}});
    }
    if (with_rounds > 12) continue;
    json d = line_dataset(t.workload, pts, series_color(i++));
    d["stepped"] = false;
    d["borderWidth"] = 1;
    datasets.push_back(d);
  }
  json all = json::array();
  for (const auto& [round, rp] : pooled)
    all.push_back({{"x", round},
                   {"y", rp.first / static_cast<double>(rp.second)},
                   {"tip", "all tasks, batch " + std::to_string(round) + ": " + std::to_string(rp.second) + " pairs"}});
  json d = line_dataset("all tasks", all, "#000000");
  d["stepped"] = false;
  d["borderWidth"] = 3;
  datasets.insert(datasets.begin(), d);
  json o = base_options("cost model: pairwise ranking accuracy on each batch before it was measured");
  o["scales"] = {{"x", axis("batch")}, {"y", axis("share of pairs ranked right")}};
  o["scales"]["y"]["min"] = 0;
  o["scales"]["y"]["max"] = 1;
  o["plugins"]["legend"] = {{"display", datasets.size() <= 13}};
  return {{"type", "line"}, {"data", {{"datasets", datasets}}}, {"options", o}};
}

json prediction_chart(const std::vector<TaskStats>& tasks, size_t max_points) {
  size_t total = 0;
  for (const auto& t : tasks) total += t.predictions.size();
  const size_t stride = std::max<size_t>(1, (total + max_points - 1) / std::max<size_t>(1, max_points));
  json pts = json::array();
  size_t n = 0;
  for (const auto& t : tasks)
    for (const auto& p : t.predictions)
      if (n++ % stride == 0) pts.push_back({{"x", p.predicted}, {"y", 100 * p.measured}, {"tip", t.workload}});
  json d = {{"label", "candidates"},
            {"data", pts},
            {"backgroundColor", "rgba(31,119,180,0.35)"},
            {"borderColor", "rgba(31,119,180,0.6)"},
            {"pointRadius", 2.5}};
  std::string title = "predicted score against measured throughput";
  if (stride > 1) title += " (every " + std::to_string(stride) + "th of " + std::to_string(total) + " candidates)";
  json o = base_options(title);
  o["scales"] = {{"x", axis("model score before measuring (0-1 within the model)")},
                 {"y", axis("measured, % of the task's best (0: failed)")}};
  o["plugins"]["legend"] = {{"display", false}};
  return {{"type", "scatter"}, {"data", {{"datasets", json::array({d})}}}, {"options", o}};
}

json errors_chart(const std::vector<TaskStats>& tasks, const std::map<std::string, std::string>& task_labels) {
  std::vector<std::string> kinds;
  for (const auto& t : tasks)
    for (const auto& [kind, n] : t.errors_by_kind)
      if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
  std::sort(kinds.begin(), kinds.end());
  json labels = json::array(), titles = json::array(), datasets = json::array();
  for (const auto& t : tasks) {
    auto it = task_labels.find(t.key);
    labels.push_back(it == task_labels.end() ? t.key : it->second);
    titles.push_back(t.workload + " (" + std::to_string(t.trials) + " trials)");
  }
  for (size_t k = 0; k < kinds.size(); ++k) {
    json data = json::array();
    for (const auto& t : tasks) {
      auto it = t.errors_by_kind.find(kinds[k]);
      data.push_back(it == t.errors_by_kind.end() ? 0 : it->second);
    }
    datasets.push_back({{"label", kinds[k]}, {"data", data}, {"backgroundColor", series_color(k + 3)}});
  }
  json o = base_options("failed candidates per task, by kind");
  o["scales"] = {{"x", axis("task", "category")}, {"y", axis("failed candidates")}};
  o["scales"]["x"]["stacked"] = true;
  o["scales"]["y"]["stacked"] = true;
  o["plugins"]["kiln"] = {{"titles", titles}};
  return {{"type", "bar"}, {"data", {{"labels", labels}, {"datasets", datasets}}}, {"options", o}};
}

json roofline_chart(const Roof& roof, const std::map<std::string, std::vector<RooflinePoint>>& points) {
  double lo = 1e9, hi = 0;
  for (const auto& [name, pts] : points)
    for (const auto& p : pts) {
      lo = std::min(lo, p.intensity);
      hi = std::max(hi, p.intensity);
    }
  const double ridge = roof.peak_gflops / roof.bandwidth_gbs;
  lo = std::min(lo, ridge) / 4;
  hi = std::max(hi, ridge) * 4;
  json roof_pts = json::array({{{"x", lo}, {"y", roof.bandwidth_gbs * lo}},
                               {{"x", ridge}, {"y", roof.peak_gflops}},
                               {{"x", hi}, {"y", roof.peak_gflops}}});
  json datasets = json::array(
      {{{"label", "roof: " + std::to_string(static_cast<int>(std::lround(roof.peak_gflops))) + " GFLOP/s, " +
                      std::to_string(static_cast<int>(std::lround(roof.bandwidth_gbs))) + " GB/s"},
        {"type", "line"},
        {"data", roof_pts},
        {"borderColor", "#444444"},
        {"backgroundColor", "#444444"},
        {"borderWidth", 2},
        {"pointRadius", 0}}});
  const char* styles[] = {"triangle", "rect", "rectRot", "star", "crossRot"};
  size_t s = 0;
  for (const auto& [name, pts] : points) {
    json data = json::array();
    for (const auto& p : pts) data.push_back({{"x", p.intensity}, {"y", p.gflops}, {"tip", p.tip}});
    bool is_kiln = name == "kiln";
    datasets.push_back({{"label", is_kiln ? std::string("kiln") : baseline_display_name(name)},
                        {"data", data},
                        {"borderColor", contender_color(name)},
                        {"backgroundColor", contender_color(name)},
                        {"pointStyle", is_kiln ? "circle" : styles[s++ % 5]},
                        {"pointRadius", is_kiln ? 5 : 6}});
  }
  json o = base_options("roofline of " + roof.name);
  o["scales"] = {{"x", axis("arithmetic intensity (FLOPs per byte of inputs and outputs)", "logarithmic")},
                 {"y", axis("GFLOP/s", "logarithmic")}};
  o["scales"]["x"]["min"] = lo;
  o["scales"]["x"]["max"] = hi;
  return {{"type", "scatter"}, {"data", {{"datasets", datasets}}}, {"options", o}};
}

const char* const kModelCurveTitle = "Model tuning: estimated end-to-end latency against trials";

json model_curve_chart(const std::vector<ModelCurveStats>& curves) {
  json datasets = json::array();
  for (size_t i = 0; i < curves.size(); ++i) {
    const ModelCurveStats& c = curves[i];
    json data = json::array();
    for (size_t k = 0; k < c.points.size(); ++k)
      data.push_back({{"x", c.points[k].x}, {"y", c.points[k].y}, {"tip", k < c.tips.size() ? c.tips[k] : ""}});
    json d = line_dataset(c.label, data, series_color(i));
    d["stepped"] = "before";  // an estimate holds until the next round has measured its trials
    if (c.scheduler == "round-robin") d["borderDash"] = {6, 4};
    datasets.push_back(d);
  }
  json o = base_options(kModelCurveTitle);
  o["scales"] = {{"x", axis("trials (all of the model's tasks)")}, {"y", axis("estimated end-to-end latency (ms)")}};
  o["scales"]["x"]["min"] = 0;
  o["plugins"]["legend"] = {{"display", true}};
  return {{"type", "line"}, {"data", {{"datasets", datasets}}}, {"options", o}};
}

json bench_chart(const json& bench, const std::vector<std::string>& contenders,
                 const std::map<std::string, std::vector<std::string>>& percent_labels) {
  json labels = json::array(), titles = json::array(), datasets = json::array();
  int i = 0;
  for (const auto& w : bench.at("workloads")) {
    std::string workload = w.at("workload").get<std::string>();
    labels.push_back("#" + std::to_string(++i) + " " + workload.substr(0, workload.find(':')));
    titles.push_back(workload);
  }
  for (const auto& name : contenders) {
    json data = json::array();
    for (const auto& w : bench["workloads"]) {
      const json& res = w.at("results");
      bool ok = res.contains(name) && res[name].contains("gflops") && res[name].value("check", "ok") == "ok";
      data.push_back(ok ? res[name]["gflops"] : json());
    }
    json d = {{"label", name == "kiln"     ? std::string("kiln")
                        : name == kUnfused ? std::string("kiln unfused")
                                           : baseline_display_name(name)},
              {"data", data},
              {"backgroundColor", contender_color(name)}};
    auto it = percent_labels.find(name);
    if (it != percent_labels.end()) d["kilnLabels"] = it->second;
    datasets.push_back(d);
  }
  json o = base_options("");
  o["scales"] = {{"x", axis("workload", "category")}, {"y", axis("GFLOP/s")}};
  o["scales"]["y"]["min"] = 0;
  o["plugins"]["kiln"] = {{"titles", titles}};
  return {{"type", "bar"}, {"data", {{"labels", labels}, {"datasets", datasets}}}, {"options", o}};
}

}  // namespace kiln
