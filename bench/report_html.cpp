#include "bench/report_html.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "bench/bench_table.h"

namespace kiln {

using nlohmann::json;

namespace {

std::string num(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

// A "nice" upper bound for an axis: 1, 2 or 5 times a power of ten.
double nice_ceiling(double v) {
  if (v <= 0) return 1;
  double p = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= v) return m * p;
  return 10 * p;
}

const char* kStyle = R"(body{font-family:sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px}h2{font-size:18px;margin-top:28px}h3{font-size:15px;margin:18px 0 4px}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #bbb;padding:3px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}code{font-size:12px}.task{margin-bottom:18px}
.wrong{color:#b00;font-weight:bold}.meta{color:#555;font-size:13px}.target{color:#555;font-size:11px;word-break:break-all}td.cfg{text-align:left})";

// "workload @ target" as the workload in code and the target below it.
std::string task_html(const std::string& key) {
  size_t at = key.find(" @ ");
  if (at == std::string::npos) return "<code>" + html_escape(key) + "</code>";
  return "<code>" + html_escape(key.substr(0, at)) + "</code><div class=\"target\">" + html_escape(key.substr(at + 3)) +
         "</div>";
}

std::string bench_section(const json& bench) {
  std::ostringstream os;
  os << "<h2>Benchmark: suite " << html_escape(bench.value("suite", "")) << "</h2>\n<p class=\"meta\">"
     << html_escape(bench.value("date", "")) << ", " << html_escape(bench.value("machine", "")) << ", "
     << bench.value("threads", 0) << " threads, " << bench.value("rounds", 0) << " interleaved rounds";
  if (!bench.value("command", std::string()).empty()) os << ", <code>" << html_escape(bench["command"]) << "</code>";
  os << "</p>\n<table><tr><th>workload</th><th>kiln</th>";
  std::vector<std::string> names;
  for (auto& name : result_baselines(bench)) {
    names.push_back(name);
    os << "<th>" << html_escape(baseline_display_name(name)) << "</th>";
  }
  os << "<th>kiln/best</th></tr>\n";
  names.insert(names.begin(), "kiln");
  for (auto& w : bench.at("workloads")) {
    os << "<tr><td><code>" << html_escape(w["workload"].get<std::string>()) << "</code></td>";
    for (auto& n : names) {
      const json& res = w["results"];
      if (!res.contains(n))
        os << "<td>-</td>";
      else if (res[n].contains("error"))
        os << "<td title=\"" << html_escape(res[n]["error"].get<std::string>()) << "\">n/a</td>";
      else if (res[n].value("check", std::string("ok")) != "ok")
        os << "<td class=\"wrong\">WRONG</td>";
      else
        os << "<td>" << num(res[n]["gflops"].get<double>(), res[n]["gflops"].get<double>() < 10 ? 2 : 1) << "</td>";
    }
    os << "<td>"
       << (w.contains("ratio")
               ? num(w["ratio"].get<double>(), 2) + "x " + baseline_display_name(w["best_baseline"].get<std::string>())
               : std::string("-"))
       << "</td></tr>\n";
  }
  os << "</table>\n<ul>\n";
  for (auto& name : result_baselines(bench)) {
    if (!bench.at("geomean").contains(name)) continue;
    const json& g = bench["geomean"][name];
    os << "<li>geomean kiln/" << html_escape(baseline_display_name(name)) << ": " << num(g["ratio"].get<double>(), 2)
       << "x over " << g["workloads"].get<int>() << (g["workloads"].get<int>() == 1 ? " workload" : " workloads")
       << "</li>\n";
  }
  os << "</ul>\n<p class=\"meta\">GFLOP/s; FLOPs counted the same way for every contender (padding included).";
  for (auto& name : result_baselines(bench))
    os << " " << html_escape(baseline_display_name(name)) << ": "
       << html_escape(bench["baselines"][name].get<std::string>()) << ".";
  os << "</p>\n";
  return os.str();
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

TaskCurve task_curve(const std::string& task_key, const std::vector<Database::Record>& records) {
  TaskCurve c;
  c.task_key = task_key;
  double best = 0;
  for (auto& r : records) {
    ++c.trials;
    if (!r.ok()) {
      ++c.errors;
    } else if (r.gflops > best) {
      best = r.gflops;
      c.best_config = r.config;
    }
    c.best_so_far.push_back(best);
  }
  c.best_gflops = best;
  return c;
}

std::string curve_svg(const TaskCurve& c, int width, int height) {
  const int left = 56, right = 16, top = 12, bottom = 36;
  const double pw = width - left - right, ph = height - top - bottom;
  const double ymax = nice_ceiling(c.best_gflops * 1.05);
  const double xmax = std::max<double>(1, static_cast<double>(c.best_so_far.size()));
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height << "\" viewBox=\"0 0 "
     << width << " " << height << "\" role=\"img\" aria-label=\"tuning curve\">\n";
  os << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << pw << "\" height=\"" << ph
     << "\" fill=\"#f7f7fb\" stroke=\"#888\"/>\n";
  for (int i = 0; i <= 5; ++i) {  // y grid and labels
    double v = ymax * i / 5, y = top + ph - ph * i / 5;
    os << "<line x1=\"" << left << "\" x2=\"" << left + pw << "\" y1=\"" << num(y, 1) << "\" y2=\"" << num(y, 1)
       << "\" stroke=\"#ddd\"/><text x=\"" << left - 6 << "\" y=\"" << num(y + 4, 1)
       << "\" font-size=\"11\" text-anchor=\"end\">" << num(v, v < 10 ? 1 : 0) << "</text>\n";
  }
  os << "<text x=\"" << left << "\" y=\"" << height - 6 << "\" font-size=\"11\">0</text><text x=\"" << left + pw
     << "\" y=\"" << height - 6 << "\" font-size=\"11\" text-anchor=\"end\">" << c.best_so_far.size()
     << "</text><text x=\"" << left + pw / 2 << "\" y=\"" << height - 6
     << "\" font-size=\"11\" text-anchor=\"middle\">trials</text>\n";
  os << "<text x=\"14\" y=\"" << top + ph / 2 << "\" font-size=\"11\" text-anchor=\"middle\" transform=\"rotate(-90 14 "
     << top + ph / 2 << ")\">best GFLOP/s</text>\n";
  if (!c.best_so_far.empty()) {
    os << "<polyline fill=\"none\" stroke=\"#2060c0\" stroke-width=\"2\" points=\"";
    for (size_t i = 0; i < c.best_so_far.size(); ++i) {
      double x0 = left + pw * static_cast<double>(i) / xmax, x1 = left + pw * static_cast<double>(i + 1) / xmax;
      double y = top + ph - ph * c.best_so_far[i] / ymax;
      os << num(x0, 1) << "," << num(y, 1) << " " << num(x1, 1) << "," << num(y, 1) << " ";
    }
    os << "\"/>\n";
  }
  os << "</svg>";
  return os.str();
}

std::string render_report_html(const std::string& title, const std::vector<TaskCurve>& curves, const json& bench) {
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << html_escape(title)
     << "</title>\n<style>" << kStyle << "</style></head><body>\n<h1>" << html_escape(title) << "</h1>\n";
  if (!bench.is_null()) os << bench_section(bench);
  os << "<h2>Tuning</h2>\n";
  if (curves.empty()) os << "<p>The database holds no tasks.</p>\n";
  if (!curves.empty()) {
    os << "<table><tr><th>task</th><th>trials</th><th>errors</th><th>best GFLOP/s</th><th>best config</th></tr>\n";
    for (auto& c : curves)
      os << "<tr><td>" << task_html(c.task_key) << "</td><td>" << c.trials << "</td><td>" << c.errors << "</td><td>"
         << num(c.best_gflops, 1) << "</td><td class=\"cfg\"><code>"
         << (c.best_config.is_null() ? std::string("none ran correctly") : html_escape(c.best_config.dump()))
         << "</code></td></tr>\n";
    os << "</table>\n";
  }
  for (auto& c : curves)
    os << "<div class=\"task\"><h3>" << task_html(c.task_key) << "</h3>\n" << curve_svg(c) << "</div>\n";
  os << "</body></html>\n";
  return os.str();
}

}  // namespace kiln
