#include "kernels/row_template.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "kernels/template_util.h"

namespace kiln {

namespace {

// The value of choice knob `name` closest to `want` in log scale (the
// smaller one on a tie).
int64_t nearest_choice(const ConfigSpace& space, const std::string& name, int64_t want) {
  const Knob& k = space.knob(name);
  int64_t best = k.options.at(0).at(0);
  for (auto& o : k.options) {
    const int64_t v = o.at(0);
    if (std::fabs(std::log2(static_cast<double>(v)) - std::log2(static_cast<double>(want))) <
        std::fabs(std::log2(static_cast<double>(best)) - std::log2(static_cast<double>(want))))
      best = v;
  }
  return best;
}

}  // namespace

void define_row_knobs(ConfigSpace& s, int64_t M, int64_t N, DType t, const CpuInfo& cpu) {
  const int64_t lanes = vector_lanes(cpu, t);
  s.define_split_levels("tile_rows", M, {capped_candidates(M, {1, 2, 4, 8, 16, 32})});
  s.define_choice("parallel", {0, 1});
  s.define_choice("vector", capped_candidates(N, {1, std::max<int64_t>(1, lanes / 2), lanes, 2 * lanes}));
  s.define_choice("unroll", {1, 2, 4});
  s.define_choice("reduce_lanes", capped_candidates(N, {1, lanes, 2 * lanes}));
}

void default_row_knobs(nlohmann::json& j, const ConfigSpace& space, int64_t N, DType t, const CpuInfo& cpu) {
  const int64_t lanes = vector_lanes(cpu, t);
  j["tile_rows"] = nearest_split(space, "tile_rows", {1});
  j["parallel"] = cpu.num_threads > 1 ? 1 : 0;
  j["vector"] = nearest_choice(space, "vector", lanes);
  j["unroll"] = N >= 4 * lanes ? 2 : 1;
  j["reduce_lanes"] = nearest_choice(space, "reduce_lanes", lanes);
}

RowParams decode_row_knobs(const Config& c) {
  RowParams p;
  p.rows = c.split("tile_rows")[1];
  p.parallel = c.choice("parallel") != 0;
  p.vector = c.choice("vector");
  p.unroll = c.choice("unroll");
  p.reduce_lanes = c.choice("reduce_lanes");
  user_check(p.rows > 0 && p.vector > 0 && p.unroll > 0 && p.reduce_lanes > 0)
      << "row template: tile sizes, lanes and unroll factors must be positive";
  return p;
}

IterVar schedule_row_output(Schedule& s, const Tensor& out, const RowParams& p) {
  Stage so = s[out];
  IterVar io, ii, jo, jr, ju, jv;
  so.split(so.axis()[0], p.rows, &io, &ii);
  so.split(so.axis()[1], p.vector * p.unroll, &jo, &jr);
  so.split(jr, p.vector, &ju, &jv);
  so.reorder({io, ii, jo, ju, jv});
  if (p.parallel) so.parallel(io);
  if (p.unroll > 1) so.unroll(ju);
  if (p.vector > 1) so.vectorize(jv);
  return ii;
}

void schedule_row_reduction(Schedule& s, const Tensor& t, const Tensor& out, const IterVar& row, const RowParams& p) {
  Stage st = s[t];
  st.compute_at(s[out], row);
  if (p.reduce_lanes <= 1) return;
  // Lane l accumulates columns l, l + lanes, ...; the row's value combines
  // the lanes at the end.
  IterVar ko, ki;
  st.split(st.reduce_axis()[0], p.reduce_lanes, &ko, &ki);
  Tensor rf = s.rfactor(t, ki);
  Stage sr = s[rf];
  sr.compute_at(s[out], row);
  std::vector<IterVar> ax = sr.axis();  // [lane, i]
  sr.reorder({ax[1], sr.reduce_axis()[0], ax[0]});
  sr.vectorize(ax[0]);
}

void schedule_row_elementwise(Schedule& s, const Tensor& t, const Tensor& out, const IterVar& row, const RowParams& p) {
  Stage st = s[t];
  st.compute_at(s[out], row);
  IterVar jo, jv;
  st.split(st.axis()[1], p.vector, &jo, &jv);
  if (p.vector > 1) st.vectorize(jv);
}

void schedule_row_scalar(Schedule& s, const Tensor& t, const Tensor& out, const IterVar& row) {
  s[t].compute_at(s[out], row);
}

}  // namespace kiln
