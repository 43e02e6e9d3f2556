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
  inputs.insert(inputs.end(), f.model_curves.begin(), f.model_curves.end());
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

// A bench result with every field the report reads of the type it reads,
// the others dropped: figures that were not finite were written as null,
// and hand-edited or older files may lack fields.
nlohmann::json normalized_bench(const nlohmann::json& in) {
  using nlohmann::json;
  auto copy_if = [](const json& from, json& to, const char* key, bool (json::*is)() const noexcept) {
    if (from.contains(key) && (from[key].*is)()) to[key] = from[key];
  };
  json out = json::object();
  for (const char* key : {"suite", "date", "machine", "command", "target"}) copy_if(in, out, key, &json::is_string);
  for (const char* key : {"threads", "rounds"}) copy_if(in, out, key, &json::is_number_integer);
  out["baselines"] = json::object();
  for (const auto& [name, v] : in["baselines"].items()) out["baselines"][name] = v.is_string() ? v : json(v.dump());
  if (in.contains("machine_probe") && in["machine_probe"].is_object()) {
    const json& m = in["machine_probe"];
    json mp = json::object();
    copy_if(m, mp, "cpu", &json::is_string);
    copy_if(m, mp, "threads", &json::is_number_integer);
    copy_if(m, mp, "peak_gflops", &json::is_number);
    copy_if(m, mp, "bandwidth_gbs", &json::is_number);
    if (mp.contains("peak_gflops") && mp.contains("bandwidth_gbs")) out["machine_probe"] = mp;
  }
  if (in.contains("gpu") && in["gpu"].is_object()) {  // kiln bench --target cuda
    const json& g = in["gpu"];
    json go = json::object();
    for (const char* key : {"name", "arch", "driver"}) copy_if(g, go, key, &json::is_string);
    for (const char* key : {"sm_count", "l2_bytes"}) copy_if(g, go, key, &json::is_number_integer);
    copy_if(g, go, "memory_gib", &json::is_number);
    out["gpu"] = go;
  }
  out["workloads"] = json::array();
  for (const auto& w : in["workloads"]) {
    json o = {{"workload", w["workload"]}, {"results", json::object()}};
    copy_if(w, o, "op", &json::is_string);
    copy_if(w, o, "kiln_variant", &json::is_string);
    if (w.contains("variants") && w["variants"].is_object())
      for (const auto& [name, v] : w["variants"].items())
        if (v.is_object() && v.contains("gflops") && v["gflops"].is_number())
          o["variants"][name] = {{"gflops", v["gflops"]}};
    for (const char* key : {"flops", "bytes"}) copy_if(w, o, key, &json::is_number);
    if (w.contains("ratio") && w["ratio"].is_number() && w.contains("best_baseline") &&
        w["best_baseline"].is_string()) {
      o["ratio"] = w["ratio"];
      o["best_baseline"] = w["best_baseline"];
    }
    for (const auto& [name, r] : w["results"].items()) {
      if (!r.is_object()) continue;
      json rr = json::object();
      for (const char* key : {"gflops", "gbps", "median_ms"}) copy_if(r, rr, key, &json::is_number);
      for (const char* key : {"check", "error", "impl"}) copy_if(r, rr, key, &json::is_string);
      if (!rr.contains("gflops") && !rr.contains("error")) rr["error"] = "no figure";
      o["results"][name] = rr;
    }
    out["workloads"].push_back(o);
  }
  out["geomean"] = json::object();
  if (in["geomean"].is_object())
    for (const auto& [name, g] : in["geomean"].items())
      if (g.is_object() && g.contains("ratio") && g["ratio"].is_number() && g.contains("workloads") &&
          g["workloads"].is_number_integer())
        out["geomean"][name] = {{"ratio", g["ratio"]}, {"workloads", g["workloads"]}};
  return out;
}

// The JSON in a file; UserError naming the file (a `what`, written by `how`)
// when it is missing, unreadable, cut short or not JSON.
nlohmann::json read_json_file(const std::string& path, const char* what, const char* how) {
  std::error_code ec;
  user_check(fs::is_regular_file(path, ec)) << "no " << what << " at '" << path << "'";
  std::ifstream f(path, std::ios::binary);
  user_check(f.good()) << "cannot read " << what << " '" << path << "'";
  std::ostringstream text;
  text << f.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    // The parser stopped at the end of the text: the file was cut short.
    bool truncated = e.byte >= text.str().size();
    user_error() << "'" << path << "' is " << (truncated ? "truncated" : "not valid JSON") << " (" << e.what()
                 << "); write it again with `" << how << "`";
  } catch (const nlohmann::json::exception& e) {
    user_error() << "'" << path << "' is not valid JSON (" << e.what() << ")";
  }
  return nullptr;  // not reached: user_error throws
}

}  // namespace

std::string utc_timestamp(const char* format) { return utc_text(static_cast<int64_t>(std::time(nullptr)), format); }

