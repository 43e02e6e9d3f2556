// `kiln bench` end to end in-process (a tiny suite, in-process baselines,
// one short round) and the formatting of its result: text and Markdown
// tables and geometric means (kiln report's page: test_bench_report_page.cpp).
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "bench/bench_runner.h"
#include "bench/bench_table.h"
#include "bench/contenders/baselines.h"
#include "codegen/target.h"
#include "kernels/op_registry.h"
#include "support/skip.h"
#include "support/temp_dir.h"
#include "tasks/kernel_build.h"
#include "tuner/database.h"

using namespace kiln;
using kiln::testing::TempDir;
using nlohmann::json;

namespace {

BenchOptions quick(const std::string& suite) {
  BenchOptions o;
  o.suite = suite;
  o.rounds = 2;
  o.repeat = 1;
  o.min_repeat_ms = 0;
  o.baselines = {"onednn", "openblas"};
  return o;
}

// A made-up result: two workloads, one with a wrong Halide output.
json sample_result() {
  return json::parse(R"({
    "suite": "demo", "date": "2026-01-01 00:00 UTC", "machine": "Test CPU", "threads": 2,
    "command": "kiln bench --suite demo", "rounds": 3, "min_repeat_ms": 100,
    "baselines": {"onednn": "oneDNN 2.6.0", "halide": "Halide 14.0.0"},
    "workloads": [
      {"workload": "matmul:M=8,N=8,K=8", "flops": 1024, "kiln_config": "database", "best_baseline": "onednn",
       "ratio": 2.0, "results": {"kiln": {"gflops": 4.0, "check": "ok"}, "onednn": {"gflops": 2.0, "check": "ok"},
                                 "halide": {"gflops": 1.0, "check": "wrong: out[0, 0] = 1, expected 2"}}},
      {"workload": "softmax:M=4,N=4", "flops": 80, "kiln_config": "default", "best_baseline": "onednn",
       "ratio": 0.5, "results": {"kiln": {"gflops": 1.0, "check": "ok"}, "onednn": {"gflops": 2.0, "check": "ok"},
                                 "halide": {"error": "Halide cannot run it"}}},
      {"workload": "max_pool2d_nchwc:C=16,H=4,W=4,R=2,S=2,stride=2", "flops": 256, "bytes": 1280,
       "kiln_config": "default", "best_baseline": "onednn", "ratio": 1.5,
       "results": {"kiln": {"gflops": 3.0, "gbps": 15.0, "check": "ok"},
                   "onednn": {"gflops": 2.0, "gbps": 10.0, "check": "ok"}}}],
    "geomean": {"onednn": {"ratio": 1.0, "workloads": 2}}})");
}

}  // namespace

