#include "kernels/gpu_row_template.h"

#include <algorithm>

#include "base/error.h"
#include "kernels/gpu_template_util.h"

namespace kiln {

namespace {

const std::vector<int64_t> kRowsPerBlock{1, 2, 4, 8, 16};
const std::vector<int64_t> kBlockThreads{32, 64, 128, 256, 512, 1024};

// Splits a column axis into [thread (threadIdx.x), step, lanes]: column
// (step * threads_x + thread) * vec + lane.
void split_columns(Stage& st, const IterVar& axis, const GpuRowParams& p, IterVar* thread, IterVar* step,
                   IterVar* lanes) {
  IterVar vectors;
  st.split(axis, p.vec, &vectors, lanes);
  st.split(vectors, p.threads_x, step, thread);
}

}  // namespace

void set_gpu_row_template(OpDef& d, std::function<ScheduledOp(const OpInstance&, const Config&)> schedule) {
  set_gpu_template(
      d,
      [](const OpInstance& op, const GpuLimits& gpu) {
        return gpu_row_space(op.ints.at("M"), op.ints.at("N"), op.dtype, gpu);
      },
      [](const OpInstance& op, const GpuLimits& gpu, const ConfigSpace& space) {
        return space.nearest(gpu_row_default(op.ints.at("M"), op.ints.at("N"), gpu));
      },
      std::move(schedule));
}

std::shared_ptr<ConfigSpace> gpu_row_space(int64_t M, int64_t, DType t, const GpuLimits& gpu) {
  check_gpu_dtype(t, "row (softmax, layer_norm)");
  auto s = std::make_shared<ConfigSpace>();
  std::vector<int64_t> threads;
  for (int64_t n : kBlockThreads)
    if (n <= gpu.max_threads_per_block) threads.push_back(n);
  s->define_split_levels("tile_rows", M, {kRowsPerBlock});
  s->define_choice("threads", threads);
  s->define_choice("vec", {1, 2, 4});
  s->define_annotate("cache", {"shared", "none"});
  return s;
}

nlohmann::json gpu_row_default(int64_t M, int64_t N, const GpuLimits& gpu) {
  nlohmann::json j;
  const int64_t vec = N % 4 == 0 ? 4 : (N % 2 == 0 ? 2 : 1);
  // One thread per vector of the row, in whole warps, 32 to 256 threads.
  int64_t threads = 32;
  while (threads < 256 && threads * vec < N) threads *= 2;
  j["tile_rows"] = {std::max<int64_t>(1, M), 1};
  j["threads"] = threads;
  j["vec"] = vec;
  // x's row in shared memory while it leaves room for a few blocks per SM.
  j["cache"] = N * 4 <= gpu.max_shared_static_per_block / 4 ? "shared" : "none";
  return j;
}

GpuRowParams decode_gpu_row_knobs(const Config& cfg) {
  GpuRowParams p;
  p.rows = cfg.split("tile_rows")[1];
  // A block of `threads` threads holds `rows` rows; a row has the rest.
  p.threads_x = std::max<int64_t>(1, cfg.choice("threads") / p.rows);
  p.vec = cfg.choice("vec");
  p.cache_x = cfg.annotate("cache") == "shared";
  return p;
}

GpuRowLoops gpu_row_output(Schedule& s, const Tensor& out, const GpuRowParams& p) {
  Stage so = s[out];
  IterVar block, row, thread, step, lanes;
  so.split(so.axis()[0], p.rows, &block, &row);
  split_columns(so, so.axis()[1], p, &thread, &step, &lanes);
  so.reorder({block, row, thread, step, lanes});
  so.bind(block, "blockIdx.x");
  so.bind(row, "threadIdx.y");
  so.bind(thread, "threadIdx.x");
  if (p.vec > 1) so.vectorize(lanes);
  return {block, row};
}

void gpu_row_reduction(Schedule& s, const Tensor& t, const Tensor& out, const IterVar& row, const GpuRowParams& p) {
  Stage st = s[t];
  st.compute_at(s[out], row);
  st.set_scope(MemScope::kLocal);
  IterVar thread, step, lanes;
  split_columns(st, st.reduce_axis()[0], p, &thread, &step, &lanes);
  st.reorder({thread, step, lanes});
  st.bind(thread, "threadIdx.x");
  st.unroll(lanes);
}

void gpu_row_scalar(Schedule& s, const Tensor& t, const Tensor& out, const IterVar& row) {
  Stage st = s[t];
  st.compute_at(s[out], row);
  st.set_scope(MemScope::kLocal);
}

void gpu_row_cache_input(Schedule& s, const Tensor& x, const std::vector<Tensor>& readers, const Tensor& out,
                         const GpuRowLoops& loops, const GpuRowParams& p) {
  std::vector<Operation> ops;
  for (auto& r : readers) ops.push_back(s.current_op(r));
  Tensor cached = s.cache_read(x, MemScope::kShared, ops);
  Stage st = s[cached];
  st.compute_at(s[out], loops.block);
  // The block's last rows may be fewer (clamped to M): split by the block's
  // row count, so that the loop bound to threadIdx.y keeps a constant extent.
  IterVar rows_outer, row, thread, step, lanes;
  st.split(st.axis()[0], p.rows, &rows_outer, &row);
  split_columns(st, st.axis()[1], p, &thread, &step, &lanes);
  st.reorder({rows_outer, row, thread, step, lanes});
  st.bind(row, "threadIdx.y");
  st.bind(thread, "threadIdx.x");
  if (p.vec > 1) st.vectorize(lanes);
}

}  // namespace kiln
