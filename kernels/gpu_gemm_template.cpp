#include "kernels/gpu_gemm_template.h"

#include <algorithm>

#include "base/error.h"
#include "kernels/gpu_mma_gemm.h"
#include "kernels/gpu_template_util.h"
#include "kernels/template_util.h"

namespace kiln {

namespace {

const std::vector<int64_t> kThreadCounts{1, 2, 4, 8, 16, 32};
const std::vector<int64_t> kThreadTiles{1, 2, 4, 8};
const std::vector<int64_t> kKTiles{1, 2, 4, 8, 16, 32};

// The element extent of the innermost dimension of a stored operand.
int64_t row_length(const Tensor& t) { return *as_const_int(t.shape().back()); }

// How a block of ty x tx threads (powers of two) is cut into warps of lanes
// `cols` columns wide: each warp a lanes_y x lanes_x patch of the thread
// grid (32 lanes when the block has them), warps_y x warps_x of them.
struct WarpLayout {
  int64_t warps_y, warps_x, lanes_y, lanes_x;
};
WarpLayout warp_layout(int64_t ty, int64_t tx, int64_t cols) {
  const int64_t lx = std::min(cols, tx), ly = std::min(32 / lx, ty);
  return {ty / ly, tx / lx, ly, lx};
}

}  // namespace

std::shared_ptr<ConfigSpace> gpu_gemm_space(const GemmShape& g, DType dtype, const GpuLimits& gpu) {
  check_gpu_dtype(dtype, "matmul");
  user_check(g.b_panel == 0) << "the cuda matmul template takes B unpacked";
  auto s = std::make_shared<ConfigSpace>();
  s->define_split_levels("tile_y", g.M, {kThreadCounts, kThreadTiles});
  s->define_split_levels("tile_x", g.N, {kThreadCounts, kThreadTiles});
  s->define_split_levels("tile_k", g.K, {kKTiles});
  s->define_annotate("shared", {"both", "a", "b", "none"});
  s->define_choice("vec", {1, 2, 4});
  s->define_choice("pad", {0, 1, 4});
  s->define_annotate("unroll_k", {"unroll", "none"});
  // 0: the block's threads row-major (a warp is 32 / tx rows of the block's
  // tx thread columns); L: warps of lanes L columns wide (see warp_layout).
  s->define_choice("warp_cols", {0, 1, 2, 4, 8, 16, 32}, /*added_later=*/true);
  if (gpu_mma_offered(g, dtype, gpu)) define_gpu_mma_knobs(g, gpu, s.get());
  return s;
}

Config gpu_gemm_default(const GemmShape& g, DType dtype, const GpuLimits& gpu, const ConfigSpace& space) {
  // 16 x 16 threads with 4 x 4 outputs each, k-tiles of 8: a 64 x 64 block
  // tile, 4 KiB of shared memory; the nearest options for small matrices.
  nlohmann::json j;
  j["tile_y"] = {std::max<int64_t>(1, g.M / 64), 16, 4};
  j["tile_x"] = {std::max<int64_t>(1, g.N / 64), 16, 4};
  j["tile_k"] = {std::max<int64_t>(1, g.K / 8), 8};
  j["shared"] = "both";
  j["vec"] = 4;
  j["pad"] = 0;
  j["unroll_k"] = "unroll";
  j["warp_cols"] = 0;
  // Tensor cores where the target has them and the shape is whole fragments.
  if (gpu_mma_offered(g, dtype, gpu)) gpu_mma_default(g, gpu, &j);
  return space.nearest(j);
}

ScheduledOp gpu_gemm_schedule(const OpInstance& op, const GemmShape& g, const Config& cfg) {
  if (cfg.has("tensor_core") && cfg.annotate("tensor_core") != "none") return gpu_mma_gemm_schedule(op, g, cfg);
  const std::vector<int64_t>& fy = cfg.split("tile_y");
  const std::vector<int64_t>& fx = cfg.split("tile_x");
  const std::vector<int64_t>& fk = cfg.split("tile_k");
  const std::string& shared = cfg.annotate("shared");
  const int64_t vec = cfg.choice("vec"), pad = cfg.choice("pad");
  const size_t o = g.batch > 0 ? 1 : 0;

  Tensor out = op.outputs[0];
  Tensor C = op.parts.count("matmul") ? op.parts.at("matmul") : out;
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& s = *sch;
  // The accumulator, in each thread's registers: the matmul stage itself
  // when an epilogue stage writes the output, else a cache_write stage.
  Tensor acc = out.same_tensor(C) ? s.cache_write(C, MemScope::kLocal) : C;
  if (!out.same_tensor(C)) s[C].set_scope(MemScope::kLocal);

  Stage so = s[out];
  IterVar by, ty, yi, bx, tx, xi;
  split_three(so, so.axis()[o], fy, &by, &ty, &yi);
  split_three(so, so.axis()[o + 1], fx, &bx, &tx, &xi);
  std::vector<IterVar> order{by, bx, ty, tx, yi, xi};
  if (o) order.insert(order.begin(), so.axis()[0]);
  so.reorder(order);
  // Threads: threadIdx.y the warp, threadIdx.x the lane, when warp_cols
  // cuts the block into warp tiles; else the thread grid row-major.
  int64_t block_y = fy[1], block_x = fx[1];
  IterVar lane = tx;
  if (const int64_t cols = cfg.choice("warp_cols"); cols > 0) {
    const WarpLayout w = warp_layout(fy[1], fx[1], cols);
    IterVar wy, ly, wx, lx;
    so.split(ty, w.lanes_y, &wy, &ly);
    so.split(tx, w.lanes_x, &wx, &lx);
    std::vector<IterVar> lanes_order{wy, wx, ly, lx, yi, xi};
    lanes_order.insert(lanes_order.begin(), order.begin(), order.end() - 4);
    so.reorder(lanes_order);
    so.bind(so.fuse(wy, wx), "threadIdx.y");
    lane = so.fuse(ly, lx);
    so.bind(lane, "threadIdx.x");
    block_y = w.warps_y * w.warps_x;
    block_x = w.lanes_y * w.lanes_x;
  } else {
    so.bind(ty, "threadIdx.y");
    so.bind(tx, "threadIdx.x");
  }
  // The grid: blockIdx.x the block's columns, .y its rows, .z the batch;
  // when the rows or the batch count more blocks than y and z allow, every
  // block loop is fused into blockIdx.x instead (rows outer, columns
  // inner, so that neighbouring blocks still share rows of A).
  const int64_t row_blocks = (g.M + fy[1] * fy[2] - 1) / (fy[1] * fy[2]);
  if (row_blocks > kGpuMaxGridYZ || (o && g.batch > kGpuMaxGridYZ)) {
    std::vector<IterVar> blocks{by, bx};
    if (o) blocks.insert(blocks.begin(), so.axis()[0]);
    so.bind(so.fuse(blocks), "blockIdx.x");
  } else {
    if (o) so.bind(so.axis()[0], "blockIdx.z");
    so.bind(by, "blockIdx.y");
    so.bind(bx, "blockIdx.x");
  }
  so.unroll(yi);
  // Stores of a contiguous row of the register tile as vectors.
  if (vec > 1 && fx[2] % vec == 0 && g.N % vec == 0) {
    IterVar xo, xv;
    so.split(xi, vec, &xo, &xv);
    so.unroll(xo);
    so.vectorize(xv);
  } else {
    so.unroll(xi);
  }

  Stage sc = s[acc];
  sc.compute_at(so, lane);
  IterVar ko, ki;
  sc.split(sc.reduce_axis()[0], fk[1], &ko, &ki);
  std::vector<IterVar> acc_order{ko, ki, sc.axis()[o], sc.axis()[o + 1]};
  if (o) acc_order.insert(acc_order.begin(), sc.axis()[0]);
  sc.reorder(acc_order);
  sc.unroll(sc.axis()[o]);
  sc.unroll(sc.axis()[o + 1]);
  if (cfg.annotate("unroll_k") == "unroll") sc.unroll(ki);

  const Tensor& A = op.inputs[0];
  const Tensor& B = op.inputs[1];
  auto stage_operand = [&](const Tensor& t, int64_t tile_row) {
    Tensor cached = s.cache_read(t, MemScope::kShared, {s.current_op(acc)});
    Stage st = s[cached];
    st.compute_at(sc, ko);
    const int64_t v = tile_row % vec == 0 && row_length(t) % vec == 0 ? vec : 1;
    cooperative_fill(st, block_y, block_x, v);
    const int dims = static_cast<int>(t.ndim());
    if (pad > 0) st.storage_align(dims - 2, 32, pad);
  };
  // The tile's row length: k-tile for A (or the block's rows when A is
  // stored transposed), the block's columns for B (or the k-tile).
  if (shared == "both" || shared == "a") stage_operand(A, g.trans_a ? fy[1] * fy[2] : fk[1]);
  if (shared == "both" || shared == "b") stage_operand(B, g.trans_b ? fk[1] : fx[1] * fx[2]);

  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
}

void set_gpu_gemm_template(OpDef& d, std::function<GemmShape(const OpInstance&)> shape) {
  set_gpu_template(
      d, [shape](const OpInstance& op, const GpuLimits& gpu) { return gpu_gemm_space(shape(op), op.dtype, gpu); },
      [shape](const OpInstance& op, const GpuLimits& gpu, const ConfigSpace& space) {
        return gpu_gemm_default(shape(op), op.dtype, gpu, space);
      },
      [shape](const OpInstance& op, const Config& cfg) { return gpu_gemm_schedule(op, shape(op), cfg); });
}

}  // namespace kiln
