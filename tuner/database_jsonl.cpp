// JSON lines export/import of the tuning database, for sharing records
// between machines. One object per line:
//   {"workload": "...", "op": "...", "target": "...", "flops": 2.1e9,
//    "config": {...}, "config_index": "123" (decimal string: it may pass 2^53),
//    "samples_ms": [...], "median_ms": 1.2, "gflops": 3.4, "error": "none",
//    "error_msg": "", "device": "local", "compile_ms": 80.0,
//    "timestamp": 1700000000, "kiln_version": "0.1.0", "job": "...",
//    "round": 3, "predicted": 0.7 (left out when the model made no prediction),
//    "resources": [{"kernel": "...", "registers": 64, "spill_store_bytes": 0,
//    "spill_load_bytes": 0, "shared_bytes": 8192}] (GPU records only)}
// Import requires workload, op, target, config, config_index, samples_ms and
// error; the other fields default (median_ms from the samples, gflops from
// the flops when known, numbers 0, strings empty). An unknown flop count
// (no "flops") is recovered from gflops * median_ms of a successful record.
// Error messages that are not valid UTF-8 are exported with U+FFFD in place
// of the bad bytes.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <string>

#include "base/error.h"
#include "tuner/database.h"
#include "tuner/database_internal.h"
#include "tuner/database_sqlite.h"

namespace kiln {

namespace {

using nlohmann::json;

const json& field(const json& j, const char* name) {
  auto it = j.find(name);
  user_check(it != j.end()) << "missing field '" << name << "'";
  return *it;
}

std::string string_field(const json& j, const char* name, const std::string* fallback = nullptr) {
  if (fallback && !j.contains(name)) return *fallback;
  const json& v = field(j, name);
  user_check(v.is_string()) << "field '" << name << "' must be a string";
  return v.get<std::string>();
}

double number_field(const json& j, const char* name, double fallback) {
  if (!j.contains(name)) return fallback;
  const json& v = j[name];
  user_check(v.is_number()) << "field '" << name << "' must be a number";
  return v.get<double>();
}

// A uint64 as a decimal string or a JSON integer, returned in canonical form.
std::string parse_index(const json& v) {
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  user_check(v.is_string()) << "field 'config_index' must be a non-negative integer or a decimal string";
  const std::string s = v.get<std::string>();
  user_check(!s.empty() && s.size() <= 20) << "config_index '" << s << "' is not a 64-bit unsigned integer";
  uint64_t x = 0;
  for (char ch : s) {
    user_check(std::isdigit(static_cast<unsigned char>(ch))) << "config_index '" << s << "' is not a decimal number";
    uint64_t d = static_cast<uint64_t>(ch - '0');
    user_check(x <= (UINT64_MAX - d) / 10) << "config_index '" << s << "' does not fit in 64 bits";
    x = x * 10 + d;
  }
  return std::to_string(x);
}

double median(std::vector<double> s) {
  if (s.empty()) return 0;
  std::sort(s.begin(), s.end());
  size_t n = s.size();
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

// One line of an export file as a record and its workload's flop count
// (0 when unknown).
std::pair<Database::Record, double> parse_line(const std::string& line) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number past double's range
    user_error() << "not valid JSON (" << e.what() << ")";
  }
  user_check(j.is_object()) << "expected a JSON object";
  static const std::string kEmpty;
  Database::Record r;
  r.workload = string_field(j, "workload");
  r.op = string_field(j, "op");
  r.target = string_field(j, "target");
  r.config = field(j, "config");
  user_check(r.config.is_object()) << "field 'config' must be an object";
  r.config_index = parse_index(field(j, "config_index"));
  r.samples_ms = db_detail::parse_samples(field(j, "samples_ms"));
  r.error = parse_error_kind(string_field(j, "error"));
  r.median_ms = number_field(j, "median_ms", median(r.samples_ms));
  r.error_msg = string_field(j, "error_msg", &kEmpty);
  r.device = string_field(j, "device", &kEmpty);
  r.compile_ms = number_field(j, "compile_ms", 0);
  if (j.contains("timestamp")) {
    const json& t = j["timestamp"];
    user_check(t.is_number_integer()) << "field 'timestamp' must be an integer (unix seconds)";
    r.timestamp = t.get<int64_t>();
  }
  r.kiln_version = string_field(j, "kiln_version", &kEmpty);
  r.job = string_field(j, "job", &kEmpty);
  if (j.contains("round")) {
    const json& v = j["round"];
    user_check(v.is_number_integer() && v.get<int64_t>() >= -1 && v.get<int64_t>() <= INT32_MAX)
        << "field 'round' must be an integer >= -1";
    r.round = v.get<int>();
  }
  r.predicted = number_field(j, "predicted", std::numeric_limits<double>::quiet_NaN());
  if (j.contains("resources")) r.resources = db_detail::parse_resources(j["resources"]);

