#include "bench/report_html.h"

#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <set>
#include <sstream>

#include "base/error.h"
#include "bench/report_writer.h"
#include "bench/bench_runner.h"
#include "bench/bench_table.h"
#include "bench/report_charts.h"
#include "bench/report_model.h"
#include "bench/report_page_assets.h"

namespace kiln {

using nlohmann::json;

namespace {

constexpr const char* kDebianChartJs = "/usr/share/javascript/chart.js/chart.min.js";

std::string num(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

std::string gflops_text(double g) { return num(g, g < 10 ? 2 : 1); }

// The variant kiln kept and what each variant reached: "winograd_f4 (direct
// 189.4, winograd_f2 306.0, winograd_f4 508.8 GFLOP/s)"; "-" without variants.
std::string variant_text(const nlohmann::json& w) {
  if (!w.contains("kiln_variant")) return "-";
  std::string t = w["kiln_variant"].get<std::string>();
  if (!w.contains("variants")) return t;
  std::string each;
  for (const auto& [name, v] : w["variants"].items())
    each += (each.empty() ? "" : ", ") + name + " " + gflops_text(v["gflops"].get<double>());
  return t + " (" + each + " GFLOP/s)";
}

std::string date_text(int64_t unix_s) { return utc_text(unix_s, "%Y-%m-%d %H:%M UTC"); }

// Collects the page's charts; each gets a canvas where it is added.
class Page {
 public:
  std::ostringstream html;
  std::vector<ChartSpec> charts;

  void chart(json spec, int height = 260) {
    ChartSpec c{"chart" + std::to_string(charts.size()), height, std::move(spec)};
    html << "<div class=\"chart\" style=\"height:" << height << "px\"><canvas id=\"" << c.id << "\"></canvas></div>\n";
    charts.push_back(std::move(c));
  }
};

struct RoofFigures {
  double peak = 0, bandwidth = 0;
};

// The machine figures by target: the database's, then the bench results'.
std::map<std::string, RoofFigures> figures_by_target(const ReportInput& in) {
  std::map<std::string, RoofFigures> out;
  for (const auto& m : in.machines) out[m.target] = {m.peak_gflops, m.bandwidth_gbs};
  for (const auto& b : in.benches)
    if (b.contains("target") && b.contains("machine_probe") && !out.count(b["target"].get<std::string>()))
      out[b["target"]] = {b["machine_probe"].value("peak_gflops", 0.0), b["machine_probe"].value("bandwidth_gbs", 0.0)};
  return out;
}

std::string target_html(const std::string& target) {
  return "<abbr title=\"" + html_escape(target) + "\">" + html_escape(short_target_name(target)) + "</abbr>";
}

void machines_section(Page& p, const ReportInput& in, const std::vector<TaskStats>& tasks) {
  std::set<std::string> targets;
  for (const auto& t : tasks) targets.insert(t.target);
  for (const auto& b : in.benches)
    if (b.contains("target")) targets.insert(b["target"].get<std::string>());
  for (const auto& m : in.machines) targets.insert(m.target);
  if (targets.empty()) return;
  p.html << "<h2 id=\"machines\">Machines</h2>\n<table><thead><tr><th>target</th><th>CPU</th><th>threads</th>"
            "<th>fp32 peak GFLOP/s</th><th>bandwidth GB/s</th><th>measured</th></tr></thead><tbody>\n";
  for (const auto& target : targets) {
    p.html << "<tr><td>" << target_html(target) << "</td>";
    const Database::Machine* m = nullptr;
    for (const auto& mm : in.machines)
      if (mm.target == target) m = &mm;
    const json* probe = nullptr;
    for (const auto& b : in.benches)
      if (b.value("target", "") == target && b.contains("machine_probe")) probe = &b["machine_probe"];
    if (m) {
      p.html << "<td>" << html_escape(m->cpu) << "</td><td>" << m->threads << "</td><td>" << num(m->peak_gflops, 1)
             << "</td><td>" << num(m->bandwidth_gbs, 1) << "</td><td>" << date_text(m->measured_at) << "</td>";
    } else if (probe) {
      p.html << "<td>" << html_escape(probe->value("cpu", "")) << "</td><td>" << probe->value("threads", 0)
             << "</td><td>" << num(probe->value("peak_gflops", 0.0), 1) << "</td><td>"
             << num(probe->value("bandwidth_gbs", 0.0), 1) << "</td><td>by kiln bench</td>";
    } else {
      p.html << "<td colspan=\"5\" class=\"meta\">not measured: run <code>kiln probe --db FILE</code> on that "
                "machine</td>";
    }
    p.html << "</tr>\n";
  }
  p.html << "</tbody></table>\n<p class=\"meta\">Peak: the fp32 FMA micro-kernel kiln's own code generation emits, "
            "on every thread. Bandwidth: a streaming add over arrays far larger than the caches (two reads and one "
            "write per element counted).</p>\n";
}

double percent_of_roof(const json& w, const json& r, const RoofFigures& f) {
  if (memory_bound(w)) return f.bandwidth > 0 && r.contains("gbps") ? 100 * r["gbps"].get<double>() / f.bandwidth : 0;
  return f.peak > 0 ? 100 * r["gflops"].get<double>() / f.peak : 0;
}

void bench_section(Page& p, const json& bench, const std::map<std::string, RoofFigures>& figures) {
  // The bench run's own figures (its thread count), else the database's.
  RoofFigures f;
  auto it = figures.find(bench.value("target", ""));
  if (bench.contains("machine_probe"))
    f = {bench["machine_probe"].value("peak_gflops", 0.0), bench["machine_probe"].value("bandwidth_gbs", 0.0)};
  else if (it != figures.end())
    f = it->second;
  std::vector<std::string> cols = bench_columns(bench);
  p.html << "<h3>Suite " << html_escape(bench.value("suite", "")) << "</h3>\n<p class=\"meta\">"
         << html_escape(bench.value("date", "")) << ", " << html_escape(bench_machine_text(bench)) << ", best of "
         << bench.value("rounds", 0) << " interleaved rounds";
  if (!bench.value("command", std::string()).empty())
    p.html << ", <code>" << html_escape(bench["command"]) << "</code>";
  p.html << ".</p>\n";
  std::map<std::string, std::vector<double>> percents;  // of the roof; 0: no figure
  std::map<std::string, std::vector<std::string>> labels;
  for (const auto& name : cols)
    for (const auto& w : bench.at("workloads")) {
      const json& res = w.at("results");
      bool ok = res.contains(name) && res[name].contains("gflops") && res[name].value("check", "ok") == "ok";
      double pct = ok ? percent_of_roof(w, res[name], f) : 0;
      percents[name].push_back(pct);
      labels[name].push_back(pct > 0 ? num(pct, 0) + "%" : "");
    }
  p.chart(bench_chart(bench, cols, labels), 340);
  p.html << "<p class=\"meta\">Bars: GFLOP/s, FLOPs counted the same way for every contender (padding included). "
         << "Above each bar: its share of this machine's "
         << (f.peak > 0 ? "measured fp32 peak (memory-bound workloads: of its measured bandwidth)"
                        : "peak, when the bench result or the database has the machine's figures (none here)")
         << (f.peak > 0 ? "; above 100%: the contender beat the probe's micro-kernel, or skipped work the count "
                          "includes (taps on zero padding)"
                        : "")
         << ".</p>\n<ul>\n";
  for (const auto& line : geomean_lines(bench)) p.html << "<li><b>" << html_escape(line) << "</b></li>\n";
  bool variants = false;
  for (const auto& w : bench["workloads"]) variants |= w.contains("kiln_variant");
  p.html << "</ul>\n<table class=\"sortable\"><thead><tr><th>#</th><th>workload</th>";
  if (variants) p.html << "<th>kiln variant</th>";
  for (const auto& name : cols)
    p.html << "<th>" << html_escape(name == "kiln" ? "kiln" : baseline_display_name(name)) << "</th>";
  p.html << "<th>kiln/best</th><th>kiln % of peak</th></tr></thead><tbody>\n";
  int i = 0;
  for (const auto& w : bench["workloads"]) {
    ++i;
    p.html << "<tr><td data-v=\"" << i << "\">" << i << "</td><td class=\"l\"><code>"
           << html_escape(w["workload"].get<std::string>()) << "</code></td>";
    if (variants) p.html << "<td class=\"l\">" << html_escape(variant_text(w)) << "</td>";
    for (const auto& name : cols) {
      const json& res = w["results"];
      if (!res.contains(name))
        p.html << "<td data-v=\"-1\">-</td>";
      else if (res[name].contains("error"))
        p.html << "<td data-v=\"-1\" title=\"" << html_escape(res[name]["error"].get<std::string>()) << "\">n/a</td>";
      else if (res[name].value("check", std::string("ok")) != "ok")
        p.html << "<td data-v=\"-1\" class=\"wrong\">WRONG</td>";
      else
        p.html << "<td data-v=\"" << res[name]["gflops"].get<double>() << "\">"
               << gflops_text(res[name]["gflops"].get<double>()) << "</td>";
    }
    if (w.contains("ratio"))
      p.html << "<td data-v=\"" << w["ratio"].get<double>() << "\">" << num(w["ratio"].get<double>(), 2) << "x "
             << html_escape(baseline_display_name(w["best_baseline"].get<std::string>())) << "</td>";
    else
      p.html << "<td data-v=\"0\">-</td>";
    const size_t row = static_cast<size_t>(i - 1);
    p.html << "<td data-v=\"" << percents["kiln"][row] << "\">"
           << (labels["kiln"][row].empty() ? "-" : labels["kiln"][row]) << "</td></tr>\n";
  }
  p.html << "</tbody></table>\n<p class=\"meta\">";
  for (const auto& name : result_baselines(bench))
    p.html << html_escape(baseline_display_name(name)) << ": "
           << html_escape(bench["baselines"][name].get<std::string>()) << ". ";
  p.html << "</p>\n";
}

// Every `kiln tune-model` job: one chart of the estimated latency against
// trials, and a table of what each job did.
void models_section(Page& p, const std::vector<json>& curves) {
  std::vector<ModelCurveStats> stats;
  for (const auto& c : curves) stats.push_back(model_curve_stats(c));
  // Jobs of the same scheduler, model and database: told apart by their files.
  std::map<std::string, int> same;
  for (const auto& s : stats) ++same[s.label];
  for (auto& s : stats)
    if (same[s.label] > 1 && !s.file.empty()) s.label += " [" + std::filesystem::path(s.file).filename().string() + "]";
  p.html << "<h2 id=\"models\">Model tuning</h2>\n";
  p.chart(model_curve_chart(stats), 340);
  p.html << "<p class=\"meta\">One line per <code>kiln tune-model --curve</code> file: after each round, the "
            "network's estimated end-to-end latency (each task's best latency so far times its weight, how often "
            "the network runs it, plus the kernels no task covers) against the trials of all its tasks. A line "
            "starts at 0 trials with the estimate before the job; trials count every record of the model's tasks "
            "in the database, an earlier job's included. Round-robin lines are dashed: compare schedulers at the "
            "same number of trials.</p>\n";
  p.html << "<table class=\"sortable\"><thead><tr><th>#</th><th>job</th><th>model</th><th>database</th><th>rounds"
            "</th><th>trials</th><th>estimated ms</th><th>measured ms, before -&gt; after</th><th>time</th></tr>"
            "</thead><tbody>\n";
  auto ms = [](double v) { return std::isfinite(v) ? num(v, 3) : std::string("-"); };
  for (size_t i = 0; i < stats.size(); ++i) {
    const ModelCurveStats& s = stats[i];
    double before = s.measured_before_ms, after = s.measured_after_ms;
    std::string change;
    if (std::isfinite(before) && std::isfinite(after) && before > 0)
      change = " (" + std::string(after <= before ? "" : "+") + num(100 * (after - before) / before, 1) + "%)";
    p.html << "<tr><td data-v=\"" << i + 1 << "\">" << i + 1 << "</td><td class=\"l\">" << html_escape(s.label)
           << "</td><td class=\"l\"><code>" << html_escape(s.model) << "</code></td><td class=\"l\"><code>"
           << html_escape(s.db) << "</code></td><td data-v=\"" << s.rounds << "\">" << s.rounds << "</td><td data-v=\""
           << s.trials << "\">" << s.trials << "</td><td data-v=\"" << s.final_estimated_ms << "\">"
           << ms(s.initial_estimated_ms) << " -&gt; " << ms(s.final_estimated_ms) << "</td><td data-v=\""
           << (std::isfinite(after) ? after : -1) << "\">" << ms(before) << " -&gt; " << ms(after) << change
           << "</td><td data-v=\"" << (std::isfinite(s.elapsed_s) ? s.elapsed_s : -1) << "\">"
           << (std::isfinite(s.elapsed_s) ? num(s.elapsed_s, 0) + " s" : std::string("-")) << "</td></tr>\n";
  }
  p.html << "</tbody></table>\n";
}

// Baseline GFLOP/s per workload, from every bench result.
std::map<std::string, std::map<std::string, double>> baselines_by_workload(const std::vector<json>& benches) {
  std::map<std::string, std::map<std::string, double>> out;
  for (const auto& b : benches)
    for (const auto& w : b.at("workloads"))
      for (const auto& name : result_baselines(b)) {
        const json& res = w.at("results");
        if (res.contains(name) && res[name].contains("gflops") && res[name].value("check", "ok") == "ok")
          out[w["workload"].get<std::string>()][name] = res[name]["gflops"].get<double>();
      }
  return out;
}

void roofline_section(Page& p, const ReportInput& in, const std::vector<TaskStats>& tasks,
                      const std::map<std::string, RoofFigures>& figures) {
  bool any = false;
  for (const auto& [target, f] : figures) {
    if (f.peak <= 0 || f.bandwidth <= 0) continue;
    std::map<std::string, std::vector<RooflinePoint>> points;
    std::set<std::string> tuned;
    for (const auto& t : tasks) {
      if (t.target != target || t.best_gflops <= 0 || t.min_bytes <= 0 || t.flops <= 0) continue;
      tuned.insert(t.workload);
      points["kiln"].push_back({t.flops / t.min_bytes, t.best_gflops,
                                t.workload + "\nbest of " + std::to_string(t.trials) +
                                    " trials: " + gflops_text(t.best_gflops) + " GFLOP/s\n" + t.best_config.dump()});
    }
    for (const auto& b : in.benches) {
      if (b.value("target", "") != target) continue;
      for (const auto& w : b.at("workloads")) {
        double flops = w.value("flops", 0.0), bytes = w.value("bytes", 0.0);
        if (flops <= 0 || bytes <= 0) continue;
        std::string workload = w["workload"].get<std::string>();
        for (const auto& name : bench_columns(b)) {
          if (name == kUnfused || (name == "kiln" && tuned.count(workload))) continue;
          const json& res = w.at("results");
          if (!res.contains(name) || !res[name].contains("gflops") || res[name].value("check", "ok") != "ok") continue;
          std::string impl = res[name].value("impl", "");
          points[name].push_back({flops / bytes, res[name]["gflops"].get<double>(),
                                  workload + "\n" + gflops_text(res[name]["gflops"].get<double>()) + " GFLOP/s" +
                                      (impl.empty() ? "" : "\n" + impl)});
        }
      }
    }
    if (points.empty()) continue;
    if (!any) p.html << "<h2 id=\"roofline\">Roofline</h2>\n";
    any = true;
    p.chart(roofline_chart({short_target_name(target), f.peak, f.bandwidth}, points), 420);
  }
  if (any)
    p.html << "<p class=\"meta\">Each point is a kernel at its arithmetic intensity: the workload's FLOPs over the "
              "bytes of its inputs and outputs, each moved once. Hover a point for its workload and config.</p>\n";
}

std::map<std::string, std::string> task_labels(const std::vector<TaskStats>& tasks) {
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < tasks.size(); ++i) out[tasks[i].key] = "#" + std::to_string(i + 1) + " " + tasks[i].op;
  return out;
}

void tuning_section(Page& p, const ReportInput& in, const std::vector<TaskStats>& tasks,
                    const std::map<std::string, RoofFigures>& figures) {
  p.html << "<h2 id=\"tuning\">Tuning</h2>\n";
  auto labels = task_labels(tasks);
  p.html << "<table class=\"sortable\"><thead><tr><th>#</th><th>task</th><th>target</th><th>trials</th><th>errors"
            "</th><th>best GFLOP/s</th><th>% of peak</th><th>best config</th></tr></thead><tbody>\n";
  for (size_t i = 0; i < tasks.size(); ++i) {
    const TaskStats& t = tasks[i];
    auto f = figures.find(t.target);
    double pct = f != figures.end() && f->second.peak > 0 ? 100 * t.best_gflops / f->second.peak : 0;
    p.html << "<tr><td data-v=\"" << i + 1 << "\"><a href=\"#task" << i + 1 << "\">" << i + 1
           << "</a></td><td class=\"l\"><code>" << html_escape(t.workload) << "</code></td><td>"
           << target_html(t.target) << "</td><td data-v=\"" << t.trials << "\">" << t.trials << "</td><td data-v=\""
           << t.errors << "\">" << t.errors << "</td><td data-v=\"" << t.best_gflops << "\">"
           << gflops_text(t.best_gflops) << "</td><td data-v=\"" << pct << "\">" << (pct > 0 ? num(pct, 0) + "%" : "-")
           << "</td><td class=\"cfg\"><code>"
           << (t.best_config.is_null() ? std::string("none ran correctly") : html_escape(t.best_config.dump()))
           << "</code></td></tr>\n";
  }
  p.html << "</tbody></table>\n";
  std::vector<JobStats> jobs = job_stats(in.records, tasks);
  for (const auto& j : jobs)
    if (!j.tasks.empty()) p.chart(job_chart(j, labels), 300);
  auto baselines = baselines_by_workload(in.benches);
  for (size_t i = 0; i < tasks.size(); ++i) {
    const TaskStats& t = tasks[i];
    p.html << "<div class=\"card\" id=\"task" << i + 1 << "\"><h3>#" << i + 1 << " <code>" << html_escape(t.workload)
           << "</code> on " << target_html(t.target) << "</h3>\n<div class=\"meta\">" << t.trials << " trials, "
           << t.errors << " errors, best " << gflops_text(t.best_gflops) << " GFLOP/s</div>\n<div class=\"pair\">";
    auto b = baselines.find(t.workload);
    const std::map<std::string, double> none;
    const auto& lines = b == baselines.end() ? none : b->second;
    p.html << "<div>";
    p.chart(task_curve_chart(t, false, lines), 220);
    p.html << "</div><div>";
    p.chart(task_curve_chart(t, true, lines), 220);
    p.html << "</div></div></div>\n";
  }
}

void search_section(Page& p, const std::vector<TaskStats>& tasks) {
  p.html << "<h2 id=\"search\">Search health</h2>\n";
  bool rounds = false, predictions = false, errors = false;
  for (const auto& t : tasks) {
    rounds |= !t.rounds.empty();
    predictions |= !t.predictions.empty();
    errors |= t.errors > 0;
  }
  if (rounds) {
    p.chart(accuracy_chart(tasks), 300);
    p.html << "<p class=\"meta\">Before each batch was measured, the cost model scored it; after, the measurements "
              "ranked it. A point is the share of pairs of the batch (with different measurements; failures count "
              "as 0) that the model ordered the right way. 0.5 is chance.</p>\n";
  } else {
    p.html << "<p>No batch was scored by a trained cost model before it was measured (random search, warm-up only, "
              "or records of an older kiln).</p>\n";
  }
  if (predictions) p.chart(prediction_chart(tasks), 340);
  if (errors) {
    p.chart(errors_chart(tasks, task_labels(tasks)), 300);
  } else {
    p.html << "<p>No candidate failed.</p>\n";
  }
}

const std::map<std::string, std::string>& section_names() {
  static const std::map<std::string, std::string> names = {{"machines", "Machines"},   {"bench", "Bench"},
                                                           {"models", "Model tuning"}, {"roofline", "Roofline"},
                                                           {"tuning", "Tuning"},       {"search", "Search health"}};
  return names;
}

std::string json_for_script(const json& j) {
  // '<', '>' and '&' occur only inside JSON strings: as \u escapes no string
  // can close the <script> element or open a comment in it ("<!--<script").
  std::string out;
  for (char c : j.dump(-1, ' ', false, json::error_handler_t::replace)) {
    if (c == '<')
      out += "\\u003c";
    else if (c == '>')
      out += "\\u003e";
    else if (c == '&')
      out += "\\u0026";
    else
      out += c;
  }
  return out;
}

// Where Chart.js is: $KILN_CHARTJS, else beside a bundled kiln
// (bin/../share/kiln, scripts/bundle.sh), else Debian's.
std::string chartjs_path() {
  const char* env = std::getenv("KILN_CHARTJS");
  if (env && *env) return env;
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    std::filesystem::path bundled = exe.parent_path().parent_path() / "share" / "kiln" / "chart.min.js";
    if (std::filesystem::is_regular_file(bundled, ec)) return bundled.string();
  }
  return kDebianChartJs;
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

std::string load_chartjs() {
  std::string path = chartjs_path();
  std::ifstream f(path, std::ios::binary);
  user_check(f.good()) << "kiln report draws its charts with Chart.js, which was not found at '" << path
                       << "': install Debian's package libjs-chart.js (scripts/setup.sh does)";
  std::ostringstream os;
  os << f.rdbuf();
  std::string js = os.str();
  user_check(js.find("Chart.js") != std::string::npos)
      << "'" << path << "' does not look like Chart.js (reinstall Debian's package libjs-chart.js)";
  return js;
}

std::string render_report_html(const ReportInput& in) {
  std::vector<TaskStats> tasks = task_stats(in.records, in.flops);
  auto figures = figures_by_target(in);
  Page p;
  bool empty = tasks.empty() && in.benches.empty() && in.model_curves.empty();
  if (empty) {
    p.html << "<div class=\"empty\"><p><b>Nothing to show yet.</b> The database holds no tuning records.</p><p>Tune "
              "something, then write the report again:</p><pre>kiln tune matmul:M=512,N=512,K=512 --trials 64 --db "
              "kiln.db\nkiln report --db kiln.db --html report.html</pre><p>or compare with the vendor libraries: "
              "<code>kiln bench --suite smoke --db kiln.db --json bench.json</code>, then add <code>--bench "
              "bench.json</code>; or tune a network: <code>kiln tune-model model.onnx --trials 512 --curve "
              "curve.json</code>, then add <code>--model-curve curve.json</code>.</p></div>\n";
  }
  machines_section(p, in, tasks);
  if (!in.benches.empty()) {
    p.html << "<h2 id=\"bench\">Bench</h2>\n";
    for (const auto& b : in.benches) bench_section(p, b, figures);
  }
  if (!in.model_curves.empty()) models_section(p, in.model_curves);
  roofline_section(p, in, tasks, figures);
  if (!tasks.empty()) {
    tuning_section(p, in, tasks, figures);
    search_section(p, tasks);
  }

  json specs = json::array();
  for (const auto& c : p.charts) specs.push_back({{"id", c.id}, {"spec", c.spec}});
  std::ostringstream page;
  page << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
       << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  if (in.running) page << "<meta http-equiv=\"refresh\" content=\"15\">\n";
  page << "<title>" << html_escape(in.title) << "</title>\n<style>" << kReportStyle << "</style></head>\n"
       << "<body data-charts-expected=\"" << p.charts.size() << "\""
       << (p.charts.empty() ? " data-charts-drawn=\"0\"" : "") << ">\n<header><h1>" << html_escape(in.title)
       << "</h1><div class=\"meta\">Written " << html_escape(in.written_at) << " by kiln " << KILN_VERSION
       << (in.running ? " while the job was still running" : "") << "; " << tasks.size() << " tasks, "
       << in.records.size() << " trials, " << in.benches.size() << " bench results"
       << (in.model_curves.empty() ? std::string()
                                   : ", " + std::to_string(in.model_curves.size()) + " model tuning curves")
       << ".</div></header>\n";
  if (in.running)
    page << "<div class=\"running\">The tuning job was still running when this page was written; it reloads every "
            "15 s.</div>\n";
  if (!empty) {
    page << "<nav>";
    for (const char* id : {"machines", "bench", "models", "roofline", "tuning", "search"})
      if (p.html.str().find("<h2 id=\"" + std::string(id) + "\"") != std::string::npos)
        page << "<a href=\"#" << id << "\">" << section_names().at(id) << "</a>";
    page << "</nav>\n";
  }
  page << "<main>\n" << p.html.str() << "</main>\n";
  if (!p.charts.empty()) {
    // Chart.js carries its own licence notice (MIT) in its first comment.
    page << "<script>\n" << in.chartjs << "\n</script>\n";
    page << "<script type=\"application/json\" id=\"kiln-charts\">" << json_for_script(specs) << "</script>\n";
    page << "<script>" << kReportScript << "</script>\n";
  }
  page << "</body></html>\n";
  return page.str();
}

int report_chart_count(const std::string& html) {
  const std::string key = "data-charts-expected=\"";
  size_t at = html.find(key);
  if (at == std::string::npos) return -1;
  return std::atoi(html.c_str() + at + key.size());
}

}  // namespace kiln
