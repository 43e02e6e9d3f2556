// The search of a tuning task by name: "xgb" (the cost-model-guided
// annealer, warm-started from tuned neighbouring shapes in the database),
// "random" or "grid". Shared by `kiln tune` and `kiln tune-model`.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>

#include "codegen/target.h"
#include "tuner/database.h"
#include "tuner/task.h"
#include "tuner/tuner.h"

namespace kiln {

struct TunerChoice {
  std::string name = "xgb";
  uint64_t seed = 0;
  int batch = 64;
  int neighbor_seeds = 4;  // best configs of tuned neighbours measured first (xgb)
};

// user_error for a name that is not a tuner: commands call it as they read
// their options, before any work.
void check_tuner_name(const std::string& name);

// user_error for an unknown name. The warm start is reported on `log`.
std::unique_ptr<Tuner> make_tuner(const TunerChoice& choice, const Task& task, Database& db, const Target& target,
                                  std::ostream& log);

}  // namespace kiln
