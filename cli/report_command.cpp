#include "cli/report_command.h"

#include <fstream>
#include <iostream>

#include "bench/report_html.h"
#include "base/error.h"
#include "tuner/database.h"

namespace kiln::cli {

namespace {

struct ReportOptions {
  std::string db, html, bench;
};

nlohmann::json read_bench(const std::string& path) {
  std::ifstream f(path);
  user_check(f.good()) << "cannot read bench results '" << path << "'";
  nlohmann::json j;
  try {
    f >> j;
  } catch (const nlohmann::json::exception& e) {
    user_error() << "'" << path << "' is not JSON: " << e.what();
  }
  user_check(j.is_object() && j.contains("workloads") && j.contains("baselines") && j.contains("geomean"))
      << "'" << path << "' is not a `kiln bench --json` result";
  return j;
}

int run(const ReportOptions& o) {
  nlohmann::json bench = o.bench.empty() ? nlohmann::json() : read_bench(o.bench);
  auto db = Database::open_existing(o.db);
  std::vector<TaskCurve> curves;
  for (auto& key : db->task_keys()) curves.push_back(task_curve(key, db->records(key)));
  std::string page = render_report_html("kiln report: " + o.db, curves, bench);
  std::ofstream f(o.html);
  f << page;
  user_check(f.good()) << "cannot write '" << o.html << "'";
  std::cout << "wrote " << o.html << ": " << curves.size() << " tasks" << (bench.is_null() ? "" : ", bench table")
            << "\n";
  return 0;
}

}  // namespace

Handler add_report_command(CLI::App& app) {
  auto* sub = app.add_subcommand("report", "write an HTML report of a tuning database (and of a bench result)");
  auto o = std::make_shared<ReportOptions>();
  sub->add_option("--db", o->db, "tuning database")->required();
  sub->add_option("--html", o->html, "the HTML file to write")->required();
  sub->add_option("--bench", o->bench, "a `kiln bench --json` result to include");
  return [o]() { return run(*o); };
}

}  // namespace kiln::cli