TEST_CASE("kiln bench runs kiln and the baselines on a suite and checks every output") {
  TempDir tmp;
  if (!baselines::baseline_available("onednn") || !baselines::baseline_available("openblas")) {
    KILN_SKIP("oneDNN or OpenBLAS missing: " << baselines::baseline_unavailable_reason("onednn") << " / "
                                             << baselines::baseline_unavailable_reason("openblas"));
  }
  std::string suite =
      tmp.write("kiln_bench_quick.txt", "matmul:M=9,N=10,K=11,bias=1\nconv2d:C=3,H=6,W=6,K=4,R=3,S=3,pad=1\n");
  std::ostringstream log;
  json r = run_bench(quick(suite), log);
  REQUIRE(r["workloads"].size() == 2);
  CHECK(bench_outputs_ok(r));
  const json& mm = r["workloads"][0];
  // Bytes: A, B, bias and C, in f32.
  CHECK(mm["bytes"].get<double>() == 4.0 * (9 * 11 + 11 * 10 + 10 + 9 * 10));
  CHECK(mm["results"]["kiln"]["gbps"].get<double>() ==
        Approx(mm["bytes"].get<double>() / (mm["results"]["kiln"]["median_ms"].get<double>() * 1e6)));
  CHECK(mm["workload"] == build_workload("matmul:M=9,N=10,K=11,bias=1").canonical);
  for (const char* who : {"kiln", "onednn", "openblas"}) {
    INFO(who);
    REQUIRE(mm["results"].contains(who));
    CHECK(mm["results"][who]["check"] == "ok");
    CHECK(mm["results"][who]["round_ms"].size() == 2);
    // Same FLOP count for everyone: GFLOP/s * time is the op's work.
    CHECK(mm["results"][who]["gflops"].get<double>() * mm["results"][who]["median_ms"].get<double>() * 1e6 ==
          Approx(mm["flops"].get<double>()).epsilon(1e-9));
    CHECK(mm["flops"].get<double>() == build_workload("matmul:M=9,N=10,K=11,bias=1").flops);
  }
  const json& conv = r["workloads"][1];
  CHECK_FALSE(conv["results"].contains("openblas"));  // not a GEMM
  CHECK(conv["best_baseline"] == "onednn");
  CHECK(conv["ratio"].get<double>() ==
        Approx(conv["results"]["kiln"]["gflops"].get<double>() / conv["results"]["onednn"]["gflops"].get<double>()));
  CHECK(r["geomean"]["onednn"]["workloads"] == 2);
  CHECK(r["geomean"]["openblas"]["workloads"] == 1);
  double k0 = mm["results"]["kiln"]["gflops"], d0 = mm["results"]["onednn"]["gflops"];
  double k1 = conv["results"]["kiln"]["gflops"], d1 = conv["results"]["onednn"]["gflops"];
  CHECK(r["geomean"]["onednn"]["ratio"].get<double>() == Approx(std::sqrt(k0 / d0 * k1 / d1)));
  std::string text = format_bench_text(r);
  CHECK(text.find("geomean kiln/oneDNN") != std::string::npos);
  CHECK(text.find(build_workload("conv2d:C=3,H=6,W=6,K=4,R=3,S=3,pad=1").canonical) != std::string::npos);
}

TEST_CASE("kiln bench runs a 3x3 convolution's Winograd variants and keeps the fastest", "[bench][winograd][flat]") {
  TempDir tmp;
  if (!baselines::baseline_available("onednn")) {
    KILN_SKIP("oneDNN missing: " << baselines::baseline_unavailable_reason("onednn"));
  }
  const std::string layer = "conv2d_nchwc:C=16,H=10,W=9,K=32,R=3,S=3,pad=1,bias=1,relu=1";
  std::string suite = tmp.write("kiln_bench_winograd.txt", layer + "\nconv2d_nchwc:C=16,H=8,W=8,K=16,R=1,S=1\n");
  BenchOptions o = quick(suite);
  o.baselines = {"onednn"};
  o.db = tmp.path + "/variants.db";
  o.tune_trials = 8;  // 2 trials per variant, then the leader gets 8 in all
  std::ostringstream log;
  json r = run_bench(o, log);
  INFO(log.str());
  CHECK(bench_outputs_ok(r));
  const json& w = r["workloads"][0];
  REQUIRE(w.contains("variants"));
  double best = 0;
  for (const char* v : {"direct", "winograd_f2", "winograd_f4"}) {
    INFO(v);
    REQUIRE(w["variants"].contains(v));
    CHECK(w["variants"][v]["check"] == "ok");
    best = std::max(best, w["variants"][v]["gflops"].get<double>());
  }
  const std::string chosen = w["kiln_variant"];
  CHECK(w["results"]["kiln"] == w["variants"][chosen]);
  CHECK(w["results"]["kiln"]["gflops"].get<double>() == best);
  CHECK_FALSE(w["results"].contains("kiln:winograd_f4"));
  // GFLOP/s of every variant count the direct convolution's work.
  CHECK(w["flops"].get<double>() == build_workload(layer).flops);
  // 1x1 stride 1: the direct kernel and the flat one (H*W pixels as one row).
  REQUIRE(r["workloads"][1].contains("variants"));
  CHECK(r["workloads"][1]["variants"].size() == 2);
  CHECK(r["workloads"][1]["variants"]["flat"]["check"] == "ok");
  if (chosen != "direct") CHECK(format_bench_text(r).find(chosen) != std::string::npos);

  // The budget: 8 / 4 = 2 trials for each of the three variants, the 2 left
  // for the one that led.
  auto db = Database::open(o.db);
  int64_t total = 0;
  std::vector<std::string> variant_workloads{build_workload(layer).canonical};
  for (const OpAlternative& a : find_op("conv2d_nchwc").alternatives(build_workload(layer)))
    variant_workloads.push_back(build_workload(a.kernel.workload).canonical);
  REQUIRE(variant_workloads.size() == 3);
  for (auto& key : db->task_keys()) {
    const std::string workload = key.substr(0, key.find(" @ "));
    if (std::find(variant_workloads.begin(), variant_workloads.end(), workload) == variant_workloads.end()) continue;
    const int64_t n = db->count(key);
    CHECK(n >= 2);
    total += n;
  }
  CHECK(total == 8);
  CHECK(log.str().find("the rest of the budget (2 trials) goes to the leading variant") != std::string::npos);
}

