// The HTML page of `kiln report`: self-contained (inline CSS and SVG, no
// scripts, nothing fetched), with one tuning curve per task (best GFLOP/s
// so far against trials), the best config of each task, and the table of a
// `kiln bench` result when one is given.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tuner/database.h"

namespace kiln {

struct TaskCurve {
  std::string task_key;
  std::vector<double> best_so_far;  // GFLOP/s after each trial (errors count as trials)
  int trials = 0, errors = 0;
  double best_gflops = 0;
  nlohmann::json best_config;  // null when no trial ran correctly
};

// The curve of a task from its records in insertion order.
TaskCurve task_curve(const std::string& task_key, const std::vector<Database::Record>& records);

// An inline <svg> of the curve (GFLOP/s against trials, with axes).
std::string curve_svg(const TaskCurve& curve, int width = 560, int height = 220);

// The whole page. `bench` is a `kiln bench --json` result or null.
std::string render_report_html(const std::string& title, const std::vector<TaskCurve>& curves,
                               const nlohmann::json& bench);

std::string html_escape(const std::string& s);

}  // namespace kiln
