// dwsep_nchwc, the fused depthwise-separable block: its definition equals
// its two halves (depthwise_conv2d_nchwc, then a 1x1 conv2d_nchwc) run one
// after the other; its template lowers correct kernels for random shapes
// (1, primes, odd; blocks narrower or wider than a vector; kernel sizes 1
// to 5, strides 1 and 2; both activations) and random configs; the
// depthwise result lives only in a tile-sized buffer; bad workloads are
// user errors.
#include <catch2/catch.hpp>
#include <random>
#include <sstream>

#include "base/error.h"
#include "compute/interpreter.h"
#include "compute/ir_functor.h"
#include "kernels/dwsep_nchwc.h"
#include "test_ops_conv_check.h"

using namespace kiln;
using namespace kiln::testing;
using Catch::Contains;

namespace {

std::string random_block(std::mt19937_64& rng) {
  const int64_t k = std::vector<int64_t>{1, 3, 5}[pick(rng, 0, 2)];
  const int64_t stride = pick(rng, 1, 2), dil = pick(rng, 1, 2), pad = pick(rng, 0, static_cast<int>(k / 2) + 1);
  const int64_t cb = std::vector<int64_t>{1, 4, 8, 16}[pick(rng, 0, 3)];
  const int64_t kb = std::vector<int64_t>{1, 3, 8, 16, 32}[pick(rng, 0, 4)];
  const int64_t H = odd_extent(rng, std::max<int64_t>(1, dil * (k - 1) + 1 - 2 * pad));
  const int64_t W = odd_extent(rng, std::max<int64_t>(1, dil * (k - 1) + 1 - 2 * pad));
  std::string dw_act = random_activation(rng);
  if (!dw_act.empty()) dw_act.insert(1, "dw_");
  std::ostringstream os;
  os << "dwsep_nchwc:N=" << pick(rng, 1, 2) << ",C=" << cb * pick(rng, 1, 3) << ",H=" << H << ",W=" << W
     << ",K=" << kb * pick(rng, 1, 3) << ",R=" << k << ",S=" << k << ",stride=" << stride << ",pad=" << pad
     << ",dilation=" << dil << ",cb=" << cb << ",kb=" << kb << ",bias=" << pick(rng, 0, 1) << dw_act
     << random_activation(rng);
  return os.str();
}

}  // namespace

TEST_CASE("dwsep_nchwc equals its depthwise and pointwise halves one after the other", "[ops][conv][dwsep]") {
  std::mt19937_64 rng(97);
  for (int t = 0; t < 8; ++t) {
    const std::string w = random_block(rng);
    INFO(w);
    OpInstance block = build_workload(w);
    auto [dw_w, pw_w] = dwsep_nchwc_halves(block);
    INFO(dw_w << " then " << pw_w);
    OpInstance dw = build_workload(dw_w), pw = build_workload(pw_w);
    const DwsepShape s = dwsep_nchwc_shape(block);
    std::vector<HostTensor> in;
    for (size_t i = 0; i < block.inputs.size(); ++i) {
      in.emplace_back(block.inputs[i].dtype(), shape_of(block.inputs[i]));
      in.back().fill_random(300 + 10 * t + i, -2.0, 2.0);
    }
    HostTensor got = interpret(block.outputs, [&] {
      std::vector<std::pair<Tensor, HostTensor>> m;
      for (size_t i = 0; i < in.size(); ++i) m.emplace_back(block.inputs[i], in[i]);
      return m;
    }())[0];
    // Inputs: data, dw_weight, pw_weight[, dw_bias, pw_bias]; the halves take
    // data, weight[, bias] each (the 1x1 weights [K/kb, C/cb, 1, 1, cb, kb] are the same array).
    std::vector<std::pair<Tensor, HostTensor>> dw_in = {{dw.inputs[0], in[0]}, {dw.inputs[1], in[1]}};
    if (s.bias) dw_in.emplace_back(dw.inputs[2], in[3]);
    HostTensor mid = interpret(dw.outputs, dw_in)[0];
    std::vector<std::pair<Tensor, HostTensor>> pw_in = {{pw.inputs[0], mid}, {pw.inputs[1], in[2]}};
    if (s.bias) pw_in.emplace_back(pw.inputs[2], in[4]);
    HostTensor want = interpret(pw.outputs, pw_in)[0];
    CHECK(compare_tensors(want, got, 1e-4, 1e-4) == "");
    CHECK(block.flops == dw.flops + pw.flops);
  }
}

