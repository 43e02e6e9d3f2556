#include "bench/report_model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "base/error.h"
#include "codegen/target.h"
#include "kernels/op_registry.h"

namespace kiln {

namespace {

double throughput_of(const Database::Record& r) { return r.ok() ? r.gflops : 0; }

std::string token_value(const std::string& target, const std::string& key) {
  std::istringstream is(target);
  std::string tok;
  while (is >> tok)
    if (tok.rfind(key, 0) == 0) return tok.substr(key.size());
  return "";
}

}  // namespace

RoundAccuracy pairwise_accuracy(const std::vector<double>& predicted, const std::vector<double>& measured) {
  internal_assert(predicted.size() == measured.size()) << predicted.size() << " predictions, " << measured.size();
  RoundAccuracy a;
  double right = 0;
  for (size_t i = 0; i < predicted.size(); ++i)
    for (size_t j = i + 1; j < predicted.size(); ++j) {
      if (measured[i] == measured[j]) continue;
      ++a.pairs;
      double dp = predicted[i] - predicted[j], dm = measured[i] - measured[j];
      right += dp == 0 ? 0.5 : ((dp > 0) == (dm > 0) ? 1.0 : 0.0);
    }
  a.accuracy = a.pairs > 0 ? right / static_cast<double>(a.pairs) : 0;
  return a;
}

std::vector<CurvePoint> improving_points(const std::vector<CurvePoint>& curve) {
  std::vector<CurvePoint> out;
  for (size_t i = 0; i < curve.size(); ++i)
    if (i == 0 || curve[i].y > out.back().y || i + 1 == curve.size()) out.push_back(curve[i]);
  return out;
}

std::optional<double> workload_min_bytes(const std::string& workload) {
  try {
    OpInstance op = build_workload(workload);
    double bytes = 0;
    for (const Tensor& t : op.args()) {
      double n = static_cast<double>(t.dtype().bytes());
      for (const Expr& e : t.shape()) {
        const auto* c = e.as<IntImmNode>();
        if (!c) return std::nullopt;
        n *= static_cast<double>(c->value);
      }
      bytes += n;
    }
    return bytes;
  } catch (const std::exception&) {  // an op or parameter of another kiln version
    return std::nullopt;
  }
}

std::vector<TaskStats> task_stats(const std::vector<Database::Record>& records,
                                  const std::map<std::string, double>& flops) {
  std::map<std::string, std::vector<const Database::Record*>> by_task;
  for (const auto& r : records) by_task[r.task_key()].push_back(&r);
  std::vector<TaskStats> out;
  for (auto& [key, task_records] : by_task) {
    TaskStats t;
    const Database::Record& first = *task_records.front();
    t.key = key;
    t.workload = first.workload;
    t.op = first.op;
    t.target = first.target;
    auto f = flops.find(key);
    t.flops = f == flops.end() ? 0 : f->second;
    t.min_bytes = workload_min_bytes(t.workload).value_or(0);
    std::vector<CurvePoint> by_trial;
    std::vector<std::pair<int64_t, double>> timed;  // (timestamp, GFLOP/s) of records with a time
    std::map<int, std::pair<std::vector<double>, std::vector<double>>> rounds;  // round -> (predicted, measured)
    for (const Database::Record* r : task_records) {
      ++t.trials;
      if (!r->ok()) {
        ++t.errors;
        ++t.errors_by_kind[error_kind_name(r->error)];
      } else if (r->gflops > t.best_gflops) {
        t.best_gflops = r->gflops;
        t.best_config = r->config;
      }
      by_trial.push_back({static_cast<double>(t.trials), t.best_gflops});
      if (r->timestamp > 0) timed.emplace_back(r->timestamp, throughput_of(*r));
      if (std::isfinite(r->predicted) && r->round >= 0) {
        rounds[r->round].first.push_back(r->predicted);
        rounds[r->round].second.push_back(throughput_of(*r));
      }
    }
    t.by_trial = improving_points(by_trial);
    // Imported records may come out of time order or without a time.
    std::stable_sort(timed.begin(), timed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<CurvePoint> by_seconds;
    double best = 0;
    for (const auto& [ts, g] : timed) {
      best = std::max(best, g);
      by_seconds.push_back({static_cast<double>(ts - timed.front().first), best});
    }
    t.by_seconds = improving_points(by_seconds);
    for (auto& [round, pm] : rounds) {
      RoundAccuracy a = pairwise_accuracy(pm.first, pm.second);
      a.round = round;
      if (a.pairs > 0) t.rounds.push_back(a);
      for (size_t i = 0; i < pm.first.size(); ++i)
        t.predictions.push_back({pm.first[i], t.best_gflops > 0 ? pm.second[i] / t.best_gflops : 0});
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<JobStats> job_stats(const std::vector<Database::Record>& records, const std::vector<TaskStats>& tasks) {
  std::map<std::string, double> task_best;
  for (const auto& t : tasks) task_best[t.key] = t.best_gflops;
  std::map<std::string, JobStats> jobs;
  std::map<std::string, std::map<std::string, std::vector<CurvePoint>>> curves;  // job -> task -> points
  for (const auto& r : records) {
    if (r.job.empty()) continue;
    JobStats& j = jobs[r.job];
    if (j.job.empty()) {
      j.job = r.job;
      j.first_timestamp = r.timestamp;
    }
    auto& c = curves[r.job][r.task_key()];
    double best = task_best[r.task_key()];
    double pct = best > 0 ? 100.0 * throughput_of(r) / best : 0;
    double so_far = c.empty() ? pct : std::max(c.back().y, pct);
    c.push_back({static_cast<double>(c.size() + 1), so_far});
  }
  std::vector<JobStats> out;
  for (auto& [name, j] : jobs) {
    for (auto& [key, c] : curves[name]) j.tasks.emplace_back(key, improving_points(c));
    out.push_back(std::move(j));
  }
  std::sort(out.begin(), out.end(),
            [](const JobStats& a, const JobStats& b) { return a.first_timestamp < b.first_timestamp; });
  return out;
}

ModelCurveStats model_curve_stats(const nlohmann::json& c) {
  auto number_or_nan = [&](const char* key) {
    return c.contains(key) && c[key].is_number() ? c[key].get<double>() : std::nan("");
  };
  auto file_name = [](const std::string& path) { return std::filesystem::path(path).filename().string(); };
  ModelCurveStats s;
  s.file = c.value("file", "");
  s.model = c.at("model").get<std::string>();
  s.scheduler = c.at("scheduler").get<std::string>();
  s.db = c.at("db").get<std::string>();
  s.label = s.scheduler + " (" + file_name(s.model) + ", " + file_name(s.db) + ")";
  s.initial_estimated_ms = s.final_estimated_ms = c.at("initial_estimated_ms").get<double>();
  s.measured_before_ms = number_or_nan("measured_before_ms");
  s.measured_after_ms = number_or_nan("measured_after_ms");
  s.elapsed_s = number_or_nan("elapsed_s");
  s.points.push_back({0, s.initial_estimated_ms});
  s.tips.push_back("before the job");
  for (const auto& r : c.at("curve")) {
    ++s.rounds;
    s.trials = r.at("trials").get<int>();
    s.final_estimated_ms = r.at("estimated_ms").get<double>();
    s.points.push_back({static_cast<double>(s.trials), s.final_estimated_ms});
    std::string tip = "round " + std::to_string(r.value("round", s.rounds - 1) + 1);
    if (r.contains("workload")) tip += ": " + r["workload"].get<std::string>();
    if (r.contains("best_ms")) {
      std::ostringstream os;
      os.precision(4);
      os << r["best_ms"].get<double>();
      tip += "\nthe task's best: " + os.str() + " ms";
    }
    s.tips.push_back(tip);
  }
  return s;
}

std::string short_target_name(const std::string& target) {
  std::string triple = token_value(target, "-mtriple="), cpu = token_value(target, "-mcpu=");
  if (triple.empty() && cpu.empty()) return target;
  std::string arch = triple.substr(0, triple.find('-'));
  if (arch == "x86_64") arch = "x86-64";
  std::string vec;
  if (arch == "x86-64") {
    int bits = 0;
    try {
      bits = Target::parse(target).vector_bits();
    } catch (const UserError&) {
      std::string attrs = token_value(target, "-mattr=");
      bits = attrs.find("+avx512f") != std::string::npos ? 512 : attrs.find("+avx2") != std::string::npos ? 256 : 128;
    }
    vec = bits >= 512 ? "avx512" : bits >= 256 ? "avx2" : "sse";
  } else if (arch == "aarch64") {
    vec = "neon";
  }
  std::string out = arch;
  for (const std::string& part : {cpu, vec})
    if (!part.empty()) out += " " + part;
  return out;
}

}  // namespace kiln
