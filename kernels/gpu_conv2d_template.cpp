#include "kernels/gpu_conv2d_template.h"

#include <algorithm>
#include <set>

#include "base/error.h"
#include "kernels/conv2d.h"
#include "kernels/gpu_mma_conv2d.h"
#include "kernels/gpu_template_util.h"
#include "kernels/gpu_wgmma_conv2d.h"

namespace kiln {

namespace {

// Thread counts per axis (powers of two; exact fits are added per shape)
// and register tiles per thread.
const std::vector<int64_t> kChannelThreads{1, 2, 4, 8, 16, 32};
const std::vector<int64_t> kRowThreads{1, 2, 4, 8};
const std::vector<int64_t> kColumnThreads{1, 2, 4, 8, 16};
const std::vector<int64_t> kChannelTile{1, 2, 4, 8};
const std::vector<int64_t> kRowTile{1, 2};
const std::vector<int64_t> kColumnTile{1, 2, 4};
// Input channels per reduction step.
const std::vector<int64_t> kStepChannels{1, 2, 4, 8, 16, 32};
// The most multiply-adds per thread that unrolling a step's loops may
// spell out (the gemm template's largest: a 32-deep k-tile of 8 x 8).
constexpr int64_t kUnrollBudget = 2048;

// Where the two layouts keep their axes: output axes (n, k, oh, ow), the
// conv stage's reduce axes (c, r, s), and the op's part naming the conv
// stage when an epilogue stage writes the output.
struct Layout {
  bool nhwc;
  int n, k, oh, ow;
  int rc, rr, rs;
  const char* part;
};

Layout layout_of(const OpInstance& op) {
  if (op.op == "conv2d") return {false, 0, 1, 2, 3, 0, 1, 2, "conv2d"};
  user_check(op.op == "conv2d_nhwc") << "the cuda conv2d template cannot schedule op '" << op.op << "'";
  return {true, 0, 3, 1, 2, 2, 0, 1, "conv2d_nhwc"};
}

// Grouped convolutions take the same schedule: an output channel k reads
// the input channels of its group, (k / Kg) * Cg + rc, so a block's staged
// data box spans the groups of its channel tile (the lowering's region
// inference bounds it), and a reduction step splits the group's Cg channels.
ConvShape checked_shape(const OpInstance& op) {
  layout_of(op);
  check_gpu_dtype(op.dtype, op.op);
  return conv_shape(op);
}

// `powers` plus the divisors of the axis up to twice the largest power:
// with 7 threads a 7-wide output (or 7 x 2 columns of a 56-wide one) needs
// no tail.
std::vector<int64_t> thread_counts(int64_t extent, const std::vector<int64_t>& powers) {
  std::set<int64_t> counts(powers.begin(), powers.end());
  for (int64_t d = 1; d <= std::min(extent, 2 * powers.back()); ++d)
    if (extent % d == 0) counts.insert(d);
  return {counts.begin(), counts.end()};
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::shared_ptr<ConfigSpace> gpu_conv2d_space(const OpInstance& op, const GpuLimits& gpu) {
  const ConvShape c = checked_shape(op);
  auto s = std::make_shared<ConfigSpace>();
  s->define_split_levels("tile_k", c.K, {thread_counts(c.K, kChannelThreads), kChannelTile});
  s->define_split_levels("tile_h", c.OH, {thread_counts(c.OH, kRowThreads), kRowTile});
  s->define_split_levels("tile_w", c.OW, {thread_counts(c.OW, kColumnThreads), kColumnTile});
  s->define_split_levels("tile_c", c.Cg, {kStepChannels});
  s->define_annotate("taps", {"inner", "outer"});
  s->define_annotate("shared", {"both", "data", "weight", "none"});
  s->define_choice("vec", {1, 2, 4});
  s->define_annotate("unroll", {"unroll", "none"});
  if (gpu_mma_conv2d_offered(op, gpu)) define_gpu_mma_conv2d_knobs(op, gpu, s.get());
  return s;
}

Config gpu_conv2d_default(const OpInstance& op, const GpuLimits& gpu, const ConfigSpace& space) {
  const ConvShape c = checked_shape(op);
  // About 64 output positions x 64 channels a block, as the gemm template's
  // 64 x 64 tile: a row box whose width divides the output row where it can
  // (14 columns of a 56-wide row, 7 of a 7-wide one), so that most blocks
  // have no tail; each thread 2 x 2 positions (fewer when odd) x 4 channels.
  int64_t TW = c.OW;
  if (c.OW > 16) {
    TW = 16;
    for (int64_t w : {16, 14, 8, 7})
      if (c.OW % w == 0) {
        TW = w;
        break;
      }
  }
  const int64_t want_rows = std::max<int64_t>(1, 64 / TW);
  int64_t TH = std::min(c.OH, want_rows);
  if (TH < c.OH)
    for (int64_t h = TH; h > TH / 2; --h)
      if (c.OH % h == 0) {
        TH = h;
        break;
      }
  const int64_t rw = TW % 2 == 0 ? 2 : 1, rh = TH % 2 == 0 ? 2 : 1;
  const int64_t spatial_threads = (TW / rw) * (TH / rh);
  int64_t rk = std::min<int64_t>(4, floor_pow2(c.K));
  // At least 8 channel threads: in NHWC they run along threadIdx.x, and 8 of
  // them store at least a whole 32-byte segment of a row.
  int64_t tk = std::clamp<int64_t>(floor_pow2(256 / spatial_threads), 8, 32);
  while (tk > 1 && tk * rk / 2 >= c.K) tk /= 2;
  // Small layers: fewer channels per thread (so fewer per block, and more
  // blocks with as many threads) until the grid has a block per SM.
  auto blocks = [&] { return c.N * ceil_div(c.K, tk * rk) * ceil_div(c.OH, TH) * ceil_div(c.OW, TW); };
  while (blocks() < gpu.sm_count && rk > 1) rk /= 2;
  // A step of about 36 to 64 reduction elements (4 channels of a 3x3
  // window), at most 16 channels.
  int64_t ct = 16;
  while (ct > 1 && ct * c.R * c.S > 64) ct /= 2;
  nlohmann::json j;
  j["tile_k"] = {ceil_div(c.K, tk * rk), tk, rk};
  j["tile_h"] = {ceil_div(c.OH, TH), TH / rh, rh};
  j["tile_w"] = {ceil_div(c.OW, TW), TW / rw, rw};
  j["tile_c"] = {ceil_div(c.Cg, ct), ct};
  j["taps"] = "inner";
  j["shared"] = "both";
  // NHWC: 4-wide fills of channel rows and stores of 4 channels; NCHW: the
  // stores of a thread's 2 adjacent columns.
  j["vec"] = op.op == "conv2d_nhwc" ? 4 : rw;
  j["unroll"] = "unroll";
  // Tensor cores where the target has them (conv2d_nhwc in f16/bf16).
  if (gpu_mma_conv2d_offered(op, gpu)) gpu_mma_conv2d_default(op, &j);
  return space.nearest(j);
}

ScheduledOp gpu_conv2d_schedule(const OpInstance& op, const Config& cfg) {
  if (cfg.has("tensor_core") && cfg.annotate("tensor_core") == "mma") return gpu_mma_conv2d_schedule(op, cfg);
  if (cfg.has("tensor_core") && cfg.annotate("tensor_core") == "wgmma") return gpu_wgmma_conv2d_schedule(op, cfg);
  const ConvShape c = checked_shape(op);
  const Layout L = layout_of(op);
  const std::vector<int64_t>& fk = cfg.split("tile_k");
  const std::vector<int64_t>& fh = cfg.split("tile_h");
  const std::vector<int64_t>& fw = cfg.split("tile_w");
  const std::vector<int64_t>& fc = cfg.split("tile_c");
  const bool taps_inner = cfg.annotate("taps") == "inner";
  const std::string& shared = cfg.annotate("shared");
  const int64_t vec = cfg.choice("vec");

  Tensor out = op.outputs[0];
  auto conv_part = op.parts.find(L.part);
  Tensor conv = conv_part != op.parts.end() ? conv_part->second : out;
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& s = *sch;
  // The accumulator, in each thread's registers: the convolution stage
  // itself when an epilogue stage writes the output, else a cache_write.
  Tensor acc = out.same_tensor(conv) ? s.cache_write(conv, MemScope::kLocal) : conv;
  if (!out.same_tensor(conv)) s[conv].set_scope(MemScope::kLocal);

  Stage so = s[out];
  const std::vector<IterVar> ax = so.axis();
  IterVar bk, tk, ik, bh, th, ih, bw, tw, iw;
  split_three(so, ax[L.k], fk, &bk, &tk, &ik);
  split_three(so, ax[L.oh], fh, &bh, &th, &ih);
  split_three(so, ax[L.ow], fw, &bw, &tw, &iw);
  // The register tile in memory order: its innermost loop runs along the
  // output's innermost dimension.
  const std::vector<IterVar> tile = L.nhwc ? std::vector<IterVar>{ih, iw, ik} : std::vector<IterVar>{ik, ih, iw};
  std::vector<IterVar> order{ax[L.n], bk, bh, bw};
  if (L.nhwc)
    order.insert(order.end(), {th, tw, tk});
  else
    order.insert(order.end(), {tk, th, tw});
  order.insert(order.end(), tile.begin(), tile.end());
  so.reorder(order);
  // One grid axis for every block loop: blockIdx.x allows 2^31 - 1 blocks.
  IterVar block = so.fuse({ax[L.n], bk, bh, bw});
  IterVar spatial = so.fuse({th, tw});
  so.bind(block, "blockIdx.x");
  const int64_t spatial_threads = fh[1] * fw[1];
  int64_t threads_x, threads_y;
  IterVar inner_thread;
  if (L.nhwc) {
    so.bind(spatial, "threadIdx.y");
    so.bind(tk, "threadIdx.x");
    threads_x = fk[1];
    threads_y = spatial_threads;
    inner_thread = tk;
  } else {
    so.bind(tk, "threadIdx.y");
    so.bind(spatial, "threadIdx.x");
    threads_x = spatial_threads;
    threads_y = fk[1];
    inner_thread = spatial;
  }
  so.unroll(tile[0]);
  so.unroll(tile[1]);
  // Stores of a contiguous row of the register tile as vectors.
  const int64_t row_tile = L.nhwc ? fk[2] : fw[2], row_extent = L.nhwc ? c.K : c.OW;
  if (vec > 1 && row_tile % vec == 0 && row_extent % vec == 0) {
    IterVar xo, xv;
    so.split(tile[2], vec, &xo, &xv);
    so.unroll(xo);
    so.vectorize(xv);
  } else {
    so.unroll(tile[2]);
  }

  Stage sa = s[acc];
  sa.compute_at(so, inner_thread);
  const std::vector<IterVar> acc_axes = sa.axis(), red = sa.reduce_axis();
  IterVar rco, rci;
  sa.split(red[L.rc], fc[1], &rco, &rci);
  const IterVar rr = red[L.rr], rs = red[L.rs];
  std::vector<IterVar> acc_order =
      taps_inner ? std::vector<IterVar>{rco, rci, rr, rs} : std::vector<IterVar>{rr, rs, rco, rci};
  // The accumulator's axes are in the output's memory order already.
  acc_order.insert(acc_order.end(), acc_axes.begin(), acc_axes.end());
  sa.reorder(acc_order);
  for (const IterVar& a : acc_axes) sa.unroll(a);
  if (cfg.annotate("unroll") == "unroll") {
    // A step's reduction loops, innermost first, as far as the unrolled
    // body stays within kUnrollBudget multiply-adds (a 32-channel step of a
    // 7x7 window would be 1568 steps of the register tile: minutes of
    // NVRTC for no gain).
    const int64_t tile = fk[2] * fh[2] * fw[2];
    std::vector<std::pair<IterVar, int64_t>> loops{{rci, fc[1]}};
    if (taps_inner) loops = {{rs, c.S}, {rr, c.R}, {rci, fc[1]}};
    int64_t body = tile;
    for (const auto& [loop, extent] : loops) {
      body *= extent;
      if (body > kUnrollBudget) break;
      sa.unroll(loop);
    }
  }

  auto pad = op.parts.find("data_pad");
  const bool padded = pad != op.parts.end();
  const Tensor& data = padded ? pad->second : op.inputs[0];
  const Tensor& weight = op.inputs[1];
  auto stage_in_shared = [&](const Tensor& t, bool whole_vectors) {
    Tensor cached = s.cache_read(t, MemScope::kShared, {s.current_op(acc)});
    Stage st = s[cached];
    st.compute_at(sa, rco);
    cooperative_fill(st, threads_y, threads_x, vec > 1 && whole_vectors ? vec : 1);
  };
  // Vector fills where every row of the staged box, and of the tensor, is
  // whole vectors: NHWC rows are channels (the step's for the data, the
  // block's for the weights); NCHW rows are the box's input columns (and
  // the weights' taps of one row).
  const int64_t TK = fk[1] * fk[2], TW = fw[1] * fw[2];
  bool data_vec, weight_vec;
  if (L.nhwc) {
    // With groups a data row is the channels of every group the block's
    // tile reaches, which need not be whole vectors.
    data_vec = c.G == 1 && fc[1] % vec == 0 && c.C % vec == 0;
    weight_vec = TK % vec == 0 && c.K % vec == 0;
  } else {
    const int64_t box_w = (TW - 1) * c.stride + (taps_inner ? (c.S - 1) * c.dil : 0) + 1;
    data_vec = c.OW % TW == 0 && box_w % vec == 0 && (c.W + 2 * c.pad) % vec == 0;
    weight_vec = taps_inner && c.S % vec == 0;
  }
  if (shared == "both" || shared == "data") stage_in_shared(data, data_vec);
  if (shared == "both" || shared == "weight") stage_in_shared(weight, weight_vec);
  // The padding is filled as the box is copied (or tested at each read).
  if (padded) s[pad->second].compute_inline();

  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  return ScheduledOp{sch, args};
}

void set_gpu_conv2d_template(OpDef& d) {
  set_gpu_template(d, gpu_conv2d_space, gpu_conv2d_default, gpu_conv2d_schedule);
}

}  // namespace kiln
