// Chart specifications of `kiln report`: Chart.js configurations written as
// JSON data (type, datasets, axes, titles), never drawing code. The page
// hands each one to `new Chart(...)`; its small script adds only what JSON
// cannot say (tooltips that show a point's "tip", labels above bars from a
// dataset's "kilnLabels", titles from options.plugins.kiln.titles).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/report_model.h"

namespace kiln {

// A chart on the page: a canvas of `height` pixels drawn from `spec`.
struct ChartSpec {
  std::string id;
  int height = 260;
  nlohmann::json spec;
};

// A machine's roof: fp32 peak and streaming bandwidth.
struct Roof {
  std::string name;  // short target name
  double peak_gflops = 0, bandwidth_gbs = 0;
};

// A point of the roofline: arithmetic intensity (FLOPs per byte), GFLOP/s.
struct RooflinePoint {
  double intensity = 0, gflops = 0;
  std::string tip;
};

// The color of a contender ("kiln", "onednn", ...) or of the i-th series.
std::string contender_color(const std::string& name);
std::string series_color(size_t i);

// Best GFLOP/s so far against trials (or seconds), with each baseline's
// GFLOP/s on this workload (from a bench result) as a dashed line.
nlohmann::json task_curve_chart(const TaskStats& t, bool by_seconds, const std::map<std::string, double>& baselines);
// Every task of a job on one axis: best so far as % of each task's best.
nlohmann::json job_chart(const JobStats& job, const std::map<std::string, std::string>& task_labels);
// The model's pairwise ranking accuracy per batch: pooled over tasks, and
// per task when there are at most 12.
nlohmann::json accuracy_chart(const std::vector<TaskStats>& tasks);
// Predicted score against measured throughput (share of the task's best);
// at most max_points points (evenly sampled).
nlohmann::json prediction_chart(const std::vector<TaskStats>& tasks, size_t max_points = 3000);
// Failed candidates per task, stacked by error kind.
nlohmann::json errors_chart(const std::vector<TaskStats>& tasks, const std::map<std::string, std::string>& task_labels);
// Log-log roofline: the roof, kiln's points and each baseline's.
nlohmann::json roofline_chart(const Roof& roof, const std::map<std::string, std::vector<RooflinePoint>>& points);
// The title of model_curve_chart.
extern const char* const kModelCurveTitle;
// Every `kiln tune-model` job on one axis, one line each: the network's
// estimated end-to-end latency against the trials of all its tasks, so that
// schedulers compare at the same number of trials (round-robin dashed).
nlohmann::json model_curve_chart(const std::vector<ModelCurveStats>& curves);
// Grouped bars of a bench result: kiln and each baseline per workload in
// GFLOP/s, with `percent_labels` (per contender, per workload) above the bars.
nlohmann::json bench_chart(const nlohmann::json& bench, const std::vector<std::string>& contenders,
                           const std::map<std::string, std::vector<std::string>>& percent_labels);

}  // namespace kiln
