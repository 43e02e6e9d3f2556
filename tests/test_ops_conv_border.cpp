// Padding-free borders: the "border" knob of the conv2d, conv2d_nchwc and
// conv2d_nhwc templates. With "clip" the taps read the data where they fall
// inside it and skip the padding; loop partitioning and hoist_guards keep
// the tests out of the interior. Random shapes with padding, stride,
// dilation and groups agree with the interpreter; a weight of inf on a tap
// that only meets padding at the corner shows that the tap is never
// computed there.
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>

#include "compute/printer.h"
#include "schedule/lower.h"
#include "test_ops_conv_check.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

const nlohmann::json kClip = {{"border", "clip"}};

// Padding 1 to 3, so that some windows hang over the border by more than a tap.
std::string random_padded(std::mt19937_64& rng, const std::string& op, bool blocked) {
  const int64_t R = pick(rng, 1, 3), S = pick(rng, 2, 3), stride = pick(rng, 1, 2), dil = pick(rng, 1, 2);
  const int64_t pad = pick(rng, 1, 3), G = pick(rng, 1, 2);
  const int64_t cb = blocked ? pick(rng, 1, 3) : 1, kb = blocked ? std::vector<int64_t>{1, 4, 16}[pick(rng, 0, 2)] : 1;
  const int64_t C = G * cb * pick(rng, 1, 3), K = G * kb * pick(rng, 1, 2);
  const int64_t H = odd_extent(rng, std::max<int64_t>(1, dil * (R - 1) + 1 - 2 * pad));
  const int64_t W = odd_extent(rng, std::max<int64_t>(1, dil * (S - 1) + 1 - 2 * pad));
  std::ostringstream os;
  os << op << ":N=" << pick(rng, 1, 2) << ",C=" << C << ",H=" << H << ",W=" << W << ",K=" << K << ",R=" << R
     << ",S=" << S << ",stride=" << stride << ",pad=" << pad << ",dilation=" << dil << ",groups=" << G
     << ",bias=" << pick(rng, 0, 1) << random_activation(rng);
  if (blocked) os << ",cb=" << cb << ",kb=" << kb;
  return os.str();
}

// The workload's schedule under its default config with `config`'s knobs.
ScheduledOp schedule_with(const OpInstance& op, const nlohmann::json& config) {
  const OpDef& def = find_op(op.op);
  auto space = def.define_space(op, avx512_cpu());
  nlohmann::json j = def.default_config(op, avx512_cpu(), *space).to_json();
  for (auto it = config.begin(); it != config.end(); ++it) j[it.key()] = it.value();
  return def.apply_config(op, space->from_json(j));
}

// Runs the workload's kernel under `config` on data and weights of ones,
// but for the weights of tap (0, 0) (dims `r_dim`, `s_dim` of the weight),
// which are inf. Returns output element 0: batch 0, channel 0, row 0,
// column 0 in each of the three layouts.
float corner_with_inf_tap(const std::string& workload, const nlohmann::json& config, int r_dim, int s_dim) {
  OpInstance op = build_workload(workload);
  ScheduledOp so = schedule_with(op, config);
  std::vector<HostTensor> inputs;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    HostTensor h(op.inputs[i].dtype(), shape_of(op.inputs[i]));
    float* p = h.data<float>();
    for (int64_t e = 0; e < h.num_elements(); ++e) {
      // The multi-index of element e, last dimension fastest.
      int64_t rest = e, r = -1, s = -1;
      for (int d = static_cast<int>(h.shape.size()) - 1; d >= 0; --d) {
        const int64_t idx = rest % h.shape[static_cast<size_t>(d)];
        rest /= h.shape[static_cast<size_t>(d)];
        if (d == r_dim) r = idx;
        if (d == s_dim) s = idx;
      }
      p[e] = i == 1 && r == 0 && s == 0 ? INFINITY : 1.0f;
    }
    inputs.push_back(h);
  }
  return run_schedule(*so.schedule, so.args, inputs).data<float>()[0];
}

}  // namespace

TEST_CASE("border clip: random padded conv2d shapes and configs agree with the interpreter",
          "[ops][conv][border][property]") {
  std::mt19937_64 rng(2101);
  for (int t = 0; t < 6; ++t) check_pinned_configs(random_padded(rng, "conv2d", false), kClip, 3, 2200 + t);
  // The packed-data layout, its copy now without padding, placed in the band.
  check_pinned_configs("conv2d:C=5,H=9,W=7,K=8,R=3,S=3,stride=2,pad=2",
                       {{"border", "clip"}, {"layout", "nchwc"}, {"data_at", 1}}, 3, 2210);
}

