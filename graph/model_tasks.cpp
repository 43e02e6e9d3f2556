#include "graph/model_tasks.h"

#include <algorithm>
#include <map>

#include "graph/shape_inference.h"
#include "graph/target_passes.h"

namespace kiln::graph {

std::vector<ModelTask> extract_tasks(Graph& g, const NodeTarget& target) {
  rewrite_for_target(g, target);
  const InferredGraph inf = infer_and_fold(g);
  std::map<std::string, ModelTask> by_workload;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const NodeCompute& c = inf.computes[i];
    if (inf.folded[i] || !c.op) continue;
    if (target.cuda() && !template_takes(*c.op, target)) continue;
    ModelTask& t = by_workload[c.op->canonical];
    t.workload = c.op->canonical;
    t.flops = c.op->flops;
    ++t.weight;
    if (t.nodes.size() < 4) t.nodes.push_back(g.nodes[i].name);
  }
  std::vector<ModelTask> tasks;
  for (auto& [w, t] : by_workload) tasks.push_back(std::move(t));
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const ModelTask& a, const ModelTask& b) { return a.flops * a.weight > b.flops * b.weight; });
  return tasks;
}

}  // namespace kiln::graph
