#include "kernels/gpu_pool2d_template.h"

#include "base/error.h"
#include "kernels/gpu_template_util.h"
#include "kernels/pool2d.h"

namespace kiln {

namespace {

const std::vector<int64_t> kThreadsPerBlock{32, 64, 128, 256, 512, 1024};
const std::vector<int64_t> kOutputsPerThread{1, 2, 4, 8};

// Windows up to this many taps are unrolled by default (a 7x7 global pool
// still is; a huge window would only grow the code).
constexpr int64_t kDefaultUnrollTaps = 64;

void check_dtype(const OpInstance& op) {
  check_gpu_dtype(op.dtype, op.op);
}

}  // namespace

std::shared_ptr<ConfigSpace> gpu_pool2d_space(const OpInstance& op, const GpuLimits& gpu) {
  check_dtype(op);
  std::vector<int64_t> threads;
  for (int64_t t : kThreadsPerBlock)
    if (t <= gpu.max_threads_per_block) threads.push_back(t);
  auto s = std::make_shared<ConfigSpace>();
  s->define_choice("threads", threads);
  s->define_choice("tile", kOutputsPerThread);
  s->define_annotate("tile_mode", {"interleaved", "row"});
  s->define_annotate("unroll_window", {"unroll", "none"});
  return s;
}

Config gpu_pool2d_default(const OpInstance& op, const GpuLimits&, const ConfigSpace& space) {
  // One output per thread, 256 threads (8 warps) a block, coalesced: pooling
  // is bound by memory bandwidth, and this keeps every warp's accesses
  // adjacent with enough blocks to fill the GPU on common CNN shapes.
  nlohmann::json j;
  j["threads"] = 256;
  j["tile"] = 1;
  j["tile_mode"] = "interleaved";
  j["unroll_window"] = op.ints.at("R") * op.ints.at("S") <= kDefaultUnrollTaps ? "unroll" : "none";
  return space.nearest(j);
}

ScheduledOp gpu_pool2d_schedule(const OpInstance& op, const Config& cfg) {
  check_dtype(op);
  const int64_t threads = cfg.choice("threads"), tile = cfg.choice("tile");
  const bool row = cfg.annotate("tile_mode") == "row";
  Tensor out = op.outputs[0];
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& s = *sch;
  // Each output's window reduces in a register: the window sum (avg) or a
  // local copy of the max reduction.
  Tensor acc = pool_accumulator(s, op);
  Stage so = s[out];
  Stage sa = s[acc];
  sa.set_scope(MemScope::kLocal);
  const std::vector<IterVar> ax = so.axis();
  IterVar block, thread;
  if (row) {
    // [flat(n, c, oh, ow / tile) -> blocks, threads] x tile outputs of a row.
    IterVar owo, owi;
    so.split(ax[3], tile, &owo, &owi);
    so.split(so.fuse({ax[0], ax[1], ax[2], owo}), threads, &block, &thread);
    so.unroll(owi);
    sa.compute_at(so, thread);
    // The window loops outside the row tile: each tap's loads serve the
    // whole tile.
    const std::vector<IterVar> acc_axes = sa.axis(), taps = sa.reduce_axis();
    sa.reorder({taps[0], taps[1], acc_axes[3]});
    sa.unroll(acc_axes[3]);
  } else {
    // flat = (block * tile + i) * threads + thread: a warp's 32 threads take
    // 32 adjacent outputs at every step i.
    IterVar rest, step;
    so.split(so.fuse(ax), threads * tile, &block, &rest);
    so.split(rest, threads, &step, &thread);
    so.reorder({block, thread, step});
    so.unroll(step);
    sa.compute_at(so, step);
  }
  so.bind(block, "blockIdx.x");
  so.bind(thread, "threadIdx.x");
  if (cfg.annotate("unroll_window") == "unroll")
    for (const IterVar& tap : sa.reduce_axis()) sa.unroll(tap);
  auto pad = op.parts.find("data_pad");
  if (pad != op.parts.end()) s[pad->second].compute_inline();
  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
}

void set_gpu_pool2d_template(OpDef& d) {
  set_gpu_template(d, gpu_pool2d_space, gpu_pool2d_default, gpu_pool2d_schedule);
}

}  // namespace kiln
