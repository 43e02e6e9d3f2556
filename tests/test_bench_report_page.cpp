// kiln report: the statistics behind its charts (report_model.h), the page
// (report_html.h: chart specs as JSON, no drawing code, nothing fetched, the
// count of charts it will draw) and writing it (report_writer.h: inputs read
// only, never written over, bad inputs named). The page is drawn in a real
// browser by the "browser" tests (tests/browser_report.sh).
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include "base/error.h"
#include "bench/report_charts.h"
#include "bench/report_html.h"
#include "bench/report_model.h"
#include "bench/report_writer.h"
#include "kernels/op_registry.h"
#include "support/temp_dir.h"

using namespace kiln;
using Catch::Contains;
using kiln::testing::TempDir;
using nlohmann::json;

namespace {

const char* const kTarget = "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512";

Database::Record record(const std::string& workload, double gflops, int64_t ts, int round = -1,
                        double predicted = std::nan(""), ErrorKind error = ErrorKind::kNone) {
  Database::Record r;
  r.workload = workload;
  r.op = workload.substr(0, workload.find(':'));
  r.target = kTarget;
  r.config = {{"tile", gflops}};
  r.samples_ms = error == ErrorKind::kNone ? std::vector<double>{1.0} : std::vector<double>{};
  r.gflops = error == ErrorKind::kNone ? gflops : 0;
  r.error = error;
  r.timestamp = ts;
  r.round = round;
  r.predicted = predicted;
  r.job = "job-1";
  return r;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

const char* const kBench = R"({
  "suite": "demo", "date": "2026-01-01 00:00 UTC", "machine": "Test CPU", "threads": 2, "rounds": 3,
  "target": "llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512",
  "machine_probe": {"cpu": "Test CPU", "threads": 2, "peak_gflops": 200.0, "bandwidth_gbs": 20.0},
  "baselines": {"onednn": "oneDNN 2.6.0"},
  "workloads": [
    {"workload": "matmul:M=8,N=8,K=8", "flops": 1024, "bytes": 768, "best_baseline": "onednn", "ratio": 2.0,
     "results": {"kiln": {"gflops": 4.0, "check": "ok"}, "onednn": {"gflops": 2.0, "check": "wrong: out[0] = 1"}}},
    {"workload": "softmax:M=4,N=4", "flops": 80, "bytes": 128, "best_baseline": "onednn", "ratio": 0.5,
     "results": {"kiln": {"gflops": 1.0, "check": "ok"}, "onednn": {"gflops": 2.0, "check": "ok"}}}],
  "geomean": {"onednn": {"ratio": 0.5, "workloads": 1}}})";

// A `kiln tune-model --curve` file: three rounds over two tasks.
json model_curve(const std::string& scheduler, const std::string& db, double last_ms) {
  json j = json::parse(R"({"model": "/models/cls.onnx", "scheduler": "gradient", "db": "a.db",
    "initial_estimated_ms": 5.04, "other_ms": 1.2, "measured_before_ms": 5.1, "measured_after_ms": 4.3,
    "elapsed_s": 54.5,
    "curve": [{"round": 0, "workload": "conv2d:C=3,H=8,W=8,K=4,R=3,S=3", "trials": 16, "best_ms": 0.05,
               "estimated_ms": 4.9, "elapsed_s": 3.1},
              {"round": 1, "workload": "matmul:M=8,N=8,K=8", "trials": 32, "best_ms": 0.02, "estimated_ms": 4.7,
               "elapsed_s": 6.0},
              {"round": 2, "workload": "conv2d:C=3,H=8,W=8,K=4,R=3,S=3", "trials": 48, "best_ms": 0.04,
               "estimated_ms": 4.2, "elapsed_s": 9.2}],
    "tasks": [{"workload": "conv2d:C=3,H=8,W=8,K=4,R=3,S=3", "weight": 2, "trials": 32, "best_ms": 0.04, "batches": 2},
              {"workload": "matmul:M=8,N=8,K=8", "weight": 1, "trials": 16, "best_ms": 0.02, "batches": 1}]})");
  j["scheduler"] = scheduler;
  j["db"] = db;
  j["curve"][2]["estimated_ms"] = last_ms;
  return j;
}