TEST_CASE("dwsep_nchwc: random shapes, blocks, kernels, activations and configs", "[ops][conv][dwsep][property]") {
  std::mt19937_64 rng(99);
  for (int t = 0; t < 8; ++t) check_template_configs(random_block(rng), 3, 1000 + static_cast<uint64_t>(t));
  // MobileNet-like blocks.
  check_template_configs("dwsep_nchwc:C=32,H=9,W=10,K=16,R=3,S=3,pad=1,bias=1,dw_relu6=1", 4, 11);
  check_template_configs("dwsep_nchwc:C=16,H=11,W=9,K=48,R=5,S=5,stride=2,pad=2,bias=1,dw_hswish=1,hswish=1", 3, 12);
  check_template_configs("dwsep_nchwc:C=24,H=7,W=7,K=8,R=3,S=3,pad=1,cb=8,kb=8,dtype=f64", 2, 13);
}

TEST_CASE("dwsep_nchwc: the depthwise result never takes a whole tensor", "[ops][conv][dwsep]") {
  CpuInfo cpu = avx512_cpu();
  const std::string w = "dwsep_nchwc:C=144,H=56,W=56,K=24,R=3,S=3,pad=1,kb=8,bias=1,dw_relu6=1";
  OpInstance op = build_workload(w);
  const OpDef& def = find_op(op.op);
  auto space = def.define_space(op, cpu);
  Config d = def.default_config(op, cpu, *space);
  ScheduledOp so = def.apply_config(op, d);
  LoweredFunc f = lower(*so.schedule, so.args, "kernel");
  INFO(to_string(f));
  const DwsepShape s = dwsep_nchwc_shape(op);
  int64_t dw_elements = -1;
  post_order_visit(f.body, [&](const Ref<Object>& x) {
    auto* a = x.as<AllocateNode>();
    if (!a || a->buffer->name != "dw") return;
    dw_elements = 1;
    for (const Expr& e : a->extents) dw_elements *= *as_const_int(e);
  });
  // One column tile of every channel: C x ohi x owi.
  CHECK(dw_elements == s.C * d.split("tile_oh")[1] * d.split("tile_ow")[1]);
  CHECK(dw_elements * 4 <= 64 * 1024);
  check_default_schedule(w);
}

TEST_CASE("dwsep_nchwc: canonical string and knobs", "[ops][conv][dwsep]") {
  CHECK(build_workload("dwsep_nchwc:C=32,H=8,W=8,K=16,R=3,S=3,pad=1,dw_relu6=1").canonical ==
        "dwsep_nchwc:N=1,C=32,H=8,W=8,K=16,R=3,S=3,stride=1,pad=1,dilation=1,cb=16,kb=16,dtype=f32,dw_relu6=1");
  CpuInfo cpu = avx512_cpu();
  OpInstance pointwise_only = build_workload("dwsep_nchwc:C=32,H=8,W=8,K=16,R=1,S=1");
  auto ps = find_op("dwsep_nchwc").define_space(pointwise_only, cpu);
  CHECK(ps->knob("border").size() == 1);
  CHECK(ps->knob("unroll_kw").size() == 1);
}

TEST_CASE("dwsep_nchwc workload errors are user errors", "[ops][conv][dwsep][user_error]") {
  CHECK_THROWS_WITH(build_workload("dwsep_nchwc:C=24,H=8,W=8,K=16,R=3,S=3"),
                    Contains("dwsep_nchwc: the channel block cb=16 must divide the input channels (24)"));
  CHECK_THROWS_WITH(build_workload("dwsep_nchwc:C=16,H=8,W=8,K=24,R=3,S=3"),
                    Contains("dwsep_nchwc: the output channel block kb=16 must divide the output channels (24)"));
  CHECK_THROWS_WITH(build_workload("dwsep_nchwc:C=16,H=8,W=8,K=16,R=3,S=3,dtype=i8"),
                    Contains("dwsep_nchwc: the block computes in floating point, not i8"));
  CHECK_THROWS_WITH(build_workload("dwsep_nchwc:C=16,H=8,W=8,K=16,R=3,S=3,dw_relu=1,dw_relu6=1"),
                    Contains("dwsep_nchwc: dw_relu and dw_relu6 are exclusive activations"));
  CHECK_THROWS_WITH(build_workload("dwsep_nchwc:C=16,H=2,W=8,K=16,R=3,S=3"), Contains("does not fit"));
}
