#include "tasks/variant_tuning.h"

#include <algorithm>
#include <ostream>

#include "kernels/op_registry.h"

namespace kiln {

std::vector<std::string> workload_variants(const std::string& workload) {
  OpInstance op = build_workload(workload);
  std::vector<std::string> out{op.canonical};
  const OpDef& def = find_op(op.op);
  if (def.alternatives)
    for (const OpAlternative& a : def.alternatives(op)) out.push_back(build_workload(a.kernel.workload).canonical);
  return out;
}

size_t tune_variants(const std::vector<std::string>& variants, int budget,
                     const std::function<double(const std::string&, int)>& tune, std::ostream& log) {
  if (variants.size() <= 1) {
    if (!variants.empty()) tune(variants[0], budget);
    return 0;
  }
  // A budget smaller than the variants: one trial each for the first ones.
  const int share = std::max(1, budget / static_cast<int>(variants.size() + 1));
  size_t leader = 0;
  double best = -1;
  int spent = 0;
  for (size_t i = 0; i < variants.size() && spent + share <= budget; ++i) {
    const double g = tune(variants[i], share);
    spent += share;
    if (g > best) {
      best = g;
      leader = i;
    }
  }
  const int rest = budget - spent;
  if (rest > 0) {
    log << "the rest of the budget (" << rest << " trials) goes to the leading variant " << variants[leader] << "\n";
    tune(variants[leader], share + rest);
  }
  return leader;
}

}  // namespace kiln