// The chart specs of a page, in order.
json chart_specs(const std::string& page) {
  size_t at = page.find("id=\"kiln-charts\">");
  if (at == std::string::npos) return json::array();
  size_t start = page.find('>', at) + 1, end = page.find("</script>", start);
  return json::parse(page.substr(start, end - start));
}

ReportInput input_with(std::vector<Database::Record> records) {
  ReportInput in;
  in.title = "kiln report: a&b.db";
  in.records = std::move(records);
  in.written_at = "2026-11-23 12:00:00 UTC";
  in.chartjs = "/* Chart.js stand-in */";
  return in;
}

}  // namespace

TEST_CASE("report model: curves keep their improving points, errors are counted by kind", "[report]") {
  std::vector<Database::Record> rs = {record("matmul:M=8,N=8,K=8", 1, 100), record("matmul:M=8,N=8,K=8", 3, 103),
                                      record("matmul:M=8,N=8,K=8", 0, 104, -1, std::nan(""), ErrorKind::kCompileError),
                                      record("matmul:M=8,N=8,K=8", 2, 110)};
  auto tasks = task_stats(rs, {{rs[0].task_key(), 1024}});
  REQUIRE(tasks.size() == 1);
  const TaskStats& t = tasks[0];
  CHECK(t.trials == 4);
  CHECK(t.errors == 1);
  CHECK(t.errors_by_kind == std::map<std::string, int>{{"compile_error", 1}});
  CHECK(t.best_gflops == 3);
  CHECK(t.best_config == json{{"tile", 3.0}});
  CHECK(t.flops == 1024);
  CHECK(t.min_bytes == 4.0 * (64 + 64 + 64));
  REQUIRE(t.by_trial.size() == 3);  // trial 1, the rise at trial 2, the last trial
  CHECK(t.by_trial[1].x == 2);
  CHECK(t.by_trial[1].y == 3);
  CHECK(t.by_trial[2].x == 4);
  CHECK(t.by_trial[2].y == 3);
  CHECK(t.by_seconds[1].x == 3);  // seconds since the task's first record
  CHECK(t.by_seconds.back().x == 10);
}

TEST_CASE("report model: the ranking accuracy of each batch, and predictions against measurements", "[report]") {
  CHECK(pairwise_accuracy({1, 2, 3}, {10, 20, 30}).accuracy == 1.0);
  CHECK(pairwise_accuracy({3, 2, 1}, {10, 20, 30}).accuracy == 0.0);
  RoundAccuracy tie = pairwise_accuracy({1, 1}, {1, 2});
  CHECK(tie.accuracy == 0.5);
  CHECK(tie.pairs == 1);
  CHECK(pairwise_accuracy({1, 2}, {5, 5}).pairs == 0);  // equal measurements rank nothing
  // 4 configs: (0.1, 1) (0.9, 4) (0.5, 2) (0.2, failed): 5 of 6 pairs right.
  std::vector<Database::Record> rs = {
      record("matmul:M=8,N=8,K=8", 9, 0),  // warm-up: no prediction
      record("matmul:M=8,N=8,K=8", 1, 1, 1, 0.1), record("matmul:M=8,N=8,K=8", 4, 2, 1, 0.9),
      record("matmul:M=8,N=8,K=8", 2, 3, 1, 0.5), record("matmul:M=8,N=8,K=8", 0, 4, 1, 0.6, ErrorKind::kRuntimeCrash)};
  auto t = task_stats(rs, {})[0];
  REQUIRE(t.rounds.size() == 1);
  CHECK(t.rounds[0].round == 1);
  CHECK(t.rounds[0].pairs == 6);
  CHECK(t.rounds[0].accuracy == Approx(4.0 / 6));
  REQUIRE(t.predictions.size() == 4);
  CHECK(t.predictions[1].predicted == 0.9);
  CHECK(t.predictions[1].measured == Approx(4.0 / 9));
  CHECK(t.predictions[3].measured == 0);
}

