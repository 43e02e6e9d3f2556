#include "kernels/gpu_mma_util.h"

#include "kernels/cuda_tensor_intrinsics.h"
#include "kernels/gpu_template_util.h"

namespace kiln {

void mma_output_threads(Stage& so, IterVar flat, int64_t warps, int64_t vec) {
  IterVar rounds, t, ty, tx, lanes;
  if (vec > 1) so.split(flat, vec, &flat, &lanes);
  so.split(flat, warps * 32, &rounds, &t);
  so.split(t, 32, &ty, &tx);
  so.bind(ty, "threadIdx.y");
  so.bind(tx, "threadIdx.x");
  if (vec > 1) so.vectorize(lanes);
}

IterVar mma_staging_tile(Stage& sc, const std::vector<IterVar>& outer, const IterVar& rows, const IterVar& cols,
                         int64_t warp_m, int64_t warp_n, bool rows_first) {
  IterVar wi, ri, wj, rj, mi, m16, ni, n8;
  sc.split(rows, warp_m, &wi, &ri);
  sc.split(cols, warp_n, &wj, &rj);
  sc.split(ri, 16, &mi, &m16);
  sc.split(rj, 8, &ni, &n8);
  std::vector<IterVar> order = outer;
  for (const IterVar& iv : {rows_first ? wj : wi, rows_first ? wi : wj, mi, ni, m16, n8}) order.push_back(iv);
  sc.reorder(order);
  IterVar warp = rows_first ? sc.fuse(wj, wi) : sc.fuse(wi, wj);
  sc.bind(warp, "threadIdx.y");
  sc.unroll(mi);
  sc.unroll(ni);
  sc.tensorize(m16, cuda_mma_store());
  return warp;
}

void define_wgmma_knobs(ConfigSpace* s, int64_t row_tiles, const std::vector<int64_t>& warpgroups,
                        int64_t column_groups) {
  s->define_exact_split_levels("wgmma_m", row_tiles, {warpgroups}, /*added_later=*/true);
  s->define_exact_split_levels("wgmma_n", column_groups, {{1, 2}, {8, 16, 32}}, /*added_later=*/true);
  s->define_choice("mma_in_flight", {0, 1}, /*added_later=*/true);
  s->define_choice("swizzle", {0, 1}, /*added_later=*/true);
}

void lay_out_wgmma_operand(Stage st, const Config& cfg, int64_t row_bytes, int64_t warps, int64_t fill) {
  if (cfg.has("swizzle") && cfg.choice("swizzle") == 1 && row_bytes % 128 == 0) {
    cooperative_fill(st, warps, 32, fill);
    st.storage_swizzle(128);
  } else {
    cooperative_tile_fill(st, warps, 32, fill, 8);
    st.storage_tile(8, 8);
  }
}

void define_mma_pipeline_knobs(ConfigSpace* s, const GpuLimits& gpu) {
  s->define_choice("stages", {1, 2, 3, 4, 5}, /*added_later=*/true);
  s->define_choice("producer_warps", {0, 1, 2}, /*added_later=*/true);
  if (gpu.sm_version >= 90) s->define_choice("bulk_copy", {0, 1, 2}, /*added_later=*/true);
}

void mma_pipeline(Stage& sa, const IterVar& k, const Config& cfg, bool async_products) {
  const int stages = cfg.has("stages") ? static_cast<int>(cfg.choice("stages")) : 1;
  const int producers = cfg.has("producer_warps") ? static_cast<int>(cfg.choice("producer_warps")) : 0;
  const int64_t how = producers > 0 && cfg.has("bulk_copy") ? cfg.choice("bulk_copy") : 0;
  const BulkCopies bulk = how > 0 ? BulkCopies::kWhereTheyFit : BulkCopies::kOff;
  const BulkCopyForm form = how == 2 ? BulkCopyForm::kTensorMaps : BulkCopyForm::kRows;
  if (stages > 1 || producers > 0) sa.pipeline(k, stages, producers, bulk, form);
  // Without producer warps or a second slot there is nothing to keep in flight.
  if (async_products && producers > 0 && stages > 1 && cfg.has("mma_in_flight") && cfg.choice("mma_in_flight") > 0)
    sa.mma_in_flight(k, 1);
}

}  // namespace kiln
