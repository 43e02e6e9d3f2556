#include "tasks/neighbors.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "kernels/op_registry.h"

namespace kiln {

namespace {

std::optional<OpInstance> try_build(const std::string& w) {
  try {
    return build_workload(w);
  } catch (const std::exception&) {  // an op or parameter of another kiln version
    return std::nullopt;
  }
}

std::optional<double> distance(const OpInstance& a, const OpInstance& b) {
  if (a.op != b.op || a.dtype != b.dtype || a.ints.size() != b.ints.size()) return std::nullopt;
  const OpDef& def = find_op(a.op);
  const std::vector<std::string>& sizes = def.size_params;
  auto is_flag = [&](const std::string& name) {
    for (const OpParam& p : def.params)
      if (p.name == name) return p.kind == OpParam::kFlag;
    return false;
  };
  double d = 0;
  for (const auto& [name, va] : a.ints) {
    auto it = b.ints.find(name);
    if (it == b.ints.end()) return std::nullopt;
    const int64_t vb = it->second;
    bool is_size = !is_flag(name) && (sizes.empty() || std::find(sizes.begin(), sizes.end(), name) != sizes.end());
    if (!is_size) {
      if (va != vb) return std::nullopt;
      continue;
    }
    d += std::abs(std::log2(static_cast<double>(std::max<int64_t>(va, 1))) -
                  std::log2(static_cast<double>(std::max<int64_t>(vb, 1))));
  }
  return d;
}

}  // namespace

std::optional<double> workload_distance(const std::string& a, const std::string& b) {
  auto x = try_build(a), y = try_build(b);
  if (!x || !y) return std::nullopt;
  return distance(*x, *y);
}

std::vector<Neighbor> nearest_workloads(const std::string& workload, const std::vector<std::string>& candidates) {
  std::vector<Neighbor> out;
  auto self = try_build(workload);
  if (!self) return out;
  for (const auto& c : candidates) {
    auto other = try_build(c);
    if (!other || other->canonical == self->canonical) continue;
    if (auto d = distance(*self, *other)) out.push_back({c, *d});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Neighbor& a, const Neighbor& b) { return a.distance < b.distance; });
  return out;
}

}  // namespace kiln

#include <map>

#include "tasks/task_factory.h"

namespace kiln {

WarmStart warm_start_from_neighbors(XGBTuner& tuner, const Task& task, Database& db, const Target& target,
                                    int max_seeds) {
  WarmStart ws;
  std::map<std::string, std::vector<Database::Record>> by_workload;
  std::vector<std::string> tuned;
  for (auto& rec : db.records_of_op(task.op, task.target, task.key())) {
    if (!by_workload.count(rec.workload)) tuned.push_back(rec.workload);
    by_workload[rec.workload].push_back(rec);
  }
  ws.neighbors = nearest_workloads(task.workload, tuned);
  int group = 1;
  for (const Neighbor& n : ws.neighbors) {
    const auto& recs = by_workload.at(n.workload);
    // Its best config as Database::best judges it (a config measured again
    // by the median of its measurements).
    const std::optional<Database::Record> best = fastest_config(recs);
    if (!best || best->gflops <= 0) continue;
    Task other = make_task(n.workload, target, /*with_reference=*/false);
    std::vector<FeatureVector> x;
    std::vector<float> y;
    for (const auto& r : recs) {
      try {
        x.push_back(config_features(other, other.space->from_json(r.config)));
        y.push_back(static_cast<float>(r.gflops / best->gflops));
      } catch (const UserError&) {
        // a record of an older template version, or a config it rejects
      }
    }
    tuner.add_transfer_data(x, y, group++);
    ws.transfer_records += static_cast<int>(x.size());
    if (ws.seeds < max_seeds) {
      tuner.add_seeds({task.space->nearest(best->config)});
      ++ws.seeds;
    }
  }
  return ws;
}

}  // namespace kiln