TEST_CASE("report model: jobs put their tasks on one axis as a percentage of each task's best", "[report]") {
  std::vector<Database::Record> rs = {record("matmul:M=8,N=8,K=8", 2, 0), record("softmax:M=4,N=4", 5, 1),
                                      record("matmul:M=8,N=8,K=8", 4, 2)};
  rs[2].job = "job-2";
  auto tasks = task_stats(rs, {});
  auto jobs = job_stats(rs, tasks);
  REQUIRE(jobs.size() == 2);
  CHECK(jobs[0].job == "job-1");
  REQUIRE(jobs[0].tasks.size() == 2);
  CHECK(jobs[0].tasks[0].second[0].y == 50);  // 2 of the task's best 4
  CHECK(jobs[0].tasks[1].second[0].y == 100);
  CHECK(jobs[1].tasks[0].second[0].y == 100);
}

TEST_CASE("report model: targets are named short", "[report]") {
  CHECK(short_target_name("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512 -mattr=+avx512f") ==
        "x86-64 skylake-avx512 avx512");
  CHECK(short_target_name("llvm -mtriple=x86_64-pc-linux-gnu -mcpu=haswell") == "x86-64 haswell avx2");
  CHECK(short_target_name("llvm -mtriple=aarch64-linux-gnu -mcpu=generic") == "aarch64 generic neon");
  CHECK(short_target_name("something else") == "something else");
  CHECK_FALSE(workload_min_bytes("not_an_op:M=1").has_value());
}

TEST_CASE("report page: charts as JSON specs, nothing fetched, one count of charts", "[report]") {
  std::vector<Database::Record> rs = {record("matmul:M=8,N=8,K=8", 1, 0, 0), record("matmul:M=8,N=8,K=8", 3, 1, 1, 0.2),
                                      record("matmul:M=8,N=8,K=8", 2, 2, 1, 0.4, ErrorKind::kRuntimeTimeout)};
  ReportInput in = input_with(rs);
  in.flops[rs[0].task_key()] = 1024;
  in.machines.push_back({kTarget, "Test CPU", 2, 200, 20, 1700000000, "0.1.0"});
  in.benches.push_back(json::parse(kBench));
  std::string page = render_report_html(in);
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(page.find("a&amp;b.db") != std::string::npos);
  // Every chart is a spec in the JSON block, with its canvas on the page.
  size_t at = page.find("id=\"kiln-charts\">");
  REQUIRE(at != std::string::npos);
  size_t start = page.find('>', at) + 1, end = page.find("</script>", start);
  json specs = json::parse(page.substr(start, end - start));
  CHECK(static_cast<int>(specs.size()) == report_chart_count(page));
  // Bench bars, roofline, job, two curves, accuracy, predictions, errors.
  CHECK(specs.size() == 8);
  for (const auto& c : specs)
    CHECK(page.find("<canvas id=\"" + c["id"].get<std::string>() + "\"") != std::string::npos);
  CHECK(specs[0]["spec"]["type"] == "bar");
  CHECK(specs[0]["spec"]["data"]["datasets"][0]["kilnLabels"][0] == "2%");  // 4 of 200 GFLOP/s
  CHECK(specs[1]["spec"]["options"]["scales"]["x"]["type"] == "logarithmic");
  // The short target, with the full string on hover; the wrong output marked.
  CHECK(page.find("<abbr title=\"llvm -mtriple=x86_64-pc-linux-gnu -mcpu=skylake-avx512\">x86-64 skylake-avx512 "
                  "avx512</abbr>") != std::string::npos);
  CHECK(page.find("class=\"wrong\">WRONG") != std::string::npos);
  CHECK(page.find("geomean kiln/oneDNN: 0.50x") != std::string::npos);
  CHECK(page.find("runtime_timeout") != std::string::npos);
  // Self-contained: nothing refers to another file or address.
  CHECK(page.find("src=") == std::string::npos);
  CHECK(page.find("http") == std::string::npos);
  CHECK(page.find("<svg") == std::string::npos);  // no hand-drawn charts
  CHECK(page.find("http-equiv=\"refresh\"") == std::string::npos);
}

