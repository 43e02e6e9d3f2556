// Writing `kiln report`'s page: reading its inputs (a tuning database,
// opened read-only, `kiln bench --json` results and `kiln tune-model
// --curve` files), refusing an output
// path that is one of them, and replacing the page atomically (write a
// temporary file beside it, then rename), so that a browser reloading a live
// report of a running `kiln tune --report` never sees half a page.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace kiln {

struct ReportFiles {
  std::string db;  // "" : none
  std::vector<std::string> benches;
  std::string html;
  std::vector<std::string> model_curves = {};  // `kiln tune-model --curve` files
};

struct ReportSummary {
  int charts = 0;
  size_t bytes = 0;
};

// UserError for a missing or unreadable input, a database that is not
// kiln's or is newer than this kiln, a file that is not a (complete) bench
// result or model tuning curve, an output that is one of the inputs, or an
// unwritable output.
// running: the page says the job was still running, and reloads itself.
ReportSummary write_report(const ReportFiles& files, bool running);

// A `kiln bench --json` result; UserError naming the file otherwise.
nlohmann::json read_bench_result(const std::string& path);

// A `kiln tune-model --curve` file, with the fields the report reads (and
// "file": path); UserError naming the file and what is wrong otherwise (a
// missing file, not JSON, a missing key, a value of the wrong type).
// measured_before_ms and measured_after_ms may be null (not measured).
nlohmann::json read_model_curve(const std::string& path);

// The current UTC time in strftime's `format` ("2026-11-23 18:40:12 UTC").
std::string utc_timestamp(const char* format = "%Y-%m-%d %H:%M:%S UTC");
// A unix time in UTC, in strftime's `format`.
std::string utc_text(int64_t unix_s, const char* format);

}  // namespace kiln