  double flops = number_field(j, "flops", 0);
  user_check(std::isfinite(flops) && flops >= 0) << "field 'flops' must be a non-negative number";
  double gflops_default = r.ok() && r.median_ms > 0 && flops > 0 ? flops / (r.median_ms * 1e6) : 0;
  r.gflops = number_field(j, "gflops", gflops_default);
  if (flops == 0 && r.ok() && r.gflops > 0 && r.median_ms > 0) flops = r.gflops * r.median_ms * 1e6;
  return {std::move(r), flops};
}

}  // namespace

int64_t Database::export_jsonl(const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  user_check(out.is_open()) << "cannot write '" << path << "'";
  std::lock_guard<std::mutex> lock(mu_);
  int64_t n = 0;
  // One SELECT reads one snapshot, even while other jobs write.
  for_each_record("ORDER BY r.id", {}, [&](const Record& r, double flops) {
    json j = {{"workload", r.workload},
              {"op", r.op},
              {"target", r.target},
              {"flops", flops},
              {"config", r.config},
              {"config_index", r.config_index},
              {"samples_ms", r.samples_ms},
              {"median_ms", r.median_ms},
              {"gflops", r.gflops},
              {"error", error_kind_name(r.error)},
              {"error_msg", r.error_msg},
              {"device", r.device},
              {"compile_ms", r.compile_ms},
              {"timestamp", r.timestamp},
              {"kiln_version", r.kiln_version},
              {"job", r.job},
              {"round", r.round}};
    if (std::isfinite(r.predicted)) j["predicted"] = r.predicted;
    if (!r.resources.empty()) j["resources"] = db_detail::resources_json(r.resources);
    out << j.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
    ++n;
  });
  out.close();
  user_check(out.good()) << "writing '" << path << "' failed (disk full?)";
  return n;
}

Database::ImportStats Database::import_jsonl(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  user_check(in.is_open()) << "cannot read '" << path << "'";
  check_writable("importing records");
  std::lock_guard<std::mutex> lock(mu_);
  ImportStats stats;
  // One transaction: a bad line rolls back every line before it.
  sql::Transaction t(*conn_);
  sql::Statement dup(*conn_,
                     "SELECT 1 FROM records WHERE workload_id = ?1 AND config_index = ?2 AND timestamp = ?3 "
                     "AND samples_ms = ?4 LIMIT 1");
  sql::Statement ins(*conn_, db_detail::kInsertRecord);
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank lines
    Record r;
    int64_t wid = 0;
    try {
      double flops;
      std::tie(r, flops) = parse_line(line);
      wid = workload_id(r.task_key(), r.workload, r.op, r.target, flops);
    } catch (const UserError& e) {
      user_error() << "'" << path << "' line " << line_no << ": " << e.what() << "; nothing was imported";
    }
    dup.reset();
    dup.bind(1, wid).bind(2, r.config_index).bind(3, r.timestamp).bind(4, db_detail::samples_text(r.samples_ms));
    if (dup.step()) {
      ++stats.duplicates;
      continue;
    }
    db_detail::insert_record(ins, wid, r);
    ++stats.imported;
  }
  user_check(!in.bad()) << "reading '" << path << "' failed";
  t.commit();
  return stats;
}

}  // namespace kiln
