// The tuner's side of a MeasureRequest: what a pool device needs to measure
// the candidates of a Task (the device's side is rpc/measure_request.h).
#pragma once

#include "rpc/kiln.pb.h"
#include "runtime/measure.h"
#include "tuner/task.h"

namespace kiln::rpc {

// A request for `task` without artifact and entry (the pool runner adds them
// per candidate): arguments, input seed, reference samples and options.
MeasureRequest measure_spec(const Task& task, const kiln::MeasureOptions& options);

}  // namespace kiln::rpc
