#include "bench/report_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "bench/report_html.h"
#include "tuner/database.h"

namespace kiln {

namespace {

namespace fs = std::filesystem;

// Whether two paths name the same file (the second may not exist yet).
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

void check_output(const ReportFiles& f) {
  user_check(!f.html.empty()) << "kiln report needs --html FILE: the page to write";
  std::vector<std::string> inputs = f.benches;
  if (!f.db.empty()) {
    inputs.push_back(f.db);
    inputs.push_back(f.db + "-wal");
    inputs.push_back(f.db + "-shm");
  }
  for (const auto& in : inputs)
    user_check(!same_file(f.html, in)) << "--html '" << f.html << "' is one of the report's inputs ('" << in
                                       << "'); kiln report never writes over its input: choose another file";
  std::error_code ec;
  user_check(!fs::is_directory(f.html, ec)) << "--html '" << f.html << "' is a directory";
}

void write_atomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    user_check(out.is_open()) << "cannot write '" << path << "': " << std::strerror(errno);
    out << text;
    out.close();
    if (!out.good()) {
      std::remove(tmp.c_str());
      user_error() << "writing '" << path << "' failed (disk full?)";
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    user_error() << "cannot write '" << path << "': " << std::strerror(err);
  }
}

}  // namespace

std::string utc_timestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

nlohmann::json read_bench_result(const std::string& path) {
  std::error_code ec;
  user_check(fs::is_regular_file(path, ec)) << "no bench result at '" << path << "'";
  std::ifstream f(path, std::ios::binary);
  user_check(f.good()) << "cannot read bench result '" << path << "'";
  std::ostringstream text;
  text << f.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    // The parser stopped at the end of the text: the file was cut short.
    bool truncated = e.byte >= text.str().size();
    user_error() << "'" << path << "' is " << (truncated ? "truncated" : "not valid JSON") << " (" << e.what()
                 << "); write it again with `kiln bench --json`";
  } catch (const nlohmann::json::exception& e) {
    user_error() << "'" << path << "' is not valid JSON (" << e.what() << ")";
  }
  user_check(j.is_object() && j.contains("workloads") && j["workloads"].is_array() && j.contains("baselines") &&
             j["baselines"].is_object() && j.contains("geomean"))
      << "'" << path << "' is not a `kiln bench --json` result";
  for (const auto& w : j["workloads"])
    user_check(w.is_object() && w.contains("workload") && w["workload"].is_string() && w.contains("results") &&
               w["results"].is_object())
        << "'" << path << "' is not a `kiln bench --json` result (a workload lacks its name or results)";
  return j;
}

ReportSummary write_report(const ReportFiles& files, bool running) {
  user_check(!files.db.empty() || !files.benches.empty()) << "kiln report needs --db FILE, --bench FILE, or both";
  check_output(files);
  ReportInput in;
  in.chartjs = load_chartjs();
  for (const auto& b : files.benches) in.benches.push_back(read_bench_result(b));
  if (!files.db.empty()) {
    // Read-only: the report never changes its input (not even a schema upgrade).
    auto db = Database::open_for_reading(files.db);
    in.records = db->all_records();
    in.flops = db->task_flops();
    in.machines = db->machines();
  }
  in.title = "kiln report: " + (files.db.empty() ? files.benches.front() : files.db);
  in.written_at = utc_timestamp();
  in.running = running;
  std::string page = render_report_html(in);
  write_atomically(files.html, page);
  return {report_chart_count(page), page.size()};
}

}  // namespace kiln