std::string utc_text(int64_t unix_s, const char* format) {
  std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

nlohmann::json read_bench_result(const std::string& path) {
  nlohmann::json j = read_json_file(path, "bench result", "kiln bench --json");
  user_check(j.is_object() && j.contains("workloads") && j["workloads"].is_array() && j.contains("baselines") &&
             j["baselines"].is_object() && j.contains("geomean"))
      << "'" << path << "' is not a `kiln bench --json` result";
  for (const auto& w : j["workloads"])
    user_check(w.is_object() && w.contains("workload") && w["workload"].is_string() && w.contains("results") &&
               w["results"].is_object())
        << "'" << path << "' is not a `kiln bench --json` result (a workload lacks its name or results)";
  return normalized_bench(j);
}

nlohmann::json read_model_curve(const std::string& path) {
  using nlohmann::json;
  json j = read_json_file(path, "model tuning curve", "kiln tune-model MODEL --curve FILE");
  user_check(j.is_object()) << "'" << path << "' is not a `kiln tune-model --curve` file (JSON, but not an object)";
  enum class Kind { kString, kNumber, kInteger, kArray };
  auto is = [](const json& v, Kind k) {
    switch (k) {
      case Kind::kString:
        return v.is_string();
      case Kind::kNumber:
        return v.is_number();
      case Kind::kInteger:
        return v.is_number_integer();
      case Kind::kArray:
        return v.is_array();
    }
    return false;
  };
  auto kind_name = [](Kind k) {
    switch (k) {
      case Kind::kString:
        return "a string";
      case Kind::kNumber:
        return "a number";
      case Kind::kInteger:
        return "an integer";
      case Kind::kArray:
        return "an array";
    }
    return "?";
  };
  auto described = [](const json& v) -> std::string {  // "a string", "an array", "null"
    if (v.is_null()) return "null";
    std::string t = v.type_name();
    return (t == "array" || t == "object" ? "an " : "a ") + t;
  };
  // where: "" for the top level, "\"curve\"[3]" for a round.
  auto need = [&](const json& obj, const std::string& where, const char* key, Kind k, bool null_ok = false) {
    user_check(obj.contains(key)) << "'" << path
                                  << "' is not a `kiln tune-model --curve` file: " << (where.empty() ? "it" : where)
                                  << " lacks \"" << key << "\"";
    const json& v = obj[key];
    user_check(is(v, k) || (null_ok && v.is_null()))
        << "'" << path << "': " << (where.empty() ? "" : where + ".") << "\"" << key << "\" is " << described(v)
        << ", not " << kind_name(k) << (null_ok ? " (or null)" : "");
  };
  json out = json::object();
  for (const char* key : {"model", "scheduler", "db"}) {
    need(j, "", key, Kind::kString);
    out[key] = j[key];
  }
  need(j, "", "initial_estimated_ms", Kind::kNumber);
  out["initial_estimated_ms"] = j["initial_estimated_ms"];
  for (const char* key : {"measured_before_ms", "measured_after_ms"}) {
    need(j, "", key, Kind::kNumber, /*null_ok=*/true);  // a figure that was not finite is written as null
    out[key] = j[key];
  }
  for (const char* key : {"elapsed_s", "other_ms"})
    if (j.contains(key) && j[key].is_number()) out[key] = j[key];
  need(j, "", "curve", Kind::kArray);
  out["curve"] = json::array();
  for (size_t i = 0; i < j["curve"].size(); ++i) {
    const json& r = j["curve"][i];
    const std::string where = "\"curve\"[" + std::to_string(i) + "]";
    user_check(r.is_object()) << "'" << path << "': " << where << " is " << described(r) << ", not an object";
    need(r, where, "trials", Kind::kInteger);
    need(r, where, "estimated_ms", Kind::kNumber);
    json o = {{"trials", r["trials"]}, {"estimated_ms", r["estimated_ms"]}};
    if (r.contains("round") && r["round"].is_number_integer()) o["round"] = r["round"];
    if (r.contains("workload") && r["workload"].is_string()) o["workload"] = r["workload"];
    for (const char* key : {"best_ms", "elapsed_s"})
      if (r.contains(key) && r[key].is_number()) o[key] = r[key];
    out["curve"].push_back(o);
  }
  out["file"] = path;
  return out;
}

ReportSummary write_report(const ReportFiles& files, bool running) {
  user_check(!files.db.empty() || !files.benches.empty() || !files.model_curves.empty())
      << "kiln report needs --db FILE, --bench FILE, --model-curve FILE, or several of them";
  check_output(files);
  ReportInput in;
  in.chartjs = load_chartjs();
  for (const auto& b : files.benches) in.benches.push_back(read_bench_result(b));
  for (const auto& c : files.model_curves) in.model_curves.push_back(read_model_curve(c));
  if (!files.db.empty()) {
    // Read-only: the report never changes its input (not even a schema upgrade).
    auto db = Database::open_for_reading(files.db);
    in.records = db->all_records();
    in.flops = db->task_flops();
    in.machines = db->machines();
  }
  in.title = "kiln report: " + (!files.db.empty()        ? files.db
                                : !files.benches.empty() ? files.benches.front()
                                                         : files.model_curves.front());
  in.written_at = utc_timestamp();
  in.running = running;
  std::string page;
  try {
    page = render_report_html(in);
  } catch (const nlohmann::json::exception& e) {  // a shape read_bench_result or read_model_curve let through
    user_error() << "kiln report could not read its inputs: " << e.what();
  }
  write_atomically(files.html, page);
  return {report_chart_count(page), page.size()};
}

}  // namespace kiln