TEST_CASE("kiln bench --tune-trials measures the template's default config first") {
  // The bench's tuning is kiln tune's search: a tuned record is never
  // slower than the default it replaces because the default is one of them.
  TempDir tmp;
  const std::string w = "matmul:M=24,N=40,K=16";
  BenchOptions o = quick(tmp.write("kiln_bench_default_first.txt", w + "\n"));
  o.baselines = {};
  o.db = tmp / "default_first.db";
  o.tune_trials = 1;
  std::ostringstream log;
  run_bench(o, log);
  auto db = Database::open(o.db);
  const OpInstance op = build_workload(w);
  const OpDef& def = find_op(op.op);
  const CpuInfo cpu = cpu_info_for(Target::host());
  auto space = def.define_space(op, cpu);
  const std::string want = space->nearest(def.default_config(op, cpu, *space).to_json()).str();
  int found = 0;
  for (auto& key : db->task_keys()) {
    if (key.substr(0, key.find(" @ ")) != op.canonical) continue;
    for (const auto& rec : db->records(key)) {
      CHECK(space->from_json(rec.config).str() == want);
      ++found;
    }
  }
  CHECK(found == 1);
}

TEST_CASE("kiln bench refuses bad suites and options before running anything") {
  TempDir tmp;
  std::string bad = tmp.write("kiln_bench_bad.txt", "matmul:M=2,N=2,K=2\nnot_an_op:M=3\n");
  std::ostringstream log;
  try {
    run_bench(quick(bad), log);
    FAIL("no error");
  } catch (const UserError& e) {
    std::string m = e.what();
    CHECK(m.find("line 2") != std::string::npos);
    CHECK(m.find("unknown op 'not_an_op'") != std::string::npos);
  }
  CHECK(log.str().empty());
  BenchOptions o = quick("smoke");
  o.baselines = {"mkl"};
  CHECK_THROWS_WITH(run_bench(o, log), Catch::Contains("unknown baseline 'mkl'"));
  o = quick("smoke");
  o.tune_trials = 4;
  CHECK_THROWS_WITH(run_bench(o, log), Catch::Contains("--tune-trials needs --db"));
}

TEST_CASE("bench tables: text and Markdown with ratios, wrong outputs and geomeans") {
  json r = sample_result();
  CHECK_FALSE(bench_outputs_ok(r));
  std::string text = format_bench_text(r);
  CHECK(text.find("WRONG") != std::string::npos);
  CHECK(text.find("n/a") != std::string::npos);
  CHECK(text.find("2.00x oneDNN") != std::string::npos);
  CHECK(text.find("Halide differs") != std::string::npos);
  CHECK(text.find("geomean kiln/oneDNN: 1.00x over 2 workloads") != std::string::npos);
  std::string md = format_bench_markdown(r);
  CHECK(md.find("| workload | kiln | oneDNN | Halide | kiln/best | check |") != std::string::npos);
  CHECK(md.find("| `matmul:M=8,N=8,K=8` | 4.00 | 2.00 | WRONG | 2.00x oneDNN | Halide differs |") != std::string::npos);
  CHECK(md.find("`kiln bench --suite demo`") != std::string::npos);
  // A memory-bound workload (fewer FLOPs than bytes) shows GB/s too.
  CHECK(md.find("| `max_pool2d_nchwc:C=16,H=4,W=4,R=2,S=2,stride=2` | 3.00 (15.0) | 2.00 (10.0) | - |") !=
        std::string::npos);
  CHECK(text.find("3.00 (15.0)") != std::string::npos);
  CHECK(md.find("| `matmul:M=8,N=8,K=8` | 4.00 |") != std::string::npos);  // compute-bound: GFLOP/s only
}
