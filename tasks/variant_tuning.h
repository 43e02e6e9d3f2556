// Tuning a workload together with its alternatives (kernels/op_registry.h's
// OpAlternative: Winograd for a 3x3 convolution) on one budget of trials,
// for `kiln tune --variants` and `kiln bench --tune-trials`: each of the n
// variants (the workload itself first) gets budget / (n + 1) trials, then
// the one that leads gets the rest. A workload without alternatives gets
// the whole budget.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace kiln {

// The workload's canonical string, then its alternatives' kernel workloads.
// user_error on a bad workload string.
std::vector<std::string> workload_variants(const std::string& workload);

// Tunes every variant through `tune(workload, trials)`, which tunes up to
// `trials` in total (earlier trials included) and returns the best GFLOP/s
// (negative: nothing to tune). Returns the index of the leading variant.
size_t tune_variants(const std::vector<std::string>& variants, int budget,
                     const std::function<double(const std::string&, int)>& tune, std::ostream& log);

}  // namespace kiln
