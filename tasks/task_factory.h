// Builds tuning tasks from workload strings: the op's template space, its
// instantiate function, the kernel's arguments and the whole reference output
// for the task's inputs (the interpreter's up to 5e7 FLOPs; beyond, the op's
// default schedule's, checked against the interpreter on sampled elements),
// which every measured candidate is compared with element by element.
#pragma once

#include <string>

#include "codegen/target.h"
#include "costmodel/features.h"
#include "kernels/op_registry.h"
#include "tuner/task.h"

namespace kiln {

// user_error on a bad workload or target string. Without a reference, a
// task can only provide features (transfer learning).
Task make_task(const std::string& workload, const Target& target, bool with_reference = true);

// Holds knobs of a task's space at the values of `fixed`, a JSON object of
// knob values (`kiln tune --fix`): its configs, and the earlier records it
// resumes from, are then those with these values. user_error for text that
// is not a JSON object, an unknown knob or a value that is not an option.
void fix_task_knobs(Task* task, const std::string& fixed);

// The cost model's features of a config of the task (its loop nest lowered
// to annotated loops). UserError when the template rejects the config: the
// xgb tuner then never proposes it.
FeatureVector config_features(const Task& task, const Config& c);

// The op instance and the scheduled kernel of a task's config.
ScheduledOp apply_task_config(const std::string& workload, const Target& target, const nlohmann::json& config);

}  // namespace kiln
