#include "tasks/tuner_factory.h"

#include <ostream>

#include "base/error.h"
#include "costmodel/xgb_model.h"
#include "tasks/kernel_build.h"
#include "tasks/neighbors.h"
#include "tasks/task_factory.h"
#include "tuner/grid_tuner.h"
#include "tuner/random_tuner.h"
#include "tuner/xgb_tuner.h"

namespace kiln {

void check_tuner_name(const std::string& name) {
  user_check(name == "xgb" || name == "random" || name == "grid")
      << "unknown tuner '" << name << "' (expected xgb, random or grid)";
}

std::unique_ptr<Tuner> make_tuner(const TunerChoice& o, const Task& task, Database& db, const Target& target,
                                  std::ostream& log) {
  if (o.name == "random") return std::make_unique<RandomTuner>(*task.space, o.seed);
  if (o.name == "grid") return std::make_unique<GridTuner>(*task.space);
  check_tuner_name(o.name);
  XGBTunerOptions xo;
  xo.seed = o.seed;
  xo.batch_size = o.batch;
  const Task* tp = &task;
  XGBoostRanker::Options mo;
  mo.seed = o.seed;
  mo.nthread = 1;  // more would leave OpenMP threads behind, and the builder forks
  auto tuner = std::make_unique<XGBTuner>(
      *task.space, [tp](const Config& c) { return config_features(*tp, c); }, std::make_unique<XGBoostRanker>(mo), xo);
  // The template's default config is measured first, so that a search
  // never ends slower than the default it would replace.
  tuner->add_seeds({task.space->nearest(template_default_config(build_workload(task.workload), target))});
  // Records of tuned neighbouring shapes warm-start the model, and their
  // best configs are measured next.
  WarmStart ws = warm_start_from_neighbors(*tuner, task, db, target, o.neighbor_seeds);
  if (!ws.neighbors.empty())
    log << task.workload << ": warm start from " << ws.neighbors.size() << " tuned neighbour"
        << (ws.neighbors.size() == 1 ? "" : "s") << " (nearest " << ws.neighbors.front().workload << "), "
        << ws.transfer_records << " records, " << ws.seeds << " seed configs\n";
  return tuner;
}

}  // namespace kiln
