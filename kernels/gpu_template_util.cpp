#include "kernels/gpu_template_util.h"

#include "base/error.h"

namespace kiln {

void set_gpu_template(OpDef& d, decltype(GpuTemplate::define_space) space,
                      decltype(GpuTemplate::default_config) default_config,
                      std::function<ScheduledOp(const OpInstance&, const Config&)> schedule) {
  d.gpu.define_space = std::move(space);
  d.gpu.default_config = std::move(default_config);
  d.gpu.apply_config = [name = d.name, schedule = std::move(schedule)](const OpInstance& op, const Config& cfg) {
    user_check(op.op == name) << "the " << name << " cuda template cannot schedule op '" << op.op << "'";
    return schedule(op, cfg);
  };
}

void split_three(Stage& st, const IterVar& axis, const std::vector<int64_t>& f, IterVar* b, IterVar* t, IterVar* i) {
  IterVar rest;
  st.split(axis, f[1] * f[2], b, &rest);
  st.split(rest, f[2], t, i);
}

void cooperative_fill(Stage st, int64_t threads_y, int64_t threads_x, int64_t vec) {
  IterVar fused = st.fuse(st.axis());
  IterVar rounds, rest, tyl, txl, lanes;
  if (vec > 1) {
    IterVar outer;
    st.split(fused, vec, &outer, &lanes);
    fused = outer;
  }
  st.split(fused, threads_y * threads_x, &rounds, &rest);
  st.split(rest, threads_x, &tyl, &txl);
  st.bind(tyl, "threadIdx.y");
  st.bind(txl, "threadIdx.x");
  if (vec > 1) st.vectorize(lanes);
}

void cooperative_tile_fill(Stage st, int64_t threads_y, int64_t threads_x, int64_t vec, int64_t tile) {
  std::vector<IterVar> axes = st.axis();
  const size_t n = axes.size();
  internal_assert(n >= 2 && tile % vec == 0) << "cooperative_tile_fill of a tiled stage";
  IterVar ro, r_in, co, c_in, cv, lanes;
  st.split(axes[n - 2], tile, &ro, &r_in);
  st.split(axes[n - 1], tile, &co, &c_in);
  st.split(c_in, vec, &cv, &lanes);
  std::vector<IterVar> order(axes.begin(), axes.end() - 2);
  for (const IterVar& iv : {ro, co, cv, r_in}) order.push_back(iv);
  std::vector<IterVar> threads = order;
  order.push_back(lanes);
  st.reorder(order);
  IterVar rounds, rest, tyl, txl;
  st.split(st.fuse(threads), threads_y * threads_x, &rounds, &rest);
  st.split(rest, threads_x, &tyl, &txl);
  st.bind(tyl, "threadIdx.y");
  st.bind(txl, "threadIdx.x");
  if (vec > 1) st.vectorize(lanes);
}

void check_gpu_dtype(DType t, const std::string& what) {
  user_check(t == DType::f32() || t == DType::f16() || t == DType::bf16())
      << "the cuda " << what << " template computes f32, or f16/bf16 stored in 16 bits and computed in f32; got "
      << t.str();
}

int64_t floor_pow2(int64_t v) {
  int64_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

}  // namespace kiln
