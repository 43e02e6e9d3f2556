#include "kernels/gpu_depthwise_template.h"

#include <algorithm>
#include <set>
#include <utility>

#include "base/error.h"
#include "kernels/gpu_template_util.h"

namespace kiln {

namespace {

// Thread counts per block axis; their largest product is the 1024 threads
// every architecture allows (8 x 16 x 32 = 4096 is over it: lowering
// rejects those few configs as blocks too large to launch).
const std::vector<int64_t> kChannelThreads{1, 2, 4, 8};
const std::vector<int64_t> kRowThreads{1, 2, 4, 8, 16};
const std::vector<int64_t> kColumnThreads{1, 2, 4, 8, 16, 32};
const std::vector<int64_t> kThreadTile{1, 2, 4};
constexpr int64_t kDefaultUnrollTaps = 64;

struct OutputExtents {
  int64_t C, OH, OW;
};

OutputExtents output_extents(const OpInstance& op) {
  const std::vector<Expr>& shape = op.outputs[0].shape();
  return {*as_const_int(shape[1]), *as_const_int(shape[2]), *as_const_int(shape[3])};
}

// `powers` plus the exact fits extent / tile (at most the largest power):
// with 7 threads a 7-wide output needs no tail.
std::vector<int64_t> thread_counts(int64_t extent, const std::vector<int64_t>& powers) {
  std::set<int64_t> counts(powers.begin(), powers.end());
  for (int64_t tile : kThreadTile)
    if (extent % tile == 0 && extent / tile <= powers.back()) counts.insert(extent / tile);
  return {counts.begin(), counts.end()};
}

void check_dtype(const OpInstance& op) {
  check_gpu_dtype(op.dtype, "depthwise_conv2d");
}

// The block's threads copy a shared box: its axes fused, then split into
// [rounds, threadIdx.z, threadIdx.y, threadIdx.x], so that adjacent threads
// copy adjacent elements of the box's rows.
void cooperative_fill_3d(Stage st, int64_t threads_z, int64_t threads_y, int64_t threads_x) {
  IterVar rounds, rest, zy, z, y, x;
  st.split(st.fuse(st.axis()), threads_z * threads_y * threads_x, &rounds, &rest);
  st.split(rest, threads_x, &zy, &x);
  st.split(zy, threads_y, &z, &y);
  st.bind(z, "threadIdx.z");
  st.bind(y, "threadIdx.y");
  st.bind(x, "threadIdx.x");
}

// Threads along the output row: the whole row when it fits a warp, else
// the widest of 32, 16, 8 that divides it (a tail costs a guard on every
// tap of the register tile), else a warp.
int64_t default_column_threads(int64_t OW) {
  if (OW <= 32) return OW;
  for (int64_t tx : {32, 16, 8})
    if (OW % tx == 0) return tx;
  return 32;
}

// Threads and rows per thread along the output column: the whole column
// when short, else about 128 / tx threads with 2 rows each (vertical reuse
// of the taps' loads), fewer where that divides the column with no tail.
std::pair<int64_t, int64_t> default_row_split(int64_t OH, int64_t tx) {
  if (OH <= 16) return {OH, 1};
  const int64_t most = std::clamp<int64_t>(floor_pow2(128 / tx), 1, 16);
  for (int64_t ty = most; ty >= 1; ty /= 2)
    for (int64_t th : {2, 1})
      if (OH % (ty * th) == 0) return {ty, th};
  return {most, 2};
}

}  // namespace

std::shared_ptr<ConfigSpace> gpu_depthwise_space(const OpInstance& op, const GpuLimits&) {
  check_dtype(op);
  const OutputExtents e = output_extents(op);
  auto s = std::make_shared<ConfigSpace>();
  s->define_split_levels("tile_c", e.C, {kChannelThreads});
  s->define_split_levels("tile_h", e.OH, {thread_counts(e.OH, kRowThreads), kThreadTile});
  s->define_split_levels("tile_w", e.OW, {thread_counts(e.OW, kColumnThreads), kThreadTile});
  s->define_annotate("shared", {"none", "data", "both"});
  s->define_annotate("unroll_window", {"unroll", "none"});
  return s;
}

Config gpu_depthwise_default(const OpInstance& op, const GpuLimits&, const ConfigSpace& space) {
  // One column per thread, so that a warp's accesses are adjacent; channels
  // up to about 256 threads a block (small late CNN layers: 7x7 outputs x 4
  // channels); the input box in shared memory.
  const OutputExtents e = output_extents(op);
  const int64_t tx = default_column_threads(e.OW);
  const auto [ty, th] = default_row_split(e.OH, tx);
  const int64_t tc = std::min(std::clamp<int64_t>(floor_pow2(256 / (tx * ty)), 1, 8), e.C);
  nlohmann::json j;
  j["tile_c"] = {(e.C + tc - 1) / tc, tc};
  j["tile_h"] = {(e.OH + ty * th - 1) / (ty * th), ty, th};
  j["tile_w"] = {(e.OW + tx - 1) / tx, tx, 1};
  j["shared"] = "data";
  j["unroll_window"] = op.ints.at("R") * op.ints.at("S") <= kDefaultUnrollTaps ? "unroll" : "none";
  return space.nearest(j);
}

ScheduledOp gpu_depthwise_schedule(const OpInstance& op, const Config& cfg) {
  check_dtype(op);
  const std::vector<int64_t>& fc = cfg.split("tile_c");
  const std::vector<int64_t>& fh = cfg.split("tile_h");
  const std::vector<int64_t>& fw = cfg.split("tile_w");
  const std::string& shared = cfg.annotate("shared");

  Tensor out = op.outputs[0];
  auto conv_part = op.parts.find("depthwise_conv2d");
  Tensor conv = conv_part != op.parts.end() ? conv_part->second : out;
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& s = *sch;
  // The accumulator, in each thread's registers: the convolution stage
  // itself when an epilogue stage writes the output, else a cache_write.
  Tensor acc = out.same_tensor(conv) ? s.cache_write(conv, MemScope::kLocal) : conv;
  if (!out.same_tensor(conv)) s[conv].set_scope(MemScope::kLocal);

  Stage so = s[out];
  const std::vector<IterVar> ax = so.axis();  // n, c, oh, ow
  IterVar bc, tz, bh, ty, th, bw, tx, tw, rest;
  so.split(ax[1], fc[1], &bc, &tz);
  so.split(ax[2], fh[1] * fh[2], &bh, &rest);
  so.split(rest, fh[2], &ty, &th);
  so.split(ax[3], fw[1] * fw[2], &bw, &rest);
  so.split(rest, fw[2], &tx, &tw);
  so.reorder({ax[0], bc, bh, bw, tz, ty, tx, th, tw});
  // One grid axis for every block loop: blockIdx.x allows 2^31 - 1 blocks,
  // y and z only 65535 (batch x channel blocks can exceed that).
  IterVar block = so.fuse({ax[0], bc, bh, bw});
  so.bind(block, "blockIdx.x");
  so.bind(tz, "threadIdx.z");
  so.bind(ty, "threadIdx.y");
  so.bind(tx, "threadIdx.x");
  so.unroll(th);
  so.unroll(tw);

  Stage sa = s[acc];
  sa.compute_at(so, tx);
  const std::vector<IterVar> acc_axes = sa.axis(), taps = sa.reduce_axis();
  sa.reorder({taps[0], taps[1], acc_axes[2], acc_axes[3]});
  sa.unroll(acc_axes[2]);
  sa.unroll(acc_axes[3]);
  if (cfg.annotate("unroll_window") == "unroll") {
    sa.unroll(taps[0]);
    sa.unroll(taps[1]);
  }

  auto pad = op.parts.find("data_pad");
  const bool padded = pad != op.parts.end();
  auto stage_in_shared = [&](const Tensor& t) {
    Tensor cached = s.cache_read(t, MemScope::kShared, {s.current_op(acc)});
    s[cached].compute_at(so, block);
    cooperative_fill_3d(s[cached], fc[1], fh[1], fw[1]);
  };
  // The padded box is staged (the padding filled as it is copied), so the
  // taps read shared memory without a border test.
  if (shared == "data" || shared == "both") stage_in_shared(padded ? pad->second : op.inputs[0]);
  if (shared == "both") stage_in_shared(op.inputs[1]);
  if (padded) s[pad->second].compute_inline();

  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
}

void set_gpu_depthwise_template(OpDef& d) {
  set_gpu_template(d, gpu_depthwise_space, gpu_depthwise_default, gpu_depthwise_schedule);
}

}  // namespace kiln
