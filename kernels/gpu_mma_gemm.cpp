#include "kernels/gpu_mma_gemm.h"

#include <algorithm>

#include "base/error.h"
#include "kernels/cuda_tensor_intrinsics.h"
#include "kernels/gpu_mma_util.h"
#include "kernels/gpu_template_util.h"

namespace kiln {

bool gpu_mma_offered(const GemmShape& g, DType dtype, const GpuLimits& gpu) {
  return (dtype == DType::f16() || dtype == DType::bf16()) && gpu.sm_version >= 80 && !g.quantized &&
         g.b_panel == 0 && g.M % 16 == 0 && g.N % 8 == 0 && g.K % 16 == 0;
}

bool gpu_wgmma_offered(const GemmShape& g, const GpuLimits& gpu) {
  return gpu.arch == "sm_90a" && g.M % 64 == 0 && g.N % 64 == 0 && g.K % 16 == 0;
}

void define_gpu_mma_knobs(const GemmShape& g, const GpuLimits& gpu, ConfigSpace* s) {
  const bool wgmma = gpu_wgmma_offered(g, gpu);
  s->define_annotate("tensor_core",
                     wgmma ? std::vector<std::string>{"none", "mma", "wgmma"} : std::vector<std::string>{"none", "mma"},
                     /*added_later=*/true);
  // Warpgroups of four warps, each 64 rows by 64, 128 or 256 columns.
  if (wgmma) define_wgmma_knobs(s, g.M / 64, {1, 2}, g.N / 8);
  s->define_exact_split_levels("mma_m", g.M / 16, {{1, 2, 4}, {1, 2, 4}}, /*added_later=*/true);
  s->define_exact_split_levels("mma_n", g.N / 8, {{1, 2, 4}, {1, 2, 4, 8}}, /*added_later=*/true);
  s->define_exact_split_levels("mma_k", g.K / 16, {{1, 2, 4}}, /*added_later=*/true);
  // Slots of the shared A and B tiles: k tiles loaded (cp.async) that many
  // minus one ahead of the compute (Stage::pipeline); 1 loads each in turn.
  // With producer warps, those fill the slots while the others compute.
  define_mma_pipeline_knobs(s, gpu);
  // Elements per copy of the shared tiles' fills: 0 keeps `vec`; 8 moves 16
  // bytes at a time (cp.async.cg when pipelined), where rows allow it.
  s->define_choice("fill_vec", {0, 8}, /*added_later=*/true);
}

int64_t gpu_mma_shared_bytes(const GemmShape& g, const nlohmann::json& j, int64_t stages) {
  // A and B tiles (padded rows at most 8 elements longer) per slot, and the
  // f32 staging tile of the block's outputs, which takes the slots' bytes
  // once the k loop is over (schedule/shared_memory_plan.h).
  const int64_t bm = j["mma_m"][1].get<int64_t>() * j["mma_m"][2].get<int64_t>() * 16;
  const int64_t bn = j["mma_n"][1].get<int64_t>() * j["mma_n"][2].get<int64_t>() * 8;
  const int64_t bk = j["mma_k"][1].get<int64_t>() * 16;
  const int64_t a = g.trans_a ? bk * (bm + 8) : bm * (bk + 8), b = g.trans_b ? bn * (bk + 8) : bk * (bn + 8);
  return std::max((a + b) * 2 * stages, bm * bn * 4);
}

namespace {

// A block of 128 rows by `bn` columns (two rows of warps, 64 rows each), k
// tiles of `bk`, where the shape divides into them and makes `min_blocks`.
bool big_tile_fits(const GemmShape& g, int64_t bn, int64_t bk, int64_t min_blocks) {
  const int64_t batch = std::max<int64_t>(1, g.batch);
  return g.M % 128 == 0 && g.N % bn == 0 && g.K % bk == 0 && batch * (g.M / 128) * (g.N / bn) >= min_blocks;
}

}  // namespace

void gpu_mma_default(const GemmShape& g, const GpuLimits& gpu, nlohmann::json* j) {
  (*j)["tensor_core"] = "mma";
  // Large products: the fastest blocks measured on an H100 once the staging
  // tile reuses the slots' bytes (bench/results/gpu_h100_shared_reuse_20261126.md):
  // 128 x 256 of eight 64 x 64 warps, k tiles of 64 in two slots filled
  // 8 bytes a copy (4096^3 f16: 304 TFLOP/s, 285 with 16-byte copies; k
  // tiles of 32 where K takes no 64: 275), else 128 x 128 of eight 64 x 32
  // warps, k tiles of 32 in two slots (265). Both take dynamic shared
  // memory; where the blocks would not fill the GPU, or the architecture
  // cannot hold them, the small default below.
  struct Big {
    int64_t bn, warps_n, frags_n, bk, stages, fill_vec, min_blocks;
  };
  for (const Big& b : {Big{256, 4, 8, 64, 2, 0, 2 * gpu.sm_count}, Big{256, 4, 8, 32, 2, 8, 2 * gpu.sm_count},
                       Big{128, 4, 4, 32, 2, 0, gpu.sm_count / 4}}) {
    if (!big_tile_fits(g, b.bn, b.bk, b.min_blocks)) continue;
    nlohmann::json big = *j;
    big["mma_m"] = {g.M / 128, 2, 4};
    big["mma_n"] = {g.N / b.bn, b.warps_n, b.frags_n};
    big["mma_k"] = {g.K / b.bk, b.bk / 16};
    big["stages"] = std::min<int64_t>(b.stages, g.K / b.bk);
    big["fill_vec"] = b.fill_vec;
    big["pad"] = 1;
    if (gpu_mma_shared_bytes(g, big, big["stages"].get<int64_t>()) > gpu.max_shared_optin_per_block) continue;
    *j = big;
    return;
  }
  // 64 x 64 blocks of four 32 x 32 warps.
  (*j)["mma_m"] = {std::max<int64_t>(1, g.M / 64), 2, 2};
  (*j)["mma_n"] = {std::max<int64_t>(1, g.N / 64), 2, 4};
  (*j)["mma_k"] = {std::max<int64_t>(1, g.K / 32), 2};
  // Three slots where they fit in static shared memory (two loads in
  // flight), as CUTLASS's sm_80 kernels do; fewer where the k loop is too
  // short for more.
  int64_t stages = std::min<int64_t>(3, std::max<int64_t>(1, g.K / 32));
  while (stages > 1 && gpu_mma_shared_bytes(g, *j, stages) > gpu.max_shared_static_per_block) --stages;
  (*j)["stages"] = stages;
}

namespace {

// The block's warps and their tiles: mma's warps_m x warps_n warps of
// frags_m x frags_n fragments, or wgmma's warpgroups (four warps of 16 rows
// one above the other, each as wide as its warpgroup).
struct WarpTiles {
  bool wgmma;
  int64_t warp_m, warp_n, warps_m, warps_n;
};

WarpTiles warp_tiles(const Config& cfg) {
  if (cfg.annotate("tensor_core") == "wgmma") {
    user_check(cfg.has("wgmma_m") && cfg.has("wgmma_n"))
        << "tensor_core 'wgmma' needs the knobs wgmma_m and wgmma_n (offered for sm_90a, M and N multiples of 64)";
    const std::vector<int64_t>& wm = cfg.split("wgmma_m");
    const std::vector<int64_t>& wn = cfg.split("wgmma_n");
    return {true, 16, wn[2] * 8, 4 * wm[1], wn[1]};
  }
  const std::vector<int64_t>& fm = cfg.split("mma_m");
  const std::vector<int64_t>& fn = cfg.split("mma_n");
  return {false, fm[2] * 16, fn[2] * 8, fm[1], fn[1]};
}

}  // namespace

ScheduledOp gpu_mma_gemm_schedule(const OpInstance& op, const GemmShape& g, const Config& cfg) {
  const WarpTiles wt = warp_tiles(cfg);
  const std::vector<int64_t>& fk = cfg.split("mma_k");
  const int64_t vec = cfg.choice("vec");
  const bool pad = cfg.choice("pad") > 0 && !wt.wgmma;
  const DType input = op.inputs[0].dtype();
  const int64_t warp_m = wt.warp_m, warp_n = wt.warp_n, block_m = wt.warps_m * warp_m, block_n = wt.warps_n * warp_n;
  const int64_t warps = wt.warps_m * wt.warps_n;
  const size_t o = g.batch > 0 ? 1 : 0;

  Tensor out = op.outputs[0];
  user_check(op.parts.count("matmul")) << "the tensor-core GEMM needs the f32 sums as a stage of their own";
  Tensor C = op.parts.at("matmul");
  auto sch = std::make_shared<Schedule>(std::vector<Tensor>{out});
  Schedule& s = *sch;
  // The sums in accumulator fragments; C becomes their f32 staging tile.
  Tensor acc = s.cache_write(C, MemScope::kWarp);
  s[C].set_scope(MemScope::kShared);

  // The output: blocks, then the block's threads over the tile (epilogue).
  Stage so = s[out];
  IterVar by, yi, bx, xi;
  so.split(so.axis()[o], block_m, &by, &yi);
  so.split(so.axis()[o + 1], block_n, &bx, &xi);
  std::vector<IterVar> order{by, bx, yi, xi};
  if (o) order.insert(order.begin(), so.axis()[0]);
  so.reorder(order);
  const int64_t row_blocks = (g.M + block_m - 1) / block_m;
  IterVar block = bx;  // the innermost block loop, where the staging tile is computed
  if (row_blocks > kGpuMaxGridYZ || (o && g.batch > kGpuMaxGridYZ)) {
    std::vector<IterVar> blocks{by, bx};
    if (o) blocks.insert(blocks.begin(), so.axis()[0]);
    block = so.fuse(blocks);
    so.bind(block, "blockIdx.x");
  } else {
    if (o) so.bind(so.axis()[0], "blockIdx.z");
    so.bind(by, "blockIdx.y");
    so.bind(bx, "blockIdx.x");
  }
  mma_output_threads(so, so.fuse(yi, xi), warps, block_n % vec == 0 && g.N % vec == 0 ? vec : 1);

  // The staging tile: each warp stores its fragments (one call per m16n8).
  Stage sc = s[C];
  sc.compute_at(so, block);
  std::vector<IterVar> outer;
  if (o) outer.push_back(sc.axis()[0]);
  const IterVar warp = mma_staging_tile(sc, outer, sc.axis()[o], sc.axis()[o + 1], warp_m, warp_n, wt.wgmma);

  Stage sa = s[acc];
  sa.compute_at(sc, warp);
  IterVar ko, kr, ki, ani;
  sa.split(sa.reduce_axis()[0], fk[1] * 16, &ko, &kr);
  if (wt.wgmma) {
    // The warp's accumulators: per k tile, one wgmma call over the tile's
    // 16-steps, the warp's 16 rows by its warpgroup's columns.
    std::vector<IterVar> a_order{ko, sa.axis()[o], sa.axis()[o + 1], kr};
    if (o) a_order.insert(a_order.begin(), sa.axis()[0]);
    sa.reorder(a_order);
    sa.tensorize(sa.axis()[o], cuda_wgmma(input, warp_n, fk[1], g.trans_a, g.trans_b));
  } else {
    // The warp's accumulators: per k tile, per 16-step, per column of
    // fragments, per row: one mma.
    IterVar k16, ami, am16, an8;
    sa.split(kr, 16, &ki, &k16);
    sa.split(sa.axis()[o], 16, &ami, &am16);
    sa.split(sa.axis()[o + 1], 8, &ani, &an8);
    std::vector<IterVar> a_order{ko, ki, ani, ami, am16, an8, k16};
    if (o) a_order.insert(a_order.begin(), sa.axis()[0]);
    sa.reorder(a_order);
    sa.unroll(ani);
    sa.unroll(ami);
    if (cfg.annotate("unroll_k") == "unroll") sa.unroll(ki);
    sa.tensorize(am16, cuda_mma_m16n8k16(input, g.trans_a, g.trans_b));
  }

  // Shared tiles of A and B per k tile (rows of `tile_row` elements),
  // filled by all the block's threads; padded rows stay 16-byte aligned
  // (ldmatrix reads 16-byte rows). wgmma reads them as 8 x 8 tiles, each 128
  // contiguous bytes, or swizzled.
  auto stage_shared = [&](const Tensor& t, int64_t tile_row) {
    Tensor cached = s.cache_read(t, MemScope::kShared, {s.current_op(acc)});
    Stage st = s[cached];
    st.compute_at(sa, ko);
    const int64_t row = *as_const_int(t.shape().back());
    const int64_t fill = cfg.has("fill_vec") && cfg.choice("fill_vec") > 0 ? cfg.choice("fill_vec") : vec;
    if (wt.wgmma) {
      lay_out_wgmma_operand(st, cfg, tile_row * t.dtype().bytes(), warps, fill);
    } else {
      cooperative_fill(st, warps, 32, tile_row % fill == 0 && row % fill == 0 ? fill : 1);
    }
    if (pad) st.storage_align(static_cast<int>(t.ndim()) - 2, 64, 8);
    return cached;
  };
  Tensor As = stage_shared(op.inputs[0], g.trans_a ? block_m : fk[1] * 16);
  Tensor Bs = stage_shared(op.inputs[1], g.trans_b ? fk[1] * 16 : block_n);
  mma_pipeline(sa, ko, cfg, wt.wgmma);

  std::vector<Tensor> args = op.inputs;
  args.push_back(out);
  if (wt.wgmma) return ScheduledOp{sch, args};

  // Fragments: all of the warp's A rows per 16-step, one B column at a time.
  Tensor Af = s.cache_read(As, MemScope::kWarp, {s.current_op(acc)});
  Stage sf = s[Af];
  sf.compute_at(sa, ki);
  {
    const int rows = g.trans_a ? static_cast<int>(o) + 1 : static_cast<int>(o);  // the m dimension
    IterVar mo, m_in;
    sf.split(sf.axis()[rows], 16, &mo, &m_in);
    std::vector<IterVar> f_order = g.trans_a ? std::vector<IterVar>{mo, sf.axis()[o], m_in}
                                             : std::vector<IterVar>{mo, m_in, sf.axis()[o + 1]};
    if (o) f_order.insert(f_order.begin(), sf.axis()[0]);
    sf.reorder(f_order);
    sf.unroll(mo);
    sf.tensorize(g.trans_a ? sf.axis()[o] : m_in, cuda_mma_load_a(input, g.trans_a));
  }
  Tensor Bf = s.cache_read(Bs, MemScope::kWarp, {s.current_op(acc)});
  Stage sb = s[Bf];
  sb.compute_at(sa, ani);
  sb.tensorize(sb.axis()[o], cuda_mma_load_b(input, g.trans_b));
  return ScheduledOp{sch, args};
}

}  // namespace kiln
