#include "kernels/generic_schedule.h"

#include <algorithm>

namespace kiln {

namespace {

int64_t extent_of(const IterVar& iv) {
  const auto* imm = iv->dom.extent.as<IntImmNode>();
  return imm ? imm->value : 0;
}

// Enough elements per task that a parallel loop pays for its dispatch.
constexpr int64_t kMinParallelWork = 1 << 14;

void schedule_root(Stage st, const CpuInfo& cpu, DType dtype) {
  std::vector<IterVar> axes = st.axis();
  int64_t total = 1;
  for (const IterVar& iv : axes) total *= std::max<int64_t>(1, extent_of(iv));
  int64_t work = total;
  for (const IterVar& iv : st.reduce_axis()) work *= std::max<int64_t>(1, extent_of(iv));
  const bool parallel = cpu.num_threads > 1 && work >= kMinParallelWork;
  const int lanes = std::max(1, cpu.vector_bits / std::max<int>(8, dtype.bits));
  // A reduction (a direct convolution, a pooling window) vectorizes across
  // its innermost output axis: the reduction loops move outside a vector of
  // neighbouring outputs, which accumulate side by side.
  const std::vector<IterVar> reduce = st.reduce_axis();
  if (!reduce.empty() && axes.size() >= 1) {
    const int64_t inner = extent_of(axes.back());
    int vec = lanes;
    while (vec >= 4 && inner % vec != 0) vec /= 2;
    if (vec >= 4 && inner >= vec) {
      IterVar io, ii;
      st.split(axes.back(), vec, &io, &ii);
      std::vector<IterVar> outer(axes.begin(), axes.end() - 1);
      outer.push_back(io);
      IterVar f = outer.size() == 1 ? outer[0] : st.fuse(outer);
      std::vector<IterVar> order = {f};
      order.insert(order.end(), reduce.begin(), reduce.end());
      order.push_back(ii);
      st.reorder(order);
      st.vectorize(ii);
      if (parallel) st.parallel(f);
      return;
    }
  }
  IterVar fused = axes.size() == 1 ? axes[0] : st.fuse(axes);
  // Vectorize element-wise stages whose element count is a whole number of vectors.
  if (st.reduce_axis().empty() && lanes > 1 && total % lanes == 0 && total >= lanes) {
    IterVar outer, inner;
    st.split(fused, lanes, &outer, &inner);
    st.vectorize(inner);
    if (parallel) st.parallel(outer);
    return;
  }
  if (parallel) st.parallel(fused);
}

}  // namespace

std::vector<Operation> inline_elementwise_stages(Schedule& s, const std::vector<Tensor>& outputs) {
  std::vector<Operation> reductions;
  for (const Operation& op : post_dfs_order(outputs)) {
    const auto* c = op.as<ComputeOpNode>();
    const bool is_output = std::any_of(outputs.begin(), outputs.end(), [&](const Tensor& t) { return t->op == op; });
    if (!c || is_output) continue;
    if (c->reduce_axis.empty())
      s[op].compute_inline();
    else
      reductions.push_back(op);
  }
  return reductions;
}

ScheduledOp generic_schedule(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                             const CpuInfo& cpu) {
  auto sch = std::make_shared<Schedule>(outputs);
  Schedule& s = *sch;
  // Every stage left (the reductions and the outputs) runs at the root.
  for (const Operation& op : inline_elementwise_stages(s, outputs))
    schedule_root(s[op], cpu, op.as<ComputeOpNode>()->output_dtype());
  std::vector<Operation> done;
  for (const Tensor& out : outputs) {
    const auto* c = out->op.as<ComputeOpNode>();
    if (!c || std::find(done.begin(), done.end(), out->op) != done.end()) continue;
    done.push_back(out->op);
    schedule_root(s[out->op], cpu, c->output_dtype());
  }
  std::vector<Tensor> args = inputs;
  args.insert(args.end(), outputs.begin(), outputs.end());
  return ScheduledOp{sch, args};
}

}  // namespace kiln
