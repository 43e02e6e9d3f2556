#include "kernels/generic_gpu_schedule.h"

#include <algorithm>

#include "base/error.h"
#include "kernels/generic_schedule.h"

namespace kiln {

namespace {

int64_t extent_of(const IterVar& iv) {
  const auto* imm = iv->dom.extent.as<IntImmNode>();
  return imm ? imm->value : 1;
}

// One thread per element of the stage's output; returns the thread axis.
IterVar schedule_root(Stage st, const GpuLimits& gpu, const std::string& name) {
  const std::vector<IterVar> axes = st.axis();
  user_check(!axes.empty()) << "stage '" << name
                            << "' computes a single value (no output axis); the generic cuda schedule needs at "
                               "least one output axis to spread over threads";
  int64_t total = 1;
  for (const IterVar& iv : axes) total *= extent_of(iv);
  // A block no wider than the work, in whole warps.
  const int64_t warp = std::max(1, gpu.warp_size);
  int64_t threads = std::min<int64_t>(kGenericGpuThreads, gpu.max_threads_per_block);
  threads = std::min(threads, (total + warp - 1) / warp * warp);
  IterVar fused = axes.size() == 1 ? axes[0] : st.fuse(axes);
  IterVar block, thread;
  st.split(fused, threads, &block, &thread);
  st.bind(block, "blockIdx.x");
  st.bind(thread, "threadIdx.x");
  return thread;
}

}  // namespace

ScheduledOp generic_gpu_schedule(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                                 const GpuLimits& gpu) {
  auto sch = std::make_shared<Schedule>(outputs);
  Schedule& s = *sch;
  const std::vector<Operation> reductions = inline_elementwise_stages(s, outputs);
  std::vector<IterVar> threads;
  for (const Tensor& out : outputs) {
    const auto* c = out->op.as<ComputeOpNode>();
    internal_assert(c) << "generic_gpu_schedule: output '" << out->op->name << "' is not computed";
    threads.push_back(schedule_root(s[out->op], gpu, c->name));
  }
  // A reduction that feeds an output (a mean's sum, a pool's window) is
  // computed by each of the output's threads, in registers, as far as that
  // thread needs it: kiln's cuda backend keeps no intermediate in global
  // memory between kernels.
  for (const Operation& op : reductions) {
    size_t k = 0;
    while (k < outputs.size()) {
      const std::vector<Operation> reads = post_dfs_order({outputs[k]});
      if (std::find(reads.begin(), reads.end(), op) != reads.end()) break;
      ++k;
    }
    internal_assert(k < outputs.size()) << "generic_gpu_schedule: no output reads '" << op->name << "'";
    Stage st = s[op];
    st.set_scope(MemScope::kLocal);
    st.compute_at(s[outputs[k]->op], threads[k]);
  }
  std::vector<Tensor> args = inputs;
  args.insert(args.end(), outputs.begin(), outputs.end());
  return ScheduledOp{sch, args};
}

}  // namespace kiln