TEST_CASE("border clip: random padded conv2d_nchwc shapes and configs agree with the interpreter",
          "[ops][conv][nchwc][border][property]") {
  std::mt19937_64 rng(2102);
  for (int t = 0; t < 6; ++t) check_pinned_configs(random_padded(rng, "conv2d_nchwc", true), kClip, 3, 2300 + t);
  // The ResNet stem's shape, scaled down: 7x7, stride 2, padding 3.
  check_pinned_configs("conv2d_nchwc:C=3,H=23,W=19,K=16,R=7,S=7,stride=2,pad=3,cb=3", kClip, 4, 2310);
}

TEST_CASE("border clip: random padded conv2d_nhwc shapes and configs agree with the interpreter",
          "[ops][conv][border][property]") {
  std::mt19937_64 rng(2103);
  for (int t = 0; t < 6; ++t) check_pinned_configs(random_padded(rng, "conv2d_nhwc", false), kClip, 3, 2400 + t);
}

TEST_CASE("border clip never computes a padding tap, border pad multiplies it by zero", "[ops][conv][border]") {
  // At output (0, 0) tap (0, 0) reads row -1, column -1: padding. The other
  // three taps of the 2x2 corner are inside: 4 taps x 3 channels of ones.
  struct Case {
    std::string workload;
    int r_dim, s_dim;
  };
  for (const Case& c : {Case{"conv2d:C=3,H=6,W=5,K=2,R=3,S=3,pad=1", 2, 3},
                        Case{"conv2d_nchwc:C=3,H=6,W=5,K=16,R=3,S=3,pad=1,cb=3", 2, 3},
                        Case{"conv2d_nhwc:C=3,H=6,W=5,K=2,R=3,S=3,pad=1", 0, 1}}) {
    INFO(c.workload);
    CHECK(corner_with_inf_tap(c.workload, kClip, c.r_dim, c.s_dim) == 12.0f);
    CHECK(std::isnan(corner_with_inf_tap(c.workload, {{"border", "pad"}}, c.r_dim, c.s_dim)));
  }
}

TEST_CASE("border: a knob of padded windows only, configs stored before it read as pad", "[ops][conv][border]") {
  CpuInfo cpu = avx512_cpu();
  for (const char* op : {"conv2d", "conv2d_nchwc", "conv2d_nhwc"}) {
    INFO(op);
    const OpDef& def = find_op(op);
    OpInstance padded = build_workload(std::string(op) + ":C=16,H=9,W=9,K=16,R=3,S=3,pad=1");
    OpInstance unpadded = build_workload(std::string(op) + ":C=16,H=9,W=9,K=16,R=3,S=3");
    auto ps = def.define_space(padded, cpu);
    CHECK(ps->knob("border").labels == std::vector<std::string>{"pad", "clip"});
    CHECK(def.define_space(unpadded, cpu)->knob("border").labels == std::vector<std::string>{"pad"});
    Config d = def.default_config(padded, cpu, *ps);
    // conv2d_nchwc's default clips the border (faster on every resnet50 3x3
    // layer); the others keep the padded copy.
    CHECK(d.annotate("border") == (std::string(op) == "conv2d_nchwc" ? "clip" : "pad"));
    nlohmann::json old = d.to_json();
    old.erase("border");
    nlohmann::json as_pad = d.to_json();
    as_pad["border"] = "pad";
    CHECK(ps->from_json(old) == ps->from_json(as_pad));
    // With clip the padded copy is gone.
    nlohmann::json clip = d.to_json();
    clip["border"] = "clip";
    ScheduledOp so = def.apply_config(padded, ps->from_json(clip));
    CHECK(to_string(lower(*so.schedule, so.args, "k")).find("data_pad") == std::string::npos);
  }
}

TEST_CASE("border clip: a row of two tiles, one on each border, keeps no guard and agrees with the interpreter",
          "[ops][conv][nchwc][border]") {
  // 10 columns in two register tiles of 5: the first tile holds the left
  // padding, the second the right, so no tile is interior. Loop partitioning
  // splits the tile loop into its two tiles; no guard is left in the loops.
  const std::string w = "conv2d_nchwc:C=16,H=6,W=10,K=16,R=3,S=3,pad=1";
  const nlohmann::json pinned = {{"border", "clip"}, {"tile_ow", {2, 5}}, {"parallel", 0}};
  ScheduledOp so = schedule_with(build_workload(w), pinned);
  const std::string ir = to_string(lower(*so.schedule, so.args, "k"));
  INFO(ir);
  CHECK(ir.find("if (") == std::string::npos);
  check_pinned_configs(w, pinned, 3, 2500);
}