TEST_CASE("report page: a live page reloads itself, an empty one says how to start", "[report]") {
  ReportInput live = input_with({record("matmul:M=8,N=8,K=8", 1, 0)});
  live.running = true;
  std::string page = render_report_html(live);
  CHECK(page.find("<meta http-equiv=\"refresh\"") != std::string::npos);
  CHECK(page.find("while the job was still running") != std::string::npos);
  std::string empty = render_report_html(input_with({}));
  CHECK(empty.find("Nothing to show yet") != std::string::npos);
  CHECK(empty.find("kiln tune matmul:M=512,N=512,K=512") != std::string::npos);
  CHECK(report_chart_count(empty) == 0);
}

TEST_CASE("report page: a workload string cannot close the page's script", "[report]") {
  Database::Record r = record("matmul:M=8,N=8,K=8", 1, 0);
  r.config = {{"note", "</script><script>alert(1)</script><!--<script "}};
  ReportInput in = input_with({r});
  in.flops[r.task_key()] = 1024;
  in.machines.push_back({kTarget, "Test CPU", 2, 200, 20, 1700000000, "0.1.0"});  // the config is a roofline tip
  std::string page = render_report_html(in);
  CHECK(page.find("</script><script>alert") == std::string::npos);
  CHECK(page.find("<!--<script") == std::string::npos);
  CHECK(page.find("\\u003c/script\\u003e") != std::string::npos);
}

TEST_CASE("report page: the variant kiln kept per workload, and what each variant reached", "[report]") {
  TempDir tmp("kiln_report");
  json bench = json::parse(kBench);
  CHECK(render_report_html([&] {
          ReportInput in = input_with({});
          in.benches.push_back(bench);
          return in;
        }())
            .find("kiln variant") == std::string::npos);  // no variants: no column
  bench["workloads"][0]["kiln_variant"] = "winograd_f4";
  bench["workloads"][0]["variants"] = {{"direct", {{"gflops", 189.4}, {"check", "ok"}}},
                                       {"winograd_f4", {{"gflops", 508.8}, {"check", "ok"}}},
                                       {"winograd_f2", {{"error", "did not build"}}}};
  write_text(tmp / "v.json", bench.dump());
  ReportInput in = input_with({});
  in.benches.push_back(read_bench_result(tmp / "v.json"));
  std::string page = render_report_html(in);
  CHECK(page.find("<th>kiln variant</th>") != std::string::npos);
  CHECK(page.find("winograd_f4 (direct 189.4, winograd_f4 508.8 GFLOP/s)") != std::string::npos);
}

