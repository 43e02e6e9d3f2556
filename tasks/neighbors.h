// Neighbouring workloads: other shapes of the same operator whose tuning
// records can help a new one (the cost model's transfer data, and the best
// configs that seed its first batch). Two workloads are neighbours when they
// are of the same op and dtype and agree on every parameter that is not a
// tensor size (OpDef::size_params): the kernel window, stride, padding,
// blocking and fused epilogue. Their distance is the sum, over the size
// parameters, of |log2(a / b)|.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kiln {

// nullopt when they are not neighbours or either does not build.
std::optional<double> workload_distance(const std::string& a, const std::string& b);

struct Neighbor {
  std::string workload;
  double distance = 0;
};

// The neighbours of `workload` among `candidates`, nearest first (ties in
// the candidates' order); itself and non-neighbours are left out.
std::vector<Neighbor> nearest_workloads(const std::string& workload, const std::vector<std::string>& candidates);

}  // namespace kiln

#include "codegen/target.h"
#include "tuner/database.h"
#include "tuner/task.h"
#include "tuner/xgb_tuner.h"

namespace kiln {

struct WarmStart {
  std::vector<Neighbor> neighbors;  // tuned neighbours found in the database, nearest first
  int transfer_records = 0;         // their records given to the model
  int seeds = 0;                    // best configs queued as the first candidates
};

// Warms the xgb tuner of `task` up from the database: the records of every
// tuned neighbour (same op and target, see above) become the model's
// transfer data (one group per neighbour), and the best configs of the
// `max_seeds` nearest ones, mapped into this task's space
// (ConfigSpace::nearest), are measured first.
WarmStart warm_start_from_neighbors(XGBTuner& tuner, const Task& task, Database& db, const Target& target,
                                    int max_seeds);

}  // namespace kiln
