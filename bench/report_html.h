// The page of `kiln report`: one self-contained HTML file (Chart.js and its
// licence notice inlined, every chart's data and spec as JSON, nothing
// fetched) that opens offline. Sections: the machines (CPU, threads,
// measured fp32 peak and bandwidth, targets named short with the full
// string on hover), the bench results (grouped bars with % of peak,
// geomeans, a sortable table), model tuning (each `kiln tune-model` job's
// estimated end-to-end latency against trials on one chart, and a table of
// its rounds and measured latency before and after), the roofline, the tuning curves (per task
// against trials and time, per job as % of each task's best) and the
// search's health (ranking accuracy per batch, predicted against measured,
// errors by kind). The body carries data-charts-expected; the page script
// sets data-charts-drawn once it has drawn them (tests/browser/ checks both).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tuner/database.h"

namespace kiln {

struct ReportInput {
  std::string title;
  std::vector<Database::Record> records;  // insertion order
  std::map<std::string, double> flops;    // by task key
  std::vector<Database::Machine> machines;
  std::vector<nlohmann::json> benches;       // `kiln bench --json` results
  std::vector<nlohmann::json> model_curves;  // `kiln tune-model --curve` files (read_model_curve)
  std::string written_at;                    // shown on the page (UTC)
  bool running = false;                      // a live report of a job still running: the page reloads itself
  std::string chartjs;                       // Chart.js's source (load_chartjs)
};

// Chart.js from Debian's libjs-chart.js (KILN_CHARTJS names another copy);
// UserError naming the package when it is missing.
std::string load_chartjs();

std::string render_report_html(const ReportInput& input);

// How many charts the page draws (its data-charts-expected).
int report_chart_count(const std::string& html);

std::string html_escape(const std::string& s);

}  // namespace kiln