TEST_CASE("report writer: bad inputs get clear messages, and the report never writes over its input", "[report]") {
  TempDir tmp("kiln_report");
  CHECK_THROWS_WITH(read_bench_result(tmp / "none.json"), Contains("no bench result at"));
  write_text(tmp / "cut.json", std::string(kBench).substr(0, 200));
  CHECK_THROWS_WITH(read_bench_result(tmp / "cut.json"), Contains("is truncated"));
  write_text(tmp / "other.json", R"({"a": 1})");
  CHECK_THROWS_WITH(read_bench_result(tmp / "other.json"), Contains("is not a `kiln bench --json` result"));
  // Figures that were not finite are written as null; older files lack fields.
  write_text(tmp / "odd.json", R"({"workloads": [{"workload": "matmul:M=8,N=8,K=8", "bytes": 768, "ratio": null,
    "results": {"kiln": {"gflops": null}, "onednn": {"gflops": 2.0, "check": "ok"}, "x": 3}}],
    "baselines": {"onednn": 5}, "geomean": {"onednn": {"ratio": null, "workloads": 1}}})");
  json odd = read_bench_result(tmp / "odd.json");
  CHECK(odd["workloads"][0]["results"]["kiln"]["error"] == "no figure");
  CHECK_FALSE(odd["workloads"][0].contains("ratio"));
  CHECK(odd["geomean"].empty());
  ReportInput in = input_with({});
  in.benches.push_back(odd);
  CHECK(report_chart_count(render_report_html(in)) == 1);  // the bars; no roofline without figures
  write_text(tmp / "b.json", kBench);
  CHECK(read_bench_result(tmp / "b.json")["suite"] == "demo");

  CHECK_THROWS_WITH(write_report({"", {}, tmp / "r.html"}, false), Contains("needs --db FILE, --bench FILE"));
  CHECK_THROWS_WITH(write_report({"", {tmp / "b.json"}, tmp / "b.json"}, false),
                    Contains("never writes over its input"));
  { auto db = Database::open(tmp / "k.db"); }
  const std::string db_before = read_text(tmp / "k.db");
  CHECK_THROWS_WITH(write_report({tmp / "k.db", {}, tmp / "k.db"}, false), Contains("never writes over its input"));
  CHECK_THROWS_WITH(write_report({tmp / "none.db", {}, tmp / "r.html"}, false), Contains("no tuning database at"));
  { auto newer = Database::open(tmp / "newer.db"); }
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open((tmp / "newer.db").c_str(), &raw) == SQLITE_OK);
  REQUIRE(sqlite3_exec(raw, "PRAGMA user_version = 99", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(raw);
  CHECK_THROWS_WITH(write_report({tmp / "newer.db", {}, tmp / "r.html"}, false),
                    Contains("was written by a newer kiln (schema version 99"));
  CHECK(read_text(tmp / "k.db") == db_before);

  setenv("KILN_CHARTJS", (tmp / "no-chart.js").c_str(), 1);
  CHECK_THROWS_WITH(write_report({tmp / "k.db", {}, tmp / "r.html"}, false),
                    Contains("install Debian's package libjs-chart.js"));
  unsetenv("KILN_CHARTJS");
  if (std::ifstream("/usr/share/javascript/chart.js/chart.min.js").good()) {
    ReportSummary s = write_report({tmp / "k.db", {tmp / "b.json"}, tmp / "r.html"}, false);
    std::string page = read_text(tmp / "r.html");
    CHECK(s.bytes == page.size());
    CHECK(s.charts == report_chart_count(page));
    CHECK(page.find("Released under the MIT License") != std::string::npos);  // Chart.js's licence, inlined
    CHECK(read_text(tmp / "k.db") == db_before);
  }
}

TEST_CASE("report page: model tuning curves, one line per job against trials", "[report]") {
  TempDir tmp("kiln_report");
  write_text(tmp / "g.json", model_curve("gradient", "runs/a.db", 4.2).dump(1));
  write_text(tmp / "r.json", model_curve("round-robin", "b.db", 4.5).dump(1));
  ReportInput in = input_with({});
  in.model_curves = {read_model_curve(tmp / "g.json"), read_model_curve(tmp / "r.json")};
  std::string page = render_report_html(in);
  json specs = chart_specs(page);
  REQUIRE(specs.size() == 1);
  CHECK(report_chart_count(page) == 1);
  const json& spec = specs[0]["spec"];
  CHECK(spec["type"] == "line");
  CHECK(spec["options"]["plugins"]["title"]["text"] == "Model tuning: estimated end-to-end latency against trials");
  CHECK(spec["options"]["scales"]["x"]["type"] == "linear");
  const json& ds = spec["data"]["datasets"];
  REQUIRE(ds.size() == 2);
  CHECK(ds[0]["label"] == "gradient (cls.onnx, a.db)");
  CHECK(ds[1]["label"] == "round-robin (cls.onnx, b.db)");
  CHECK_FALSE(ds[0].contains("borderDash"));
  CHECK(ds[1].contains("borderDash"));  // round-robin dashed
  CHECK(ds[0]["stepped"] == "before");  // level until the next round's trials
  // From trials 0 (the estimate before the job), one point per round.
  REQUIRE(ds[0]["data"].size() == 4);
  CHECK(ds[0]["data"][0]["x"] == 0);
  CHECK(ds[0]["data"][0]["y"] == 5.04);
  CHECK(ds[0]["data"][1]["x"] == 16);
  CHECK(ds[0]["data"][1]["y"] == 4.9);
  CHECK(ds[0]["data"][3]["x"] == 48);
  CHECK(ds[0]["data"][3]["y"].get<double>() == Approx(4.2));
  CHECK(ds[1]["data"][3]["y"].get<double>() == Approx(4.5));
  CHECK(ds[0]["data"][2]["tip"].get<std::string>().find("round 2: matmul:M=8,N=8,K=8") == 0);
  // The table: rounds, trials, the estimate and the measurement before and after.
  CHECK(page.find("<h2 id=\"models\">Model tuning</h2>") != std::string::npos);
  CHECK(page.find("<a href=\"#models\">Model tuning</a>") != std::string::npos);
  CHECK(page.find("<td data-v=\"3\">3</td><td data-v=\"48\">48</td>") != std::string::npos);
  CHECK(page.find("5.040 -&gt; 4.200") != std::string::npos);
  CHECK(page.find("5.100 -&gt; 4.300 (-15.7%)") != std::string::npos);
  CHECK(page.find("2 model tuning curves") != std::string::npos);
  CHECK(page.find("Nothing to show yet") == std::string::npos);

  // Two jobs of one scheduler, model and database: their files tell them apart.
  write_text(tmp / "g2.json", model_curve("gradient", "runs/a.db", 4.0).dump());
  in.model_curves = {read_model_curve(tmp / "g.json"), read_model_curve(tmp / "g2.json")};
  json twice = chart_specs(render_report_html(in))[0]["spec"]["data"]["datasets"];
  CHECK(twice[0]["label"] == "gradient (cls.onnx, a.db) [g.json]");
  CHECK(twice[1]["label"] == "gradient (cls.onnx, a.db) [g2.json]");

  // With the other inputs: the bench bars and roofline come first.
  in.model_curves.pop_back();
  in.benches.push_back(json::parse(kBench));
  specs = chart_specs(render_report_html(in));
  REQUIRE(specs.size() == 3);
  CHECK(specs[1]["spec"]["options"]["plugins"]["title"]["text"] ==
        "Model tuning: estimated end-to-end latency against trials");

  // Written by kiln report, which never writes over a curve.
  CHECK_THROWS_WITH(write_report({"", {}, tmp / "g.json", {tmp / "g.json"}}, false),
                    Contains("never writes over its input"));
  if (std::ifstream("/usr/share/javascript/chart.js/chart.min.js").good()) {
    ReportSummary s = write_report({"", {}, tmp / "m.html", {tmp / "g.json", tmp / "r.json"}}, false);
    CHECK(s.charts == 1);
    std::string written = read_text(tmp / "m.html");
    CHECK(written.find("<title>kiln report: " + (tmp / "g.json")) != std::string::npos);
    CHECK(written.find("Model tuning: estimated end-to-end latency against trials") != std::string::npos);
  }
}

TEST_CASE("report writer: a bad model tuning curve is named with what is wrong", "[report]") {
  TempDir tmp("kiln_report");
  const std::string good = model_curve("gradient", "a.db", 4.2).dump();
  auto error_of = [&](const std::string& name, const std::string& text) -> std::string {
    write_text(tmp / name, text);
    try {
      read_model_curve(tmp / name);
    } catch (const UserError& e) {
      return e.what();
    }
    return "no error";
  };
  auto edited = [&](const std::function<void(json&)>& edit) {
    json j = json::parse(good);
    edit(j);
    return j.dump();
  };
  CHECK_THROWS_WITH(read_model_curve(tmp / "none.json"),
                    Contains("no model tuning curve at '" + (tmp / "none.json") + "'"));
  CHECK_THAT(error_of("text.json", "round 1: 4.9 ms\n"),
             Contains("'" + (tmp / "text.json") + "' is not valid JSON") &&
                 Contains("write it again with `kiln tune-model MODEL --curve FILE`"));
  CHECK_THAT(error_of("cut.json", good.substr(0, good.size() / 2)),
             Contains("'" + (tmp / "cut.json") + "' is truncated"));
  CHECK_THAT(error_of("array.json", "[1, 2]"), Contains("'" + (tmp / "array.json") +
                                                        "' is not a `kiln tune-model --curve` file (JSON, but not an "
                                                        "object)"));
  CHECK_THAT(error_of("bench.json", kBench),
             Contains("'" + (tmp / "bench.json") + "' is not a `kiln tune-model --curve` file: it lacks \"model\""));
  CHECK_THAT(error_of("nocurve.json", edited([](json& j) { j.erase("curve"); })),
             Contains("'" + (tmp / "nocurve.json") + "' is not a `kiln tune-model --curve` file: it lacks \"curve\""));
  CHECK_THAT(error_of("type.json", edited([](json& j) { j["initial_estimated_ms"] = "5 ms"; })),
             Contains("'" + (tmp / "type.json") + "': \"initial_estimated_ms\" is a string, not a number"));
  CHECK_THAT(error_of("curvetype.json", edited([](json& j) {
                        j["curve"] = {{"trials", 16}};
                      })),
             Contains("\"curve\" is an object, not an array"));
  CHECK_THAT(error_of("measured.json", edited([](json& j) { j["measured_after_ms"] = true; })),
             Contains("\"measured_after_ms\" is a boolean, not a number (or null)"));
  CHECK_THAT(error_of("round.json", edited([](json& j) { j["curve"][1] = 4.7; })),
             Contains("'" + (tmp / "round.json") + "': \"curve\"[1] is a number, not an object"));
  CHECK_THAT(error_of("roundkey.json", edited([](json& j) { j["curve"][2].erase("estimated_ms"); })),
             Contains("'" + (tmp / "roundkey.json") +
                      "' is not a `kiln tune-model --curve` file: \"curve\"[2] lacks \"estimated_ms\""));
  CHECK_THAT(error_of("roundtype.json", edited([](json& j) { j["curve"][0]["trials"] = 16.5; })),
             Contains("'" + (tmp / "roundtype.json") + "': \"curve\"[0].\"trials\" is a number, not an integer"));
  // Not measured (null), no rounds yet, no tasks: still a curve.
  const std::string bare = edited([](json& j) {
    j["measured_after_ms"] = nullptr;
    j["curve"] = json::array();
    j.erase("tasks");
    j.erase("elapsed_s");
  });
  write_text(tmp / "bare.json", bare);
  ReportInput in = input_with({});
  in.model_curves.push_back(read_model_curve(tmp / "bare.json"));
  std::string page = render_report_html(in);
  CHECK(chart_specs(page)[0]["spec"]["data"]["datasets"][0]["data"].size() == 1);  // trials 0 only
  CHECK(page.find("5.100 -&gt; -</td>") != std::string::npos);
  // kiln report without any input names all three.
  CHECK_THROWS_WITH(write_report({"", {}, tmp / "r.html"}, false),
                    Contains("needs --db FILE, --bench FILE, --model-curve FILE"));
}
