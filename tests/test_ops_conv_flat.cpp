// The "flat" alternative of 1x1 convolutions (kernels/conv2d_common.h): a
// 1x1 stride-1 unpadded conv2d_nchwc or conv2d_nhwc over more than one row
// runs as the same op with H = 1 and W = H*W on the very same buffers.
// Random shapes (1, primes, odd sizes, groups, blocks, epilogues) and
// random configs of the flat kernel agree with the original op's
// reference; other layers have no flat alternative.
#include <catch2/catch.hpp>
#include <sstream>

#include "compute/interpreter.h"
#include "test_ops_conv_check.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

std::string random_pointwise(std::mt19937_64& rng, bool nhwc) {
  const int64_t G = pick(rng, 1, 2), cb = nhwc ? 1 : pick(rng, 1, 4), kb = nhwc ? 1 : std::vector<int64_t>{1, 3, 16}[pick(rng, 0, 2)];
  std::ostringstream os;
  os << (nhwc ? "conv2d_nhwc" : "conv2d_nchwc") << ":N=" << pick(rng, 1, 2) << ",C=" << G * cb * pick(rng, 1, 3)
     << ",H=" << odd_extent(rng, 2) << ",W=" << odd_extent(rng) << ",K=" << G * kb * pick(rng, 1, 2)
     << ",R=1,S=1,groups=" << G << ",bias=" << pick(rng, 0, 1) << random_activation(rng);
  if (!nhwc) os << ",cb=" << cb << ",kb=" << kb;
  return os.str();
}

// The flat kernel, under `count` configs (its default first, then random
// ones), on the original op's inputs: each output, read as the original's,
// equals the original's reference.
void check_flat(const std::string& workload, int count, uint64_t seed) {
  OpInstance op = build_workload(workload);
  std::vector<OpAlternative> alts = find_op(op.op).alternatives(op);
  REQUIRE(alts.size() == 1);
  REQUIRE(alts[0].name == "flat");
  REQUIRE(alts[0].prepare.empty());
  OpInstance flat = build_workload(alts[0].kernel.workload);
  CHECK(flat.ints.at("H") == 1);
  CHECK(flat.ints.at("W") == op.ints.at("H") * op.ints.at("W"));
  CHECK(flat.flops == op.flops);
  std::vector<std::pair<Tensor, HostTensor>> in;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    HostTensor h(op.inputs[i].dtype(), shape_of(op.inputs[i]));
    h.fill_random(seed + i, -2.0, 2.0);
    in.emplace_back(op.inputs[i], h);
  }
  HostTensor want = interpret(op.outputs, in)[0];
  const OpDef& def = find_op(flat.op);
  auto space = def.define_space(flat, avx512_cpu());
  std::mt19937_64 rng(seed);
  for (int c = 0; c < count; ++c) {
    Config cfg = c == 0 ? def.default_config(flat, avx512_cpu(), *space) : space->random(rng);
    INFO(workload << " as " << flat.canonical << " config " << cfg.str());
    ScheduledOp so = def.apply_config(flat, cfg);
    std::vector<HostTensor> inputs;
    for (const auto& i : in) inputs.push_back(i.second);
    HostTensor out = run_schedule(*so.schedule, so.args, inputs);
    REQUIRE(out.bytes.size() == want.bytes.size());
    HostTensor got(want.dtype, want.shape);  // the flat output read as the original's
    got.bytes = out.bytes;
    CHECK(compare_tensors(want, got, tolerance_for(want.dtype), tolerance_for(want.dtype)) == "");
  }
}

}  // namespace

TEST_CASE("flat: a 1x1 convolution run as one row of pixels agrees with the original", "[ops][conv][flat][property]") {
  std::mt19937_64 rng(3301);
  for (int t = 0; t < 6; ++t) {
    check_flat(random_pointwise(rng, false), 3, 3400 + t);
    check_flat(random_pointwise(rng, true), 3, 3500 + t);
  }
  // A ResNet bottleneck's expansion, scaled down: register tiles cross rows.
  check_flat("conv2d_nchwc:C=32,H=7,W=7,K=64,R=1,S=1,bias=1,relu=1", 4, 3600);
}

TEST_CASE("flat: only 1x1 stride-1 unpadded layers of more than one row have it", "[ops][conv][flat]") {
  for (const char* w : {"conv2d_nchwc:C=16,H=8,W=8,K=16,R=1,S=1,stride=2", "conv2d_nchwc:C=16,H=8,W=8,K=16,R=1,S=1,pad=1",
                        "conv2d_nchwc:C=16,H=1,W=8,K=16,R=1,S=1", "conv2d_nchwc:C=16,H=8,W=8,K=16,R=1,S=3",
                        "conv2d_nhwc:C=16,H=8,W=8,K=16,R=1,S=1,stride=2"}) {
    INFO(w);
    OpInstance op = build_workload(w);
    CHECK(find_op(op.op).alternatives(op).empty());
  }
}
